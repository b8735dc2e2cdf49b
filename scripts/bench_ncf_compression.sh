#!/usr/bin/env bash
# End-to-end gradient compression on an embedding-heavy model (configs/ncf_sparse.yaml): for
# 2 and 4 ranks, comm.compression none vs hlc, on this machine's shared memory and on emulated
# 10 GbE and 1 GbE links (hetero.bandwidth_mbps: the delay follows the bytes actually sent).
# Prints a markdown table (mean over steps after the 5th). Usage: scripts/bench_ncf_compression.sh [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-40}
out=runs/bench_ncf
mkdir -p "$out"
mpi=(mpirun --oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)
for np in 2 4; do
  for bw in 0 10000 1000 100; do
    for codec in none hlc; do
      dir=$out/np${np}_bw${bw}_${codec}
      rm -rf "$dir"
      "${mpi[@]}" -np "$np" build/bin/dynamix train --config configs/ncf_sparse.yaml \
        --set "output.dir=$dir" --set "comm.compression=$codec" --set "train.max_steps=$steps" \
        --set "hetero.bandwidth_mbps=[$bw]" > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
    done
  done
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("| ranks | link | codec | MB/step dense | MB/step sent | sent/dense | union density | step s | comm+wait s | test acc |")
print("|---|---|---|---|---|---|---|---|---|---|")
for run in sorted(out.glob("np*_bw*_*"), key=lambda p: (p.name.split("_")[0], -(int(p.name.split("_")[1][2:]) or 10**9), p.name)):
    if not run.is_dir():
        continue
    np_, bw, codec = run.name.split("_")
    lines = [json.loads(l) for l in open(run / "metrics.jsonl")][5:]
    s = json.loads((run / "summary.json").read_text())
    mean = lambda xs: sum(xs) / len(xs)
    dense = mean([m["comm"]["bytes"] for m in lines]) / 1e6
    sent = mean([m["comm"]["wire_bytes"] for m in lines]) / 1e6
    dens = mean([m["comm"].get("union_density", 1.0) for m in lines])
    step = mean([m["step_time"] for m in lines])
    comm = mean([max(c + w for c, w in zip(m["comm_time"], m["wait_time"])) for m in lines])
    link = {"bw0": "shared memory", "bw10000": "10 Gb/s", "bw1000": "1 Gb/s", "bw100": "100 Mb/s"}[bw]
    acc = s["final_test_accuracy"]
    print(f"| {np_[2:]} | {link} | {codec} | {dense:.1f} | {sent:.1f} | {sent / dense:.3f} | "
          f"{dens if codec == 'hlc' else float('nan'):.4f} | {step:.3f} | {comm:.3f} | {acc:.4f} |")
PY
