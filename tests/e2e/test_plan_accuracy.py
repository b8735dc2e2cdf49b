"""scripts/experiments/plan_accuracy.sh and accuracy_spread.py as RESULTS §1 runs them: real runs at
fixed plans, then the accuracy table. A fixed plan is deterministic (the same plan twice gives the
same accuracy to the last digit, which is what lets the fixed plans' spread stand for the rounding's
effect alone); the statistics are checked on summaries with known values; bad input is refused."""
import os

from e2e_util import DYNAMIX, SOURCE_DIR, TINY_CNN, TempDir, expect_error, fail, read_jsonl, run, write

TOOLS = SOURCE_DIR / "scripts" / "experiments"


def summaries(root, groups):
    for label, values in groups.items():
        for k, acc in enumerate(values):
            (root / f"{label}.{k}").mkdir(parents=True)
            write(root / f"{label}.{k}" / "summary.json", f'{{"final_test_accuracy": {acc}}}')


def spread(*dirs):
    return run(["python3", str(TOOLS / "accuracy_spread.py")] + [str(d) for d in dirs], timeout=60)


def check_statistics(d):
    summaries(d / "known", {"a": [0.1, 0.2, 0.3], "b": [0.4, 0.5, 0.6]})
    r = spread(d / "known")
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines() if len(line.split()) == 6}
    # a: mean 0.2, sd 0.1; b: mean 0.5. Of the 20 ways to split six values into three and three, two
    # (the split as labelled and its mirror) are as far apart as observed: p = 0.1.
    if r.returncode != 0 or rows["a"][1:6] != ["3", "0.2000", "0.1000", "0.1000", "0.3000"]:
        fail(f"known values: exit {r.returncode}\n{r.stdout}{r.stderr}")
    if "a - b: -0.3000 (se 0.0816, permutation p 0.100)" not in r.stdout:
        fail(f"known values: wrong difference line\n{r.stdout}")
    print("ok: means, sd and an exact permutation p on known values")

    r = spread(d / "empty")
    if r.returncode == 0 or "no LABEL.K/summary.json" not in r.stderr:
        fail(f"no runs: exit {r.returncode}, expected an error naming what is missing\n{r.stderr}")
    print("ok: a directory without runs is refused")


def check_fixed_plans(d):
    config = write(d / "tiny.yaml", TINY_CNN.replace("OUT", str(d / "unused")))
    env = dict(os.environ, DYNAMIX_BIN=DYNAMIX)
    out = d / "fixed"
    r = run([str(TOOLS / "plan_accuracy.sh"), str(config), str(out), "3,13", "3,13", "8,8"], timeout=280, env=env)
    if r.returncode != 0:
        fail(f"plan_accuracy.sh: exit {r.returncode}\n{r.stdout}{r.stderr}")
    accs = [line.split(": ")[1] for line in r.stdout.splitlines() if line.startswith("plan [")]
    if len(accs) != 3 or accs[0] != accs[1]:
        fail(f"the same fixed plan twice: accuracies {accs}, expected the first two equal\n{r.stdout}")
    plans = [read_jsonl(out / f"fixed.{k}" / "metrics.jsonl")[-1]["batch_sizes"] for k in range(3)]
    if plans != [[3, 13], [3, 13], [8, 8]]:
        fail(f"the runs did not keep their plans: {plans}")
    if not any(line.startswith("fixed ") and line.split()[1] == "3" for line in r.stdout.splitlines()):
        fail(f"no table row for the three fixed runs\n{r.stdout}")
    print(f"ok: fixed plans ran as given, the same plan twice gave the same accuracy ({accs[0]})")

    expect_error([str(TOOLS / "plan_accuracy.sh"), str(config), str(d / "bad"), "8;8"],
                 "'8;8' is not a comma-separated list", "a malformed plan", env=env, status=2)


def main():
    with TempDir() as d:
        check_statistics(d)
        check_fixed_plans(d)
    print("PASSED")


if __name__ == "__main__":
    main()
