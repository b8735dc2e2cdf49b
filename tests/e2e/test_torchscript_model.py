"""Your own model (issue #19, item 2): `model: torchscript:PATH` trains a module scripted in Python.

(1) A scripted copy of the built-in CNN (scripts/models/export_cnn.py, same initial weights) trains
    on 2 ranks with unequal batches to the same per-step losses, evaluation and final parameters as
    `model: cnn`, bit for bit; --weights-from exports the trained checkpoint back exactly.
(2) A scripted module with BatchNorm and dropout trains, checkpoints and resumes bit for bit on 2
    ranks with unequal batches, evaluations included (the ranks' running statistics are averaged
    before every evaluation and checkpoint), and its BatchNorm running statistics reach the checkpoint.
(3) train.loss: module (forward(x, y) returns the loss) equals the built-in cross-entropy run bit for
    bit; train.loss: mse runs; every run passes the output contract.
(4) The proportional policy with a TorchScript model changes the plan on a slowed rank.
(5) A missing file, a file that is not TorchScript, inputs of the wrong shape and train.loss: module
    without a loss of the model's own: one clean error line, non-zero exit, no outputs written.
Needs Debian's python3-torch (1.13, as the LibTorch here) to script the modules."""
import os
import sys

from e2e_util import (SOURCE_DIR, TempDir, check_outputs, expect_error, export_cnn, fail, read_jsonl, run,
                      train_cmd, write)

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    fail("needs python3-torch (Debian's /usr/bin/python3 has it; scripts/setup.sh installs it)")
sys.path.insert(0, str(SOURCE_DIR / "scripts" / "pytorch"))
import dynamix_ref  # noqa: E402

SEED = 3
CONFIG = f"""
model: cnn
dataset: {{name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 600, test_size: 64}}
batch: {{init: [8, 24], min: 2, max: 64}}
train: {{max_steps: 40, epochs: 100, optimizer: sgd, lr: 0.05, momentum: 0.9, eval_every: 20, seed: {SEED}}}
policy: {{name: static, window: 5}}
output: {{dir: OUT}}
"""
CNN_ARGS = ["--seed", str(SEED), "--shape", "1", "12", "12", "--classes", "4"]


class BnNet(nn.Module):
    """Convolution, BatchNorm, dropout: state beyond parameters, and randomness in training."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(8 * 6 * 6, 4)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.drop(x.flatten(1)))


def train(d, name, sets=(), extra=(), np=2):
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    r = run(train_cmd(np, cfg, sets, extra))
    if r.returncode != 0:
        fail(f"{name}: exit {r.returncode}:\n{r.stdout}{r.stderr}")
    return out


def steps(out):
    return [(m["step"], m["loss"], m["batch_sizes"], m["lr"]) for m in read_jsonl(out / "metrics.jsonl")]


def evals(out):
    return [(e["step"], e["test_loss"], e["test_accuracy"]) for e in read_jsonl(out / "eval.jsonl")]


def same_runs(ref, got, what, eval_rtol=0.0):
    a, b = steps(ref), steps(got)
    if len(a) != len(b) or a != b:
        bad = next((x, y) for x, y in zip(a + [None], b + [None]) if x != y)
        fail(f"{what}: per-step metrics differ (first: {bad[0]} vs {bad[1]}); {len(a)} vs {len(b)} steps")
    # A run stopped and resumed also evaluated where it stopped: compare the steps both evaluated.
    got_evals = {e[0]: e for e in evals(got)}
    for step, loss, acc in evals(ref):
        other = got_evals.get(step)
        if other is None or other[2] != acc or abs(other[1] - loss) > eval_rtol * abs(loss):
            fail(f"{what}: evaluations differ: {evals(ref)} vs {evals(got)}")
    tol = "bit for bit" if eval_rtol == 0 else f"test loss within {eval_rtol:g} relative"
    print(f"ok: {what}: {len(a)} steps, losses {a[0][1]:.6f} .. {a[-1][1]:.6f} equal bit for bit; "
          f"evaluations equal ({tol})")


def same_state(a, b, what):
    """Two {name: tensor} dicts hold the same names and bit-identical tensors."""
    if sorted(a) != sorted(b):
        fail(f"{what}: names differ: {sorted(a)} vs {sorted(b)}")
    for k in a:
        if a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k]):
            fail(f"{what}: '{k}' differs")
    print(f"ok: {what}: {len(a)} tensors equal bit for bit")


def scripted_cnn_matches_builtin(d):
    builtin = train(d, "builtin")
    cnn = export_cnn(d / "cnn.pt", *CNN_ARGS)
    scripted = train(d, "scripted", [f"model=torchscript:{cnn}"])
    same_runs(builtin, scripted, "(1) scripted CNN vs model: cnn, 2 ranks, b = [8, 24]")
    final = dynamix_ref.read_checkpoint_params(builtin / "checkpoint.pt")
    same_state(final, dynamix_ref.read_checkpoint_params(scripted / "checkpoint.pt"),
               "(1) final parameters, scripted vs built-in")
    exported = export_cnn(d / "trained.pt", "--weights-from", str(builtin / "checkpoint.pt"), *CNN_ARGS[2:])
    same_state(final, dict(torch.jit.load(str(exported)).state_dict()), "(1) --weights-from a checkpoint")
    check_outputs(scripted)
    return builtin, cnn


def batchnorm_resumes(d):
    torch.manual_seed(0)
    path = d / "bn.pt"
    torch.jit.save(torch.jit.script(BnNet()), str(path))
    # Step 17 is a checkpoint of the uninterrupted run too (as the last one before a crash would be).
    model = [f"model=torchscript:{path}", "output.checkpoint_every=17"]
    ref = train(d, "bn_ref", model)
    split = train(d, "bn_split", model + ["train.max_steps=17"])
    train(d, "bn_split", model, ["--resume"])
    # Training (batch statistics, dropout) and evaluation resume exactly: every rank's running
    # statistics are averaged (weighted by batch) before each evaluation and checkpoint, at the same
    # steps in both runs, so the checkpoint holds what every rank of the uninterrupted run held.
    same_runs(ref, split, "(2) BatchNorm + dropout module, stopped at 17 and resumed")
    ref_state = dynamix_ref.read_checkpoint_params(ref / "checkpoint.pt")
    same_state(ref_state, dynamix_ref.read_checkpoint_params(split / "checkpoint.pt"), "(2) final state, resumed")
    mean = ref_state.get("bn.running_mean")
    if mean is None or not mean.abs().sum() > 0 or int(ref_state["bn.num_batches_tracked"]) != 40:
        fail(f"(2) BatchNorm statistics not in the checkpoint, or not updated: {sorted(ref_state)}")
    print(f"ok: (2) bn.running_mean trained ({mean[:3].tolist()} ...), num_batches_tracked 40")
    check_outputs(split)


def losses(d, builtin):
    with_loss = export_cnn(d / "cnn_loss.pt", "--loss-in-forward", *CNN_ARGS)
    module = train(d, "module", [f"model=torchscript:{with_loss}", "train.loss=module"])
    # Evaluation sums the module's mean loss x count, the built-in sums per-sample losses: rounding.
    same_runs(builtin, module, "(3) train.loss: module (forward(x, y) = cross-entropy) vs model: cnn", 1e-6)
    check_outputs(module)
    mse = train(d, "mse", [f"model=torchscript:{d / 'cnn.pt'}", "train.loss=mse", "train.lr=0.5"])
    first, last = steps(mse)[0][1], steps(mse)[-1][1]
    if not 0 < last < first:
        fail(f"(3) train.loss: mse did not decrease: {first} -> {last}")
    check_outputs(mse)
    print(f"ok: (3) train.loss: mse, loss {first:.4f} -> {last:.4f}, accuracy {evals(mse)[-1][2]:.3f}")


def proportional(d, cnn):
    out = train(d, "proportional", [f"model=torchscript:{cnn}", "policy.name=proportional", "batch.init=[16,16]",
                                    "hetero.slowdown=[1,3]"])
    plans = {tuple(m["batch_sizes"]) for m in read_jsonl(out / "metrics.jsonl")}
    last = steps(out)[-1][2]
    if not last[0] > last[1]:
        fail(f"(4) proportional did not shift work off the slowed rank 1: plans {sorted(plans)}")
    check_outputs(out)
    print(f"ok: (4) proportional with a TorchScript model: plan [16, 16] -> {last}")


def bad_inputs(d, cnn):
    not_ts = write(d / "notes.pt", "not a model\n")
    state_dict = d / "state_dict.pt"
    torch.save(BnNet().state_dict(), str(state_dict))
    big = export_cnn(d / "cnn28.pt", "--shape", "1", "28", "28", "--classes", "4")
    cases = [
        ("missing file", [f"model=torchscript:{d / 'nowhere.pt'}"], "nowhere.pt': no such file"),
        ("a text file", [f"model=torchscript:{not_ts}"], "not a TorchScript file"),
        ("a torch.save state dict", [f"model=torchscript:{state_dict}"], "not a TorchScript file"),
        ("inputs of the wrong shape", [f"model=torchscript:{big}"], "does not take the data set's inputs"),
        ("too few outputs for the classes", [f"model=torchscript:{cnn}", "dataset.classes=7"], "7 classes"),
        ("train.loss: module without a loss", [f"model=torchscript:{cnn}", "train.loss=module"], "train.loss: module"),
        ("train.loss: module, built-in model", ["train.loss=module"], "train.loss: module"),
        ("unknown train.loss", ["train.loss=hinge"], "train.loss"),
    ]
    for what, sets, needle in cases:
        out = d / "bad"
        cfg = write(d / "bad.yaml", CONFIG.replace("OUT", str(out)))
        r = expect_error(train_cmd(2, cfg, sets), needle, f"(5) {what}")
        said = [line for line in r.splitlines() if "error" in line and needle in line]
        if not said:
            fail(f"(5) {what}: {needle!r} is not on the error line:\n{r}")
        if out.exists() and any(out.iterdir()):
            fail(f"(5) {what}: wrote {sorted(p.name for p in out.iterdir())}")


def main():
    with TempDir() as d:
        builtin, cnn = scripted_cnn_matches_builtin(d)
        batchnorm_resumes(d)
        losses(d, builtin)
        proportional(d, cnn)
        bad_inputs(d, cnn)
    print("torchscript model e2e: all cases passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
