"""A change inside a window, through the real CLI: rank 1 slows 5x at step 23 of a 2-rank run that
decides every 10 steps. The shipped dynamix policy notices it within 3 steps and decides at once
(decisions.jsonl: trigger "change", before the regular decision at step 30), moving batch away
from rank 1; the heuristics decide on the window's steps only. A run that starts unbalanced (rank 1
6x slower from step 1) gets its first decision before the first window ends (StartCheck). A drift
(`period_steps`) moves rank 1's emulated slowdown smoothly between 1x and 4x and back. Jitter
(`hetero.jitter`) scatters rank 1's step times as a shared node's, and rank 0's not."""
import json
import math
import os

from e2e_util import TempDir, check_outputs, fail, run, train_cmd, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 4096, test_size: 64}
batch: {init: [32, 32], min: 4, max: 128}
train: {max_steps: 40, optimizer: sgd, lr: 0.05, seed: 3, eval_every: 0}
policy: {name: dynamix, window: 10}
hetero:
  slowdown: [1, 1]
  events: [{at_step: 23, rank: 1, slowdown: 5.0}]
monitor: {enabled: false}
output: {dir: OUT, checkpoint_every: 0}
"""


def decisions_right_after_a_regular_one(dec):
    """Decisions taken one step after a regular (window) decision: an alarm that the regular
    decision already answered, asked for again. A change decision one step before a regular one
    (an alarm late in a window, as on a loaded 2-core VM) is a different, known case
    (docs/AGENT.md, "What is not done")."""
    return [b for a, b in zip(dec, dec[1:]) if a["trigger"] == "window" and b["step"] - a["step"] == 1]


def decisions(out):
    return [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]


def train(d, policy, config=CONFIG, name=None):
    out = d / (name or policy)
    cfg = write(d / f"{name or policy}.yaml", config.replace("OUT", str(out)))
    r = run(train_cmd(2, cfg, [f"policy.name={policy}"]))
    if r.returncode != 0:
        fail(f"{policy}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    check_outputs(out)
    return decisions(out)


def drift_ratios(d, out):
    """rank 1 / rank 0 compute time per step of a static run with rank 1 drifting up to 4x every
    20 steps from step 0."""
    config = CONFIG.replace("events: [{at_step: 23, rank: 1, slowdown: 5.0}]",
                            "events: [{at_step: 0, rank: 1, slowdown: 4.0, period_steps: 20}]")
    train(d, "static", config, out)
    return compute_ratios(d / out)


def compute_ratios(out):
    """rank 1 / rank 0 compute time per step of the run in `out` (metrics.jsonl)."""
    ratio = {}
    for line in (out / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        ratio[m["step"]] = m["compute_time"][1] / m["compute_time"][0]
    return ratio


def median_of(ratio, steps):
    """Median ratio over `steps` (metrics step k ran with the slowdown of step k - 1)."""
    v = sorted(ratio[s] for s in steps)
    return v[len(v) // 2]


def change_problem(dec):
    """What is wrong with the decisions of the run where rank 1 slows 5x at step 23 (None: all
    right). Step 23 leaves the alarm (3 steps) and the decision's latency (2 steps) two steps of
    slack before the regular decision at step 30."""
    early = [x for x in dec if x["trigger"] == "change"]
    if not [x for x in early if 23 < x["step"] < 30 and x["plan"][1] < x["plan"][0]]:
        return (f"no decision moving batch off rank 1 between the change at step 23 and step 30: "
                f"{[(x['step'], x['trigger'], x['plan']) for x in dec]}")
    for x in dec:
        if (x["step"] % 10 == 0) != (x["trigger"] == "window"):
            return f"trigger does not match the step: {x}"
    if not dec[-1]["plan"][1] < dec[-1]["plan"][0]:
        return f"batch kept on the slowed rank 1: final plan {dec[-1]['plan']}"
    return None


def check_change_followed(d):
    """Real step times on a shared 2-core machine: a miss is measured once more from a new run (a
    clean-clone suite's machine load once brought a noise alarm at step 22, whose kept plan left
    the alarm re-armed too late for step 30); a policy that does not follow the change misses both."""
    for attempt in (1, 2):
        dec = train(d, "dynamix", name=f"dynamix{attempt}")
        problem = change_problem(dec)
        if problem is None:
            print(f"dynamix decided at steps {[x['step'] for x in dec]}; final plan {dec[-1]['plan']}")
            return
        print(f"attempt {attempt}: {problem}")
    fail(f"dynamix, 2 runs: {problem}")


def check_unbalanced_start(d):
    """Unbalanced from the start (rank 1 6x slower): the first decision comes before step 10 and
    moves batch off rank 1 (the first two steps are set aside, then 4 steps at least). The premise is a
    clear imbalance, and on a loaded 2-core machine the emulation does not always make one: with
    3x, rank 1 measured 1.4-1.7x rank 0 in some runs; with 6x, a clean-clone suite once saw window
    means of 90 against 47 ms (CI and 2026-11-28). StartCheck rightly waits on such steps, so a run
    whose steps show rank 1 under 3x rank 0 (median of steps 3-9) is run again, up to 3 runs; a
    run with a clear imbalance and no early decision fails, and so do 3 runs without one."""
    ratio = 0
    for attempt in (1, 2, 3):
        start = train(d, "dynamix", CONFIG.replace("slowdown: [1, 1]", "slowdown: [1, 6]"), f"start{attempt}")
        ratio = median_of(compute_ratios(d / f"start{attempt}"), range(3, 10))  # start-up steps set aside
        first = start[0]
        if ratio < 3:
            print(f"unbalanced start, run {attempt}: rank 1 measured only {ratio:.2f}x rank 0; run again")
            continue
        if not (6 <= first["step"] < 10 and first["trigger"] == "change" and first["plan"][1] < first["plan"][0]):
            fail(f"unbalanced start (rank 1 {ratio:.2f}x rank 0): first decision {first}, expected one before "
                 f"step 10 moving batch off rank 1")
        print(f"unbalanced start: rank 1 {ratio:.2f}x rank 0, first decision at step {first['step']}, plan {first['plan']}")
        return
    fail(f"unbalanced start: the 6x emulated slowdown never measured 3x in 3 runs (last {ratio:.2f}x)")


def check_drift(d):
    """The drift's ratio peaks half-way through each period and is lowest at each period's start.
    (The peak is what a 4x step change shows on 2 ranks here, about 2.7: rank 0's measured compute
    is inflated by the core it shares.) Real step times on a shared machine: a miss is measured
    again from a new run, up to 3 runs (a clean-clone suite on 2026-11-27 saw 1.77 once, and it
    passed twice alone; on 2026-11-29 two runs in a row were scattered 0.3-7.6x step to step on a
    busy VM, and the next passed); an emulation that does not drift misses all three."""
    for attempt in (1, 2, 3):
        ratio = drift_ratios(d, f"drift{attempt}")
        peak, trough = median_of(ratio, [10, 11, 12, 30, 31, 32]), median_of(ratio, [20, 21, 22, 39, 40])
        print(f"drift: rank 1 / rank 0 compute time {peak:.2f} mid-period, {trough:.2f} at period starts")
        # Relative: under a loaded machine (ctest -j) both ranks' times swing, the pattern stays.
        if peak > 2.0 and peak > 1.8 * trough:
            return
        print(f"attempt {attempt}: drift not followed; per step {ratio}")
    fail(f"drift not followed in 3 runs: ratio {peak:.2f} mid-period (expected over 2), {trough:.2f} at "
         f"period starts (expected about 1)")


def check_jitter(d):
    """Both ranks 3x slow, rank 1 with jitter 1.0 (log-normal, log std 0.83): the spread of rank 1's
    log compute time (interquartile range, robust to the odd stalled step) is that of the draws,
    1.35 x 0.83 = 1.1, shrunk by the part of a step the emulation does not scale (seen: 0.5 for
    jitter 0.5 against its 0.63); rank 0's is the machine's (0.1-0.4 here)."""
    config = CONFIG.replace("slowdown: [1, 1]", "slowdown: [3, 3]\n  jitter: [0, 1.0]").replace(
        "max_steps: 40", "max_steps: 100").replace("  events: [{at_step: 23, rank: 1, slowdown: 5.0}]\n", "")
    train(d, "static", config, "jitter")
    logs = [[], []]
    for line in (d / "jitter" / "metrics.jsonl").read_text().splitlines():
        m = json.loads(line)
        if m["step"] >= 2:  # the first steps warm up
            for r in (0, 1):
                logs[r].append(math.log(m["compute_time"][r]))

    def iqr(v):
        v = sorted(v)
        return v[3 * len(v) // 4] - v[len(v) // 4]

    spread = [iqr(v) for v in logs]
    print(f"jitter: interquartile range of log compute time, rank 0 {spread[0]:.2f}, rank 1 {spread[1]:.2f}")
    if not spread[1] > spread[0] + 0.3:
        fail(f"jitter not applied: log compute time spread {spread[1]:.2f} on rank 1 (jitter 1.0) against "
             f"{spread[0]:.2f} on rank 0 (none)")


def main():
    with TempDir() as d:
        check_change_followed(d)

        # The alarm fires after step 30, a regular decision step: that decision answers it, and
        # no second decision follows at step 31.
        aligned = train(d, "dynamix", CONFIG.replace("at_step: 23", "at_step: 27"), "aligned")
        if decisions_right_after_a_regular_one(aligned):
            fail(f"a decision one step after another: {[(x['step'], x['trigger']) for x in aligned]}")

        check_unbalanced_start(d)

        check_drift(d)
        check_jitter(d)

        prop = train(d, "proportional")
        if any(x["trigger"] != "window" or x["step"] % 10 for x in prop):
            fail(f"proportional decided off its windows: {[x['step'] for x in prop]}")
    print("change decision e2e: passed")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
