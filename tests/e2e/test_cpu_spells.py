"""scripts/experiments/cpu_spells.py, spells_rank.sh and pin_rank.sh as RESULTS §1 runs them: spells
of real CPU interference for as long as a process lives, each as long as asked, and no busy process
left behind; a training run through compare_policies.sh with spells_rank.sh as the binary completes
and logs its spells; pin_rank.sh places each rank on the core DYNAMIX_CORES names (the shared-cores
cell's real heterogeneity); bad input is refused."""
import os
import subprocess
import time

from e2e_util import DYNAMIX, SOURCE_DIR, TINY_CNN, TempDir, expect_error, fail, run, write

TOOLS = SOURCE_DIR / "scripts" / "experiments"
SPELLS = TOOLS / "cpu_spells.py"
PIN = TOOLS / "pin_rank.sh"


def spell_processes(pid):
    """Processes still running cpu_spells.py for `pid` (the controller and its forked hogs)."""
    r = subprocess.run(["pgrep", "-f", f"cpu_spells.py --pid {pid} "], capture_output=True, text=True)
    return r.stdout.split()


def check_spells(d):
    sleeper = subprocess.Popen(["sleep", "2"])
    log = d / "spells.log"
    cpu = str(min(os.sched_getaffinity(0)))
    r = run(["python3", str(SPELLS), "--pid", str(sleeper.pid), "--cpus", cpu, "--hogs", "2",
             "--on", "0.1:0.2", "--off", "0.2:0.3", "--log", str(log)], timeout=30)
    sleeper.wait()
    spells = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    if r.returncode != 0 or len(spells) < 3:
        fail(f"spells for 2 s: exit {r.returncode}, {len(spells)} spells logged\n{r.stderr}")
    # The last spell is cut short when the process exits; the others last as asked (with the 20 ms
    # polling of the process and the scheduler's slack).
    if not all(0.1 <= end - start <= 0.3 for start, end in spells[:-1]) or spells[-1][1] > 2.5:
        fail(f"spells not as asked: {spells}")
    time.sleep(0.2)
    left = spell_processes(sleeper.pid)
    if left:
        fail(f"processes left behind after the watched process exited: {left}")
    print(f"ok: {len(spells)} spells of 0.1-0.2 s while the process lived, nothing left behind")

    for args, needle in ((["--pid", "999999999"], "no such process"),
                         (["--pid", "1", "--on", "2:1"], "not a range"),
                         (["--pid", "1", "--cpus", "4096"], "not available here"),
                         (["--pid", "1", "--hogs", "0"], "--hogs must be at least 1")):
        expect_error(["python3", str(SPELLS)] + args, needle, " ".join(args), status=2)


def check_training_run(d):
    config = write(d / "tiny.yaml", TINY_CNN.replace("OUT", str(d / "unused")).replace("max_steps: 4", "max_steps: 60"))
    log = d / "run_spells.log"
    env = dict(os.environ, DYNAMIX_BIN=DYNAMIX, DYNAMIX_SPELLS="--hogs 1 --on 0.05:0.1 --off 0.05:0.1",
               DYNAMIX_SPELLS_LOG=str(log))
    r = run([str(TOOLS / "compare_policies.sh"), str(config), "1", str(d / "cmp"),
             f"static@{TOOLS / 'spells_rank.sh'}"], timeout=200, env=env)
    runs = list((d / "cmp").glob("static@*.0/summary.json"))
    if r.returncode != 0 or len(runs) != 1:
        fail(f"a run through spells_rank.sh: exit {r.returncode}, summaries {runs}\n{r.stdout}{r.stderr}")
    if not log.exists() or not log.read_text().strip():
        fail("the run's spells were not logged")
    print(f"ok: a training run through spells_rank.sh, {len(log.read_text().splitlines())} spells logged")


def check_pinned_layout(d):
    """Both ranks on the last core this process may use, as DYNAMIX_CORES lists it: the run's
    placement lines name that core for each rank."""
    config = write(d / "tiny_pin.yaml", TINY_CNN.replace("OUT", str(d / "unused")))
    core = str(max(os.sched_getaffinity(0)))
    env = dict(os.environ, DYNAMIX_BIN=DYNAMIX, DYNAMIX_CORES=f"{core} {core}")
    r = run([str(TOOLS / "compare_policies.sh"), str(config), "1", str(d / "pin"), f"static@{PIN}"],
            timeout=200, env=env)
    logs = list((d / "pin").glob("static@*.0.log"))
    if r.returncode != 0 or len(logs) != 1:
        fail(f"a run through pin_rank.sh: exit {r.returncode}, logs {logs}\n{r.stdout}{r.stderr}")
    placed = [line for line in logs[0].read_text().splitlines() if line.startswith("placement: rank ")]
    if len(placed) != 2 or not all(f" cpus {core} " in line for line in placed):
        fail(f"DYNAMIX_CORES='{core} {core}': placement lines {placed}")
    print(f"ok: both ranks on core {core} through pin_rank.sh")

    rank0 = dict(os.environ, OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="2", DYNAMIX_BIN="/bin/true")
    for cores, needle in (("0", "lists 1 core(s) for 2 ranks"), ("x 0", "is not a core"),
                          ("4096 0", "is not a core")):
        expect_error([str(PIN)], needle, f"DYNAMIX_CORES='{cores}'", env=dict(rank0, DYNAMIX_CORES=cores),
                     status=2)


def main():
    with TempDir() as d:
        check_spells(d)
        check_training_run(d)
        check_pinned_layout(d)
    print("PASSED")


if __name__ == "__main__":
    main()
