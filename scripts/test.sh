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
# the cores it keeps busy (PROCESSORS in tests/CMakeLists.txt, tests/e2e/CMakeLists.txt). The
# end-to-end tests that time real steps (label timing) run first, alone (RUN_SERIAL).
ctest_run() { ctest --test-dir build --output-on-failure --timeout 1500 -j "$(nproc)" "$@"; }
ctest_run -L timing "$@"
stage_done "ctest, timing tests"
# The rest of the suite runs beside the sanitizer and fuzzer builds at nice 19: its ranks mostly
# wait on each other, leaving about a third of the cores idle (2026-12-03, 2 cores: 994 s of
# processor time in 727 s), which the builds take without slowing the tests.
mkdir -p build-logs
side_log=build-logs/side-builds.log
setsid bash -c 'nice -n 19 ./scripts/test-sanitizers.sh --build-only &&
                nice -n 19 ./scripts/fuzz.sh --build-only' >"$side_log" 2>&1 &
side=$!
trap 'kill -- -$side 2>/dev/null || true' EXIT
ctest_run -LE timing "$@"
stage_done "ctest, the rest"
if ! wait "$side"; then
  tail -n 60 "$side_log"
  echo "test.sh: the sanitizer or fuzzer build failed (whole log: $side_log)" >&2
  exit 1
fi
trap - EXIT
stage_done "sanitizer and fuzzer builds, what was left of them"
# ASan+UBSan build of the unit and multi-rank tests in build-asan/.
./scripts/test-sanitizers.sh --no-build
stage_done sanitizers
# libFuzzer (clang): replay tests/fuzz/corpus and fuzz each reader ~25 s (scripts/fuzz.sh for longer).
./scripts/fuzz.sh --ci --no-build
stage_done fuzz
