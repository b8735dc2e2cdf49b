#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite (unit, multi-rank, end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, so a slow suite says where its time went.
stage_start=$SECONDS
stage_done() {
  echo "test.sh: $1 took $((SECONDS - stage_start)) s (total $SECONDS s)"
  stage_start=$SECONDS
}
./scripts/setup.sh
stage_done setup
# Formatting is part of the contract: an unformatted source fails CI before anything is built.
./scripts/format.sh --check
# build/ (Release): the CLI, the benchmarks, and the unit and multi-rank tests whose meaning
# depends on the build (label per_build: the CUDA toolkit compiled in, glibc's malloc). The other
# unit and multi-rank tests run once, in the sanitized build below, which checks more (the time
# saved: docs/RESULTS.md §18). `scripts/build.sh` alone builds everything, and
# `ctest --test-dir build` then runs every test in build/.
./scripts/build.sh --target dynamix --target dynamix_benchmarks --target dynamix_per_build_tests
stage_done build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# nproc slots at a time: a multi-rank test takes a slot per rank, an end-to-end test the cores it
# keeps busy (PROCESSORS in tests/CMakeLists.txt, tests/e2e/CMakeLists.txt), and the end-to-end
# tests that time real steps run alone (RUN_SERIAL).
ctest --test-dir build --output-on-failure --timeout 1500 -j "$(nproc)" -L 'e2e|per_build' "$@"
stage_done ctest
# ASan+UBSan build of every unit and multi-rank test in build-asan/ (9-11 min cold on 2 cores).
./scripts/test-sanitizers.sh
stage_done sanitizers
# libFuzzer (clang): replay tests/fuzz/corpus (the regression check) and fuzz each reader 10 s as a
# smoke test; searching for new crashes takes longer runs (scripts/fuzz.sh 600, docs/RESULTS.md §9).
./scripts/fuzz.sh --ci
stage_done fuzz
