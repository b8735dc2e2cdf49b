#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole test suite (unit, multi-rank, end to end).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# Formatting is part of the contract: an unformatted source fails CI before anything is built.
./scripts/format.sh --check
./scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Unit and multi-rank tests several at a time (test-sanitizers.sh runs them so too); the end-to-end
# tests, which time real runs of up to 4 ranks each, one at a time.
ctest --test-dir build --output-on-failure --timeout 1500 -j "$(nproc)" -L 'unit|mpi' "$@"
ctest --test-dir build --output-on-failure --timeout 1500 -LE 'unit|mpi' "$@"
# ASan+UBSan build of the unit and multi-rank tests in build-asan/ (~12 min cold on 2 cores).
./scripts/test-sanitizers.sh
# libFuzzer (clang): replay tests/fuzz/corpus and fuzz each reader ~25 s (scripts/fuzz.sh for longer).
./scripts/fuzz.sh --ci
