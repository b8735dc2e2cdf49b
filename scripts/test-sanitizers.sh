#!/usr/bin/env bash
# Builds the unit and multi-rank tests with AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/ and runs them (ctest labels unit and mpi). No benchmarks, no CLI, no end-to-end
# tests: those drive build/bin/dynamix. Extra arguments go to ctest (e.g. -R config_test).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-asan

if [[ ! -f $dir/CMakeCache.txt ]]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # GCC as in build/ (it puts libasan first in the link). -O1: usable speed with exact reports;
  # -g1: file:line in stacks at two thirds of -g's compile time; no NDEBUG, so assert() checks too.
  cmake -S . -B "$dir" "${generator[@]}" \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DDYNAMIX_SANITIZE=address,undefined -DDYNAMIX_BUILD_BENCHMARKS=OFF -DDYNAMIX_WITH_CUDA=OFF
fi
cmake --build "$dir" -j "$(nproc)" --target dynamix_tests

# Checks beyond ASan's defaults (cost not measurable here). Leaks stay on: Open MPI's are kept out
# by tests/mpi_leak_check.h, the rest of third-party leaks are named in lsan.supp.
# mpirun passes this environment on to every rank.
export ASAN_OPTIONS=detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1
export LSAN_OPTIONS=suppressions=$PWD/scripts/sanitizers/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -L 'unit|mpi' "$@"
