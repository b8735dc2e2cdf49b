"""Rank 0's live progress (output.progress, issue #19 item 4), through the real CLI under mpirun:
- auto with stdout piped: full `progress:` lines every output.progress_interval_s (Open MPI gives
  the ranks a pseudo-terminal even then, so this also checks that auto looks past it);
- auto on a terminal (a pty): one line rewritten with \\r, at most 4 times a second;
- --progress json: every stdout line a JSON object, progress objects rate-limited, the result last;
- quiet: only the result line;
- a bad mode: an error naming output.progress, non-zero exit."""
import bisect
import fcntl
import itertools
import json
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time

from e2e_util import TempDir, check_outputs, expect_error, fail, run, train_cmd, write

CONFIG = """
model: mlp
dataset: {name: synthetic, shape: [1, 16, 16], classes: 4, train_size: 4096, test_size: 64}
batch: {init: [16, 16]}
train: {max_steps: 300, epochs: 10}
policy: {window: 100}
hetero: {bandwidth_mbps: [800, 800]}  # ~4 ms a step (0.4 MB of gradients): runs of seconds
monitor: {enabled: false}
output: {dir: OUT, progress_interval_s: 0.05}
"""

STEPS = 300
LINE = re.compile(r"^progress: step (\d+)/(\d+) \(\d+%\) \| epoch [0-9.]+ \| \d+ samples/s \| loss [0-9.]+ \| "
                  r"wait [0-9.]+% \| plan \[16,16\] \| ETA (\d+s|\d+m\d\ds|\d+h\d\dm)$")
PROGRESS_KEYS = {"event", "step", "total_steps", "epoch", "wall_time", "samples_per_s", "loss", "wait_fraction",
                 "plan", "eta_s"}


def train(d, name, sets=(), extra=()):
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    return out, train_cmd(2, cfg, sets, extra)


def lines_when_piped(d):
    out, cmd = train(d, "lines")
    r = run(cmd)
    if r.returncode != 0:
        fail("lines run failed:\n" + r.stdout + r.stderr)
    if "\r" in r.stdout or "\x1b[" in r.stdout:
        fail("stdout is a pipe, yet auto drew a terminal line:\n" + repr(r.stdout[:2000]))
    progress = [line for line in r.stdout.splitlines() if line.startswith("progress:")]
    if len(progress) < 2:
        fail(f"expected progress lines every 0.05 s of a {STEPS}-step run, got {len(progress)}:\n{r.stdout}")
    steps = []
    for line in progress:
        m = LINE.match(line)
        if not m:
            fail(f"progress line lacks a field or has the wrong form:\n{line}")
        if int(m.group(2)) != STEPS:
            fail(f"total steps {m.group(2)}, expected {STEPS}: {line}")
        steps.append(int(m.group(1)))
    if steps != sorted(steps) or len(set(steps)) != len(steps):
        fail(f"progress steps do not increase: {steps}")
    for needed in ("dynamix: 2 ranks", "result: 2 ranks"):
        if needed not in r.stdout:
            fail(f"{needed!r} missing beside the progress lines:\n{r.stdout}")
    check_outputs(out)
    print(f"ok: lines: {len(progress)} progress lines, steps {steps[0]}..{steps[-1]}; {progress[-1]}")


def json_lines(d):
    interval = 0.2
    out, cmd = train(d, "json", [f"output.progress_interval_s={interval}"], ["--progress", "json"])
    r = run(cmd)
    if r.returncode != 0:
        fail("json run failed:\n" + r.stdout + r.stderr)
    objects = []
    for line in r.stdout.splitlines():
        try:
            objects.append(json.loads(line))
        except ValueError:
            fail(f"json mode printed a line that is not JSON:\n{line}")
    progress = [o for o in objects if o.get("event") == "progress"]
    if len(progress) < 2:
        fail(f"expected progress objects every {interval} s, got {len(progress)}:\n{r.stdout}")
    for o in progress:
        if set(o) != PROGRESS_KEYS:
            fail(f"progress object keys {sorted(o)}, expected {sorted(PROGRESS_KEYS)}")
        if o["total_steps"] != STEPS or o["plan"] != [16, 16] or not o["samples_per_s"] > 0:
            fail(f"unexpected progress values: {o}")
    gaps = [b["wall_time"] - a["wall_time"] for a, b in zip(progress, progress[1:])]
    if min(gaps) < interval * 0.9:
        fail(f"progress objects closer than output.progress_interval_s = {interval}: gaps {gaps}")
    if objects[-1].get("event") != "result" or objects[-1].get("steps") != STEPS:
        fail(f"the last object is not the result with steps = {STEPS}: {objects[-1]}")
    if not any(o.get("event") == "log" and o["message"].startswith("dynamix: 2 ranks") for o in objects):
        fail("the start line is not a log object:\n" + r.stdout)
    check_outputs(out)
    print(f"ok: json: {len(objects)} objects, {len(progress)} progress, gaps >= {min(gaps):.3f} s")


def quiet(d):
    out, cmd = train(d, "quiet", ["output.progress=quiet", "train.max_steps=40"])
    r = run(cmd)
    if r.returncode != 0:
        fail("quiet run failed:\n" + r.stdout + r.stderr)
    lines = r.stdout.splitlines()
    if len(lines) != 1 or not lines[0].startswith("result: 2 ranks, policy static, 40 steps"):
        fail("quiet printed more (or less) than the result line:\n" + r.stdout)
    print(f"ok: quiet: only {lines[0]!r}")


def read_pty(cmd, timeout=300):
    """Runs cmd with stdout on a 200-column pseudo-terminal; returns [(time, bytes)] as read and the
    exit code."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    print("+", " ".join(str(c) for c in cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1.0)[0]:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not data:
            break
        chunks.append((time.monotonic(), data))
    os.close(master)
    return chunks, proc.wait(timeout=60)


def terminal(d):
    out, cmd = train(d, "tty", [f"train.max_steps={2 * STEPS}"])
    chunks, code = read_pty(cmd)
    data = b"".join(c for _, c in chunks)
    text = data.decode(errors="replace")
    if code != 0:
        fail(f"tty run exited {code}:\n{text}")
    # Periodic redraws: over the previous progress line (the redraws after a log line are not
    # rate-limited, they come at most once per log line). Each with the time it was read.
    ends = list(itertools.accumulate(len(c) for _, c in chunks))
    draws = [chunks[bisect.bisect_left(ends, m.end())][0] for m in re.finditer(rb"\x1b\[K\rprogress: step", data)]
    if len(draws) < 2:
        fail("on a terminal, auto did not rewrite a progress line in place:\n" + repr(text[:3000]))
    span = draws[-1] - draws[0]
    # At most 4 redraws a second (the reader may receive a few late, together: slack of 2).
    if len(draws) > 4 * span + 2:
        fail(f"{len(draws)} redraws in {span:.2f} s: more than 4 a second")
    last = text.rsplit("\rprogress: step", 1)[1].split("\x1b[K", 1)[0]
    if not LINE.match("progress: step" + last):
        fail(f"the terminal's progress line has the wrong form: {last!r}")
    # Log lines are whole: cleared progress line first, never text after a progress line.
    for needed in ("\r\x1b[K[epoch", "\r\x1b[Kresult: 2 ranks"):
        if needed not in text:
            fail(f"{needed!r} missing: the progress line was not cleared before a log line\n{text[-3000:]}")
    if re.search(r"progress: step[^\r\n]*\x1b\[K[^\r\n]", text):
        fail("text printed after a progress line on the same row:\n" + repr(text[-3000:]))
    check_outputs(out)
    print(f"ok: tty: {len(draws)} redraws in {span:.2f} s")


def bad_mode(d):
    _, cmd = train(d, "bad", extra=["--progress", "fancy"])
    expect_error(cmd, "'output.progress' must be one of auto|tty|lines|json|quiet, got 'fancy'", "bad --progress")


def main():
    with TempDir() as d:
        bad_mode(d)
        lines_when_piped(d)
        json_lines(d)
        quiet(d)
        terminal(d)
    print("PASS")


if __name__ == "__main__":
    main()
