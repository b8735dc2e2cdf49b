"""The PPO agent fine-tunes the shipped policy online inside a real 4-rank run: updates happen on
rank 0's background thread while training goes on, every plan is feasible, the outputs meet the
contract, and what it learned is kept as OUT/policy.pt, which a later run loads as its policy."""
import os
import re

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, check_outputs, fail, read_jsonl, run, train_cmd, write

CONFIG = """
model: mlp
dataset: {name: synthetic, shape: [1, 16, 16], classes: 4, train_size: 20000, test_size: 200}
batch: {init: 16, min: 2, max: 64, global: fixed}
train: {max_steps: 300, epochs: 100, lr: 0.01}
policy: {name: dynamix, window: 2, learn: true}
hetero: {slowdown: [1.0, 1.0, 2.0, 4.0]}
output: {dir: OUT}
"""


def main():
    with TempDir() as d:
        out = d / "online"
        r = run(train_cmd(4, write(d / "online.yaml", CONFIG.replace("OUT", str(out)))))
        print(r.stdout[-3000:], r.stderr[-2000:])
        if r.returncode != 0:
            fail(f"exit {r.returncode}")
        updates = re.findall(r"dynamix: update (\d+) ", r.stdout)
        if len(updates) < 1:
            fail(f"expected a PPO update in 150 windows (rollout 128), saw {updates}")
        if "fine-tuning the shipped default policy" not in r.stdout:
            fail("the run did not start from the shipped policy")
        decisions = read_jsonl(out / "decisions.jsonl")
        if len(decisions) != 150:
            fail(f"{len(decisions)} decisions, expected 150")
        for dcs in decisions:
            p = dcs["plan"]
            if sum(p) != 64 or min(p) < 2 or max(p) > 64:
                fail(f"infeasible plan {p} in window {dcs['window']}")
        if not any(isinstance(dcs.get("reward"), float) for dcs in decisions):
            fail("no rewards logged")
        steps = read_jsonl(out / "metrics.jsonl")
        plan_at = {dcs["step"]: dcs["plan"] for dcs in decisions}  # decided after that step
        for m in steps:
            if m["step"] - 1 in plan_at and m["batch_sizes"] != plan_at[m["step"] - 1]:
                fail(f"step {m['step']} did not use the plan broadcast after step {m['step'] - 1}")
        check_outputs(out)
        learned = out / "policy.pt"
        if not learned.is_file():
            fail("no policy.pt: what the run learned was not kept")
        r = run([DYNAMIX, "sim", "--config", str(SOURCE_DIR / "configs/sim_hetero32.yaml"), "--policies", "dynamix",
                 "--set", f"policy.checkpoint={learned}", "--set", "policy.learn=false"])
        if r.returncode != 0 or f"inference from {learned}" not in r.stdout:
            fail(f"the learned policy.pt does not load: exit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
    print(f"agent online e2e: passed ({len(updates)} updates)")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
