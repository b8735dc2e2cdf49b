"""Adaptive global batch (`batch.global: adaptive`) through the real CLI. The policy moves B toward
the goodput-optimal batch of its fitted step times and the gradient noise scale, but never below
the run's starting B, the batch its learning rate was set for (AdaptDL's goodput search starts at
init_batch_size too). Before that floor, a small early noise scale shrank B to 60 % of its start on
Fashion-MNIST: as many samples to the target at 29 % less throughput (docs/RESULTS.md §3d).

- `dynamix sim` (gns and dynamix): with a tiny noise scale B stays at its start (without the
  floor gns fell from 1024 to 195); with a huge one it still grows.
- `dynamix train` on 2 ranks, Fashion-MNIST (gns and dynamix): no step below the starting B
  except an epoch's last, partial one, the learning rate follows B linearly (train.lr_scaling:
  linear), and B moves in at least one of the two runs (it grows there within 10 steps)."""
import json

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

SIM = SOURCE_DIR / "configs" / "sim_hetero32.yaml"
SIM_START = 32 * 32  # batch.init 32 on each of its 32 nodes

TRAIN = """
model: cnn
dataset: {name: fashion_mnist}
batch: {init: [8, 8], min: 2, max: 128, global: adaptive}
train: {max_steps: 80, optimizer: sgd, lr: 0.02, lr_scaling: linear, warmup_steps: 0, seed: 3, eval_every: 0}
policy: {name: static, window: 4}
hetero: {slowdown: [1, 2]}
monitor: {enabled: false}
output: {dir: OUT, checkpoint_every: 0}
"""
TRAIN_START, LR0 = 16, 0.02


def sim_batches(d, b_noise, target):
    out = d / f"sim_{b_noise:g}"
    r = run([DYNAMIX, "sim", "--config", str(SIM), "--policies", "gns,dynamix", "--set", "batch.global=adaptive",
             "--set", f"sim.workload.b_noise={b_noise}", "--set", f"sim.workload.target_progress={target}",
             "--set", f"output.dir={out}"], timeout=300)
    if r.returncode != 0:
        fail(f"dynamix sim (b_noise {b_noise}) exit {r.returncode}: {r.stderr[-600:]}")
    return {p: [w["global_batch"] for w in read_jsonl(out / p / "sim_windows.jsonl")] for p in ("gns", "dynamix")}


def check_sim(d):
    for policy, b in sim_batches(d, 16, 1000).items():
        if min(b) < SIM_START:
            fail(f"sim, {policy}, tiny noise scale: B fell to {min(b)}, below its start {SIM_START}")
        print(f"ok: sim, {policy}, tiny noise scale: B stays {min(b)}-{max(b)} over {len(b)} windows")
    for policy, b in sim_batches(d, 1e5, 20).items():
        if max(b) <= SIM_START:
            fail(f"sim, {policy}, huge noise scale: B never grew above {SIM_START}")
        print(f"ok: sim, {policy}, huge noise scale: B grows to {max(b)}")


def check_train(d, policy):
    out = d / f"train_{policy}"
    cfg = write(d / f"{policy}.yaml", TRAIN.replace("OUT", str(out)))
    r = run(train_cmd(2, cfg, [f"policy.name={policy}"]), timeout=300)
    if r.returncode != 0:
        fail(f"train, {policy}: exit {r.returncode}: {(r.stderr or r.stdout)[-600:]}")
    check_outputs(out)
    steps = read_jsonl(out / "metrics.jsonl")
    for s in steps:
        b, epoch_end = s["global_batch"], abs(s["epoch"] - round(s["epoch"])) < 1e-9
        if b < TRAIN_START and not epoch_end:
            fail(f"train, {policy}: step {s['step']} ran B {b}, below its start {TRAIN_START}")
        if abs(s["lr"] - LR0 * b / TRAIN_START) > 1e-6 * LR0 * b / TRAIN_START:
            fail(f"train, {policy}: step {s['step']}: lr {s['lr']} does not follow B {b} (want {LR0 * b / TRAIN_START})")
    batches = sorted({s["global_batch"] for s in steps})
    summary = json.loads((out / "summary.json").read_text())
    print(f"ok: train, {policy}: {len(steps)} steps, B in {batches}, lr following it, "
          f"{summary['mean_throughput']:.0f} samples/s")
    return batches


def main():
    with TempDir() as d:
        check_sim(d)
        seen = set()
        for policy in ("gns", "dynamix"):
            seen.update(check_train(d, policy))
        if seen == {TRAIN_START}:
            fail(f"train: B never left {TRAIN_START}, so the lr check saw one B only")


if __name__ == "__main__":
    main()
