"""scripts/experiments/spells_cell_sim.py and `dynamix agent eval` as RESULTS §2g runs them: the real
spells cell written as simulator scenarios, one per seed (spells on ranks 2 and 3 only, inside the
epoch's 469 steps, each seed its own), every policy evaluated on them; a second draw into the same
directory and a draw of no seeds are refused, writing nothing."""
import csv
import re
import sys

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, expect_error, fail, run

SCRIPT = SOURCE_DIR / "scripts" / "experiments" / "spells_cell_sim.py"


def main():
    with TempDir() as d:
        suite, out = d / "suite", d / "eval"
        r = run([sys.executable, str(SCRIPT), str(suite), "--seeds", "2", "--first", "3"])
        files = sorted(suite.glob("*.yaml"))
        if r.returncode != 0 or [f.name for f in files] != ["spells_cell_s003.yaml", "spells_cell_s004.yaml"]:
            fail(f"spells_cell_sim.py: exit {r.returncode}, files {files}\n{r.stdout}{r.stderr}")
        texts = [f.read_text() for f in files]
        for f, text in zip(files, texts):
            events = re.findall(r"at_step: (\d+), ranks: \[([0-9, ]+)\], slowdown: 3.0, duration_steps: (\d+)", text)
            if len(events) < 3 or any(ranks != "2, 3" or not 6 <= int(n) <= 9 or int(at) + int(n) > 469
                                      for at, ranks, n in events):
                fail(f"{f.name}: spells not of the cell's shape: {events}")
        if texts[0].split("events:")[1] == texts[1].split("events:")[1]:
            fail("two seeds drew the same spells")
        r = run([DYNAMIX, "agent", "eval", "--suite", str(suite), "--seeds", "1", "--policies", "dynamix",
                 "--output", str(out)], timeout=240)
        rows = list(csv.DictReader((out / "eval.csv").open())) if r.returncode == 0 else []
        policies = {row["policy"] for row in rows}
        if len(rows) != 8 or policies != {"static", "proportional", "gns", "dynamix"} or any(float(x["time_s"]) <= 0 for x in rows):
            fail(f"agent eval of the cell's scenarios: exit {r.returncode}, rows {rows}\n{r.stdout}{r.stderr}")
        print("ok: 2 seeds of the spells cell written and evaluated, 4 policies each")
        expect_error([sys.executable, str(SCRIPT), str(suite), "--seeds", "1"],
                     "already holds 2 scenario files", "a second draw into the same directory")
        expect_error([sys.executable, str(SCRIPT), str(d / "none"), "--seeds", "0"],
                     "--seeds must be at least 1", "no seeds asked for")
        if (d / "none").exists() or len(list(suite.glob("*.yaml"))) != 2:
            fail("a refused draw wrote files")
    print("PASSED")


if __name__ == "__main__":
    main()
