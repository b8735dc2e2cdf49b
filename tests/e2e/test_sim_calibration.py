"""The simulator calibrated against real runs (issue #14, item 4). Two real 2-rank Fashion-MNIST runs,
one rank emulated 3x slower, under the static and the proportional policy; a profile fitted from the
proportional run's metrics.jsonl (`sim.profile.fit`: per-rank compute models, exposed communication,
noise) lets `dynamix sim` predict each run's mean step time within 15 %."""
import json
import os
import statistics

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, fail, read_jsonl, run, train_cmd, write

STEPS = 80
WINDOW = 20
TOLERANCE = 0.15
ATTEMPTS = 3
REAL = ["hetero.slowdown=[1,3]", "batch.init=[48,48]", f"train.max_steps={STEPS}", "train.eval_every=0",
        f"policy.window={WINDOW}", "output.checkpoint_every=0"]


def real_run(d, policy):
    out = d / policy
    r = run(train_cmd(2, SOURCE_DIR / "configs/fashion_mnist_hetero.yaml",
                      REAL + [f"policy.name={policy}", f"output.dir={out}"]))
    if r.returncode != 0:
        fail(f"real {policy} run exit {r.returncode}: {r.stderr[-2000:]}")
    steps = [m for m in read_jsonl(out / "metrics.jsonl") if "step_time" in m][1:]  # step 1: warm-up
    return out, statistics.mean(m["step_time"] for m in steps), steps[-1]["batch_sizes"]


def simulated(d, fit_from):
    config = write(d / "calibrated.yaml", f"""
sim:
  seed: 1
  max_steps: {STEPS - 1}
  profile: {{fit: {fit_from / 'metrics.jsonl'}}}
  workload: {{target_progress: 1.0e12}}
batch: {{init: [48, 48], min: 8, max: 512, global: fixed}}
policy: {{name: static, window: {WINDOW}}}
output: {{dir: {d / 'sim'}}}
""")
    r = run([DYNAMIX, "sim", "--config", str(config), "--policies", "static", "proportional"])
    if r.returncode != 0:
        fail(f"sim exit {r.returncode}: {r.stderr[-2000:]}")
    print(r.stdout)
    result = {}
    for policy in ("static", "proportional"):
        s = json.loads((d / "sim" / policy / "summary.json").read_text())
        plans = [json.loads(line)["plan"] for line in open(d / "sim" / policy / "decisions.jsonl") if line.strip()]
        result[policy] = (s["total_time_s"] / s["steps"], plans[-1] if plans else None)
    return result


def compute_by_batch(out):
    """Per rank, {batch: (steps, median ms, mean ms)} of a run's compute times: what the fit saw (the
    proportional run) and what it had to predict (the static run), printed when the test fails."""
    table = {}
    for m in read_jsonl(out / "metrics.jsonl")[1:]:
        for r, (b, t) in enumerate(zip(m["batch_sizes"], m["compute_time"])):
            table.setdefault(r, {}).setdefault(b, []).append(t * 1e3)
    def summary(v):
        return len(v), round(statistics.median(v), 1), round(statistics.mean(v), 1)

    return {r: {b: summary(v) for b, v in sorted(by.items())} for r, by in table.items()}


def attempt(d):
    """One measurement: the largest relative error of the two predictions, after printing them."""
    real = {p: real_run(d, p) for p in ("static", "proportional")}
    predicted = simulated(d, real["proportional"][0])
    worst = 0.0
    for policy in ("static", "proportional"):
        _, t_real, plan_real = real[policy]
        t_sim, plan_sim = predicted[policy]
        ratio = t_sim / t_real
        worst = max(worst, abs(ratio - 1))
        print(f"{policy:13s} real step {t_real * 1e3:7.1f} ms (plan {plan_real})  "
              f"simulated {t_sim * 1e3:7.1f} ms (plan {plan_sim})  ratio {ratio:.3f}")
    if worst > TOLERANCE:
        for policy in ("static", "proportional"):
            print(f"{policy} run, compute by batch size (steps, median ms, mean ms): "
                  f"{compute_by_batch(real[policy][0])}")
    return worst


def main():
    # The two real runs are measured 10-20 s apart on a shared machine whose speed drifts between
    # runs by up to 20 % (RESULTS §3b), and static's prediction rests on the other run's steps. A
    # miss is therefore measured again, from new runs: a model that is wrong misses every time.
    # Three attempts: on the Intel VM of 2026-11-27 a clean-clone suite missed twice (17.0 %, 18.4 %:
    # the proportional run's first window, all the fit has at 48 samples, ran 19-28 % slower on
    # the slowed rank than the static run's steps), and passed alone just after.
    for n in range(1, ATTEMPTS + 1):
        with TempDir() as d:
            worst = attempt(d)
        if worst <= TOLERANCE:
            print("sim calibration e2e: passed")
            return
        print(f"attempt {n}: simulated step times off by {worst:.1%} (tolerance {TOLERANCE:.0%})")
    fail(f"simulated step times off by more than {TOLERANCE:.0%} in {ATTEMPTS} attempts")


if __name__ == "__main__":
    os.chdir(os.environ.get("DYNAMIX_SOURCE_DIR", "."))
    main()
