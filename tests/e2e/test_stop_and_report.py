"""What the console and the summary report around stops (issue #18 items 4 and 5d/5e):
- the console's train loss is the recent steps' mean, not 0 before the first policy window ends
  nor a stale window mean afterwards;
- a run resumed from a checkpoint at its last step (a stop between evaluations, then --resume
  with max_steps at that step) evaluates instead of reporting accuracy -1;
- SIGINT (Ctrl-C) checkpoints and exits 0 like SIGTERM: to every rank (a terminal's process
  group, srun forwarding it) and to a run started without a launcher. mpirun itself turns
  SIGINT/SIGTERM into SIGTERM for the ranks and exits 1 whatever they return (Open MPI 4.1);
  SIGUSR1 to mpirun is forwarded, so that is the way to stop an mpirun job with exit 0."""
import json
import os
import re
import signal
import subprocess
import time

from e2e_util import DYNAMIX, TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: mlp
dataset: {name: synthetic, shape: [1, 8, 8], classes: 3, train_size: 4000, test_size: 48}
batch: {init: [8, 8], min: 2, max: 32}
train: {max_steps: 400, epochs: 100, optimizer: sgd, lr: 0.05, momentum: 0.9, eval_every: 0, seed: 4}
policy: {window: 5}
monitor: {enabled: false}
output: {dir: OUT}
"""

TRAIN_LOSS = re.compile(r"\[epoch [0-9.]+ step (\d+)\] train loss (\S+) \|")


def recent_loss_is_printed(d):
    """Windows of 50 steps and a 24-step run: the old console printed 0.0000 at every evaluation
    (no window had ended)."""
    out = d / "loss"
    cfg = write(d / "loss.yaml", CONFIG.replace("OUT", str(out)))
    r = run(train_cmd(2, cfg, ["train.max_steps=24", "train.eval_every=6", "policy.window=50"]))
    if r.returncode != 0:
        fail("loss run failed:\n" + r.stdout + r.stderr)
    losses = {m["step"]: m["loss"] for m in read_jsonl(out / "metrics.jsonl")}
    printed = [(int(s), v) for s, v in TRAIN_LOSS.findall(r.stdout)]
    if [s for s, _ in printed] != [6, 12, 18, 24]:
        fail(f"expected evaluation lines at steps 6, 12, 18, 24:\n{r.stdout}")
    for step, value in printed:
        recent = [losses[s] for s in range(max(1, step - 9), step + 1)]
        want = sum(recent) / len(recent)
        if value == "0.0000" or abs(float(value) - want) > 1e-4 + 1e-4 * abs(want):
            fail(f"step {step}: console train loss {value}, the last {len(recent)} steps' mean is {want:.4f}")
    print(f"ok: console train loss is the recent mean: {printed}")


def start(d, name, sets=(), launcher=True):
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    slow = ["hetero.slowdown=[40.0, 40.0]"] + list(sets)
    cmd = train_cmd(2, cfg, slow) if launcher else [DYNAMIX, "train", "--config", str(cfg), "--set",
                                                    "batch.init=[8]", "--set", "hetero.slowdown=[40.0]"] + \
        [a for s in sets for a in ("--set", s)]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.time()
    while not ((out / "metrics.jsonl").exists() and sum(1 for _ in open(out / "metrics.jsonl")) >= 6):
        if proc.poll() is not None:
            fail(f"{name}: ended before 6 steps:\n{proc.stdout.read()}")
        if time.time() - t0 > 120:
            proc.kill()
            fail(f"{name}: no 6 steps after 120 s")
        time.sleep(0.02)
    return proc, cfg, out


def finish(proc, name):
    try:
        output, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"{name}: did not stop after the signal")
    print(output)
    return output


def ranks_of(proc):
    kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    if not kids:
        fail("no rank processes found under mpirun")
    return [int(k) for k in kids]


def expect_checkpointed_stop(proc, out, name, want_rc=0):
    output = finish(proc, name)
    if want_rc is not None and proc.returncode != want_rc:
        fail(f"{name}: exit {proc.returncode}, expected {want_rc}")
    if "checkpointing at step" not in output:
        fail(f"{name}: no checkpoint message")
    summary = json.loads((out / "summary.json").read_text())
    if summary.get("completed") is not False or not 6 <= summary["steps"] < 400:
        fail(f"{name}: summary after the signal: {summary}")
    print(f"ok: {name}: checkpointed at step {summary['steps']}, exit {proc.returncode}")
    return summary["steps"]


def main():
    with TempDir() as d:
        recent_loss_is_printed(d)

        # SIGINT to every rank: checkpoint and exit 0, as with SIGTERM.
        proc, cfg, out = start(d, "sigint_ranks")
        for k in ranks_of(proc):
            os.kill(k, signal.SIGINT)
        stopped = expect_checkpointed_stop(proc, out, "SIGINT to every rank")

        # The stop fell between evaluations (eval_every 0, no epoch end): resuming with max_steps
        # at that step ends at once, and must evaluate rather than report accuracy -1.
        if read_jsonl(out / "eval.jsonl") if (out / "eval.jsonl").exists() else []:
            fail("the stopped run evaluated; the case needs a stop between evaluations")
        r = run(train_cmd(2, cfg, [f"train.max_steps={stopped}"], ["--resume"]))
        if r.returncode != 0:
            fail("resume at max_steps failed:\n" + r.stdout + r.stderr)
        summary = json.loads((out / "summary.json").read_text())
        evals = read_jsonl(out / "eval.jsonl")
        if "final test accuracy -1" in r.stdout or summary["final_test_accuracy"] is None:
            fail(f"resume at max_steps did not evaluate:\n{r.stdout}\n{summary}")
        if [e["step"] for e in evals] != [stopped] or not summary["completed"]:
            fail(f"resume at max_steps: eval.jsonl {evals}, summary {summary}")
        check_outputs(out)
        print(f"ok: resumed at max_steps {stopped}: evaluated, accuracy {summary['final_test_accuracy']}")
        # Resuming that (evaluated) checkpoint again does not evaluate the same step twice.
        r = run(train_cmd(2, cfg, [f"train.max_steps={stopped}"], ["--resume"]))
        if r.returncode != 0 or len(read_jsonl(out / "eval.jsonl")) != 1:
            fail("a second resume at max_steps evaluated the same step again:\n" + r.stdout + r.stderr)
        if json.loads((out / "summary.json").read_text())["final_test_accuracy"] != summary["final_test_accuracy"]:
            fail("a second resume at max_steps lost the accuracy")
        print("ok: a second resume reports the same accuracy without evaluating again")

        # SIGINT (Ctrl-C) to a run started without a launcher (MPI singleton).
        proc, _, out = start(d, "sigint_alone", launcher=False)
        os.kill(proc.pid, signal.SIGINT)
        expect_checkpointed_stop(proc, out, "SIGINT without a launcher")

        # SIGUSR1 to mpirun: forwarded to the ranks, exit 0.
        proc, _, out = start(d, "sigusr1_mpirun")
        os.kill(proc.pid, signal.SIGUSR1)
        expect_checkpointed_stop(proc, out, "SIGUSR1 to mpirun")

        # SIGINT to mpirun: the ranks get SIGTERM and checkpoint; mpirun's own status is Open MPI's.
        proc, cfg, out = start(d, "sigint_mpirun")
        os.kill(proc.pid, signal.SIGINT)
        expect_checkpointed_stop(proc, out, "SIGINT to mpirun", want_rc=None)
        r = run(train_cmd(2, cfg, ["train.max_steps=40"], ["--resume"]))
        if r.returncode != 0:
            fail("resume after SIGINT to mpirun failed:\n" + r.stdout + r.stderr)
        print("ok: SIGINT to mpirun: the checkpoint resumes")
    print("stop-and-report e2e: all cases passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
