"""Placement through the real CLI (issue #19, item 5): `mpirun -np 2 dynamix train --set
placement.bind=core` binds each rank to its own share of the node's cores (rank 0's placement table
reports what sched_getaffinity says after binding) with LibTorch's threads to match, and the run
passes the output contract; under `mpirun --bind-to core`, placement.bind: auto leaves the
launcher's binding alone and says so. A rank's waits in MPI yield the CPU by default, so a waiting
rank's comm thread does not slow its own backward (the start line says "MPI waits yield"), and a
user's OMPI_MCA_mpi_yield_when_idle=0 is kept ("MPI waits spin")."""
import os
import re

from e2e_util import DYNAMIX, TINY_CNN, TempDir, check_outputs, fail, run, train_cmd, write

CONFIG = TINY_CNN + "monitor: {enabled: false}\n"
ROW = re.compile(r"^placement: rank (\d+) host (\S+) gpu (\S+) numa (\S+) cpus (\S*) threads (\d+) bind (\S+)$")


def table(stdout):
    rows = {}
    for line in stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows[int(m.group(1))] = {"host": m.group(2), "gpu": m.group(3), "cpus": m.group(5),
                                     "threads": int(m.group(6)), "bind": m.group(7)}
    return rows


def cpus(text):
    out = set()
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def main():
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    with TempDir() as d:
        out = d / "core"
        cfg = write(d / "core.yaml", CONFIG.replace("OUT", str(out)))
        r = run(train_cmd(2, cfg, ["placement.bind=core"]), timeout=300, env=env)
        if r.returncode != 0:
            fail(f"placement.bind=core: exit {r.returncode}\n{r.stdout}{r.stderr}")
        rows = table(r.stdout)
        if sorted(rows) != [0, 1]:
            fail(f"no placement table with a row per rank:\n{r.stdout}")
        sets = [cpus(rows[q]["cpus"]) for q in (0, 1)]
        online = os.cpu_count()
        for q in (0, 1):
            if rows[q]["bind"] != "core" or not sets[q]:
                fail(f"rank {q} is not bound by core: {rows[q]}")
            if rows[q]["threads"] != len(sets[q]):
                fail(f"rank {q}: {rows[q]['threads']} LibTorch threads for CPUs {rows[q]['cpus']}")
        if online >= 2 and sets[0] & sets[1]:
            fail(f"the ranks share CPUs: {rows}")
        check_outputs(out)
        print(f"ok: placement.bind=core: rank 0 on CPUs {rows[0]['cpus']}, rank 1 on {rows[1]['cpus']}")
        if "MPI waits yield" not in r.stdout:
            fail(f"the start line should say the ranks' MPI waits yield the CPU:\n{r.stdout}")
        print("ok: MPI waits yield by default")

        # The launcher binds: auto leaves it (mpirun --bind-to core instead of e2e_util's none).
        out = d / "auto"
        cfg = write(d / "auto.yaml", CONFIG.replace("OUT", str(out)))
        cmd = train_cmd(2, cfg)
        cmd[cmd.index("--bind-to") + 1] = "core"
        r = run(cmd, timeout=300, env=env)
        if r.returncode != 0:
            fail(f"auto under --bind-to core: exit {r.returncode}\n{r.stdout}{r.stderr}")
        rows = table(r.stdout)
        if "the launcher bound the process" not in r.stdout or any(row["bind"] != "none" for row in rows.values()):
            fail(f"auto under mpirun --bind-to core should leave the binding alone:\n{r.stdout}")
        check_outputs(out)
        print(f"ok: auto under mpirun --bind-to core: {rows}")

        # The user's choice to spin is kept.
        out = d / "spin"
        cfg = write(d / "spin.yaml", CONFIG.replace("OUT", str(out)))
        r = run(train_cmd(2, cfg), timeout=300, env={**env, "OMPI_MCA_mpi_yield_when_idle": "0"})
        if r.returncode != 0 or "MPI waits spin" not in r.stdout:
            fail(f"OMPI_MCA_mpi_yield_when_idle=0 should make MPI waits spin: exit {r.returncode}\n{r.stdout}{r.stderr}")
        print("ok: OMPI_MCA_mpi_yield_when_idle=0 kept: MPI waits spin")
    print("placement e2e: passed")


if __name__ == "__main__":
    main()
