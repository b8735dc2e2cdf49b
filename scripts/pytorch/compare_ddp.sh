#!/usr/bin/env bash
# DYNAMIX against PyTorch DDP (gloo) on the same machine, config, data, model, init and sample order.
#   (a) 4 homogeneous ranks:                         DYNAMIX static  vs  DDP
#   (b) 4 heterogeneous ranks (slowdowns 1,1,1.5,2.5): DYNAMIX static, proportional, dynamix  vs  DDP
#       (DDP cannot change per-rank batches: uniform 32 each, as DYNAMIX static starts)
# Runs are interleaved (the order rotates every repetition so machine noise hits all alike); prints
# every run and a table of medians: throughput, total time, time to target accuracy, final accuracy.
# Usage: scripts/pytorch/compare_ddp.sh OUTDIR [REPS=2] [-- extra --set args for both frameworks]
#   e.g. scripts/pytorch/compare_ddp.sh runs/ddp_cmp 2 -- train.max_steps=300 train.eval_every=100
# Env: DYNAMIX_BIN (default build/bin/dynamix), PYTHON (default /usr/bin/python3: Debian's, with torch).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: compare_ddp.sh OUTDIR [REPS] [-- key=value ...]}
reps=${2:-2}
shift $(($# >= 2 ? 2 : 1))
extra=()
if (($#)) && [[ $1 == -- ]]; then shift; extra=("$@"); fi
bin=${DYNAMIX_BIN:-build/bin/dynamix}
py=${PYTHON:-/usr/bin/python3}
config=configs/fashion_mnist_hetero.yaml
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
sets=(--set 'batch.init=[32,32,32,32]' --set output.checkpoint_every=0)
for kv in "${extra[@]}"; do sets+=(--set "$kv"); done

# name  scenario  slowdowns  system
runs=(
  "homo.dynamix_static homo [1.0] static"
  "homo.ddp homo [1.0] ddp"
  "hetero.dynamix_static hetero [1.0,1.0,1.5,2.5] static"
  "hetero.ddp hetero [1.0,1.0,1.5,2.5] ddp"
  "hetero.dynamix_proportional hetero [1.0,1.0,1.5,2.5] proportional"
  "hetero.dynamix_dynamix hetero [1.0,1.0,1.5,2.5] dynamix"
)
n=${#runs[@]}
echo "date: $(date -u +%FT%TZ)  host: $(nproc) cores  load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < reps; r++)); do
  for ((k = 0; k < n; k++)); do
    read -r name scen slow sys <<<"${runs[$(((k + r) % n))]}"
    dir=$out/$name.$r
    rm -rf "$dir"
    if [[ $sys == ddp ]]; then
      cmd=("$py" scripts/pytorch/ddp_baseline.py --nproc 4 --config "$config" "${sets[@]}"
        --set "hetero.slowdown=$slow" --set "output.dir=$dir")
    else
      cmd=(mpirun -np 4 --oversubscribe --bind-to none "$bin" train --config "$config" --overwrite "${sets[@]}"
        --set "hetero.slowdown=$slow" --set "policy.name=$sys" --set "output.dir=$dir")
    fi
    "${cmd[@]}" >"$dir.log" 2>&1 || echo "run $name.$r FAILED (exit $?; see $dir.log)"
    echo "$name.$r [load $(cut -d' ' -f1 /proc/loadavg)]: $(grep '^result:' "$dir.log" | tail -n 1)"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$out" <<'PY'
import json, statistics, sys
from pathlib import Path
out = Path(sys.argv[1])
rows = [("(a) homogeneous", "homo", "dynamix_static", "DYNAMIX static"),
        ("(a) homogeneous", "homo", "ddp", "PyTorch DDP"),
        ("(b) 1,1,1.5,2.5", "hetero", "dynamix_static", "DYNAMIX static"),
        ("(b) 1,1,1.5,2.5", "hetero", "ddp", "PyTorch DDP (uniform)"),
        ("(b) 1,1,1.5,2.5", "hetero", "dynamix_proportional", "DYNAMIX proportional"),
        ("(b) 1,1,1.5,2.5", "hetero", "dynamix_dynamix", "DYNAMIX dynamix")]
def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None
def f(v, fmt):
    return "n/a" if v is None else format(v, fmt)
print("| scenario | system | runs | samples/s | total time (s) | time to target (s) | final test acc. | mean wait | runs: total s / samples/s |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
meds = {}
for scen_label, scen, name, label in rows:
    s = [json.loads(p.read_text()) for p in sorted(out.glob(f"{scen}.{name}.*/summary.json"))]
    if not s:
        print(f"| {scen_label} | {label} | 0 | no completed run | | | | | |"); continue
    m = {k: med([x.get(k) for x in s]) for k in ("mean_throughput", "total_time_s", "time_to_target_s",
                                                 "final_test_accuracy", "mean_wait_fraction")}
    reached = sum(x.get("time_to_target_s") is not None for x in s)
    meds[(scen, name)] = m
    indiv = ", ".join(f"{x['total_time_s']:.1f} / {x['mean_throughput']:.0f}" for x in s)
    print(f"| {scen_label} | {label} | {len(s)} | {f(m['mean_throughput'], '.0f')} | {f(m['total_time_s'], '.1f')} | "
          f"{f(m['time_to_target_s'], '.1f')} ({reached}/{len(s)} reached) | {f(m['final_test_accuracy'], '.4f')} | "
          f"{f(m['mean_wait_fraction'], '.3f')} | {indiv} |")
print()
for scen in ("homo", "hetero"):
    d, p = meds.get((scen, "dynamix_static")), meds.get((scen, "ddp"))
    if d and p:
        print(f"{scen}: DYNAMIX static / DDP throughput = {d['mean_throughput'] / p['mean_throughput']:.3f}x")
    for name in ("dynamix_proportional", "dynamix_dynamix"):
        q = meds.get((scen, name))
        if q and p and q["time_to_target_s"] and p["time_to_target_s"]:
            print(f"{scen}: {name} time to target / DDP = {q['time_to_target_s'] / p['time_to_target_s']:.3f}x, "
                  f"total time / DDP = {q['total_time_s'] / p['total_time_s']:.3f}x")
PY
