"""Resume with a different world size (a node lost, then nodes added): the batch plan is re-split
over the new ranks and the sampler continues the epoch, so each epoch still uses every sample
exactly once (sample-level coverage is pinned by the Sampler unit tests)."""
import json

from e2e_util import TempDir, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 600, test_size: 64}
batch: {init: [16], min: 2, max: 64}
train: {epochs: 2, optimizer: sgd, lr: 0.05, seed: 4, eval_every: 0}
policy: {window: 4}
monitor: {enabled: false}
output: {dir: OUT}
"""


LISTS = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 2000, test_size: 64}
batch: {init: [16, 16, 16, 16], min: 2, max: 64, global: fixed}
train: {epochs: 1, optimizer: sgd, lr: 0.05, lr_scaling: linear, warmup_steps: 0, seed: 4, eval_every: 0}
policy: {name: proportional, window: 3}
hetero: {slowdown: [1, 1, 1.5, 2.5], memory_mb: [0, 0, 0, 400]}
monitor: {enabled: false}
output: {dir: OUT}
"""


def per_rank_lists_and_global_batch(d):
    """The README's case: a config with one entry per rank for 4 ranks, resumed with the same
    command on 3 and then 5 ranks, and once more on 5 (the checkpoint's world size, not the
    config's). The lists are tiled (rank i takes entry i mod 4), B = 64 and the learning rate stay
    what they were, and the log says so."""
    out = d / "lists"
    cfg = write(d / "lists.yaml", LISTS.replace("OUT", str(out)))
    legs = [(4, ["train.max_steps=6"], []), (3, ["train.max_steps=12"], ["--resume"]),
            (5, ["train.max_steps=18"], ["--resume"]), (5, ["train.max_steps=24"], ["--resume"])]
    last_world = None
    for world, sets, extra in legs:
        r = run(train_cmd(world, cfg, sets, extra))
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail(f"{world} ranks with per-rank lists for 4: run failed")
        if extra:
            expected = ["hetero.slowdown has 4 entries for", "rank i takes entry i mod 4"]
            if world != last_world:
                expected.append("global batch 64 split evenly")
            for text in expected:
                if text not in r.stdout:
                    fail(f"{world} ranks: the log does not say {text!r}")
        last_world = world
    metrics = read_jsonl(out / "metrics.jsonl")
    if [m["step"] for m in metrics] != list(range(1, 25)):
        fail(f"steps: {[m['step'] for m in metrics]}")
    # Before the fix found by e2e_chaos, the second resume on 5 ranks took B and the lr reference
    # from batch.init tiled for 5 (80): lr 0.04 (0.05 x 64/80) at once, then B 80 after a decision.
    if {m["global_batch"] for m in metrics} != {64} or {m["lr"] for m in metrics} != {0.05}:
        fail(f"B or lr changed: {[(m['global_batch'], m['lr']) for m in metrics]}")
    if metrics[6]["batch_sizes"] != [22, 21, 21] or metrics[12]["batch_sizes"] != [13, 13, 13, 13, 12]:
        fail(f"not an even re-split: {metrics[6]['batch_sizes']}, {metrics[12]['batch_sizes']}")
    print("ok: 4 -> 3 -> 5 -> 5 ranks with 4-entry lists: B 64 and lr 0.05 kept")


def main():
    with TempDir() as d:
        per_rank_lists_and_global_batch(d)
        out = d / "run"
        cfg = write(d / "run.yaml", CONFIG.replace("OUT", str(out)))
        legs = [(4, ["train.max_steps=5"], []), (3, ["train.max_steps=12"], ["--resume"]),
                (5, [], ["--resume"])]
        for world, sets, extra in legs:
            r = run(train_cmd(world, cfg, sets, extra))
            print(r.stdout, r.stderr)
            if r.returncode != 0:
                fail(f"{world} ranks: run failed")
            if extra and "world size changed" not in r.stdout:
                fail(f"{world} ranks: no re-split message")
        metrics = read_jsonl(out / "metrics.jsonl")
        steps = [m["step"] for m in metrics]
        if steps != list(range(1, len(steps) + 1)):
            fail(f"steps are not consecutive: {steps}")
        worlds = [len(m["batch_sizes"]) for m in metrics]
        if worlds[:5] != [4] * 5 or worlds[5:12] != [3] * 7 or set(worlds[12:]) != {5}:
            fail(f"batch plans do not follow the world sizes: {worlds}")
        # Samples per epoch: epoch boundaries are where the fractional epoch is a whole number.
        per_epoch, used = [], 0
        for m in metrics:
            used += m["global_batch"]
            if abs(m["epoch"] - round(m["epoch"])) < 1e-12:
                per_epoch.append(used)
                used = 0
        if per_epoch != [600, 600] or used != 0:
            fail(f"samples per epoch {per_epoch} (+{used} left over), expected [600, 600]")
        summary = json.loads((out / "summary.json").read_text())
        if summary["world_size"] != 5 or not summary["completed"]:
            fail(f"summary: {summary}")
        # (check-outputs.py is not run here: it expects one world size for a whole output dir.)
        print(f"ok: 4 -> 3 -> 5 ranks, {len(metrics)} steps, 600 samples in each of 2 epochs")
    print("PASSED")


if __name__ == "__main__":
    main()
