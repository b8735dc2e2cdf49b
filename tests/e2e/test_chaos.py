"""Chaos (issue #18): a 4-rank run killed at random points (SIGKILL or SIGSTOP of a random rank,
SIGTERM to a rank or to mpirun) and resumed, ten times in all, with fixed seeds so CI sees the
same schedule; each sequence then runs to its end, where one more rank is stopped (the job must
still end). Sequence A stays on 4 ranks: besides every sample once per epoch and every log step
once, its final checkpoint (model, optimizer, RNG states) must equal an uninterrupted run's bit
for bit. Sequence B also resumes on 3 ranks (4 -> 3 -> 3 -> 4): samples and steps are checked.
The driver is scripts/chaos.py (usable by hand: --seed, --cycles, --worlds)."""
import sys

from e2e_util import SOURCE_DIR, TempDir, fail

sys.path.insert(0, str(SOURCE_DIR / "scripts"))
import chaos  # noqa: E402

# (name, seed, cycles, world sizes): seeds picked so that every case occurs and B changes size.
SEQUENCES = [("A: 4 ranks, bit-exact", 6, 6, [4]), ("B: 4 -> 3 -> 4 ranks", 5, 4, [4, 3])]


def main():
    problems = []
    cases, worlds = set(), set()
    for name, seed, cycles, sizes in SEQUENCES:
        with TempDir() as d:
            print(f"== sequence {name}", flush=True)
            rows, found = chaos.chaos(d, seed, cycles, sizes, reference=True)
            print(chaos.HEADER)
            for i, r in enumerate(rows):
                print(chaos.format_row(i + 1, r))
            problems += [f"{name}: {p}" for p in found]
            cases |= {r["case"] for r in rows}
            worlds |= {r["world"] for r in rows}
    if not set(chaos.CASES) <= cases or worlds != {3, 4}:
        problems.append(f"the schedule covered cases {sorted(cases)} and world sizes {sorted(worlds)}")
    if problems:
        fail("\n".join(problems))
    print("PASSED")


if __name__ == "__main__":
    main()
