"""Issue #18, defect 1: out of memory during evaluation. One rank's emulated memory
(hetero.memory_mb) fits its training batch but not the 64 test samples evaluation takes at once
on the CPU (500 before 2026-11-28; 18-22 MB here: training fails at 16, evaluation fits at 24); the evaluation pass killed the job at the first evaluation. Now that rank halves its
evaluation chunk until it fits (the same samples again, counted once), the run completes, and
the results equal those of a run without the cap."""
import json

from e2e_util import TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 2000, test_size: 1000}
batch: {init: [32, 32], min: 4, max: 64}
train: {max_steps: 8, epochs: 1, optimizer: sgd, lr: 0.02, momentum: 0.9, seed: 5, eval_every: 4}
policy: {window: 4}
monitor: {enabled: false}
output: {dir: OUT}
"""


def train(d, name, memory_mb):
    out = d / name
    cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
    r = run(train_cmd(2, cfg, [f"hetero.memory_mb=[0, {memory_mb}]"]))
    print(r.stdout, r.stderr)
    if r.returncode != 0:
        fail(f"run '{name}' (hetero.memory_mb=[0, {memory_mb}]) failed with status {r.returncode}")
    return out, r


def main():
    with TempDir() as d:
        free, _ = train(d, "uncapped", 0)
        capped, r = train(d, "capped", 20)
        if "rank 1: evaluation ran out of memory with 64 test samples" not in r.stderr:
            fail("rank 1 did not run out of memory in evaluation: the test no longer tests anything")
        if "out of memory on rank" in r.stdout:
            fail("the capped rank ran out of memory in training too: lower its batch in the test")
        want, got = read_jsonl(free / "eval.jsonl"), read_jsonl(capped / "eval.jsonl")
        if [e["step"] for e in got] != [4, 8]:
            fail(f"expected evaluations at steps 4 and 8, got {got}")
        for w, g in zip(want, got):
            # Chunks change only the order of float sums: counts equal, losses to rounding.
            if g["test_accuracy"] != w["test_accuracy"] or abs(g["test_loss"] - w["test_loss"]) > 1e-5:
                fail(f"evaluation in smaller chunks differs: {g} vs uncapped {w}")
        summary = json.loads((capped / "summary.json").read_text())
        if not summary["completed"] or summary["final_test_accuracy"] != want[-1]["test_accuracy"]:
            fail(f"summary does not report the completed run: {summary}")
        check_outputs(capped)
        print(f"ok: evaluation on the capped rank fitted in smaller chunks; results equal: {got}")
    print("PASSED")


if __name__ == "__main__":
    main()
