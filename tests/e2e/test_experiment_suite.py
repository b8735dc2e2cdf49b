"""The experiment runner and the plots end to end: a tiny suite (one 2-rank Fashion-MNIST scenario,
static and proportional, ~30 steps, plus a variant whose override is invalid; a scenario prepare
command, run once, and a failing one that stops the suite) through
scripts/experiments/run_suite.py; the CSV and Markdown tables agree with the runs' summary.json,
the failed variant is listed and makes the runner exit non-zero; plot_run.py, plot_suite.py and
plot_scaling.py write non-empty PNGs."""
import csv
import json
import subprocess
import sys

from e2e_util import SOURCE_DIR, TempDir, fail, read_jsonl, run, write

SCRIPTS = SOURCE_DIR / "scripts"
CONFIG = """
model: cnn
dataset: {name: fashion_mnist}
batch: {init: [32, 32], min: 8, max: 256, global: fixed}
train: {epochs: 1, optimizer: sgd, momentum: 0.9, lr: 0.05, lr_scaling: linear, warmup_steps: 5,
        target_accuracy: 0.5, seed: 1, eval_every: 10}
policy: {name: static, window: 10}
hetero: {slowdown: [1.0, 2.0]}
output: {dir: unused, checkpoint_every: 0}
"""
SUITE = """
name: tiny
seeds: [3]
reps: 1
set: [train.max_steps=30]
scenarios:
  - {name: slow_rank, config: CONFIG, prepare: [sh, -c, "echo prepared >> PREPARED"]}
variants:
  - static
  - proportional
  - {name: broken, policy: static, set: {train.lr: -1}}
"""
PNG = b"\x89PNG\r\n\x1a\n"


def check_png(path):
    if not path.is_file() or path.stat().st_size < 2000 or path.read_bytes()[:8] != PNG:
        fail(f"{path} is missing, not a PNG, or nearly empty")


def main():
    with TempDir() as d:
        cfg = write(d / "tiny.yaml", CONFIG)
        marker = d / "prepared.txt"
        suite = write(d / "suite.yaml", SUITE.replace("CONFIG", str(cfg)).replace("PREPARED", str(marker)))
        runner = [sys.executable, str(SCRIPTS / "experiments" / "run_suite.py")]

        # Launch plan: variants rotate with every (rep, seed); the rank count follows batch.init
        # after the overrides.
        r = run(runner + [str(suite), "--out", str(d / "dry"), "--reps", "2", "--dry-run",
                          "--set", "batch.init=[16,16,16]"])
        print(r.stdout, r.stderr)
        lines = r.stdout.splitlines()
        if not lines or lines[0] != f"# prepare slow_rank: sh -c 'echo prepared >> {marker}'" or marker.exists():
            fail("dry run: the prepare command is not listed first, or it ran")
        lines = lines[1:]
        order = [l.split("output.dir=")[1].split("/")[-2] for l in lines]
        if r.returncode != 0 or order != ["static", "proportional", "broken", "proportional", "broken", "static"]:
            fail(f"dry run: unexpected launch order {order}")
        if not all(l.startswith("mpirun -np 3 ") for l in lines):
            fail("dry run: rank count does not follow batch.init after the overrides")

        # A scenario's prepare command that fails stops the suite before any run (exit 2, named).
        bad = write(d / "bad_prepare.yaml", SUITE.replace("CONFIG", str(cfg)).replace(
            '[sh, -c, "echo prepared >> PREPARED"]', "[sh, -c, 'exit 3']"))
        r = run(runner + [str(bad), "--out", str(d / "bad")])
        if r.returncode != 2 or "scenario slow_rank: prepare command failed (status 3)" not in r.stderr or \
                (d / "bad" / "runs.jsonl").exists():
            fail(f"failing prepare: exit {r.returncode}\n{r.stdout}{r.stderr}")

        out = d / "suite"
        r = run(runner + [str(suite), "--out", str(out)], timeout=900)
        print(r.stdout, r.stderr)
        if r.returncode == 0:
            fail("the runner exited 0 although the variant 'broken' failed")
        if "1 of 3 run(s) failed" not in r.stderr:
            fail("the runner did not report the failed run on stderr")

        if not marker.is_file() or marker.read_text() != "prepared\n":
            fail("the scenario's prepare command did not run exactly once before its runs")
        records = read_jsonl(out / "runs.jsonl")
        by_variant = {rec["variant"]: rec for rec in records}
        if sorted(by_variant) != ["broken", "proportional", "static"]:
            fail(f"runs.jsonl: {sorted(by_variant)}")
        if by_variant["broken"]["status"] != "failed" or by_variant["broken"]["exit_code"] != 2:
            fail(f"broken variant not recorded as failed with exit 2: {by_variant['broken']}")
        for v in ("static", "proportional"):
            if by_variant[v]["status"] != "ok":
                fail(f"{v} run failed: {by_variant[v]}")

        with open(out / "results.csv") as f:
            rows = {row["variant"]: row for row in csv.DictReader(f)}
        for v in ("static", "proportional"):
            s = json.loads((out / "runs" / "slow_rank" / v / "s3.r0" / "summary.json").read_text())
            row = rows[v]
            if s["steps"] != 30 or row["ok"] != "1" or row["failed"] != "0":
                fail(f"{v}: {row} / steps {s['steps']}")
            for col, key in (("total_s_median", "total_time_s"), ("final_acc_median", "final_test_accuracy"),
                             ("throughput_median", "mean_throughput"), ("wait_median", "mean_wait_fraction")):
                if abs(float(row[col]) - s[key]) > 1e-9 * max(1.0, abs(s[key])):
                    fail(f"{v}: results.csv {col} {row[col]} != summary.json {key} {s[key]}")
            if (s["time_to_target_s"] is None) != (row["ttt_s_median"] == ""):
                fail(f"{v}: time to target {row['ttt_s_median']!r} vs summary {s['time_to_target_s']}")
            run_dir = out / "runs" / "slow_rank" / v / "s3.r0"
            if s["time_to_target_s"] is None:
                if row["train_ttt_s_median"] != "":
                    fail(f"{v}: training time to target {row['train_ttt_s_median']!r} for a run that missed it")
            else:  # the steps' own time up to the evaluation that reached the target
                evals = [json.loads(l) for l in (run_dir / "eval.jsonl").read_text().splitlines()]
                at = next(e["step"] for e in evals if e["test_accuracy"] >= s["target_accuracy"])
                want = sum(json.loads(l)["step_time"] for l in (run_dir / "metrics.jsonl").read_text().splitlines()
                           if json.loads(l)["step"] <= at)
                got = float(row["train_ttt_s_median"])
                if abs(got - want) > 1e-9 * max(1.0, want) or not got < s["time_to_target_s"]:
                    fail(f"{v}: training time to target {got} vs {want} (wall {s['time_to_target_s']})")
        if rows["broken"]["ok"] != "0" or rows["broken"]["failed"] != "1" or rows["broken"]["vs_static"] != "":
            fail(f"broken row: {rows['broken']}")
        stem = "ttt_s" if rows["static"]["ratio_basis"] == "time_to_target" else "total_s"
        ratio = float(rows["proportional"][f"{stem}_median"]) / float(rows["static"][f"{stem}_median"])
        if abs(float(rows["static"]["vs_static"]) - 1) > 1e-12 or \
                abs(float(rows["proportional"]["vs_static"]) - ratio) > 1e-9 or \
                abs(float(rows["proportional"]["vs_best_heuristic"]) - 1) > 1e-12:
            fail(f"ratios: {rows}")

        md = (out / "results.md").read_text()
        for needle in ("| scenario | variant | runs ok |", "| slow_rank | static | 1/1 |",
                       "| slow_rank | broken | 0/1 |", "## Failed runs (1)", "broken seed 3 rep 0: exit 2",
                       "train.lr"):
            if needle not in md:
                fail(f"results.md lacks {needle!r}:\n{md}")

        r = run([sys.executable, str(SCRIPTS / "plots" / "plot_run.py"),
                 str(out / "runs" / "slow_rank" / "proportional" / "s3.r0"), "--out", str(d / "run_plots")])
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail("plot_run.py failed")
        for name in ("batch_sizes", "step_wait", "decisions", "accuracy"):
            check_png(d / "run_plots" / f"{name}.png")

        r = run([sys.executable, str(SCRIPTS / "plots" / "plot_suite.py"), str(out)])
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail("plot_suite.py failed")
        for name in ("accuracy_vs_time", "time_to_target"):
            check_png(out / "plots" / f"{name}.png")

        r = run([sys.executable, str(SCRIPTS / "plots" / "plot_scaling.py"), "--nodes", "4,8",
                 "--policies", "static,gns", "--out", str(d / "scaling")])
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail("plot_scaling.py failed")
        check_png(d / "scaling" / "scaling.png")
        with open(d / "scaling" / "scaling.csv") as f:
            pts = list(csv.DictReader(f))
        if [(p["nodes"], p["policy"]) for p in pts] != [("4", "static"), ("4", "gns"), ("8", "static"), ("8", "gns")]:
            fail(f"scaling.csv: {pts}")
        print("ok: suite table, failure report, and every plot")


if __name__ == "__main__":
    main()
