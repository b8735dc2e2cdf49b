#!/usr/bin/env bash
# One rank of a training run on a node with real CPU interference in spells. Use it as the binary of
# compare_policies.sh (POLICY@scripts/experiments/spells_rank.sh): mpirun starts it per rank,
# pin_rank.sh pins it to its core (4 ranks on 2 cores: 0 0 1 1; DYNAMIX_CORES another layout) and
# runs build/bin/dynamix there; rank 0 also starts cpu_spells.py on the last core for as long as it
# lives, so the ranks pinned there slow down in spells (a neighbour's bursts). DYNAMIX_SPELLS adds
# cpu_spells.py arguments (e.g. "--hogs 3 --on 0.25:0.4 --off 1.5:3 --seed 1"); without a --seed
# there, the spells' seed is compare_policies.sh's round plus 1 (DYNAMIX_ROUND; 1 outside it): one
# schedule for all policies of a round, another in the next. The spells recur about every 3 s, as a
# run of fm_homogeneous.yaml's 50 steps and an evaluation does, and the two lock in phase: static's
# evaluations were slowed in 2.5 of 10, dynamix's in 5.0, with the seed following the round (2.2
# and 6.3 with one seed for every run). Add -- --set train.eval_every=0 to compare the training
# steps alone (docs/RESULTS.md §1, "Item 32 on the real spells cell").
# DYNAMIX_SPELLS_LOG names its log; DYNAMIX_BIN another dynamix binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
if ((rank == 0)); then
  seed=()
  [[ " ${DYNAMIX_SPELLS:-} " == *" --seed "* || " ${DYNAMIX_SPELLS:-}" == *" --seed="* ]] ||
    seed=(--seed $((${DYNAMIX_ROUND:-0} + 1)))
  # shellcheck disable=SC2086  # DYNAMIX_SPELLS is a list of arguments
  python3 "$here/cpu_spells.py" --pid $$ --cpus $(($(nproc) - 1)) \
    ${DYNAMIX_SPELLS:-} "${seed[@]}" ${DYNAMIX_SPELLS_LOG:+--log "$DYNAMIX_SPELLS_LOG"} &
fi
exec "$here/pin_rank.sh" "$@"
