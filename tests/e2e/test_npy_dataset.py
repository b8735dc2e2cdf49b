"""Your own data: a Python data set converted by scripts/tools/to_npy.py trains through the real CLI
(dataset.name=npy) and learns; a damaged .npy file is a clean error naming it."""
import json

from e2e_util import SOURCE_DIR, TempDir, check_outputs, expect_error, fail, python_with, run, train_cmd, write

# Two kinds of split as a user's module would give them: a map-style data set (torchvision's
# shape: len() and [i] -> (input, label)) and a tuple of arrays. Class k lights up quadrant k.
DATA_MODULE = '''
import numpy as np

def images(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, n)
    x = rng.normal(0.0, 0.3, (n, 1, 8, 8))
    for i, k in enumerate(labels):
        x[i, 0, 4 * (k // 2):4 * (k // 2) + 4, 4 * (k % 2):4 * (k % 2) + 4] += 1.5
    return x, labels

class TrainSet:
    def __init__(self):
        self.x, self.y = images(768, 1)
    def __len__(self):
        return len(self.y)
    def __getitem__(self, i):
        return self.x[i], self.y[i]

def train_set():
    return TrainSet()

def test_set():
    return images(128, 2)
'''

CONFIG = """
model: cnn
dataset: {name: synthetic}
batch: {init: [16, 32], min: 4, max: 64}
train: {max_steps: 40, epochs: 10, optimizer: sgd, lr: 0.05, momentum: 0.9, eval_every: 20, seed: 5}
policy: {name: static}
output: {dir: OUT}
"""


def main():
    python = python_with("numpy")
    with TempDir() as d:
        write(d / "mydata.py", DATA_MODULE)
        data = d / "npy"
        r = run([python, str(SOURCE_DIR / "scripts/tools/to_npy.py"), str(data),
                 "--train", f"{d}/mydata.py:train_set", "--test", f"{d}/mydata.py:test_set"])
        print(r.stdout, r.stderr)
        if r.returncode != 0:
            fail("to_npy.py failed")
        for name in ("train_inputs", "train_labels", "test_inputs", "test_labels"):
            if not (data / f"{name}.npy").is_file():
                fail(f"to_npy.py wrote no {name}.npy")

        out = d / "run"
        cfg = write(d / "npy.yaml", CONFIG.replace("OUT", str(out)))
        r = run(train_cmd(2, cfg, ["dataset.name=npy", f"dataset.path={data}"]))
        print(r.stdout[-3000:], r.stderr[-3000:])
        if r.returncode != 0:
            fail(f"training on the .npy data set exited {r.returncode}")
        check_outputs(out)
        summary = json.loads((out / "summary.json").read_text())
        if summary["dataset"] != "npy" or summary["steps"] != 40:
            fail(f"summary: dataset {summary['dataset']!r}, steps {summary['steps']}")
        # Chance is 0.25; the quadrant is plain to see, so a run that read the data right learns it.
        if summary["best_test_accuracy"] < 0.8:
            fail(f"best test accuracy {summary['best_test_accuracy']:.3f}: the labels do not match the inputs")
        print(f"ok: trained on .npy data: best test accuracy {summary['best_test_accuracy']:.3f}")

        # The same data named file by file, with the test inputs cut short.
        cut = d / "cut_inputs.npy"
        cut.write_bytes((data / "test_inputs.npy").read_bytes()[:-100])
        files = [f"dataset.{k}={data}/{k}.npy" for k in ("train_inputs", "train_labels", "test_labels")]
        expect_error(train_cmd(2, cfg, ["dataset.name=npy", f"dataset.test_inputs={cut}"] + files,
                               ["--overwrite"]),
                     f"{cut}: truncated file", "truncated .npy file")
        labels = d / "float_labels.npy"
        r = run([python, "-c", f"import numpy as np; np.save('{labels}', np.zeros(128, np.float32))"])
        expect_error(train_cmd(2, cfg, ["dataset.name=npy", f"dataset.path={data}", f"dataset.test_labels={labels}"],
                               ["--overwrite"]),
                     f"{labels}: labels must be integer class ids", "float labels")


if __name__ == "__main__":
    main()
