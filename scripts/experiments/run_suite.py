#!/usr/bin/python3
"""Experiment runner: real `dynamix train` runs of several variants on several scenarios.

Usage: scripts/experiments/run_suite.py SUITE.yaml [--out DIR] [--reps N] [--max-steps N] ...

A suite file (see configs/experiments/fashion_mnist.yaml):

    name: fashion_mnist
    seeds: [1, 2]                 # train.seed of every run (default [1])
    reps: 1                       # repetitions of every (scenario, variant, seed) (default 1)
    set: [train.eval_every=50]    # overrides for every run (list of key=value, or a mapping)
    scenarios:
      - name: static_hetero
        config: configs/experiments/fm_static_hetero.yaml   # relative to the repository root
        set: {hetero.slowdown: [1, 1, 2, 4]}                # optional overrides
        ranks: 4                  # optional; default: len(batch.init) after the overrides
        prepare: [scripts/tools/fashion_to_cifar.py, data/cifar_fm]  # optional: a command (argv,
                                  # from the repository root) run once before the scenario's runs,
                                  # e.g. to write its data set; its failure stops the suite
    variants:                     # optional; default: static, proportional, gns, dynamix
      - static                    # a bare name: that policy, no overrides
      - {name: dynamix_adaptive, policy: dynamix, set: [batch.global=adaptive]}

Every run is `mpirun -np RANKS dynamix train --config CONFIG --set ...` (a variant with policy
`ddp`: `PYTHON scripts/pytorch/ddp_baseline.py --nproc RANKS --config CONFIG --set ...`, PyTorch
DistributedDataParallel on the same config with batch.init fixed; PYTHON is $DYNAMIX_PYTHON, else
Debian's /usr/bin/python3 where present, else this interpreter) with output.dir under
DIR/runs/SCENARIO/VARIANT/sSEED.rREP (log beside it). Variants are interleaved: their order
rotates for every (repetition, seed), so slow spells of a shared machine hit all alike. The
runner writes DIR/runs.jsonl (one line per run: status, exit code, summary), DIR/results.csv and
DIR/results.md (median and min-max over seeds x reps per scenario and variant, ratios to static
and to the best heuristic), and lists every failed run; it exits 1 if any run failed, after
writing everything. Binary: $DYNAMIX_BIN or build/bin/dynamix.
"""
import argparse
import csv
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT_VARIANTS = ["static", "proportional", "gns", "dynamix"]
POLICIES = {"static", "proportional", "gns", "dynamix", "ddp"}  # ddp: PyTorch DDP (scripts/pytorch)
HEURISTICS = ("proportional", "gns")
# (column stem, summary key, header in the Markdown table, format)
METRICS = [
    ("ttt_s", "time_to_target_s", "time to target (s)", "{:.1f}"),
    ("train_ttt_s", "training_time_to_target_s", "training time to target (s)", "{:.1f}"),
    ("total_s", "total_time_s", "total time (s)", "{:.1f}"),
    ("final_acc", "final_test_accuracy", "final acc.", "{:.4f}"),
    ("throughput", "mean_throughput", "samples/s", "{:.0f}"),
    ("wait", "mean_wait_fraction", "wait frac.", "{:.3f}"),
]


class SuiteError(Exception):
    pass


def override_text(key, value):
    """key=value for `--set`; lists and mappings as YAML flow (JSON is valid YAML)."""
    if isinstance(value, str):
        return f"{key}={value}"
    return f"{key}={json.dumps(value)}"


def read_overrides(node, where):
    """A list of 'key=value' strings or a mapping key: value -> list of 'key=value'."""
    if node is None:
        return []
    if isinstance(node, dict):
        return [override_text(k, v) for k, v in node.items()]
    if isinstance(node, list) and all(isinstance(s, str) and "=" in s for s in node):
        return list(node)
    raise SuiteError(f"{where}: expected a list of key=value strings or a mapping, got {node!r}")


def apply_override(cfg, text):
    """Applies one key.sub=value to a parsed config the way `dynamix --set` does."""
    key, _, raw = text.partition("=")
    parts = key.strip().split(".")
    node = cfg
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    try:
        node[parts[-1]] = yaml.safe_load(raw)
    except yaml.YAMLError:
        node[parts[-1]] = raw  # dynamix itself will report the bad value; the run then fails


def only_keys(node, allowed, where):
    if not isinstance(node, dict):
        raise SuiteError(f"{where}: expected a mapping, got {node!r}")
    unknown = sorted(set(node) - set(allowed))
    if unknown:
        raise SuiteError(f"{where}: unknown key(s) {', '.join(unknown)} (expected: {', '.join(allowed)})")


def load_suite(path, args):
    try:
        suite = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as e:
        raise SuiteError(f"{path}: {e}")
    only_keys(suite, ["name", "seeds", "reps", "set", "ranks", "scenarios", "variants"], str(path))
    seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else suite.get("seeds", [1])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise SuiteError(f"{path}: seeds: expected a non-empty list of integers")
    reps = args.reps if args.reps is not None else suite.get("reps", 1)
    if not isinstance(reps, int) or reps < 1:
        raise SuiteError(f"{path}: reps: expected an integer >= 1")
    common = read_overrides(suite.get("set"), f"{path}: set")
    if args.max_steps is not None:
        common.append(f"train.max_steps={args.max_steps}")
    common += args.set

    scenarios = []
    for k, s in enumerate(suite.get("scenarios") or []):
        where = f"{path}: scenarios[{k}]"
        only_keys(s, ["name", "config", "set", "ranks", "prepare"], where)
        if "name" not in s or "config" not in s:
            raise SuiteError(f"{where}: needs name and config")
        config = Path(s["config"])
        config = config if config.is_absolute() else REPO / config
        if not config.is_file():
            raise SuiteError(f"{where}: config {config} not found")
        prepare = s.get("prepare")
        if prepare is not None and (not isinstance(prepare, list) or not prepare or
                                    not all(isinstance(a, (str, int, float)) for a in prepare)):
            raise SuiteError(f"{where}.prepare: expected a command as a non-empty list of strings, got {prepare!r}")
        scenarios.append({"name": str(s["name"]), "config": config,
                          "set": read_overrides(s.get("set"), f"{where}.set"),
                          "ranks": s.get("ranks", suite.get("ranks")),
                          "prepare": [str(a) for a in prepare] if prepare else None})
    if not scenarios:
        raise SuiteError(f"{path}: scenarios: expected a non-empty list")

    variants = []
    for k, v in enumerate(suite.get("variants") or DEFAULT_VARIANTS):
        where = f"{path}: variants[{k}]"
        if isinstance(v, str):
            v = {"name": v, "policy": v}
        only_keys(v, ["name", "policy", "set"], where)
        if "name" not in v:
            raise SuiteError(f"{where}: needs a name")
        policy = v.get("policy", v["name"])
        if policy not in POLICIES:
            raise SuiteError(f"{where}: policy {policy!r} is not one of {', '.join(sorted(POLICIES))}")
        variants.append({"name": str(v["name"]), "policy": policy,
                         "set": read_overrides(v.get("set"), f"{where}.set")})
    names = [v["name"] for v in variants]
    if len(set(names)) != len(names) or len({s["name"] for s in scenarios}) != len(scenarios):
        raise SuiteError(f"{path}: scenario and variant names must be unique")
    if args.scenarios:
        scenarios = [s for s in scenarios if s["name"] in args.scenarios.split(",")]
    if args.variants:
        variants = [v for v in variants if v["name"] in args.variants.split(",")]
    if not scenarios or not variants:
        raise SuiteError("--scenarios/--variants left nothing to run")
    return {"name": suite.get("name", Path(path).stem), "seeds": seeds, "reps": reps, "set": common,
            "scenarios": scenarios, "variants": variants}


def rank_count(scenario, overrides):
    if scenario["ranks"] is not None:
        return int(scenario["ranks"])
    cfg = yaml.safe_load(scenario["config"].read_text()) or {}
    for o in overrides:
        apply_override(cfg, o)
    init = (cfg.get("batch") or {}).get("init")
    if not isinstance(init, list) or not init:
        raise SuiteError(f"scenario {scenario['name']}: batch.init is not a per-rank list; give ranks:")
    return len(init)


def plan_runs(suite, out):
    """Every run, in launch order: variants rotate for every (rep, seed)."""
    runs, turn = [], 0
    for rep in range(suite["reps"]):
        for seed in suite["seeds"]:
            n = len(suite["variants"])
            order = [suite["variants"][(k + turn) % n] for k in range(n)]
            turn += 1
            for sc in suite["scenarios"]:
                for v in order:
                    run_dir = out / "runs" / sc["name"] / v["name"] / f"s{seed}.r{rep}"
                    sets = (sc["set"] + suite["set"] + [f"policy.name={v['policy']}"] + v["set"] +
                            [f"train.seed={seed}", f"output.dir={run_dir}"])
                    runs.append({"scenario": sc["name"], "variant": v["name"], "policy": v["policy"],
                                 "seed": seed, "rep": rep, "dir": run_dir, "sc": sc, "sets": sets})
    return runs


def run_command(run, binary, np_):
    if run["policy"] == "ddp":
        python = os.environ.get("DYNAMIX_PYTHON") or ("/usr/bin/python3" if os.path.exists("/usr/bin/python3")
                                                      else sys.executable)
        cmd = [python, str(REPO / "scripts" / "pytorch" / "ddp_baseline.py"), "--nproc", str(np_),
               "--config", str(run["sc"]["config"])]
    else:
        cmd = ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        cmd += [binary, "train", "--config", str(run["sc"]["config"]), "--overwrite"]
    for s in run["sets"]:
        cmd += ["--set", s]
    return cmd


def launch(run, binary, timeout):
    np_ = rank_count(run["sc"], run["sets"])
    cmd = run_command(run, binary, np_)
    run["dir"].parent.mkdir(parents=True, exist_ok=True)
    log = run["dir"].parent / (run["dir"].name + ".log")
    rec = {k: run[k] for k in ("scenario", "variant", "policy", "seed", "rep")}
    rec.update(dir=str(run["dir"]), log=str(log), ranks=np_, command=shlex.join(cmd))
    t0 = time.monotonic()
    with open(log, "w") as f:
        f.write("+ " + rec["command"] + "\n")
        f.flush()
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM lets mpirun stop its ranks (they checkpoint and exit); SIGKILL if it hangs.
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            rc = None
    rec["wall_s"] = round(time.monotonic() - t0, 3)
    rec["exit_code"] = rc
    summary_path = run["dir"] / "summary.json"
    summary = None
    if summary_path.is_file():
        try:
            summary = json.loads(summary_path.read_text())
        except ValueError:
            summary = None
    if rc is None:
        rec["status"], rec["reason"] = "failed", f"timed out after {timeout} s"
    elif rc != 0:
        rec["status"], rec["reason"] = "failed", f"exit {rc}"
    elif summary is None:
        rec["status"], rec["reason"] = "failed", f"no readable {summary_path}"
    elif summary.get("completed") is False:
        rec["status"], rec["reason"] = "failed", "summary.json says the run did not complete"
    else:
        rec["status"], rec["reason"] = "ok", ""
    if rec["status"] != "ok":
        rec["log_tail"] = log_excerpt(log)
    if rec["status"] == "ok":  # derived here, from the run's own files (not in its summary.json)
        summary = dict(summary, training_time_to_target_s=training_time_to_target(run["dir"], summary))
    rec["summary"] = summary
    return rec


def training_time_to_target(run_dir, summary):
    """Seconds spent in training steps (metrics.jsonl step_time) up to the evaluation that first
    reached the target: the time to target without the evaluations, checkpoints and start-up, which
    are the same work whatever the policy (evaluation is sharded evenly and not slowed by the
    heterogeneity emulation). None where unknown (no target, not reached, no per-step metrics)."""
    target = summary.get("target_accuracy")
    if target is None or summary.get("time_to_target_s") is None:
        return None
    try:
        evals = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()]
        step = next(e["step"] for e in evals if e.get("test_accuracy", -1) >= target)
        total = 0.0
        for line in (run_dir / "metrics.jsonl").read_text().splitlines():
            m = json.loads(line)
            if m["step"] <= step:
                total += m["step_time"]
        return total
    except (OSError, ValueError, KeyError, StopIteration):
        return None


def log_excerpt(path, n=3):
    """dynamix's own error lines (first ones), else the last lines, without Open MPI's banners."""
    try:
        lines = [l.strip() for l in Path(path).read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return ""
    lines = lines[1:]  # the first is the command
    errors = [l for l in lines if l.startswith("dynamix") and ("error" in l or "fatal" in l)]
    plain = [l for l in lines if not l.startswith(("[", "-----")) and "MPI" not in l]
    return " | ".join(errors[:n] if errors else plain[-n:])


def spread(values):
    vals = [v for v in values if v is not None]
    if not vals:
        return None, None, None
    return statistics.median(vals), min(vals), max(vals)


def aggregate(suite, records):
    rows = []
    for sc in suite["scenarios"]:
        group = []
        for v in suite["variants"]:
            recs = [r for r in records if r["scenario"] == sc["name"] and r["variant"] == v["name"]]
            ok = [r["summary"] for r in recs if r["status"] == "ok"]
            row = {"scenario": sc["name"], "variant": v["name"], "policy": v["policy"], "runs": len(recs),
                   "ok": len(ok), "failed": len(recs) - len(ok),
                   "reached_target": sum(1 for s in ok if s.get("time_to_target_s") is not None)}
            for stem, key, _, _ in METRICS:
                row[f"{stem}_median"], row[f"{stem}_min"], row[f"{stem}_max"] = spread(s.get(key) for s in ok)
            group.append(row)
        # One basis per scenario: time to target when every successful run reached it, else total time.
        all_reached = all(r["reached_target"] == r["ok"] for r in group) and any(r["ok"] for r in group)
        basis = "ttt_s" if all_reached else "total_s"
        value = {r["variant"]: r[f"{basis}_median"] for r in group}
        static = next((r["variant"] for r in group if r["policy"] == "static" and r["variant"] == "static"),
                      next((r["variant"] for r in group if r["policy"] == "static"), None))
        heur = [value[r["variant"]] for r in group if r["policy"] in HEURISTICS and value[r["variant"]]]
        best_heur = min(heur) if heur else None
        train_ref = next((r["train_ttt_s_median"] for r in group if r["variant"] == static), None)
        for r in group:
            mine = value[r["variant"]]
            ref = value.get(static) if static else None
            r["ratio_basis"] = "time_to_target" if basis == "ttt_s" else "total_time"
            r["vs_static"] = mine / ref if mine and ref else None
            r["vs_best_heuristic"] = mine / best_heur if mine and best_heur else None
            train = r["train_ttt_s_median"]
            r["training_vs_static"] = train / train_ref if train and train_ref else None
        rows += group
    return rows


def fmt(v, f):
    return "" if v is None else f.format(v)


def write_csv(rows, path):
    cols = ["scenario", "variant", "policy", "runs", "ok", "failed", "reached_target"]
    for stem, _, _, _ in METRICS:
        cols += [f"{stem}_median", f"{stem}_min", f"{stem}_max"]
    cols += ["ratio_basis", "vs_static", "vs_best_heuristic", "training_vs_static"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({c: ("" if r[c] is None else r[c]) for c in cols})


def markdown(suite, rows, records, header):
    cell = lambda r, stem, f: ("n/a" if r[f"{stem}_median"] is None else
                               f"{f.format(r[stem + '_median'])} [{f.format(r[stem + '_min'])}–"
                               f"{f.format(r[stem + '_max'])}]")
    out = [f"# Suite `{suite['name']}`", "", *header, "",
           "Median [min–max] over seeds × repetitions of the successful runs. Ratios: median time to "
           "target (or total time where some run of the scenario missed the target) against static "
           "and against the best of proportional and gns. Training time to target: the steps' own time "
           "(metrics.jsonl step_time) up to the evaluation that reached the target, without evaluations, "
           "checkpoints and start-up (the same work for every policy); its ratio to static's in the last "
           "column.", ""]
    cols = ["scenario", "variant", "runs ok", "reached"] + [m[2] for m in METRICS] + \
           ["ratio of", "vs static", "vs best heuristic", "training vs static"]
    out += ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
    for r in rows:
        cells = [r["scenario"], r["variant"], f"{r['ok']}/{r['runs']}", f"{r['reached_target']}/{r['ok']}"]
        cells += [cell(r, stem, f) for stem, _, _, f in METRICS]
        cells += [r["ratio_basis"].replace("_", " "), fmt(r["vs_static"], "{:.3f}") or "n/a",
                  fmt(r["vs_best_heuristic"], "{:.3f}") or "n/a", fmt(r["training_vs_static"], "{:.3f}") or "n/a"]
        out.append("| " + " | ".join(cells) + " |")
    failed = [r for r in records if r["status"] != "ok"]
    out += ["", f"## Failed runs ({len(failed)})", ""]
    if not failed:
        out.append("None.")
    for r in failed:
        out.append(f"- {r['scenario']} / {r['variant']} seed {r['seed']} rep {r['rep']}: {r['reason']} "
                   f"(log `{r['log']}`): {r.get('log_tail', '')}")
    return "\n".join(out) + "\n"


def machine_lines(argv):
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [f"Command: `{shlex.join(argv)}`", "",
            f"Machine: {platform.node()}, {os.cpu_count()} cores ({cpu}), {platform.system()} "
            f"{platform.release()}; commit {commit}; {now}."]


def write_tables(suite, records, header, out):
    rows = aggregate(suite, records)
    write_csv(rows, out / "results.csv")
    md = markdown(suite, rows, records, header)
    (out / "results.md").write_text(md)
    print(md)
    print(f"outputs: {out}/results.csv, results.md, runs.jsonl")


def report(suite, out, argv):
    """--report: the tables again from OUT/runs.jsonl, with the derived columns recomputed from the
    runs' files (so a runner update applies to runs already made)."""
    try:
        records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
        header = json.loads((out / "suite.json").read_text())["header"]
    except (OSError, ValueError, KeyError) as e:
        print(f"run_suite: error: --report needs {out}/runs.jsonl and suite.json from a finished run ({e})",
              file=sys.stderr)
        return 2
    names = {s["name"] for s in suite["scenarios"]}, {v["name"] for v in suite["variants"]}
    records = [r for r in records if r["scenario"] in names[0] and r["variant"] in names[1]]
    for r in records:
        if r["status"] == "ok" and r.get("summary"):
            r["summary"]["training_time_to_target_s"] = training_time_to_target(Path(r["dir"]), r["summary"])
    write_tables(suite, records, header + ["", f"Tables rebuilt: `{shlex.join([sys.argv[0]] + (argv or sys.argv[1:]))}`."],
                 out)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", help="suite YAML file")
    ap.add_argument("--out", help="output folder (default runs/suite_NAME)")
    ap.add_argument("--reps", type=int, help="repetitions (overrides the suite's reps)")
    ap.add_argument("--seeds", help="comma-separated train.seed values (overrides the suite's seeds)")
    ap.add_argument("--max-steps", type=int, help="train.max_steps for every run (short trials)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra override for every run (repeatable)")
    ap.add_argument("--scenarios", help="comma-separated scenario names to run (default all)")
    ap.add_argument("--variants", help="comma-separated variant names to run (default all)")
    ap.add_argument("--timeout", type=float, help="seconds after which a run counts as failed")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    ap.add_argument("--report", action="store_true",
                    help="run nothing: rebuild results.csv and results.md from the runs of OUT/runs.jsonl "
                         "(those of --scenarios and --variants)")
    args = ap.parse_args(argv)
    try:
        suite = load_suite(args.suite, args)
    except SuiteError as e:
        print(f"run_suite: error: {e}", file=sys.stderr)
        return 2
    out = Path(args.out or REPO / "runs" / f"suite_{suite['name']}").resolve()
    if args.report:
        return report(suite, out, argv)
    binary = os.environ.get("DYNAMIX_BIN", str(REPO / "build" / "bin" / "dynamix"))
    runs = plan_runs(suite, out)
    try:
        for r in runs:
            r["ranks"] = rank_count(r["sc"], r["sets"])
    except SuiteError as e:
        print(f"run_suite: error: {e}", file=sys.stderr)
        return 2
    prepares = {r["scenario"]: r["sc"]["prepare"] for r in runs if r["sc"]["prepare"]}
    if args.dry_run:
        for name, cmd in prepares.items():
            print(f"# prepare {name}: {shlex.join(cmd)}")
        for r in runs:
            print(shlex.join(run_command(r, binary, r["ranks"])))
        return 0
    if not Path(binary).is_file():
        print(f"run_suite: error: dynamix binary {binary} not found (set DYNAMIX_BIN)", file=sys.stderr)
        return 2
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    for name, cmd in prepares.items():
        print(f"run_suite: prepare {name}: {shlex.join(cmd)}", flush=True)
        try:
            rc = subprocess.run(cmd, cwd=REPO).returncode
        except OSError as e:
            rc = f"not started ({e})"
        if rc != 0:
            print(f"run_suite: error: scenario {name}: prepare command failed (status {rc}): {shlex.join(cmd)}",
                  file=sys.stderr)
            return 2
    out.mkdir(parents=True, exist_ok=True)
    header = machine_lines([sys.argv[0]] + (argv if argv is not None else sys.argv[1:]))
    records = []
    with open(out / "runs.jsonl", "w") as jl:
        for k, r in enumerate(runs, 1):
            rec = launch(r, binary, args.timeout)
            records.append(rec)
            jl.write(json.dumps(rec) + "\n")
            jl.flush()
            s = rec["summary"] or {}
            print(f"[{k}/{len(runs)}] {rec['scenario']} {rec['variant']} seed {rec['seed']} rep {rec['rep']}: "
                  f"{rec['status']}" + (f" ({rec['reason']}; log {rec['log']})" if rec["status"] != "ok" else
                  f" total {s.get('total_time_s', 0):.1f} s, acc {s.get('final_test_accuracy', 0):.4f}, "
                  f"target {'%.1f s' % s['time_to_target_s'] if s.get('time_to_target_s') else 'not reached'}"),
                  flush=True)
    (out / "suite.json").write_text(json.dumps(
        {"name": suite["name"], "seeds": suite["seeds"], "reps": suite["reps"], "set": suite["set"],
         "scenarios": [{**s, "config": str(s["config"])} for s in suite["scenarios"]],
         "variants": suite["variants"], "header": header}, indent=1) + "\n")
    write_tables(suite, records, header, out)
    failed = sum(1 for r in records if r["status"] != "ok")
    if failed:
        print(f"run_suite: {failed} of {len(records)} run(s) failed (listed above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
