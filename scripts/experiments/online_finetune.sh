#!/usr/bin/env bash
# Online fine-tuning on a family held out of pretraining (docs/AGENT.md, "Online fine-tuning"):
# pretrains without periodic interference, then runs a 16-node cluster with fast periodic
# interference for 2000 decision windows three ways: the frozen policy, the same policy learning
# online (policy.learn: true) and gns. Writes curve.md (throughput / ideal per fifth of the run)
# and curve.png. Usage: scripts/experiments/online_finetune.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-runs/online_finetune}
bin=${DYNAMIX_BIN:-build/bin/dynamix}
mkdir -p "$out"
"$bin" agent pretrain --seed 1 --exclude periodic --output "$out/no_periodic.pt" --log-every 1000 >"$out/pretrain.log"
python3 - "$out/periodic_fast.yaml" <<'PY'
import sys
events = "\n".join(f"    - {{at_step: {t}, ranks: [2, 9], slowdown: 3.0, duration_steps: 20}}"
                   for t in range(100, 20000, 40))
open(sys.argv[1], "w").write(f"""# Held out of pretraining: 2 of 16 ranks 3x slower for 20 of every 40 steps.
sim:
  nodes: 16
  seed: 5
  max_steps: 20000
  profile: {{classes: [{{count: 16, speed: 1.0}}]}}
  events:
{events}
  workload: {{alpha_s: 0.004, beta_s: 0.0004, grad_bytes: 4.5e7, bandwidth_gbps: 25, latency_us: 20,
             target_progress: 1.0e12, noise: 0.05}}
batch: {{init: 32, min: 4, max: 256, global: fixed}}
policy: {{name: static, window: 10}}
""")
PY
cfg="$out/periodic_fast.yaml"
"$bin" sim --config "$cfg" --policies gns --set "output.dir=$out/gns" >/dev/null
for learn in false true; do
  "$bin" sim --config "$cfg" --policies dynamix --set "policy.checkpoint=$out/no_periodic.pt" \
    --set "policy.learn=$learn" --set "output.dir=$out/learn_$learn" >/dev/null
done
"${PYTHON:-/usr/bin/python3}" scripts/experiments/finetune_curve.py "$out" gns/gns learn_false/dynamix learn_true/dynamix | tee "$out/curve.md"
