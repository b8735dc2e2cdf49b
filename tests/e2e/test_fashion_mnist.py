"""End to end: the README's main job, 4 ranks, 1 epoch of real Fashion-MNIST with heterogeneous
slowdowns and the shipped dynamix policy (as scripts/demo.sh runs it) -> >= 85% accuracy."""
import json
import os
import sys
from pathlib import Path

from e2e_util import SOURCE_DIR, TempDir, check_outputs, fail, read_jsonl, run, train_cmd

DATA = Path("/usr/share/datasets/fashion-mnist")


def main():
    if not (DATA / "train-images-idx3-ubyte.gz").is_file():
        fail(f"{DATA} is missing: install the Debian package dataset-fashion-mnist (scripts/setup.sh)")
    with TempDir() as d:
        out = d / "fm"
        r = run(train_cmd(4, SOURCE_DIR / "configs/fashion_mnist_hetero.yaml",
                          [f"output.dir={out}", "output.checkpoint_every=0", "policy.name=dynamix"]),
                timeout=1200)
        print(r.stdout[-4000:], r.stderr[-4000:])
        if r.returncode != 0:
            fail(f"training failed with exit {r.returncode}")
        s = json.loads((out / "summary.json").read_text())
        check_outputs(out)
        m = read_jsonl(out / "metrics.jsonl")
        # Per sample: the policy gives the slow rank fewer samples, so its time per step shrinks.
        slow = [sum(x["compute_time"][r] for x in m) / sum(x["batch_sizes"][r] for x in m) for r in (3, 0)]
        print(f"final accuracy {s['final_test_accuracy']:.4f}, compute per sample rank3/rank0 "
              f"{slow[0] / slow[1]:.2f}, final plan {m[-2]['batch_sizes']}")
        if s["world_size"] != 4 or s["epochs"] < 1.0:
            fail(f"unexpected summary {s}")
        if s["final_test_accuracy"] < 0.85:
            fail(f"test accuracy {s['final_test_accuracy']:.4f} < 0.85")
        if slow[0] / slow[1] < 1.8:
            fail("the 2.5x slowdown of rank 3 does not show in its compute time per sample")
        if s["policy"] != "dynamix" or not m[-2]["batch_sizes"][3] < m[-2]["batch_sizes"][0]:
            fail(f"the dynamix policy did not move samples off the slow rank 3: {s.get('policy')}, "
                 f"plan {m[-2]['batch_sizes']}")
    print("fashion-mnist e2e: passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
