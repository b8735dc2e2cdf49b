"""scripts/slurm/train.sbatch, run as Slurm would run it but with stand-ins for `srun` (mpirun,
plus the time-limit signal or a killed task on request) and `scontrol` (records the requeue):
preempted -> requeued -> resumed to completion; a lost rank -> requeued -> resumed; retries
bounded; bad input not retried."""
import json
import os
import stat
import subprocess

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, fail, mpirun, read_jsonl, write

CONFIG = """
model: cnn
dataset: {name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 800, test_size: 64}
batch: {init: [16], min: 2, max: 64}
train: {max_steps: 40, epochs: 100, optimizer: sgd, lr: 0.05, seed: 8, eval_every: 0}
policy: {window: 5}
hetero: {slowdown: [5.0]}
monitor: {enabled: false}
comm: {heartbeat_timeout_s: 6}
output: {checkpoint_every: 5}
"""

# srun stand-in: offers pmix to `srun --mpi=list`; runs the command under mpirun with 2 ranks;
# FAKE_SIGNAL (USR1) or FAKE_KILL (a rank gets SIGKILL) once metrics.jsonl has FAKE_AFTER lines
# and both ranks are up. (A resumed run's file holds the killed run's lines until the new run cuts
# it: seen that early, the count was reached before mpirun had started a rank, the kill went to no
# one and the run completed; a clean-clone suite, 2026-11-29.) (tests/e2e/test_slurm_real.py runs
# the script on a real Slurm.)
SRUN = """#!/usr/bin/env bash
[[ $1 == --mpi=list ]] && {{ echo "MPI plugin types are..."; echo "	pmix"; exit 0; }}
args=()
for a in "$@"; do [[ $a == --kill-on-bad-exit=* || $a == --mpi=* ]] || args+=("$a"); done
{mpirun} "${{args[@]}}" &
launcher=$!
if [[ -n ${{FAKE_SIGNAL:-}}${{FAKE_KILL:-}} ]]; then
  while kill -0 $launcher 2>/dev/null; do
    if [[ -f $DYNAMIX_OUTPUT_DIR/metrics.jsonl && $(wc -l < $DYNAMIX_OUTPUT_DIR/metrics.jsonl) -ge $FAKE_AFTER ]]; then
      ranks=($(pgrep -P $launcher))
      if [[ ${{#ranks[@]}} -ge 2 ]]; then
        if [[ -n ${{FAKE_SIGNAL:-}} ]]; then kill -USR1 "${{ranks[@]}}"; else kill -KILL "${{ranks[1]}}"; fi
        break
      fi
    fi
    sleep 0.05
  done
fi
wait $launcher
"""
# scontrol stand-in: records requeues; `show job` knows nothing (the script then finds its checkout
# by its own path).
SCONTROL = """#!/usr/bin/env bash
[[ $1 == requeue ]] && echo "$@" >> "$FAKE_SCONTROL_LOG"
exit 0
"""


def executable(path, text):
    write(path, text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def sbatch(d, config, out, restart, cwd=SOURCE_DIR, **fake):
    env = dict(os.environ, PATH=f"{d / 'bin'}:{os.environ['PATH']}", SLURM_JOB_ID="4242",
               SLURM_RESTART_COUNT=str(restart), FAKE_SCONTROL_LOG=str(d / "scontrol.log"),
               DYNAMIX_MAX_RESTARTS="2", SLURM_JOB_NAME="dynamix")
    env.pop("SLURM_SUBMIT_DIR", None)
    env.pop("DYNAMIX_OUTPUT_DIR", None)
    if out is not None:
        env["DYNAMIX_OUTPUT_DIR"] = str(out)
    env.update({k: str(v) for k, v in fake.items()})
    # Run from `cwd` (the repository root unless given), as sbatch would from there.
    cmd = ["bash", str(SOURCE_DIR / "scripts/slurm/train.sbatch"), str(config)]
    print("+", " ".join(cmd), fake, flush=True)
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    print(r.stdout[-3000:], r.stderr[-3000:])
    return r


def requeues(d):
    log = d / "scontrol.log"
    return log.read_text().splitlines() if log.exists() else []


def main():
    # The script runs $DYNAMIX_BIN (set by ctest to this build's binary), from any build directory.
    os.environ["DYNAMIX_BIN"] = os.path.realpath(DYNAMIX)
    with TempDir() as d:
        (d / "bin").mkdir()
        launcher = " ".join(mpirun(2))
        executable(d / "bin" / "srun", SRUN.format(mpirun=launcher))
        executable(d / "bin" / "scontrol", SCONTROL)
        config = write(d / "run.yaml", CONFIG)

        # Preemption: the time-limit signal, a requeue, and the requeued job finishes the run.
        out = d / "preempted"
        r = sbatch(d, config, out, 0, FAKE_SIGNAL=1, FAKE_AFTER=8)
        if r.returncode != 0 or requeues(d) != ["requeue 4242"] or "preempted; requeueing" not in r.stdout:
            fail("preemption: expected exit 0 and one requeue")
        r = sbatch(d, config, out, 1)
        summary = json.loads((out / "summary.json").read_text())
        if r.returncode != 0 or "training completed" not in r.stdout or len(requeues(d)) != 1:
            fail("preemption: the requeued job did not complete the run")
        if not summary["completed"] or summary["steps"] != 40 or read_jsonl(out / "metrics.jsonl")[-1]["step"] != 40:
            fail(f"preemption: summary {summary}")
        print("ok: preempted, requeued, resumed to step 40")

        # A killed task: the watchdog ends the job, the script requeues it, the rerun completes.
        out = d / "lost"
        r = sbatch(d, config, out, 0, FAKE_KILL=1, FAKE_AFTER=8)
        if r.returncode != 0 or len(requeues(d)) != 2 or "run failed with status" not in r.stdout:
            fail("lost rank: expected a requeue")
        r = sbatch(d, config, out, 1)
        if r.returncode != 0 or "training completed" not in r.stdout:
            fail("lost rank: the requeued job did not complete")
        print("ok: lost rank, requeued, resumed to the end")

        # Retries are bounded: at DYNAMIX_MAX_RESTARTS the failure is reported, not requeued.
        out = d / "bounded"
        sbatch(d, config, out, 0, FAKE_KILL=1, FAKE_AFTER=8)
        r = sbatch(d, config, out, 2, FAKE_KILL=1, FAKE_AFTER=12)
        if r.returncode == 0 or len(requeues(d)) != 3 or "training failed" not in r.stderr:
            fail("bounded: a third failure should not be requeued")
        # Bad input exits 2 and is never retried.
        bad = write(d / "bad.yaml", CONFIG + "nonsense: 1\n")
        r = sbatch(d, bad, d / "bad", 0)
        if r.returncode != 2 or len(requeues(d)) != 3:
            fail("bad input: expected status 2 without a requeue")
        print("ok: retries bounded; bad input not retried")
        # No binary where DYNAMIX_BIN points: a clear error, status 2, no requeue.
        saved = os.environ["DYNAMIX_BIN"]
        os.environ["DYNAMIX_BIN"] = str(d / "no-such-dynamix")
        r = sbatch(d, config, d / "nobin", 0)
        os.environ["DYNAMIX_BIN"] = saved
        if r.returncode != 2 or len(requeues(d)) != 3 or "no dynamix binary" not in r.stderr:
            fail("missing binary: expected status 2 with a message, no requeue")
        print("ok: a missing binary is reported, not retried")

        # No DYNAMIX_OUTPUT_DIR: the config's output.dir (flow or block YAML), relative to the
        # submission directory, else runs/<job name>; never the job id. A second submission of a
        # completed run does nothing.
        sub = d / "submitdir"
        sub.mkdir()
        for name, text in (("flow.yaml", CONFIG.replace("output: {", "output: {dir: 'out/flow', ")),
                           ("block.yaml", CONFIG.replace("output: {checkpoint_every: 5}",
                                                          "output:\n  checkpoint_every: 5\n  dir: out/block  # here\n")),
                           ("nodir.yaml", CONFIG)):
            write(sub / name, text.replace("max_steps: 40", "max_steps: 10"))
            r = sbatch(d, name, None, 0, cwd=sub)
            expected = sub / {"flow.yaml": "out/flow", "block.yaml": "out/block", "nodir.yaml": "runs/dynamix"}[name]
            if r.returncode != 0 or not json.loads((expected / "summary.json").read_text())["completed"]:
                fail(f"{name}: expected a completed run in {expected}")
            r = sbatch(d, name, None, 0, cwd=sub)
            if r.returncode != 0 or "already holds a completed run" not in r.stdout:
                fail(f"{name}: a resubmission of a completed run should do nothing")
        if len(requeues(d)) != 3:
            fail("output dirs: no requeue expected")
        print("ok: output.dir from the config (flow, block), else runs/<job name>; completed runs not rerun")
    print("PASSED")


if __name__ == "__main__":
    main()
