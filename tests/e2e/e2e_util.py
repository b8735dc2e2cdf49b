"""Shared helpers for DYNAMIX end-to-end tests: launch `dynamix` under mpirun, read outputs."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

DYNAMIX = os.environ.get("DYNAMIX_BIN", "build/bin/dynamix")
SOURCE_DIR = Path(os.environ.get("DYNAMIX_SOURCE_DIR", Path(__file__).resolve().parents[2]))
CHECK_OUTPUTS = SOURCE_DIR.parent / "shared" / "tools" / "check-outputs.py"



# The smallest real training run: the CNN on synthetic data, 2 ranks, 4 steps (OUT: output dir).
TINY_CNN = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 256, test_size: 64}
batch: {init: [8, 8], min: 2, max: 64}
train: {max_steps: 4, optimizer: sgd, lr: 0.05, seed: 3, eval_every: 0}
policy: {name: static, window: 2}
output: {dir: OUT}
"""

def mpirun(np):
    cmd = ["mpirun", "-np", str(np), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def train_cmd(np, config, sets=(), extra=()):
    cmd = mpirun(np) + [DYNAMIX, "train", "--config", str(config)]
    for s in sets:
        cmd += ["--set", s]
    return cmd + list(extra)


def run(cmd, timeout=600, **kw):
    """The finished command; one still running after `timeout` s is killed with every process it
    started (ranks, spawned workers), and fails the test with what it printed so far (keep
    `timeout` under the test's own, or ctest kills us first)."""
    print("+", " ".join(str(c) for c in cmd), flush=True)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for pid in [proc.pid] + descendants(proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:  # a process that left the tree (double fork) may still hold the pipes
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired as e:
                out, err = (p.decode(errors="replace") if isinstance(p, bytes) else p or "" for p in (e.stdout, e.stderr))
            print(out[-3000:], err[-3000:])
            fail(f"still running after {timeout} s, killed: {' '.join(str(c) for c in cmd)}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def parent_pids():
    """{pid: parent pid} of every process now running."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                continue
    return parents


def descendants(pid):
    """pids of every process below `pid` (children, their children, ...)."""
    children = {}
    for child, parent in parent_pids().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def read_jsonl(path, torn_ok=False):
    """Objects of a JSONL file. torn_ok: ignore a last line without its newline (a killed run's)."""
    with open(path) as f:
        lines = f.read().split("\n")
    if torn_ok:
        lines = lines[:-1]
    return [json.loads(line) for line in lines if line.strip()]


def rank_pids(launcher_pid):
    """pid of every rank that mpirun started, by OMPI_COMM_WORLD_RANK in its environment."""
    pids = {}
    for pid, parent in parent_pids().items():
        if parent != launcher_pid:
            continue
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for var in env:
            if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                pids[int(var.split(b"=", 1)[1])] = pid
    return pids


def check_outputs(outdir):
    """Runs the contract checker when shared/ is beside the checkout (as in CI)."""
    if not CHECK_OUTPUTS.is_file():
        print(f"note: {CHECK_OUTPUTS} not found; contract check skipped")
        return
    r = run([sys.executable, str(CHECK_OUTPUTS), str(outdir)])
    print(r.stdout, r.stderr)
    assert r.returncode == 0, f"check-outputs failed for {outdir}"


# Two ranks 4x apart (an MLP on synthetic data, 16 steps, a decision every 4; OUT: output dir):
# every moving policy changes the plan within its first windows.
SLOW_RANK_MLP = """
model: mlp
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 2000, test_size: 200}
batch: {init: [32, 32], min: 4, max: 64}
train: {max_steps: 16, epochs: 1, optimizer: sgd, lr: 0.02, seed: 3, eval_every: 0}
policy: {name: static, window: 4}
hetero: {slowdown: [1.0, 4.0]}
monitor: {enabled: false}
output: {dir: OUT}
"""


def train_checked(d, name, config, sets=(), np=2):
    """`dynamix train` of `config` (OUT: d / name) with `sets` on `np` ranks; fails the test unless it
    exits 0 with outputs that pass the contract checker. Returns the run and its output directory."""
    out = d / name
    cfg = write(d / f"{name}.yaml", config.replace("OUT", str(out)))
    r = run(train_cmd(np, cfg, sets))
    if r.returncode != 0:
        fail(f"run '{name}' ({list(sets)}) failed with status {r.returncode}: {r.stderr[-600:]}")
    check_outputs(out)
    return r, out


def train_logs(d, name, config, sets=()):
    """train_checked on 2 ranks; returns the run, its metrics.jsonl and its decisions.jsonl."""
    r, out = train_checked(d, name, config, sets)
    return r, read_jsonl(out / "metrics.jsonl"), read_jsonl(out / "decisions.jsonl")


def expect_no_outputs(outdir, what):
    """Fails the test where a refused run (`what`) left anything in its output directory."""
    if outdir.exists() and any(outdir.iterdir()):
        fail(f"{what} left outputs behind: {sorted(p.name for p in outdir.iterdir())}")


def expect_error(cmd, needle, what, env=None, status=None):
    """Runs `cmd` (in `env`, if given); expects a non-zero exit (`status`, if given) and a clean
    message (no crash trace) holding `needle`. Returns the run's stdout and stderr."""
    # mpirun waits odls_base_sigkill_timeout (1 s) after a rank fails before it kills the others;
    # the ranks of these runs all end by themselves, so the wait only costs time.
    env = dict(os.environ if env is None else env, OMPI_MCA_odls_base_sigkill_timeout="0")
    r = run(cmd, timeout=300, env=env)
    out = r.stdout + r.stderr
    if r.returncode == 0 or status not in (None, r.returncode):
        fail(f"{what}: exit {r.returncode}, expected {status or 'an error'}\n{out}")
    if needle not in out:
        fail(f"{what}: error does not mention {needle!r}:\n{out}")
    # LibTorch's assertions and backtraces, C++ stream errors: not messages for a user.
    for crash in ("Traceback", "core dumped", "terminate called", "INTERNAL ASSERT", "Exception raised from",
                  "basic_filebuf", "basic_ios"):
        if crash in out:
            fail(f"{what}: {crash!r} instead of (or besides) a clean error:\n{out}")
    print(f"ok: {what}: exit {r.returncode}, says {needle!r}")
    return out


def python_with(*modules):
    """A Python interpreter that imports `modules` (this one, else Debian's /usr/bin/python3, where
    scripts/setup.sh installs python3-numpy); fails the test when there is none."""
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        probe = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True)
        if probe.returncode == 0:
            return python
    fail(f"no Python with {', '.join(modules)} (scripts/setup.sh installs them)")


def export_cnn(path, *args):
    """A TorchScript copy of the built-in CNN (scripts/models/export_cnn.py, needs python3-torch)."""
    r = run([python_with("torch"), str(SOURCE_DIR / "scripts" / "models" / "export_cnn.py"), str(path), *args])
    if r.returncode != 0:
        fail(f"export_cnn.py failed:\n{r.stdout}{r.stderr}")
    return path


class TempDir:
    def __enter__(self):
        self.path = Path(tempfile.mkdtemp(prefix="dynamix_e2e_"))
        return self.path

    def __exit__(self, *exc):
        shutil.rmtree(self.path, ignore_errors=True)


def write(path, text):
    Path(path).write_text(text)
    return path


def fail(msg):
    print("FAILED:", msg)
    sys.exit(1)
