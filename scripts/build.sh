#!/usr/bin/env bash
# Configures and builds DYNAMIX into build/ (contract: build/bin/dynamix).
#   scripts/build.sh [--target NAME ...] [CMAKE_ARGS...]   every target, or only those named;
#   CMAKE_ARGS configure a new build/ (e.g. -DDYNAMIX_WITH_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
configure=()
while (($#)); do
  case $1 in
    --target) [[ $# -ge 2 ]] || { echo "usage: $0 [--target NAME ...] [CMAKE_ARGS...]" >&2; exit 2; }
              targets+=(--target "$2"); shift 2 ;;
    -*) configure+=("$1"); shift ;;
    *) echo "$0: unexpected argument '$1' (name each target with its own --target)" >&2; exit 2 ;;
  esac
done
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f build/CMakeCache.txt ]]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${configure[@]}"
elif ((${#configure[@]})); then
  echo "$0: build/ is configured already, so ${configure[*]} did not apply (remove build/ to reconfigure)" >&2
fi
cmake --build build -j "$(nproc)" "${targets[@]}"
