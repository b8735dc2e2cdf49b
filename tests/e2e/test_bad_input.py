"""Bad input gets a clear error naming the problem, a non-zero exit, and no damage to a good run."""
import gzip
import hashlib
import json
import os
import re
import struct
import subprocess

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, expect_error, fail, run, train_cmd, write

TINY = """
model: mlp
dataset: {name: synthetic, shape: [1, 6, 6], classes: 3, train_size: 64, test_size: 16}
batch: {init: 8}
train: {max_steps: 4}
output: {dir: OUT}
"""


def idx_images(n, rows=28, cols=28):
    return struct.pack(">IIII", 0x803, n, rows, cols) + bytes(n * rows * cols)


def idx_labels(n):
    return struct.pack(">II", 0x801, n) + bytes(n)


def diverged(cfg, out):
    """A learning rate that makes training diverge, over the good run: a clear error and exit 65 at
    the first step or evaluation that is not finite, every line written finite, and nothing of the
    old run left to pass for this one's (its summary and checkpoint are gone: no checkpoint was due)."""
    r = expect_error(train_cmd(2, cfg, ["train.lr=1e8", "train.max_steps=8", "train.eval_every=1"], ["--overwrite"]),
                     "training diverged at step", "training that diverges", status=65)
    for name in ("metrics.jsonl", "eval.jsonl"):
        for line in (out / name).read_text().splitlines():
            if "null" in line or "NaN" in line or "Infinity" in line:
                fail(f"diverged run: {name} holds a value that is not finite: {line}")
    left = [name for name in ("summary.json", "checkpoint.pt") if (out / name).exists()]
    if left or "Lower train.lr" not in r:
        fail(f"diverged run: the old run's {left} left behind, or no advice in:\n{r}")
    print("ok: diverged run: exit 65, finite lines only, no old summary or checkpoint")


def main():
    with TempDir() as d:
        out = d / "run"
        cfg = write(d / "tiny.yaml", TINY.replace("OUT", str(out)))
        expect_error(train_cmd(2, d / "missing.yaml"), "missing.yaml", "missing config file")
        # Empty config files ran every default (a full run into runs/) instead of failing.
        expect_error(train_cmd(2, write(d / "empty.yaml", "")), "empty.yaml' is empty", "empty config file")
        expect_error(train_cmd(2, write(d / "comments.yaml", "# model: cnn\n\n  # nothing else\n")),
                     "comments.yaml' is empty", "config file of comments only")
        expect_error(train_cmd(2, cfg, ["train.lrr=0.1"]), "train.lrr", "unknown key via --set")
        bad = write(d / "bad.yaml", TINY.replace("OUT", str(out)) + "monitor: {ebpf: sometimes}\n")
        expect_error(train_cmd(2, bad), "monitor.ebpf", "bad enum value")
        expect_error(train_cmd(2, cfg, ["batch.min=64", "batch.max=32"]), "batch.min", "min > max")
        expect_error(train_cmd(2, cfg, ["train.lr=fast"]), "train.lr", "wrong type")
        expect_error(train_cmd(2, cfg, ["batch.init=[1,2,3]"]), "batch.init", "per-rank list of wrong length")
        expect_error(train_cmd(2, cfg, ["dataset.name=fashion_mnist", f"dataset.path={d}/nowhere"]),
                     "nowhere", "missing dataset")
        # A truncated IDX image file.
        fm = d / "fm"
        fm.mkdir()
        (fm / "train-images-idx3-ubyte").write_bytes(idx_images(100)[:-500])
        (fm / "train-labels-idx1-ubyte").write_bytes(idx_labels(100))
        (fm / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(idx_images(10)))
        (fm / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(idx_labels(10)))
        expect_error(train_cmd(2, cfg, ["dataset.name=fashion_mnist", f"dataset.path={fm}"]),
                     "train-images-idx3-ubyte", "truncated IDX file")
        expect_error(train_cmd(2, cfg, [], ["--resume"]), "no checkpoint", "--resume without a checkpoint")
        # --version names the release of CMakeLists.txt's project(); a misspelt flag is an error.
        release = re.search(r"project\(dynamix .*VERSION ([0-9.]+)\)", (SOURCE_DIR / "CMakeLists.txt").read_text())
        r = run([DYNAMIX, "--version"], timeout=60)
        if r.returncode != 0 or not release or not r.stdout.startswith(f"dynamix {release.group(1)} (LibTorch "):
            fail(f"--version: exit {r.returncode}, printed {r.stdout!r}")
        print(f"ok: --version says {r.stdout.strip()!r}")
        expect_error([DYNAMIX, "--verison"], "--verison", "misspelt --version")
        # Two target names after one --target: the second was taken for a configure argument and
        # ignored once build/ existed, so only the first was built.
        expect_error([str(SOURCE_DIR / "scripts/build.sh"), "--target", "dynamix", "test_ppo"],
                     "unexpected argument 'test_ppo'", "build.sh target without its --target", status=2)
        # Command-line numbers out of range say what they expect, and nothing is written.
        policy = d / "policy.pt"
        expect_error([DYNAMIX, "agent", "pretrain", "--validate-every", "-1", "-o", str(policy)],
                     "--validate-every: must be a number >= 0, got '-1'", "negative --validate-every")
        expect_error([DYNAMIX, "agent", "pretrain", "--validation-episodes", "0", "-o", str(policy)],
                     "--validation-episodes: must be a number > 0, got '0'", "zero --validation-episodes")
        expect_error([DYNAMIX, "agent", "pretrain", "--episodes", "many", "-o", str(policy)],
                     "--episodes: must be a number > 0, got 'many'", "non-numeric --episodes")
        if policy.exists():
            fail("a refused pretrain command wrote its output file")
        # A misspelt policy in a list: refused before any policy runs (the good names before it
        # used to run and leave their outputs, then the bad one failed).
        sim_out = d / "sim_out"
        expect_error([DYNAMIX, "sim", "--config", str(SOURCE_DIR / "configs/sim_hetero32.yaml"), "--policies",
                      "static,dynamx", "--set", f"output.dir={sim_out}"],
                     "--policies: dynamx not in {static,proportional,gns,dynamix}", "unknown policy in sim --policies")
        expect_error([DYNAMIX, "agent", "eval", "--suite", str(SOURCE_DIR / "configs/agent_suite"), "--policies", "ppo",
                      "--output", str(sim_out)], "--policies: ppo not in", "unknown policy in agent eval --policies")
        if sim_out.exists():
            fail(f"a refused sim or agent eval command wrote {sim_out}")
        # Outputs that cannot be written are refused before the long part (pretraining took its
        # 40 s, and agent eval ran its whole suite, before failing to write).
        expect_error([DYNAMIX, "agent", "pretrain", "-o", str(d / "nowhere" / "p.pt")],
                     f"agent pretrain: --output: '{d / 'nowhere'}' does not exist", "pretrain into a missing directory")
        expect_error([DYNAMIX, "agent", "eval", "--suite", str(SOURCE_DIR / "configs/agent_suite"), "--output",
                      str(cfg / "eval")], f"agent eval: --output: cannot create '{cfg / 'eval'}': '{cfg}' is not a directory",
                     "agent eval into a path under a file")

        # A process that is not there: named at once, not an empty table refreshed forever.
        gone = subprocess.Popen(["true"])
        gone.wait()
        expect_error([DYNAMIX, "monitor", "--ebpf", "off", "--count", "1", "--pid", str(gone.pid)],
                     f"monitor --pid {gone.pid}: no such process", "monitor of a process that is not there")
        expect_error([DYNAMIX, "monitor", "--ebpf", "off", "--count", "1", "--pid", "0"],
                     "monitor --pid 0: no such process", "monitor of pid 0")

        # A good run, then attempts that must not touch its checkpoint.
        r = run(train_cmd(2, cfg))
        if r.returncode != 0:
            fail("good tiny run failed:\n" + r.stdout + r.stderr)
        ckpt = out / "checkpoint.pt"
        digest = hashlib.sha256(ckpt.read_bytes()).hexdigest()
        # inspect: a run's directory stands for its checkpoint; a directory without one is an error.
        r = run([DYNAMIX, "inspect", "--json", str(out)], timeout=120)
        if r.returncode != 0:
            fail(f"inspect of the run directory: exit {r.returncode}\n{r.stdout}{r.stderr}")
        record = json.loads(r.stdout)
        if record["step"] != 4 or record["path"] != str(ckpt):
            fail(f"inspect of the run directory: {record}")
        print("ok: inspect of a run directory shows its checkpoint")
        empty_dir = d / "nothing_here"
        empty_dir.mkdir()
        expect_error([DYNAMIX, "inspect", str(empty_dir)], "is a directory without a checkpoint.pt",
                     "inspect of a directory without a checkpoint")
        expect_error(train_cmd(2, cfg), "already holds a run", "fresh run over an existing one")
        expect_error(train_cmd(2, cfg, ["model=cnn"], ["--resume"]), "does not match", "resume with another model")
        # sgd -> adamw: only the clean error, not LibTorch's INTERNAL ASSERT trace after it.
        expect_error(train_cmd(2, cfg, ["train.optimizer=adamw"], ["--resume"]),
                     "was written with optimizer 'sgd', the configuration asks for 'adamw'",
                     "resume with another optimizer")
        if hashlib.sha256(ckpt.read_bytes()).hexdigest() != digest:
            fail("a failed command changed the good checkpoint")
        # Truncated and foreign checkpoints.
        data = ckpt.read_bytes()
        ckpt.write_bytes(data[: len(data) // 2])
        expect_error(train_cmd(2, cfg, ["train.max_steps=8"], ["--resume"]), "truncated", "truncated checkpoint")
        ckpt.write_bytes(b"\x80\x02not a checkpoint at all")
        expect_error(train_cmd(2, cfg, ["train.max_steps=8"], ["--resume"]), "not a DYNAMIX checkpoint",
                     "foreign checkpoint")
        r = run(train_cmd(2, cfg, [], ["--overwrite"]))
        if r.returncode != 0:
            fail("--overwrite run failed:\n" + r.stdout + r.stderr)
        diverged(cfg, out)
    print("bad-input e2e: all cases passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
