"""policy.replay through the real CLI: a static run replaying a dynamix run's decisions.jsonl trains
at that run's plans at every step (metrics.jsonl's batch_sizes the same, step for step), decides at
the steps the file lists, and logs static's own plan as "proposed". The dynamix run moves the plan
(ranks 4x apart), so the check can fail. A missing file, a plan of another length, a step out of
order, policy.shadow beside it, and `dynamix sim` with it are errors naming the problem, and the
run they stop leaves no outputs."""
import json

from e2e_util import (DYNAMIX, SLOW_RANK_MLP, SOURCE_DIR, TempDir, expect_error, expect_no_outputs, fail,
                      train_cmd, train_logs, write)

# 24 steps: the handmade replay lists decisions up to step 17.
CONFIG = SLOW_RANK_MLP.replace("max_steps: 16", "max_steps: 24")


def train(d, name, sets):
    return train_logs(d, name, CONFIG, sets)


def check_replay(d):
    _, steps, decisions = train(d, "original", ["policy.name=dynamix"])
    plans = [s["batch_sizes"] for s in steps]
    if len({tuple(p) for p in plans}) < 2:
        fail(f"dynamix never changed the plan on ranks 4x apart: the replay check would prove nothing: {plans}")
    source = d / "original" / "decisions.jsonl"
    r, again, replayed = train(d, "replay", ["policy.name=static", f"policy.replay={source}"])
    if "policy.replay" not in r.stdout + r.stderr:
        fail("the replay run's start lines do not say policy.replay is in force")
    differ = [s["step"] for s, t in zip(steps, again) if s["batch_sizes"] != t["batch_sizes"]]
    if len(again) != len(steps) or differ:
        fail(f"the replay's plans differ from the original's at steps {differ[:5]} ({len(again)} steps "
             f"against {len(steps)})")
    if [x["step"] for x in replayed] != [x["step"] for x in decisions]:
        fail(f"the replay decided at steps {[x['step'] for x in replayed]}, the original at "
             f"{[x['step'] for x in decisions]}")
    for x in replayed:
        if x.get("replayed") is not True or x.get("proposed") != [32, 32]:
            fail(f"replay decision {x['window']}: expected replayed true and static's plan [32, 32] proposed: {x}")
    print(f"ok: static replayed dynamix's {len(decisions)} decisions; {len(steps)} steps at the same plans "
          f"({sorted({tuple(p) for p in plans})[:3]} ...)")
    return source


def check_listed_steps(d):
    """Decisions off the window's grid, on consecutive steps, are taken where listed; between them
    (and at the window's steps) the plan in force stays, as it does where a listed plan does not
    fit the run (another B than its fixed one)."""
    handmade = write(d / "handmade.jsonl", "\n".join(json.dumps(x) for x in (
        {"step": 5, "plan": [40, 24]}, {"step": 6, "plan": [20, 44]}, {"step": 13, "plan": [36, 28]},
        {"step": 17, "plan": [30, 30]})) + "\n")
    _, steps, decisions = train(d, "handmade", ["policy.name=static", f"policy.replay={handmade}"])
    # A decision after step k puts its plan in force from step k + 1 on.
    expect = {s: [32, 32] for s in range(1, 6)} | {6: [40, 24]} | {s: [20, 44] for s in range(7, 14)}
    expect |= {s: [36, 28] for s in range(14, 25)}
    got = {s["step"]: s["batch_sizes"] for s in steps}
    wrong = {s: (got.get(s), p) for s, p in expect.items() if got.get(s) != p}
    if wrong:
        fail(f"handmade replay: step: (plan in force, expected) {wrong}")
    at = {x["step"]: x["replayed"] for x in decisions}

    if not (at.get(5) and at.get(6) and at.get(13)) or at.get(8) is not False or at.get(17) is not False:
        fail(f"handmade replay: decisions {at}: expected replayed at 5, 6 and 13, not at 8 or 17")
    refused = [x.get("note", "") for x in decisions if x["step"] == 17]
    if not refused or "fixed B = 64" not in refused[0]:
        fail(f"handmade replay: the plan of B = 60 at step 17 was not refused with a note naming B: {refused}")
    print(f"ok: handmade replay decided at {sorted(at)}, replayed at {sorted(s for s, v in at.items() if v)}")


def check_errors(d, source):
    bad = d / "bad"
    cfg = write(d / "bad.yaml", CONFIG.replace("OUT", str(bad)))
    lines = source.read_text().splitlines()
    short = write(d / "short.jsonl", json.dumps({"step": 4, "plan": [32, 16, 16]}) + "\n")
    disorder = write(d / "disorder.jsonl", "\n".join([lines[1], lines[0]]) + "\n")
    cases = {
        "a missing file": ([f"policy.replay={d / 'none.jsonl'}"], "cannot read"),
        "a plan of 3 ranks for 2": ([f"policy.replay={short}"], "a plan of 3 ranks for a run of 2"),
        "steps out of order": ([f"policy.replay={disorder}"], "line 2"),
        "policy.shadow beside it": ([f"policy.replay={source}", "policy.shadow=true"], "policy.shadow"),
    }
    for what, (sets, needle) in cases.items():
        expect_error(train_cmd(2, cfg, sets), needle, f"policy.replay with {what}")
        expect_no_outputs(bad, f"policy.replay with {what}")
    expect_error([DYNAMIX, "sim", "--config", str(SOURCE_DIR / "configs" / "experiments" / "sim_short_spells.yaml"),
                  "--policies", "static", "--set", f"policy.replay={source}", "--set", f"output.dir={d / 'sim'}"],
                 "policy.replay", "dynamix sim with policy.replay")


def main():
    with TempDir() as d:
        source = check_replay(d)
        check_listed_steps(d)
        check_errors(d, source)
    print("PASSED")


if __name__ == "__main__":
    main()
