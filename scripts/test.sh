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
./scripts/build.sh
stage_done build
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Every test, nproc slots at a time: a multi-rank test takes a slot per rank, an end-to-end test
# the cores it keeps busy (PROCESSORS in tests/CMakeLists.txt, tests/e2e/CMakeLists.txt), and the
# end-to-end tests that time real steps run alone (RUN_SERIAL).
ctest --test-dir build --output-on-failure --timeout 1500 -j "$(nproc)" "$@"
stage_done ctest
# ASan+UBSan build of the unit and multi-rank tests in build-asan/ (~12 min cold on 2 cores).
./scripts/test-sanitizers.sh
stage_done sanitizers
# libFuzzer (clang): replay tests/fuzz/corpus and fuzz each reader ~25 s (scripts/fuzz.sh for longer).
./scripts/fuzz.sh --ci
stage_done fuzz
