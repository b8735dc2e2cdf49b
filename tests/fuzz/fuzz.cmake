# Initial cache for the libFuzzer build: cmake -S . -B build-fuzz -G Ninja -C tests/fuzz/fuzz.cmake
# (scripts/fuzz.sh). Every library gets coverage (fuzzer-no-link), ASan and UBSan; UB aborts so
# the fuzzer records it. -O1 -g without NDEBUG: assertions stay on, stacks stay readable.
set(CMAKE_C_COMPILER clang CACHE STRING "")
set(CMAKE_CXX_COMPILER clang++ CACHE STRING "")
set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "")
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O1 -g" CACHE STRING "")
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O1 -g" CACHE STRING "")
# -fno-pch-timestamp: clang otherwise records the PCH header's mtime, which CMake rewrites in every
# fresh build tree, and rejects a PCH that ccache restored (ccache manual, "Precompiled headers").
set(_fuzz "-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
-Xclang -fno-pch-timestamp")
set(CMAKE_C_FLAGS "${_fuzz}" CACHE STRING "")
set(CMAKE_CXX_FLAGS "${_fuzz}" CACHE STRING "")
set(DYNAMIX_FUZZ ON CACHE BOOL "")
set(DYNAMIX_WITH_CUDA OFF CACHE STRING "")
set(DYNAMIX_WITH_BPF OFF CACHE STRING "")
set(DYNAMIX_BUILD_BENCHMARKS OFF CACHE BOOL "")
