"""A plan too large for one rank's memory: the out-of-memory error is caught, the step is redone
with that rank's limit lowered and the plan repaired (the global batch kept), no sample is skipped
or repeated, the run completes, and the limit survives a resume. Memory is emulated per rank
(hetero.memory_mb: LibTorch's allocator fails past it, as a small GPU would)."""
import json

from e2e_util import DYNAMIX, TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 3000, test_size: 200}
batch: {init: [64, 64, 256], min: 4, max: 512}
train: {epochs: 1, optimizer: sgd, lr: 0.02, momentum: 0.9, seed: 2, eval_every: 0}
policy: {window: 4}
monitor: {enabled: false}
hetero: {memory_mb: [0, 0, 40]}
output: {dir: OUT}
"""


def inspect(out):
    r = run([DYNAMIX, "inspect", "--json", str(out / "checkpoint.pt")])
    if r.returncode != 0:
        fail(f"inspect failed: {r.stderr}")
    return json.loads(r.stdout)


def main():
    with TempDir() as d:
        out = d / "oom"
        cfg = write(d / "oom.yaml", CONFIG.replace("OUT", str(out)))
        r = run(train_cmd(3, cfg, ["train.max_steps=4"]))
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail("run with a too-large batch on rank 2 failed")
        if "out of memory on rank 2 at batch 256" not in r.stdout:
            fail("no out-of-memory recovery message for rank 2 at batch 256")
        if "out of memory: tried to allocate" not in r.stderr:
            fail("rank 2 did not report its allocation failure")
        summary = json.loads((out / "summary.json").read_text())
        if summary.get("oom_events", 0) < 1:
            fail(f"summary.json has no oom_events: {summary}")
        events = [e for line in read_jsonl(out / "decisions.jsonl") for e in line.get("oom", [])]
        if not events or any(e["rank"] != 2 for e in events) or events[0]["batch"] != 256:
            fail(f"decisions.jsonl does not record the events: {events}")
        limit = inspect(out)["batch_max"][2]
        if not limit < 256:
            fail(f"rank 2's limit was not lowered: {limit}")
        if limit != min(e["batch_max"] for e in events):
            fail(f"checkpoint limit {limit} differs from the events' {events}")
        for m in read_jsonl(out / "metrics.jsonl"):
            # An event at step s (steps completed) bounds steps s+1 onwards.
            bound = min(e["batch_max"] for e in events if e["step"] < m["step"])
            if m["global_batch"] != 384 or m["batch_sizes"][2] > bound:
                fail(f"step {m['step']}: plan not repaired within the limit {bound}: {m['batch_sizes']}")
        print(f"ok: {len(events)} out-of-memory events, rank 2 limited to {limit}, global batch kept at 384")

        # Resume to the end of the epoch: the learned limit holds, and every sample is used once.
        r = run(train_cmd(3, cfg, ["train.max_steps=0"], ["--resume"]))
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail("resume failed")
        metrics = read_jsonl(out / "metrics.jsonl")
        total = sum(m["global_batch"] for m in metrics)
        if total != 3000 or abs(metrics[-1]["epoch"] - 1.0) > 1e-12:
            fail(f"one epoch should use 3000 samples once each; got {total} ending at epoch {metrics[-1]['epoch']}")
        after = inspect(out)["batch_max"][2]
        if after > limit or any(m["batch_sizes"][2] > after for m in metrics if m["step"] > 4):
            fail(f"limit lost on resume: {limit} -> {after}")
        check_outputs(out)
        print(f"ok: resumed to the end of the epoch: 3000 samples in {len(metrics)} steps, limit {after}")
    print("PASSED")


if __name__ == "__main__":
    main()
