#!/usr/bin/env bash
# Ablation of the dynamix policy's engineered rules (agent/ppo/rules.h): the shipped policy on the
# public simulator suite with each rule switched off in turn (policy.rules_off), then
# rule_ablation.md, the table of docs/RESULTS.md §3a. A suite of random clusters
# (scripts/experiments/random_suite.py) can stand in for the public one.
# Usage: scripts/experiments/rule_ablation.sh [OUT] [SEEDS] [SUITE]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-runs/rule_ablation}
seeds=${2:-3}
suite=${3:-configs/agent_suite}
bin=${DYNAMIX_BIN:-build/bin/dynamix}
rules=(none start_check change_alarm tracking paid_moves noise_split homogeneous_hold recurring_hold short_spells
  slowdown_return level_shifts)
mkdir -p "$out"
for rule in "${rules[@]}"; do
  off=()
  [[ $rule != none ]] && off=(--set "policy.rules_off=[$rule]")
  echo "== $rule"
  "$bin" agent eval --suite "$suite" --seeds "$seeds" --policies dynamix "${off[@]}" --output "$out/eval_$rule" \
    >"$out/$rule.eval.log"
done
python3 scripts/experiments/ablation_table.py "$out" --label "rule off" "${rules[@]}" | tee "$out/rule_ablation.md"
