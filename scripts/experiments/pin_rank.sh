#!/usr/bin/env bash
# One rank of a training run, pinned to one core: use it as the binary of compare_policies.sh
# (POLICY@scripts/experiments/pin_rank.sh). mpirun starts it per rank; rank r of n runs
# build/bin/dynamix (DYNAMIX_BIN: another binary) on core DYNAMIX_CORES[r] when DYNAMIX_CORES lists
# one core per rank, else on core r*cores/n (4 ranks on 2 cores: 0 0 1 1). Ranks sharing a core
# share its time: DYNAMIX_CORES="0 1 1 1" gives rank 0 a core of its own and ranks 1-3 a third of
# the other each, a real (not emulated) compute heterogeneity of 3x.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} size=${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-1}}
cores=$(nproc)
core=$((rank * cores / size))
if [[ -n ${DYNAMIX_CORES:-} ]]; then
  read -r -a list <<<"$DYNAMIX_CORES"
  if ((${#list[@]} != size)); then
    echo "pin_rank.sh: DYNAMIX_CORES lists ${#list[@]} core(s) for $size ranks: '$DYNAMIX_CORES'" >&2
    exit 2
  fi
  core=${list[rank]}
  if ! [[ $core =~ ^[0-9]+$ ]] || ((core >= cores)); then
    echo "pin_rank.sh: DYNAMIX_CORES entry '$core' of rank $rank is not a core of 0-$((cores - 1))" >&2
    exit 2
  fi
fi
exec taskset -c "$core" "${DYNAMIX_BIN:-$root/build/bin/dynamix}" "$@"
