#!/usr/bin/env bash
# Communication hidden under backward (comm.overlap) vs reduced after it: 2 ranks, static plan,
# ResNet-18 (CIFAR stem, 11.2 M parameters, 45 MB of gradients per step) on synthetic 32x32
# images, on this machine's shared memory and on emulated 10 Gb/s and 1 Gb/s links
# (hetero.bandwidth_mbps: each rank's allreduce takes what a ring over that link would).
# Overlap off (bucket 25 MB) vs on with 25 MB (the default), 5 MB and 2 MB buckets.
# Prints a markdown table (means over the steps after the 3rd).
# Usage: scripts/bench_overlap.sh [STEPS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-15}
batch=${2:-32}
out=runs/bench_overlap
mkdir -p "$out"
mpi=(mpirun --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
cat > "$out/config.yaml" <<YAML
model: resnet18
dataset: {name: synthetic, shape: [3, 32, 32], classes: 10, train_size: 4096, test_size: 64}
batch: {init: $batch}
train: {optimizer: sgd, lr: 0.05, momentum: 0.9, max_steps: $steps, eval_every: 0}
policy: {name: static}
monitor: {enabled: false}
output: {dir: unused}
YAML
runs=("false 25" "true 25" "true 5" "true 2")  # comm.overlap, comm.bucket_mb
for bw in 0 10000 1000; do
  for run in "${runs[@]}"; do
    read -r overlap mb <<< "$run"
    dir=$out/bw${bw}_overlap_${overlap}_mb${mb}
    rm -rf "$dir"
    "${mpi[@]}" -np 2 build/bin/dynamix train --config "$out/config.yaml" \
      --set "output.dir=$dir" --set "comm.overlap=$overlap" --set "comm.bucket_mb=$mb" \
      --set "hetero.bandwidth_mbps=[$bw]" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
  done
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
mean = lambda xs: sum(xs) / len(xs)
runs = [("false", "25"), ("true", "25"), ("true", "5"), ("true", "2")]
print("| link | overlap | bucket MB | grad MB/step | step s | compute s | comm+wait after backward s | speed-up |")
print("|---|---|---|---|---|---|---|---|")
for bw in ("0", "10000", "1000"):
    link = {"0": "shared memory", "10000": "10 Gb/s", "1000": "1 Gb/s"}[bw]
    base = None
    for ov, mb in runs:
        lines = [json.loads(l) for l in open(out / f"bw{bw}_overlap_{ov}_mb{mb}" / "metrics.jsonl")][3:]
        step = mean([m["step_time"] for m in lines])
        compute = mean([max(m["compute_time"]) for m in lines])
        exposed = mean([max(c + w for c, w in zip(m["comm_time"], m["wait_time"])) for m in lines])
        grad = mean([m["comm"]["bytes"] for m in lines]) / 1e6
        base = base or step
        print(f"| {link} | {ov} | {mb} | {grad:.1f} | {step:.3f} | {compute:.3f} | {exposed:.3f} | {base / step:.2f}x |")
PY
