"""scripts/experiments/random_suite.py and `dynamix agent eval` as the README runs them: random
clusters written to a new directory, every policy evaluated on them; a second draw into the same
directory is refused (its scenarios would have joined the first draw's in every later eval); with
--mixed-knees the same clusters, whose classes run their fixed cost at speeds of their own."""
import csv
import re
import sys

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, expect_error, fail, run

SCRIPT = SOURCE_DIR / "scripts" / "experiments" / "random_suite.py"


def main():
    with TempDir() as d:
        suite, out = d / "suite", d / "eval"
        r = run([sys.executable, str(SCRIPT), "--count", "3", "--seed", "5", "--max-nodes", "16", "--out", str(suite)])
        if r.returncode != 0 or len(list(suite.glob("*.yaml"))) != 3:
            fail(f"random_suite.py: exit {r.returncode}, files {sorted(suite.iterdir())}\n{r.stdout}{r.stderr}")
        r = run([DYNAMIX, "agent", "eval", "--suite", str(suite), "--seeds", "1", "--policies", "dynamix",
                 "--output", str(out)], timeout=240)
        rows = list(csv.DictReader((out / "eval.csv").open())) if r.returncode == 0 else []
        policies = {row["policy"] for row in rows}
        if len(rows) != 12 or policies != {"static", "proportional", "gns", "dynamix"}:
            fail(f"agent eval of the drawn suite: exit {r.returncode}, {len(rows)} rows, {policies}\n{r.stdout}{r.stderr}")
        if any(float(row["time_s"]) <= 0 for row in rows):
            fail(f"agent eval: a time that is not positive in {rows}")
        print("ok: 3 random scenarios drawn and evaluated, 4 policies each")

        # --mixed-knees: the same clusters, each non-homogeneous class with a fixed-cost speed of
        # its own, which the simulator reads.
        mixed = d / "mixed"
        r = run([sys.executable, str(SCRIPT), "--count", "3", "--seed", "5", "--max-nodes", "16", "--mixed-knees",
                 "--out", str(mixed)])
        if r.returncode != 0:
            fail(f"random_suite.py --mixed-knees: exit {r.returncode}\n{r.stdout}{r.stderr}")
        knees = 0
        for plain in sorted(suite.glob("*.yaml")):
            text = (mixed / plain.name).read_text()
            knees += text.count("fixed_speed:")
            if re.sub(r", fixed_speed: [0-9.e-]+", "", text) != plain.read_text():
                fail(f"{plain.name}: the mixed-knee draw differs beyond fixed_speed:\n{text}")
            if "fixed_speed" in text and plain.name.startswith("homogeneous"):
                fail(f"{plain.name}: a homogeneous cluster got a fixed-cost speed")
        if knees == 0:
            fail(f"--mixed-knees wrote no fixed_speed in {sorted(p.name for p in mixed.iterdir())}")
        target = next(p for p in sorted(mixed.glob("*.yaml")) if "fixed_speed" in p.read_text())
        r = run([DYNAMIX, "sim", "--config", str(target), "--policies", "static,dynamix", "--set",
                 f"output.dir={d / 'mixed_run'}"], timeout=240)
        if r.returncode != 0 or not (d / "mixed_run" / "dynamix" / "summary.json").exists():
            fail(f"dynamix sim on {target.name}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        print(f"ok: --mixed-knees drew the same clusters with {knees} fixed-cost speeds; {target.name} simulated")

        expect_error([sys.executable, str(SCRIPT), "--count", "2", "--out", str(suite)],
                     f"--out {suite} already holds 3 scenario files", "a second draw into the same directory")
        expect_error([sys.executable, str(SCRIPT), "--count", "0", "--out", str(d / "none")],
                     "--count must be >= 1", "no scenarios asked for")
        if (d / "none").exists() or len(list(suite.glob("*.yaml"))) != 3:
            fail("a refused draw wrote files")
    print("PASSED")


if __name__ == "__main__":
    main()
