"""batch.multiple through the real CLI: with ranks 4x apart, every moving policy (proportional, gns,
dynamix, and gns with an adaptive global batch) trains at plans whose every batch is a multiple of
batch.multiple, step for step, and does move the plan, so the check can fail; without the option the
same runs meet sizes that are not. `dynamix sim` keeps it too. A rank out of memory is repaired in
multiples, and one out of memory at the least multiple ends the run naming both keys. A run resumed
with the option from a checkpoint whose plan is not in multiples trains in multiples from its first
step on, and a replayed plan not in multiples is refused with a note. A batch.init entry that is
not a multiple and a multiple below 1 are errors naming the keys, and the runs they stop leave no
outputs."""
from e2e_util import (DYNAMIX, SLOW_RANK_MLP, SOURCE_DIR, TempDir, expect_error, expect_no_outputs, fail,
                      read_jsonl, run, train_cmd, train_logs, write)

K = 8


def sizes(steps):
    return sorted({b for s in steps for b in s["batch_sizes"]})


def check_train(d, policy, sets=()):
    name = "_".join([policy, *(x.split("=")[1] for x in sets)])
    _, steps, _ = train_logs(d, name, SLOW_RANK_MLP, [f"policy.name={policy}", f"batch.multiple={K}", *sets])
    plans = {tuple(s["batch_sizes"]) for s in steps}
    if len(plans) < 2:
        fail(f"{policy} {list(sets)}: the plan never moved on ranks 4x apart, so the check proves nothing: {plans}")
    off = [s["step"] for s in steps if any(b % K for b in s["batch_sizes"])]
    if off:
        fail(f"{policy} {list(sets)}: batch sizes not multiples of {K} at steps {off[:5]}: {sizes(steps)}")
    print(f"ok: {policy} {list(sets)} with batch.multiple={K}: plans {sorted(plans)}")


def check_without(d):
    """The control: proportional without the option meets sizes that are not multiples of K."""
    _, steps, _ = train_logs(d, "control", SLOW_RANK_MLP, ["policy.name=proportional"])
    if all(b % K == 0 for b in sizes(steps)):
        fail(f"proportional without batch.multiple ran only multiples of {K} ({sizes(steps)}): the test proves nothing")
    print(f"ok: without the option proportional ran sizes {sizes(steps)}")


def check_sim(d):
    out = d / "sim"
    r = run([str(DYNAMIX), "sim", "--config", str(SOURCE_DIR / "configs" / "sim_hetero32.yaml"), "--policies",
             "proportional,dynamix", "--set", f"output.dir={out}", "--set", f"batch.multiple={K}",
             "--set", "sim.workload.target_progress=1500"])
    if r.returncode != 0:
        fail(f"dynamix sim with batch.multiple failed ({r.returncode}): {r.stderr[-600:]}")
    for policy in ("proportional", "dynamix"):
        plans = [x["plan"] for x in read_jsonl(out / policy / "decisions.jsonl")]
        if len({tuple(p) for p in plans}) < 2:
            fail(f"sim {policy}: the plan never moved on a 32-node cluster of two speeds")
        off = [p for p in plans if any(b % K for b in p)]
        if off:
            fail(f"sim {policy}: plans with sizes not multiples of {K}: {off[:2]}")
    print(f"ok: dynamix sim kept batch.multiple={K} for proportional and dynamix")


OOM_CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 3000, test_size: 200}
batch: {init: [64, 64, 256], min: 4, max: 512, multiple: 8}
train: {max_steps: 4, optimizer: sgd, lr: 0.02, seed: 2, eval_every: 0}
policy: {window: 4}
monitor: {enabled: false}
hetero: {memory_mb: [0, 0, 40]}
output: {dir: OUT}
"""


def check_out_of_memory(d):
    """A rank out of memory gets a lower limit in multiples too; where even the least multiple does not
    fit, the run ends with an error naming both keys instead of retrying forever."""
    out = d / "oom"
    r = run(train_cmd(3, write(d / "oom.yaml", OOM_CONFIG.replace("OUT", str(out)))))
    if r.returncode != 0 or "out of memory on rank 2 at batch 256" not in r.stdout:
        fail(f"out of memory with batch.multiple: exit {r.returncode}, no recovery at 256:\n{r.stdout[-800:]}")
    steps = read_jsonl(out / "metrics.jsonl")
    if any(b % K for s in steps for b in s["batch_sizes"]) or steps[-1]["batch_sizes"][2] >= 256:
        fail(f"out of memory with batch.multiple: plans {[s['batch_sizes'] for s in steps]}")
    print(f"ok: out of memory repaired in multiples of {K}: {[s['batch_sizes'] for s in steps]}")
    tiny = OOM_CONFIG.replace("[0, 0, 40]", "[0, 0, 8]").replace("multiple: 8", "multiple: 64")
    tiny = tiny.replace("OUT", str(d / "oom_tiny"))
    expect_error(train_cmd(3, write(d / "tiny.yaml", tiny)), "the smallest allowed (batch.min, batch.multiple)",
                 "out of memory at the least multiple")


def check_resume(d):
    """A run resumed with batch.multiple, whose checkpoint's plan is not in multiples, trains in
    multiples from its first resumed step on and says so."""
    out = d / "resumed"
    cfg = write(d / "resumed.yaml", SLOW_RANK_MLP.replace("OUT", str(out)).replace("max_steps: 16", "max_steps: 8"))
    first = run(train_cmd(2, cfg, ["policy.name=proportional"]))
    second = run(train_cmd(2, cfg, ["policy.name=proportional", "train.max_steps=16", f"batch.multiple={K}"],
                           ["--resume"]))
    if first.returncode != 0 or second.returncode != 0:
        fail(f"resume with batch.multiple: exits {first.returncode}, {second.returncode}: {second.stderr[-600:]}")
    steps = read_jsonl(out / "metrics.jsonl")
    before = [s["batch_sizes"] for s in steps if s["step"] == 8]
    if not before or all(b % K == 0 for b in before[0]):
        fail(f"the first run's last plan {before} is in multiples of {K} already: the check proves nothing")
    after = [(s["step"], s["batch_sizes"]) for s in steps if s["step"] > 8]
    if not after or any(b % K for _, p in after for b in p):
        fail(f"resumed with batch.multiple={K}, steps after 8 ran {after}")
    if f"not a multiple of batch.multiple {K}" not in second.stdout:
        fail(f"the resumed run does not say its plan was fitted to the multiple:\n{second.stdout[-800:]}")
    print(f"ok: step 8 ran {before[0]}; resumed with batch.multiple={K}: {after[0][1]} from step {after[0][0]}")


def check_replay(d):
    """policy.replay under batch.multiple: a listed plan not in multiples is refused with a note naming
    the option and the plan kept; a plan in multiples is put in force."""
    listed = write(d / "listed.jsonl", '{"step": 2, "plan": [44, 20]}\n{"step": 4, "plan": [40, 24]}\n')
    _, steps, decisions = train_logs(d, "replayed", SLOW_RANK_MLP.replace("max_steps: 16", "max_steps: 8"),
                                     [f"batch.multiple={K}", f"policy.replay={listed}"])
    plans = {s["step"]: s["batch_sizes"] for s in steps}
    if plans.get(3) != [32, 32] or plans.get(5) != [40, 24]:
        fail(f"replay under batch.multiple: plans {plans}, expected [32, 32] at step 3 and [40, 24] at step 5")
    note = next((x.get("note", "") for x in decisions if x["step"] == 2), "")
    if f"not a multiple of batch.multiple {K}" not in note:
        fail(f"the refused replayed plan's decision does not say why: {note!r}")
    print(f"ok: replay under batch.multiple: [44, 20] refused ({note}), [40, 24] put in force")


def check_errors(d):
    out = d / "refused"
    cfg = write(d / "refused.yaml", SLOW_RANK_MLP.replace("OUT", str(out)))
    for sets, needle in [
        ([f"batch.multiple={K}", "batch.init=[12,32]"], f"'batch.init[0]' (12) must be a multiple of 'batch.multiple' ({K})"),
        (["batch.multiple=3", "batch.init=32"], "'batch.init' (32) must be a multiple of 'batch.multiple' (3)"),
        (["batch.multiple=0"], "'batch.multiple' must be >= 1"),
    ]:
        expect_error(train_cmd(2, cfg, sets), needle, f"refused {sets}")
        expect_no_outputs(out, f"refused {sets}")


def main():
    with TempDir() as d:
        check_train(d, "proportional")
        check_train(d, "gns")
        check_train(d, "dynamix")
        check_train(d, "gns", ["batch.global=adaptive"])
        check_without(d)
        check_sim(d)
        check_out_of_memory(d)
        check_resume(d)
        check_replay(d)
        check_errors(d)


if __name__ == "__main__":
    main()
