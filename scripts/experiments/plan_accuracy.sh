#!/usr/bin/env bash
# How far does the batch plan alone move a run's final accuracy? With a fixed global batch the
# weighted gradient is the mean over the same B samples whatever the split, so any plan trains the
# same model up to float rounding; this runs the static policy once per fixed plan (emulated
# slowdowns off: only the arithmetic matters) and leaves runs fixed.K/ that accuracy_spread.py
# compares with policies' runs. A fixed plan is deterministic: the same plan gives the same accuracy.
# Usage: scripts/experiments/plan_accuracy.sh CONFIG OUTDIR PLAN [PLAN ...]   (PLAN like 40,40,30,18)
# DYNAMIX_BIN names another dynamix binary (default build/bin/dynamix).
set -euo pipefail
cd "$(dirname "$0")/../.."
(($# >= 3)) || { echo "usage: $0 CONFIG OUTDIR PLAN [PLAN ...]" >&2; exit 2; }
config=$1 out=$2
shift 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
k=0
for plan in "$@"; do
  [[ $plan =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "plan_accuracy: '$plan' is not a comma-separated list of batch sizes" >&2; exit 2; }
  ranks=$(tr , '\n' <<<"$plan" | wc -l)
  ones=$(printf '1%.0s,' $(seq "$ranks")); ones=${ones%,}
  dir=$out/fixed.$k
  mpirun -np "$ranks" --oversubscribe --bind-to none "${DYNAMIX_BIN:-build/bin/dynamix}" train --config "$config" --overwrite \
    --set policy.name=static --set "batch.init=[$plan]" --set "hetero.slowdown=[$ones]" \
    --set output.dir="$dir" >"$dir.log" 2>&1 || { echo "plan_accuracy: plan [$plan] failed (see $dir.log)" >&2; exit 1; }
  echo "plan [$plan]: $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['final_test_accuracy'])" "$dir/summary.json")"
  k=$((k + 1))
done
python3 scripts/experiments/accuracy_spread.py "$out"
