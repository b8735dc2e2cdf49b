#!/usr/bin/env bash
# Online fine-tuning on families held out of pretraining (docs/AGENT.md, "Online fine-tuning"). For
# each family F (periodic interference, drifting speeds): pretrain without F, then run a 16-node
# cluster of F for STEPS steps (default 20,000) with the frozen policy, the same policy learning online
# (policy.learn: true; three runs, the updates run on a worker thread so runs differ) and the
# heuristics; then, on a new seed of F, the held-out policy and each run's fine-tuned policy
# (OUT/F/learningK/dynamix/policy.pt), both frozen. Writes OUT/F/curve.md (throughput / ideal per
# fifth of each run) and OUT/F/curve.png. Every further argument KEY=VALUE is a --set for every
# dynamix run (e.g. policy.rules_off=tracking: a family the rules no longer cover, so that something
# is left to learn); FAMILIES picks the families (default "periodic drift").
# Usage: [FAMILIES="drift"] scripts/experiments/online_finetune.sh [OUT [STEPS [KEY=VALUE ...]]]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-runs/online_finetune}
steps=${2:-20000}
[[ $steps =~ ^[0-9]+$ && $steps -ge 1000 ]] || { echo "online_finetune.sh: STEPS must be a whole number >= 1000, got '$steps'" >&2; exit 2; }
dx=()  # --set arguments of every dynamix run
for kv in "${@:3}"; do
  [[ $kv == ?*=* ]] || { echo "online_finetune.sh: '$kv' is not KEY=VALUE" >&2; exit 2; }
  dx+=(--set "$kv")
done
families=${FAMILIES:-periodic drift}
for family in $families; do
  [[ $family == periodic || $family == drift ]] || { echo "online_finetune.sh: no family '$family' (periodic, drift)" >&2; exit 2; }
done
bin=${DYNAMIX_BIN:-build/bin/dynamix}
py=${PYTHON:-/usr/bin/python3}
# Each family's scenario, written only for the families run.
periodic_scenario() {
  "$py" - "$1" "$steps" <<'PY'
import sys
steps = int(sys.argv[2])
events = "\n".join(f"    - {{at_step: {t}, ranks: [2, 9], slowdown: 3.0, duration_steps: 20}}"
                   for t in range(100, steps, 40))
open(sys.argv[1], "w").write(f"""# Held out: 2 of 16 ranks 3x slower for 20 of every 40 steps.
sim:
  nodes: 16
  seed: 5
  max_steps: {steps}
  profile: {{classes: [{{count: 16, speed: 1.0}}]}}
  events:
{events}
  workload: {{alpha_s: 0.004, beta_s: 0.0004, grad_bytes: 4.5e7, bandwidth_gbps: 25, latency_us: 20,
             target_progress: 1.0e12, noise: 0.05}}
batch: {{init: 32, min: 4, max: 256, global: fixed}}
policy: {{name: static, window: 10}}
""")
PY
}
drift_scenario() {
  cat >"$1" <<YAML
# Held out: 16 ranks in 4 groups, each group's speed moving smoothly between 1x and 4x slower every
# 150 steps, a quarter of a cycle apart.
sim:
  nodes: 16
  seed: 9
  max_steps: $steps
  profile: {classes: [{count: 16, speed: 1.0}]}
  events:
    - {at_step: 0, ranks: [0, 4, 8, 12], slowdown: 4.0, period_steps: 150}
    - {at_step: 38, ranks: [1, 5, 9, 13], slowdown: 4.0, period_steps: 150}
    - {at_step: 75, ranks: [2, 6, 10, 14], slowdown: 4.0, period_steps: 150}
    - {at_step: 113, ranks: [3, 7, 11, 15], slowdown: 4.0, period_steps: 150}
  workload: {alpha_s: 0.004, beta_s: 0.0004, grad_bytes: 4.5e7, bandwidth_gbps: 25, latency_us: 20,
             target_progress: 1.0e12, noise: 0.05}
batch: {init: 32, min: 4, max: 256, global: fixed}
policy: {name: static, window: 10}
YAML
}
for family in $families; do
  d="$out/$family"
  mkdir -p "$d"
  case $family in
    periodic) periodic_scenario "$d/scenario.yaml" ;;
    drift) drift_scenario "$d/scenario.yaml" ;;
  esac
  "$bin" agent pretrain --seed 1 --exclude "$family" --output "$d/held_out.pt" --log-every 1000 >"$d/pretrain.log"
  "$bin" sim --config "$d/scenario.yaml" --policies proportional,gns --set "output.dir=$d" >/dev/null
  "$bin" sim --config "$d/scenario.yaml" --policies dynamix "${dx[@]}" --set "policy.checkpoint=$d/held_out.pt" \
    --set policy.learn=false --set "output.dir=$d/frozen" >/dev/null
  for k in 1 2 3; do
    "$bin" sim --config "$d/scenario.yaml" --policies dynamix "${dx[@]}" --set "policy.checkpoint=$d/held_out.pt" \
      --set policy.learn=true --set "output.dir=$d/learning$k" >/dev/null
  done
  # After the run: what was learned, frozen, on a seed none of the runs saw.
  "$bin" sim --config "$d/scenario.yaml" --policies dynamix "${dx[@]}" --set "policy.checkpoint=$d/held_out.pt" \
    --set policy.learn=false --set sim.seed=1000 --set "output.dir=$d/new_seed_held_out" >/dev/null
  for k in 1 2 3; do
    "$bin" sim --config "$d/scenario.yaml" --policies dynamix "${dx[@]}" --set "policy.checkpoint=$d/learning$k/dynamix/policy.pt" \
      --set policy.learn=false --set sim.seed=1000 --set "output.dir=$d/new_seed_learned$k" >/dev/null
  done
  echo "## $family (held out of pretraining)" | tee "$d/curve.md"
  "$py" scripts/experiments/finetune_curve.py "$d" proportional gns frozen/dynamix learning1/dynamix \
    learning2/dynamix learning3/dynamix new_seed_held_out/dynamix new_seed_learned1/dynamix \
    new_seed_learned2/dynamix new_seed_learned3/dynamix | tee -a "$d/curve.md"
done
