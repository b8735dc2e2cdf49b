"""Every comm.compression codec, with and without comm.overlap, through the real `dynamix train`
under mpirun (issue #17: fp16 / bf16 died at the first step because the trainer's communicator is
the watchdog's wrapper, not MpiCommunicator). Each run must exit 0, train, evaluate, and pass the
output-contract check; the summary and metrics must say which codec ran."""
import json
import os

from e2e_util import TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 400, test_size: 64}
batch: {init: [16, 16], min: 4, max: 64}
train: {max_steps: 10, epochs: 100, optimizer: sgd, lr: 0.05, momentum: 0.9, eval_every: 5, seed: 5}
policy: {window: 5}
output: {dir: OUT}
"""


def main():
    with TempDir() as d:
        for compression in ("none", "fp16", "bf16", "hlc"):
            for overlap in ("false", "true"):
                name = f"{compression}_overlap_{overlap}"
                out = d / name
                cfg = write(d / f"{name}.yaml", CONFIG.replace("OUT", str(out)))
                r = run(train_cmd(2, cfg, [f"comm.compression={compression}", f"comm.overlap={overlap}"]),
                        timeout=300)
                if r.returncode != 0:
                    fail(f"{name}: exit {r.returncode}\n{r.stdout}{r.stderr}")
                check_outputs(out)
                summary = json.loads((out / "summary.json").read_text())
                metrics = read_jsonl(out / "metrics.jsonl")
                if summary["steps"] != 10 or len(metrics) != 10:
                    fail(f"{name}: {summary['steps']} steps, {len(metrics)} metric lines, expected 10")
                if not read_jsonl(out / "eval.jsonl"):
                    fail(f"{name}: no evaluation")
                print(f"ok: {name}: 10 steps, final test accuracy {summary['final_test_accuracy']}")
    print("compression e2e: all cases passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
