"""policy.shadow through the real CLI: the policy decides every window and decisions.jsonl logs its
plan as "proposed", while the plan in force stays the initial one (metrics.jsonl's batch_sizes and
decisions.jsonl's "plan"). The same runs without shadow change the plan, so the check can fail.
`dynamix sim` refuses the option, and a value that is not a boolean is an error naming it."""
from e2e_util import (DYNAMIX, SLOW_RANK_MLP, SOURCE_DIR, TempDir, expect_error, expect_no_outputs, fail,
                      train_cmd, train_logs, write)

EVEN = [32, 32]


def train(d, name, sets):
    return train_logs(d, name, SLOW_RANK_MLP, sets)


def check_acting(d, policy):
    _, steps, decisions = train(d, f"{policy}_acting", [f"policy.name={policy}"])
    if all(s["batch_sizes"] == EVEN for s in steps):
        fail(f"{policy} without shadow never changed the plan on ranks 4x apart: the shadow check would prove nothing")
    if any("proposed" in x for x in decisions):
        fail(f"{policy} without shadow logged a 'proposed' plan: {decisions[0]}")


def check_shadow(d, policy):
    r, steps, decisions = train(d, f"{policy}_shadow", [f"policy.name={policy}", "policy.shadow=true"])
    if "policy.shadow" not in r.stdout + r.stderr:
        fail(f"the {policy} shadow run's start lines do not say policy.shadow is in force")
    moved = [s["step"] for s in steps if s["batch_sizes"] != EVEN]
    if moved:
        fail(f"{policy} in shadow changed the plan in force at steps {moved[:5]}")
    for x in decisions:
        if x["plan"] != EVEN:
            fail(f"{policy} in shadow: decision {x['window']} logs plan {x['plan']}, not the plan in force {EVEN}")
        p = x.get("proposed")
        if not isinstance(p, list) or len(p) != 2 or sum(p) != sum(EVEN):
            fail(f"{policy} in shadow: decision {x['window']} has no proposed plan of 2 ranks and B 64: {x}")
    proposals = [x["proposed"] for x in decisions if x["proposed"] != EVEN]
    if not proposals:
        fail(f"{policy} in shadow proposed nothing but the even plan on ranks 4x apart: {decisions}")
    if any(p[0] <= p[1] for p in proposals):
        fail(f"{policy} in shadow proposed more batch for the slow rank 1: {proposals}")
    print(f"ok: {policy} in shadow kept {EVEN} over {len(steps)} steps, proposed {proposals[-1]}")


def main():
    with TempDir() as d:
        for policy in ("proportional", "dynamix"):
            check_acting(d, policy)
            check_shadow(d, policy)
        expect_error([DYNAMIX, "sim", "--config", str(SOURCE_DIR / "configs" / "experiments" / "sim_short_spells.yaml"),
                      "--policies", "static", "--set", "policy.shadow=true", "--set", f"output.dir={d / 'sim'}"],
                     "policy.shadow", "dynamix sim with policy.shadow")
        cfg = write(d / "bad.yaml", SLOW_RANK_MLP.replace("OUT", str(d / "bad")))
        expect_error(train_cmd(2, cfg, ["policy.shadow=maybe"]), "policy.shadow", "policy.shadow=maybe")
        expect_no_outputs(d / "bad", "policy.shadow=maybe")
        print("ok: sim refuses policy.shadow; a bad value is named")
    print("PASSED")


if __name__ == "__main__":
    main()
