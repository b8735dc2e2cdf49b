#!/usr/bin/env bash
# Real runs of several policies on one config, interleaved (policy order rotates every repetition so
# machine noise hits all alike); prints one row per run, the per-policy medians from summary.json,
# and each policy's times over the first policy's, round by round (pairs, with their geometric mean).
# Usage: scripts/experiments/compare_policies.sh CONFIG REPS OUTDIR [policy ...] [-- extra --set args]
# A policy written POLICY@BINARY runs with that dynamix binary (e.g. dynamix@/tmp/old/dynamix, an
# earlier build), labelled POLICY@<binary path with / as _>: two builds side by side in one rotation.
# A policy written POLICY+KEY=VALUE[+KEY=VALUE...] runs with those --set overrides of its own, and
# keeps them in its label (e.g. dynamix+policy.learn=true against dynamix: online fine-tuning's
# cost); both forms combine, POLICY+KEY=VALUE@BINARY.
# Each run writes OUTDIR/LABEL.K (its log LABEL.K.log), with every character of LABEL that a path
# would misread (the / of a checkpoint path, a YAML flow value's spaces and braces) as _.
# Each run has as many ranks as the config's batch.init list has entries (after the -- --set
# overrides), or $DYNAMIX_NP. Each run's ranks see DYNAMIX_ROUND, its repetition (0, 1, ...): a
# wrapper binary keys its own randomness to it, the same for every policy of a round and another in
# the next (spells_rank.sh seeds its spells so).
# DYNAMIX_FIXED_LAYOUT=1 runs every rank without address-space randomisation (`setarch -R`): on
# the 2-core VM two static runs of a round differed by 6 % (standard deviation) with randomisation
# and by 2 % without it (docs/RESULTS.md §1, "Stop 76"), so a set resolves about three times
# finer. Each binary and command line then has one memory layout for all its runs; the length of
# its arguments places its stack, so each run directory is padded with _ to make every policy's
# command line equally long. A comparison of two policies then holds for that one layout: the
# spells cell gave dynamix 1.034x static with one padding and 0.994x with another (8 rounds each),
# so read such a set as one draw of the layout, not as the policies' mean.
# DYNAMIX_FIXED_LAYOUT=round does the same, but each round in a layout of its own, which all the
# policies of the round share: every rank of round r gets DYNAMIX_LAYOUT_PAD, a variable of
# 16 * ((97 r + 1) mod 256) characters, and the strings above the stack move by as much (the stack
# pointer moves in steps of 16 bytes, over a 4 KiB page in 256 rounds). Pairs keep the fixed
# layout's small scatter while the set averages over as many layouts as it has rounds.
# Exits 1 if any run failed (the table then shows the runs that completed).
# scripts/experiments/run_suite.py does the same over several scenarios and seeds, with CSV and
# Markdown tables, ratios to static and the best heuristic, failure reports, and plots.
set -euo pipefail
cd "$(dirname "$0")/../.."
config=$1 reps=$2 out=$3
shift 3
policies=() extra=()
while (($#)); do
  if [[ $1 == -- ]]; then shift; extra=("$@"); break; fi
  policies+=("$1"); shift
done
((${#policies[@]})) || policies=(static proportional gns dynamix)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
layout=() per_round=0
case ${DYNAMIX_FIXED_LAYOUT:-0} in
  0) ;;
  round) per_round=1 ;&
  1)
    layout=(setarch "$(uname -m)" -R)
    "${layout[@]}" true 2>/dev/null ||
      { echo "compare_policies: DYNAMIX_FIXED_LAYOUT=$DYNAMIX_FIXED_LAYOUT needs 'setarch $(uname -m) -R', which failed here" >&2; exit 2; }
    ;;
  *) echo "compare_policies: DYNAMIX_FIXED_LAYOUT='$DYNAMIX_FIXED_LAYOUT' is not 0, 1 or round" >&2; exit 2;;
esac
# Ranks: $DYNAMIX_NP, else the length of the config's batch.init list after the -- --set overrides
# (run_suite.py's rank_count). A single batch.init value names no rank count: 4 then, and the
# script says so.
if [[ -n ${DYNAMIX_NP:-} ]]; then
  [[ $DYNAMIX_NP =~ ^[1-9][0-9]*$ ]] || { echo "compare_policies: DYNAMIX_NP='$DYNAMIX_NP' is not a rank count" >&2; exit 2; }
  np=$DYNAMIX_NP
else
  # Prints the count, or nothing for a single batch.init value; a config it cannot read is an error.
  np=$(python3 - "$config" "${extra[@]}" <<'PY'
import sys
from pathlib import Path
sys.path.insert(0, "scripts/experiments")
import run_suite
args = sys.argv[2:]
sets = [args[k + 1] for k in range(len(args) - 1) if args[k] == "--set"]
try:
    print(run_suite.rank_count({"name": sys.argv[1], "ranks": None, "config": Path(sys.argv[1])}, sets))
except run_suite.SuiteError:
    pass
except Exception as e:
    sys.exit(f"compare_policies: cannot read {sys.argv[1]}: {e}")
PY
) || exit 2
  if [[ -z $np ]]; then
    np=4
    echo "compare_policies: $config gives batch.init as one value, so no rank count: running 4 ranks (set DYNAMIX_NP=N for N)" >&2
  fi
fi
# Each policy checked once: its name, binary, label, and its KEY=VALUE settings as written (joined
# by +, which no setting holds; a VALUE may hold spaces, as hetero.events does).
labels=() names=() bins=() sets=()
for p in "${policies[@]}"; do
  IFS=+ read -r -a spec <<<"${p%%@*}"
  for kv in "${spec[@]:1}"; do
    [[ $kv == ?*=* ]] || { echo "compare_policies: '$kv' in ${p%%@*} is not KEY=VALUE" >&2; exit 2; }
  done
  own=("${spec[@]:1}")
  names+=("${spec[0]}") sets+=("$(IFS=+; echo "${own[*]}")") bins+=(build/bin/dynamix) labels+=("$p")
  if [[ $p == *@* ]]; then
    [[ -x ${p#*@} ]] || { echo "compare_policies: ${p#*@} is not an executable" >&2; exit 2; }
    bins[-1]=${p#*@} labels[-1]="${p%%@*}@$(tr / _ <<<"${p#*@}")"
  fi
done
# Each label's run directories: the label with every character a path or a shell would read
# specially (/ in a checkpoint path, spaces and braces in a YAML flow value) as _, numbered where two
# labels would meet.
stems=()
for ((k = 0; k < ${#labels[@]}; k++)); do
  stem=$(LC_ALL=C tr -c 'A-Za-z0-9._=+@,-' '_' <<<"${labels[$k]}")
  stem=${stem%_}  # the here-string's newline
  for s in "${stems[@]}"; do [[ $s != "$stem" ]] || { stem="$stem-$k"; break; }; done
  stems+=("$stem")
done
# N underscores (a padding).
underscores() { printf '%*s' "$1" '' | tr ' ' _; }
# Policy i's settings of its own as dynamix arguments, in `own`.
own_args() {
  own=()
  IFS=+ read -r -a kvs <<<"${sets[$1]}"
  for kv in "${kvs[@]}"; do own+=(--set "$kv"); done
}
# With a fixed layout every run's command line is as long as the longest (its length places the
# stack): the shorter ones' run directories are padded with _.
if ((${#layout[@]})); then
  lengths=() most=0
  for ((i = 0; i < ${#labels[@]}; i++)); do
    own_args "$i"
    n=$((${#bins[$i]} + ${#names[$i]} + ${#stems[$i]}))
    for a in "${own[@]}"; do n=$((n + ${#a} + 1)); done
    lengths+=("$n")
    if ((n > most)); then most=$n; fi
  done
  for ((i = 0; i < ${#labels[@]}; i++)); do
    stems[i]+=$(underscores $((most - lengths[i])))
  done
fi
mkdir -p "$out"
failed=0
for ((r = 0; r < reps; r++)); do
  round_env=(DYNAMIX_ROUND="$r")
  ((per_round == 0)) || round_env+=(DYNAMIX_LAYOUT_PAD="$(underscores $((16 * ((97 * r + 1) % 256))))")
  for ((k = 0; k < ${#policies[@]}; k++)); do
    i=$(((k + r) % ${#policies[@]}))
    own_args "$i"
    dir=$out/${stems[$i]}.$r
    env "${round_env[@]}" "${layout[@]}" mpirun -np "$np" --oversubscribe --bind-to none "${bins[$i]}" train --config "$config" --overwrite \
      --set policy.name="${names[$i]}" --set output.dir="$dir" "${own[@]}" "${extra[@]}" >"$dir.log" 2>&1 ||
      { echo "run ${labels[$i]}.$r FAILED (exit $?; see $dir.log)"; failed=$((failed + 1)); }
    tail -n 1 "$dir.log"
  done
done
python3 - "$out" "$reps" "${#labels[@]}" "${labels[@]}" "${stems[@]}" <<'PY'
import glob, json, math, statistics, sys
from pathlib import Path
sys.path.insert(0, "scripts/experiments")
import wait_split
out, reps, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
policies, stems = sys.argv[4:4 + n], sys.argv[4 + n:]
# imbal: the part of the wait that unequal mean times under one plan cause (wait_split.py)
print(f"{'policy':14} {'runs':>4} {'total_s':>8} {'ttt_s':>7} {'acc':>7} {'wait':>6} {'imbal':>6} {'samples/s':>9}")
by_round = {}  # stem -> {round: summary.json}: each run's summary read once, for the medians and the pairs
for p, stem in zip(policies, stems):
    p = "".join(p.split())  # one column: a YAML flow value's spaces would split it
    runs = [f.parent for f in sorted(out.glob(f"{glob.escape(stem)}.*/summary.json"))]
    rows = [json.loads((d / "summary.json").read_text()) for d in runs]
    by_round[stem] = {int(d.name.rsplit(".", 1)[1]): row for d, row in zip(runs, rows)}
    if not rows:
        print(f"{p:14} no completed run"); continue
    for r, d in zip(rows, runs):
        r["imbalance"] = wait_split.split(wait_split.step_rows(d))[1]
    med = lambda k: statistics.median(r[k] for r in rows if r.get(k) is not None) if any(r.get(k) is not None for r in rows) else float("nan")
    print(f"{p:14} {len(rows):4d} {med('total_time_s'):8.1f} {med('time_to_target_s'):7.1f} "
          f"{med('final_test_accuracy'):7.4f} {med('mean_wait_fraction'):6.3f} {med('imbalance'):6.3f} {med('mean_throughput'):9.0f}")

# Pairs: each policy against the first, round by round. The runs of a round ran one after the
# other, in the same stretch of the machine's speed, so where runs scatter by several percent their ratios
# say more than the medians do: the ratios, their geometric mean with its standard error as a
# factor, and the rounds the policy was the faster in. Rounds where either run is missing, or did
# not reach the target (time to target), are left out.
if n > 1:
    print(f"pairs, each policy's time over {''.join(policies[0].split())}'s in the same round:")
    first = [by_round[stems[0]].get(r, {}) for r in range(reps)]
for p, stem in zip(policies[1:], stems[1:]):
    runs = [by_round[stem].get(r, {}) for r in range(reps)]
    for key, what in (("total_time_s", "total"), ("time_to_target_s", "to target")):
        ratios = []
        for r in range(reps):
            a, b = runs[r].get(key), first[r].get(key)
            if a is not None and b is not None and a > 0 and b > 0:
                ratios.append(a / b)
        if not ratios:
            continue
        logs = [math.log(x) for x in ratios]
        se = f" (x/ {math.exp(statistics.stdev(logs) / math.sqrt(len(logs))):.3f})" if len(logs) > 1 else ""
        print(f"{''.join(p.split()):14} {what:9} {' '.join(f'{x:.3f}' for x in ratios)} | geometric mean "
              f"{math.exp(statistics.fmean(logs)):.3f}{se}, faster in {sum(x < 1 for x in ratios)} of {len(ratios)}")
PY
# A failed run makes the comparison incomplete: say so in the exit status, for scripts and CI.
((failed == 0)) || { echo "compare_policies: $failed of $((reps * ${#policies[@]})) runs failed" >&2; exit 1; }
