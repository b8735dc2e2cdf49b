"""scripts/experiments/compare_policies.sh as the README runs it: interleaved real runs of several
policies on one config, one table of medians; a run that fails (here a misspelt policy) is named
with its log, and the script exits non-zero instead of printing a table with a row missing. A
policy with settings of its own (POLICY+KEY=VALUE) runs with them beside the plain one, each in its
own row; a setting that is not KEY=VALUE is refused before any run. Each policy's time over the
first's in the same round is printed as a pair. Settings holding slashes, spaces or braces get run
directories of their own; DYNAMIX_NP gives the rank count where batch.init does not.
DYNAMIX_FIXED_LAYOUT=1 runs every rank without address-space randomisation, every policy's command
line equally long; DYNAMIX_FIXED_LAYOUT=round as well, with a padding variable of one length for
every policy of a round and another in the next; any other value is refused."""
import json
import os

from e2e_util import DYNAMIX, SOURCE_DIR, TINY_CNN, TempDir, fail, run, write

SCRIPT = SOURCE_DIR / "scripts" / "experiments" / "compare_policies.sh"


def compare(config, out, policies):
    # POLICY@BINARY: the build under test, wherever its build directory is.
    return run([str(SCRIPT), str(config), "1", str(out)] + [f"{p}@{DYNAMIX}" for p in policies], timeout=300)


def main():
    with TempDir() as d:
        config = write(d / "tiny.yaml", TINY_CNN.replace("OUT", str(d / "unused")))
        label = "@" + DYNAMIX.replace("/", "_")
        r = compare(config, d / "good", ["static", "proportional"])
        rows = [line for line in r.stdout.splitlines() if label in line and line.split()[1].isdigit()]
        if r.returncode != 0 or len(rows) != 2 or not all(line.split()[1] == "1" for line in rows):
            fail(f"two good policies: exit {r.returncode}, rows {rows}\n{r.stdout}{r.stderr}")
        for p in ("static", "proportional"):
            if not (d / "good" / f"{p}{label}.0" / "summary.json").exists():
                fail(f"no summary.json for {p}")
        print("ok: two policies, one run each, one table row each")
        # The pairs: proportional's total time over static's in the same round, from summary.json.
        total = {p: json.loads((d / "good" / f"{p}{label}.0" / "summary.json").read_text())["total_time_s"]
                 for p in ("static", "proportional")}
        pairs = [line.split() for line in r.stdout.splitlines() if line.startswith(f"proportional{label} ")
                 and line.split()[1] == "total"]
        expected = f"{total['proportional'] / total['static']:.3f}"
        faster = str(int(total["proportional"] < total["static"]))
        if len(pairs) != 1 or pairs[0][2] != expected or pairs[0][-3:] != [faster, "of", "1"]:
            fail(f"pairs: expected proportional's total over static's, {expected}, in 1 round\n{r.stdout}")
        print("ok: the pairs line gives proportional's time over static's in the round")

        r = compare(config, d / "bad", ["static", "dynamx"])
        log = d / "bad" / f"dynamx{label}.0.log"
        if r.returncode != 1 or "FAILED (exit" not in r.stdout or str(log) not in r.stdout:
            fail(f"a failing run: exit {r.returncode}, expected 1 and the run named with its log\n{r.stdout}{r.stderr}")
        if "1 of 2 runs failed" not in r.stderr or "policy.name" not in log.read_text():
            fail(f"a failing run: no count on stderr, or its log does not say why\n{r.stderr}\n{log.read_text()}")
        print("ok: a failing run is named with its log, and the script exits 1")

        # Online fine-tuning against inference, side by side (docs/RESULTS.md §3c).
        r = compare(config, d / "learn", ["dynamix", "dynamix+policy.learn=true+policy.window=1"])
        learned = d / "learn" / f"dynamix+policy.learn=true+policy.window=1{label}.0"
        rows = [line for line in r.stdout.splitlines() if label in line and line.split()[1] == "1"]
        if r.returncode != 0 or len(rows) != 2:
            fail(f"dynamix with and without settings: exit {r.returncode}, rows {rows}\n{r.stdout}{r.stderr}")
        log = learned.with_name(learned.name + ".log").read_text()
        plain = (d / "learn" / f"dynamix{label}.0.log").read_text()
        if "fine-tuning the shipped" not in log or "fine-tuning" in plain:
            fail(f"policy.learn=true reached the wrong run:\n{log[-1500:]}\n{plain[-1500:]}")
        if len((learned / "decisions.jsonl").read_text().splitlines()) != 4:
            fail("policy.window=1 did not reach its run: expected a decision after each of 4 steps")
        # Settings whose values a path would misread: a YAML flow value (spaces, braces, colons)
        # and a checkpoint path (slashes). Each run gets a directory of its own under OUTDIR.
        event = "static+hetero.events=[{at_step: 2, rank: 1, slowdown: 2.0}]"
        shipped = f"dynamix+policy.checkpoint={SOURCE_DIR}/agent/ppo/default_policy.pt"
        r = compare(config, d / "flow", [event, shipped])
        rows = [line for line in r.stdout.splitlines() if label in line and line.split()[1] == "1"]
        dirs = sorted(p.name for p in (d / "flow").iterdir() if p.is_dir())
        if r.returncode != 0 or len(rows) != 2 or len(dirs) != 2:
            fail(f"settings with spaces and slashes: exit {r.returncode}, rows {rows}, dirs {dirs}\n{r.stdout}{r.stderr}")
        static = next(p for p in (d / "flow").iterdir() if p.is_dir() and p.name.startswith("static"))
        if "slowdown: 2" not in (static / "config.yaml").read_text():
            fail(f"the event did not reach its run: {(static / 'config.yaml').read_text()}")
        print("ok: settings with spaces, braces and slashes run, each in a directory of its own")
        # One batch.init value names no rank count: DYNAMIX_NP gives it, a bad one is refused.
        single = write(d / "single.yaml",
                       TINY_CNN.replace("OUT", str(d / "unused")).replace("init: [8, 8]", "init: 8"))
        r = run([str(SCRIPT), str(single), "1", str(d / "np3"), f"static@{DYNAMIX}"], timeout=300,
                env={**os.environ, "DYNAMIX_NP": "3"})
        if r.returncode != 0 or "result: 3 ranks" not in r.stdout:
            fail(f"DYNAMIX_NP=3: exit {r.returncode}, expected a 3-rank run\n{r.stdout}{r.stderr}")
        r = run([str(SCRIPT), str(single), "1", str(d / "npbad"), "static"], timeout=60,
                env={**os.environ, "DYNAMIX_NP": "three"})
        if r.returncode != 2 or "DYNAMIX_NP='three' is not a rank count" not in r.stderr:
            fail(f"DYNAMIX_NP=three: exit {r.returncode}, expected 2 and a message\n{r.stderr}")
        print("ok: DYNAMIX_NP sets the rank count where batch.init is one value; a bad one is refused")
        # DYNAMIX_FIXED_LAYOUT=1: every rank runs with ADDR_NO_RANDOMIZE (0x0040000) in its
        # personality, and both policies' command lines are equally long (run directories padded);
        # =round as well, each round with a DYNAMIX_LAYOUT_PAD of its own length. A wrapper binary
        # records the personality, the command line's length, the round and the padding's length
        # before it starts dynamix.
        wrapper = write(d / "layout.sh", "#!/bin/sh\n"
                        f"echo $(cat /proc/$$/personality) $(wc -c < /proc/$$/cmdline) $DYNAMIX_ROUND "
                        f"${{#DYNAMIX_LAYOUT_PAD}} >> {d}/seen.$OMPI_COMM_WORLD_RANK\n"
                        f'exec {DYNAMIX} "$@"\n')
        wrapper.chmod(0o755)
        for fixed, reps, policies in (("1", 1, ["static", "proportional"]), ("0", 1, ["static"]),
                                      ("round", 2, ["static", "proportional"])):
            for k in range(2):
                (d / f"seen.{k}").unlink(missing_ok=True)
            r = run([str(SCRIPT), str(config), str(reps), str(d / f"layout{fixed}")]
                    + [f"{p}@{wrapper}" for p in policies],
                    timeout=300, env={**os.environ, "DYNAMIX_FIXED_LAYOUT": fixed})
            seen = [line.split() for k in range(2) for line in (d / f"seen.{k}").read_text().splitlines()]
            fixed_seen = {int(p, 16) & 0x0040000 != 0 for p, *_ in seen}
            if r.returncode != 0 or len(seen) != 2 * reps * len(policies) or fixed_seen != {fixed != "0"}:
                fail(f"DYNAMIX_FIXED_LAYOUT={fixed}: exit {r.returncode}, (personality, command line, round, "
                     f"padding) {seen}\n{r.stdout}{r.stderr}")
            if fixed != "0" and len({n for _, n, *_ in seen}) != 1:
                fail(f"DYNAMIX_FIXED_LAYOUT={fixed}: command lines of different lengths {seen}")
            pads = {(rnd, pad) for *_, rnd, pad in seen}
            expected = {("0", "16"), ("1", "1568")} if fixed == "round" else {("0", "0")}
            if pads != expected:
                fail(f"DYNAMIX_FIXED_LAYOUT={fixed}: (round, padding) {sorted(pads)}, expected {sorted(expected)}")
        r = run([str(SCRIPT), str(config), "1", str(d / "layoutbad"), "static"], timeout=60,
                env={**os.environ, "DYNAMIX_FIXED_LAYOUT": "yes"})
        if r.returncode != 2 or "DYNAMIX_FIXED_LAYOUT='yes' is not 0, 1 or round" not in r.stderr:
            fail(f"DYNAMIX_FIXED_LAYOUT=yes: exit {r.returncode}, expected 2 and a message\n{r.stderr}")
        if (d / "layoutbad").exists():
            fail("a refused DYNAMIX_FIXED_LAYOUT left its output directory behind")
        print("ok: DYNAMIX_FIXED_LAYOUT=1 runs every rank without address-space randomisation, "
              "command lines equally long; =round with one padding per round; a bad value is refused")
        r = compare(config, d / "typo", ["static+policy.learn"])
        if r.returncode != 2 or "'policy.learn' in static+policy.learn is not KEY=VALUE" not in r.stderr:
            fail(f"a setting without a value: exit {r.returncode}, expected 2 and a message\n{r.stderr}")
        if (d / "typo").exists():
            fail("a refused comparison left its output directory behind")
        print("ok: POLICY+KEY=VALUE runs with its settings, in a row of its own; a bad one is refused")
    print("PASSED")


if __name__ == "__main__":
    main()
