"""Checkpoint/resume continues the same run exactly, and preemption signals checkpoint and exit 0."""
import json
import os
import signal
import subprocess
import time

from e2e_util import SLOW_RANK_MLP, TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 600, test_size: 64}
batch: {init: [8, 24], min: 2, max: 64}
train: {max_steps: 60, epochs: 100, optimizer: sgd, lr: 0.05, momentum: 0.9, warmup_steps: 5, eval_every: 20, seed: 3}
policy: {window: 5}
output: {dir: OUT}
"""


def losses(outdir):
    return [(m["step"], m["loss"], m["batch_sizes"], m["lr"]) for m in read_jsonl(outdir / "metrics.jsonl")]


def compare(ref, got, what):
    if len(got) != len(ref):
        fail(f"{what}: {len(got)} metric lines, expected {len(ref)}")
    for a, b in zip(ref, got):
        if a != b:
            fail(f"{what}: step {a[0]} differs: uninterrupted {a}, resumed {b}")
    print(f"ok: {what}: {len(got)} steps identical to the uninterrupted run")


def wait_for_lines(path, n, proc, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            fail(f"run ended before {n} steps")
        if path.exists() and sum(1 for _ in open(path)) >= n:
            return
        time.sleep(0.02)
    fail(f"no {n} metric lines after {timeout} s")


def preempt(d, name, send):
    """Starts a slowed-down run, signals it, expects checkpoint + exit 0, then resumes to the end."""
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    slow = ["hetero.slowdown=[8.0, 8.0]"]
    cmd = train_cmd(2, cfg, slow)
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_lines(out / "metrics.jsonl", 8, proc)
    send(proc)
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"{name}: run did not stop after the signal")
    print(output)
    if proc.returncode != 0:
        fail(f"{name}: exit {proc.returncode} after the signal, expected 0")
    summary = json.loads((out / "summary.json").read_text())
    stopped_at = summary["steps"]
    if summary.get("completed") is not False or not 8 <= stopped_at < 60:
        fail(f"{name}: summary after the signal: {summary}")
    if "checkpointing at step" not in output:
        fail(f"{name}: no checkpoint message")
    r = run(train_cmd(2, cfg, [], ["--resume"]))
    if r.returncode != 0:
        fail(f"{name}: resume failed:\n{r.stdout}{r.stderr}")
    print(f"ok: {name}: stopped at step {stopped_at}, resumed to the end")
    return out


def check_new_limits(d):
    """A run resumed with a lower batch.max and a higher batch.min than its checkpoint's plan keeps
    trains within them from its first resumed step on (not from its first decision), and says so."""
    out = d / "limits"
    cfg = write(d / "limits.yaml", SLOW_RANK_MLP.replace("OUT", str(out)).replace("max_steps: 16", "max_steps: 8"))
    first = run(train_cmd(2, cfg, ["policy.name=proportional"]))
    lo, hi = 16, 40
    second = run(train_cmd(2, cfg, ["policy.name=proportional", "train.max_steps=16", f"batch.min={lo}",
                                    f"batch.max={hi}"], ["--resume"]))
    if first.returncode != 0 or second.returncode != 0:
        fail(f"resume with new limits: exits {first.returncode}, {second.returncode}: {second.stderr[-600:]}")
    steps = read_jsonl(out / "metrics.jsonl")
    last = [s["batch_sizes"] for s in steps if s["step"] == 8]
    if not last or all(lo <= b <= hi for b in last[0]):
        fail(f"the first run's last plan {last} is within [{lo}, {hi}] already: the check proves nothing")
    after = [(s["step"], s["batch_sizes"]) for s in steps if s["step"] > 8]
    if not after or any(not lo <= b <= hi for _, p in after for b in p):
        fail(f"resumed with batch.min={lo}, batch.max={hi}: steps after 8 ran {after}")
    if "breaks this run's limits" not in second.stdout:
        fail(f"the resumed run does not say its plan was fitted to its limits:\n{second.stdout[-800:]}")
    check_outputs(out)
    print(f"ok: step 8 ran {last[0]}; resumed within [{lo}, {hi}]: {after[0][1]} from step {after[0][0]}")


def main():
    with TempDir() as d:
        check_new_limits(d)
        ref_out = d / "ref"
        r = run(train_cmd(2, write(d / "ref.yaml", CONFIG.replace("OUT", str(ref_out)))))
        if r.returncode != 0:
            fail("uninterrupted run failed:\n" + r.stdout + r.stderr)
        check_outputs(ref_out)
        ref = losses(ref_out)

        # Stop at step 12 (end of a shorter run), then resume to 60.
        out = d / "split"
        cfg = write(d / "split.yaml", CONFIG.replace("OUT", str(out)))
        r = run(train_cmd(2, cfg, ["train.max_steps=12"]))
        if r.returncode != 0:
            fail("first segment failed:\n" + r.stdout + r.stderr)
        r = run(train_cmd(2, cfg, [], ["--resume"]))
        if r.returncode != 0:
            fail("resume failed:\n" + r.stdout + r.stderr)
        compare(ref, losses(out), "stop at 12 + resume")
        check_outputs(out)
        # The first segment also evaluated at its end (step 12): compare the steps both runs evaluated.
        ref_eval = {e["step"]: e["test_loss"] for e in read_jsonl(ref_out / "eval.jsonl")}
        got_eval = {e["step"]: e["test_loss"] for e in read_jsonl(out / "eval.jsonl")}
        common = sorted(set(ref_eval) & set(got_eval))
        if len(common) < len(ref_eval) or any(ref_eval[k] != got_eval[k] for k in common):
            fail(f"eval differs after resume: {ref_eval} vs {got_eval}")

        # SIGTERM to one rank only (the others learn it through the step exchange).
        def term_one_rank(proc):
            kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            if not kids:
                fail("no rank processes found under mpirun")
            os.kill(int(kids[-1]), signal.SIGTERM)

        compare(ref, losses(preempt(d, "sigterm", term_one_rank)), "SIGTERM to one rank + resume")

        # SIGUSR1 to every rank, as Slurm's --signal does through srun.
        def usr1_all(proc):
            for k in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split():
                os.kill(int(k), signal.SIGUSR1)

        compare(ref, losses(preempt(d, "sigusr1", usr1_all)), "SIGUSR1 + resume")
    print("resume e2e: all cases passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
