"""Issue #18, defect 2: a full disk. The run's output.dir is a small tmpfs that fills up during
training. Every write is checked: the run stops at the next step boundary on every rank with an
error naming the file and the reason (non-zero exit), the last good checkpoint stays, and no log
holds a partial line. With space again, --resume continues: every log then has each step (window,
evaluation) exactly once. Needs root to mount the tmpfs; skips (CTest status 77) saying why."""
import json
import os
import re
import subprocess
import sys

from e2e_util import DYNAMIX, TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

SKIP = 77
LOGS = ("metrics.jsonl", "eval.jsonl", "decisions.jsonl")
# A 38k-parameter MLP without momentum: a ~160 kB checkpoint every 50 steps, ~1 kB of logs a step.
CONFIG = """
model: mlp
dataset: {name: synthetic, shape: [1, 4, 4], classes: 4, train_size: 100000, test_size: 32}
batch: {init: [4, 4], min: 2, max: 16}
train: {max_steps: 5000, epochs: 10, optimizer: sgd, lr: 0.05, momentum: 0, eval_every: 10, seed: 3}
policy: {window: 5}
monitor: {enabled: false}
output: {dir: OUT, checkpoint_every: 50}
"""
ERROR = re.compile(r"dynamix: error: (cannot write \S+\.jsonl|checkpoint \S+: write failed): No space left on "
                   r"device; run stopped at step (\d+) \(the checkpoint of step (\d+) is kept")


def check_whole_lines(out):
    for name in LOGS:
        text = (out / name).read_text()
        if text and not text.endswith("\n"):
            fail(f"{name} ends in a partial line: ...{text[-80:]!r}")
        for line in text.splitlines():
            try:
                json.loads(line)
            except ValueError:
                fail(f"{name} holds a line that is not JSON: {line[:120]!r}")


def checkpoint_step(out):
    r = run([DYNAMIX, "inspect", "--json", str(out / "checkpoint.pt")])
    if r.returncode != 0:
        fail(f"the last checkpoint is not readable: {r.stdout}{r.stderr}")
    return json.loads(r.stdout)["step"]


def fill_the_disk(out, cfg, sets=(), extra=(), what="jsonl"):
    r = run(train_cmd(2, cfg, sets, extra))
    print(r.stdout[-2000:], r.stderr[-2000:])
    m = ERROR.search(r.stderr)
    if r.returncode == 0 or not m:
        fail(f"status {r.returncode}: no clean stop naming the file and 'No space left on device'")
    if str(out) not in m.group(1) or what not in m.group(1):
        fail(f"expected the failed write to be a {what} file in {out}: {m.group(0)}")
    stopped, kept = int(m.group(2)), int(m.group(3))
    check_whole_lines(out)
    last = read_jsonl(out / "metrics.jsonl")[-1]["step"]
    # The failed write came in the step before the stop (its line, or a later one, lost).
    if not stopped - 2 <= last <= stopped - 1:
        fail(f"stopped at step {stopped}, but metrics.jsonl ends at step {last}: not the next step boundary")
    if checkpoint_step(out) != kept or kept > last:
        fail(f"the kept checkpoint is not the one named ({kept}) or is past the logs ({last})")
    if any(p.name.startswith("checkpoint.pt.tmp") for p in out.iterdir()):
        fail("a temporary checkpoint file was left behind")
    print(f"ok: disk full at step {last + 1}..{stopped}: {m.group(1)}; checkpoint of step {kept} kept")
    return kept, last


def resume(out, cfg, kept):
    r = run(train_cmd(2, cfg, [f"train.max_steps={kept + 30}"], ["--resume"]))
    print(r.stdout[-2000:], r.stderr[-2000:])
    if r.returncode != 0:
        fail(f"resume with space again failed (status {r.returncode})")
    check_whole_lines(out)
    steps = [m["step"] for m in read_jsonl(out / "metrics.jsonl")]
    if steps != list(range(1, kept + 31)):
        fail(f"metrics.jsonl steps are not 1..{kept + 30} once each: {steps[:3]}...{steps[-3:]}")
    evals = [e["step"] for e in read_jsonl(out / "eval.jsonl")]
    if evals != list(range(10, kept + 31, 10)):
        fail(f"eval.jsonl steps repeat or miss one: {evals}")
    windows = [(x["window"], x["step"]) for x in read_jsonl(out / "decisions.jsonl")]
    if windows != [(w, 5 * (w + 1)) for w in range((kept + 30) // 5)]:
        fail(f"decisions.jsonl windows repeat or miss one: {windows}")
    check_outputs(out)
    print(f"ok: resumed from step {kept} to {kept + 30}; every log has each step once")


class Tmpfs:
    """A 1 MB tmpfs at `path`, unmounted on exit; skips the test (status 77) where mounting fails."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.path.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(self.path)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"SKIPPED: cannot mount a tmpfs here: {(r.stderr or r.stdout).strip()}")
            sys.exit(SKIP)
        return self.path

    def grow(self):
        subprocess.run(["mount", "-o", "remount,size=16m", str(self.path)], check=True)

    def __exit__(self, *exc):
        subprocess.run(["umount", str(self.path)], check=False)


def checkpoint_fails(d):
    """Checkpoints every 50 steps: the first that does not fit stops the run."""
    with Tmpfs(d / "ckpt") as out:
        cfg = write(d / "ckpt.yaml", CONFIG.replace("OUT", str(out)))
        fill_the_disk(out, cfg, what="checkpoint")


def log_fails(d):
    """A checkpoint at step 100, then logs alone fill the disk, far past it; with space again,
    --resume cuts every log back to step 100 and continues."""
    fs = Tmpfs(d / "logs")
    with fs as out:
        cfg = write(d / "logs.yaml", CONFIG.replace("OUT", str(out)))
        r = run(train_cmd(2, cfg, ["train.max_steps=100"]))
        if r.returncode != 0:
            fail(f"the first 100 steps failed:\n{r.stdout}{r.stderr}")
        kept, last = fill_the_disk(out, cfg, ["output.checkpoint_every=0"], ["--resume"])
        if kept != 100 or last < 200:
            fail(f"expected the disk to fill well after the checkpoint of step 100, at step {last}")
        fs.grow()
        resume(out, cfg, kept)


def main():
    if os.geteuid() != 0:
        print("SKIPPED: mounting a small tmpfs needs root")
        sys.exit(SKIP)
    with TempDir() as d:
        checkpoint_fails(d)
        log_fails(d)
    print("PASSED")


if __name__ == "__main__":
    main()
