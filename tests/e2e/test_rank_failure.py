"""A rank that dies or hangs ends the job quickly with a message naming it; the last checkpoint
stays valid and --resume continues. A killed rank runs under `mpirun --enable-recovery`, where
Open MPI keeps the survivors running after a death (as srun does by default), so ending them is
the watchdog's work; plain mpirun's own clean-up after a death must not be hindered either."""
import json
import os
import signal
import subprocess
import time

from e2e_util import DYNAMIX, TempDir, fail, mpirun, rank_pids, read_jsonl, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 2000, test_size: 64}
batch: {init: [16], min: 2, max: 64}
train: {max_steps: 60, epochs: 100, optimizer: sgd, lr: 0.05, seed: 5, eval_every: 0}
policy: {window: 5}
hetero: {slowdown: [6.0]}
monitor: {enabled: false}
comm: {heartbeat_timeout_s: 6}
output: {dir: OUT, checkpoint_every: 5}
"""
WORLD = 3


def start(d, name, launcher_extra=()):
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    cmd = mpirun(WORLD) + list(launcher_extra) + [DYNAMIX, "train", "--config", str(cfg)]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    metrics = out / "metrics.jsonl"
    t0 = time.time()
    while not (metrics.exists() and sum(1 for _ in open(metrics)) >= 12):
        if proc.poll() is not None:
            fail(f"{name}: run ended early:\n{proc.stdout.read()}")
        if time.time() - t0 > 180:
            proc.kill()
            fail(f"{name}: no progress")
        time.sleep(0.05)
    pids = rank_pids(proc.pid)
    if sorted(pids) != list(range(WORLD)):
        proc.kill()
        fail(f"{name}: could not find the ranks' pids: {pids}")
    return proc, cfg, out, pids


def wait_exit(proc, name, limit_s, expect_failure_status=True):
    t0 = time.time()
    try:
        output, _ = proc.communicate(timeout=limit_s + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        print(output)
        fail(f"{name}: the job still runs {limit_s + 30} s after the failure (hang)")
    took = time.time() - t0
    print(output)
    if took > limit_s:
        fail(f"{name}: the job took {took:.1f} s to end, more than {limit_s} s")
    # mpirun --enable-recovery exits 0 whatever its processes did (srun reports their status).
    if expect_failure_status and proc.returncode == 0:
        fail(f"{name}: exit status 0 after losing a rank")
    return output, took


def check_checkpoint_and_resume(cfg, out, name):
    ckpt = out / "checkpoint.pt"
    r = run([DYNAMIX, "inspect", "--json", str(ckpt)])
    if r.returncode != 0:
        fail(f"{name}: checkpoint left invalid:\n{r.stdout}{r.stderr}")
    at = json.loads(r.stdout)["step"]
    stale = out / "checkpoint.pt.tmp.99999"  # as a rank killed while writing would leave it
    stale.write_bytes(b"half a checkpoint")
    r = run(train_cmd(WORLD, cfg, [], ["--resume"]), timeout=600)
    if stale.exists():
        fail(f"{name}: the resumed run left a stale temporary checkpoint behind")
    if r.returncode != 0:
        fail(f"{name}: --resume failed:\n{r.stdout}{r.stderr}")
    summary = json.loads((out / "summary.json").read_text())
    if not summary.get("completed") or summary["steps"] != 60:
        fail(f"{name}: resumed run did not complete: {summary}")
    steps = [m["step"] for m in read_jsonl(out / "metrics.jsonl")]
    if steps[-1] != 60:
        fail(f"{name}: metrics end at step {steps[-1]}")
    print(f"ok: {name}: checkpoint valid (step {at}), resumed to step 60")


def main():
    with TempDir() as d:
        # 1. kill -9 of rank 2; Open MPI leaves the others alone: the watchdog must end them.
        proc, cfg, out, pids = start(d, "killed", ["--enable-recovery"])
        os.kill(pids[2], signal.SIGKILL)
        output, took = wait_exit(proc, "killed", 60, expect_failure_status=False)
        if f"lost rank 2 (pid {pids[2]}" not in output or "died or was killed" not in output:
            fail("killed: no watchdog message naming rank 2")
        for r in (0, 1):
            if f"dynamix: rank {r}: watchdog:" not in output:
                fail(f"killed: rank {r} did not report the loss")
        print(f"ok: killed: rank 2 killed, job ended in {took:.1f} s naming it")
        check_checkpoint_and_resume(cfg, out, "killed")

        # 2. A hung rank (SIGSTOP: alive, silent): found by the heartbeat timeout (6 s here). The
        # others exit with status 75, upon which mpirun (like srun --kill-on-bad-exit) ends the
        # hung one too.
        proc, cfg, out, pids = start(d, "stopped")
        os.kill(pids[1], signal.SIGSTOP)
        try:
            output, took = wait_exit(proc, "stopped", 60)
        finally:
            for sig in (signal.SIGKILL, signal.SIGCONT):
                try:
                    os.kill(pids[1], sig)
                except ProcessLookupError:
                    pass
        if f"lost rank 1 (pid {pids[1]}" not in output or "no heartbeat" not in output:
            fail("stopped: no watchdog message naming rank 1")
        print(f"ok: stopped: rank 1 hung, job ended in {took:.1f} s naming it")
        check_checkpoint_and_resume(cfg, out, "stopped")

        # 3. Plain mpirun: its own abort on a death still ends the job promptly.
        proc, cfg, out, pids = start(d, "plain")
        os.kill(pids[0], signal.SIGKILL)
        output, took = wait_exit(proc, "plain", 60)
        print(f"ok: plain: rank 0 killed, job ended in {took:.1f} s")
        check_checkpoint_and_resume(cfg, out, "plain")
    print("PASSED")


if __name__ == "__main__":
    main()
