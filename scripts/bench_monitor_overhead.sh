#!/usr/bin/env bash
# Step time of the 4-rank heterogeneous Fashion-MNIST run with monitoring off, eBPF and /proc,
# interleaved over repeats so machine drift hits every variant alike. Prints mean step time per
# variant and run (steps 11..N, the first ten warm up). Usage: scripts/bench_monitor_overhead.sh [REPEATS] [STEPS]
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-2}
steps=${2:-200}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d)
for r in $(seq "$repeats"); do
  for v in off ebpf procfs; do
    sets=(--set policy.name=static --set train.max_steps="$steps" --set train.eval_every=0 --set output.checkpoint_every=0
          --set output.dir="$out/$v-$r")
    case $v in
      off) sets+=(--set monitor.enabled=false) ;;
      ebpf) sets+=(--set monitor.ebpf=on) ;;
      procfs) sets+=(--set monitor.ebpf=off) ;;
    esac
    mpirun -np 4 --oversubscribe --bind-to none build/bin/dynamix train \
      --config configs/fashion_mnist_hetero.yaml "${sets[@]}" > "$out/$v-$r.log" 2>&1
  done
done
/usr/bin/env python3 - "$out" <<'PY'
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
rows = {}
for d in sorted(out.iterdir()):
    if not d.is_dir():
        continue
    v, r = d.name.rsplit("-", 1)
    m = [json.loads(l) for l in open(d / "metrics.jsonl")][10:]
    src = json.loads((d / "summary.json").read_text())["monitor_source"]
    rows.setdefault((v, src), []).append(statistics.mean(x["step_time"] for x in m))
base = statistics.mean(rows[[k for k in rows if k[0] == "off"][0]])
print(f"{'variant':10s} {'source':8s} {'mean step (ms)':>15s} {'runs (ms)':>24s} {'vs off':>8s}")
for (v, src), t in rows.items():
    runs = ", ".join(f"{1e3 * x:.1f}" for x in t)
    print(f"{v:10s} {src:8s} {1e3 * statistics.mean(t):15.2f} {runs:>24s} {statistics.mean(t) / base:8.4f}")
PY
rm -rf "$out"
