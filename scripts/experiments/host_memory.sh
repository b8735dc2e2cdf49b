#!/usr/bin/env bash
# Training step time per sample against the per-rank batch, with freed host memory kept for reuse
# (train.keep_host_memory: true, the default) and with glibc's defaults (false); one binary, the
# two interleaved. 2 equal ranks of the Fashion-MNIST CNN, 30 steps, no evaluation.
# Usage: scripts/experiments/host_memory.sh OUTDIR [REPS] [BATCH ...]   (defaults: 2; 32 64 128 200 400)
# Prints per run: each rank's median compute time over steps 6-30 divided by B (us per sample), the
# median step time, the run's wall time and each rank's peak RSS (GNU time's %M). docs/RESULTS.md §4.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: $0 OUTDIR [REPS] [BATCH ...]}
reps=${2:-2}
shift $(($# < 2 ? $# : 2))
batches=("$@")
((${#batches[@]})) || batches=(32 64 128 200 400)
bin=${DYNAMIX_BIN:-build/bin/dynamix}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
for rep in $(seq 1 "$reps"); do
  for b in "${batches[@]}"; do
    for keep in true false; do
      run=$out/b$b.keep_$keep.r$rep
      rm -rf "$run" "$run.rss"
      start=$(date +%s.%N)
      mpirun -np 2 --oversubscribe --bind-to none /usr/bin/time -f "rss_kb %M" -a -o "$run.rss" \
        "$bin" train --config configs/fashion_mnist_hetero.yaml --set "batch.init=[$b,$b]" \
        --set policy.name=static --set "hetero.slowdown=[1,1]" --set train.max_steps=30 --set train.eval_every=0 \
        --set train.target_accuracy=null --set "train.keep_host_memory=$keep" --set "output.dir=$run" \
        >"$run.log" 2>&1
      wall=$(python3 -c "import time; print(f'{time.time() - $start:.2f}')")
      python3 - "$run" "$b" "$keep" "$rep" "$wall" <<'PY'
import json, statistics, sys
run, b, keep, rep, wall = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
steps = [json.loads(line) for line in open(f"{run}/metrics.jsonl")][5:]
per_sample = [round(statistics.median(s["compute_time"][r] for s in steps) / b * 1e6) for r in range(2)]
step_ms = round(statistics.median(s["step_time"] for s in steps) * 1000, 1)
rss = [int(line.split()[1]) // 1024 for line in open(f"{run}.rss") if line.startswith("rss_kb")]
print(f"B={b} keep={keep} rep={rep} us/sample {per_sample} step ms {step_ms} wall s {wall} peak RSS MB {rss}")
PY
    done
  done
done
