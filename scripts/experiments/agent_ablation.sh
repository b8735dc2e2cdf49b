#!/usr/bin/env bash
# Ablation of the dynamix state by feature group: pretrains one policy per removed group (same seed
# and episodes as the shipped policy), evaluates each on the public simulator suite, and writes
# ablation.md (docs/AGENT.md, "Ablation"). Usage: scripts/experiments/agent_ablation.sh [OUT] [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-runs/agent_ablation}
seeds=${2:-3}
bin=${DYNAMIX_BIN:-build/bin/dynamix}
mkdir -p "$out"
for group in none balance timing memory system network statistics; do
  ablate=()
  [[ $group != none ]] && ablate=(--ablate "$group")
  echo "== $group: pretrain"
  "$bin" agent pretrain --seed 1 "${ablate[@]}" --output "$out/$group.pt" --log-every 1000 >"$out/$group.pretrain.log"
  echo "== $group: eval"
  "$bin" agent eval --suite configs/agent_suite --seeds "$seeds" --policies dynamix \
    --set "policy.checkpoint=$out/$group.pt" --output "$out/eval_$group" >"$out/$group.eval.log"
done
python3 scripts/experiments/ablation_table.py "$out" | tee "$out/ablation.md"
