"""scripts/slurm/train.sbatch on a real Slurm (issue #19): a one-node cluster from Debian's packages
(scripts/slurm/local_slurm.sh: slurmctld, slurmd, munge; Slurm's default MpiDefault=none), jobs
submitted from a directory that is not the repository root.
  A: `scancel --signal=USR1` (the tasks) -> checkpoint, requeue, resume (after Slurm's hold of a
     requeued job, cred_expire + 1 s: 6 s on the test cluster), complete.
  B: `scancel --batch --signal=USR1` (the batch shell, as `#SBATCH --signal=B:USR1@T` sends it) ->
     forwarded to the tasks, requeue, resume; then `scancel` (SIGTERM) ends the
     job, and submitting the same job name again resumes from its checkpoint and completes; once
     more: nothing to do.
  C: B again, launched with mpirun inside the allocation (DYNAMIX_LAUNCHER=mpirun).
Every run: summary.json completed, metrics.jsonl steps 1..N each once. Needs root and the packages
(scripts/setup.sh); skips (CTest status 77) saying why. Run by hand: /usr/bin/python3 this file."""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, fail, read_jsonl, write

SKIP = 77
TASKS = 2
STEPS = 250
# Small and slowed down (hetero.slowdown) so that a signal lands mid-run on two shared cores.
CONFIG = f"""
model: cnn
dataset: {{name: synthetic, shape: [1, 12, 12], classes: 4, train_size: 4000, test_size: 64}}
batch: {{init: [16], min: 2, max: 64}}
train: {{max_steps: {STEPS}, epochs: 100, optimizer: sgd, lr: 0.05, seed: 8, eval_every: 0}}
policy: {{window: 5}}
hetero: {{slowdown: [3.0]}}
monitor: {{enabled: false}}
comm: {{heartbeat_timeout_s: 10}}
output: {{checkpoint_every: 10}}
"""
SBATCH = SOURCE_DIR / "scripts" / "slurm" / "train.sbatch"
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def sh(*cmd, check=True, **kw):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60, **kw)
    if check and r.returncode != 0:
        fail(f"{' '.join(map(str, cmd))}: status {r.returncode}\n{r.stdout}{r.stderr}")
    return r.stdout.strip()


def submit(workdir, name, env):
    # A relative config path from the submission directory; the script is given by its full path.
    job = sh("sbatch", "--parsable", f"--job-name={name}", f"--ntasks={TASKS}", "--time=00:20:00",
             SBATCH, "run.yaml", cwd=workdir, env=env).split(";")[0]
    log(f"submitted {name}: job {job}")
    return job


def job_info(job):
    text = sh("scontrol", "show", "job", "-o", job, check=False)
    return dict(re.findall(r"(\w+)=(\S*)", text))


ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def wait_for(what, predicate, timeout, job=None, workdir=None, running=False):
    """Polls `predicate` until `timeout`; with `running`, the job ending first is a failure."""
    deadline = time.monotonic() + timeout
    why = f"timed out after {timeout}s"
    while time.monotonic() < deadline:
        if predicate():
            return
        if running and job_info(job).get("JobState") in ENDED:
            why = "the job ended"
            break
        time.sleep(0.5)
    info = job_info(job) if job else {}
    output = job_output(workdir, job) if job and workdir else ""
    fail(f"{why} waiting for {what}; job {info.get('JobState')} "
         f"restarts {info.get('Restarts')}\n{output[-4000:]}")


def wait_requeued(job):
    """Until the job is back in the queue after its requeue. Slurm holds it (Reason=BeginTime) for
    cred_expire + 1 s, while slurmd still refuses the job's revoked credential: forcing
    StartTime=now raced with that and the job ended FAILED ("Job credential revoked"), as it did
    here whenever the machine was loaded. local_slurm.sh sets cred_expire=5."""
    def requeued():
        info = job_info(job)
        return int(info.get("Restarts", 0)) >= 1 and info.get("JobState") in {"PENDING", "RUNNING"}
    wait_for("the requeue", requeued, 120, job)


def lines(path):
    return len(path.read_text().splitlines()) if path.exists() else 0


def job_output(workdir, job):
    name = job_info(job).get("JobName", "")
    path = workdir / f"{name}-{job}.out"
    return path.read_text() if path.exists() else ""


def finished(job, state):
    info = job_info(job)
    return info.get("JobState") == state


def check_run(outdir, what):
    summary = (outdir / "summary.json").read_text()
    if '"completed": true' not in summary:
        fail(f"{what}: not completed: {summary}")
    steps = [r["step"] for r in read_jsonl(outdir / "metrics.jsonl")]
    if steps != list(range(1, STEPS + 1)):
        fail(f"{what}: metrics.jsonl steps are not 1..{STEPS} once each: {len(steps)} lines, "
             f"first {steps[:3]}, last {steps[-3:]}")
    log(f"ok: {what}: completed, steps 1..{STEPS} once each")


def resumed_at(text):
    return [int(s) for s in re.findall(r"resumed from \S+ at step (\d+)", text)]


def preempt_tasks(workdir, env):
    """A: SIGUSR1 to the tasks; the job requeues itself and completes."""
    job = submit(workdir, "dxa", env)
    outdir = workdir / "runs" / "dxa"
    wait_for("20 steps", lambda: lines(outdir / "metrics.jsonl") >= 20, 240, job, workdir, running=True)
    sh("scancel", "--signal=USR1", job)
    log(f"scancel --signal=USR1 {job} at {lines(outdir / 'metrics.jsonl')} steps")
    wait_requeued(job)
    wait_for("job A to complete", lambda: finished(job, "COMPLETED"), 400, job, workdir)
    out = job_output(workdir, job)
    print(out[-3000:])
    info = job_info(job)
    if "preempted; requeueing" not in out or int(info["Restarts"]) != 1 or not resumed_at(out):
        fail(f"A: expected one requeue and a resumed run (restarts {info['Restarts']})")
    if "pmix" not in out:
        fail("A: expected the script to launch with srun --mpi=pmix")
    log(f"ok: A: job {job} preempted, requeued, resumed at step {resumed_at(out)[0]}, completed")
    check_run(outdir, "A")


def preempt_batch_shell_then_resubmit(workdir, env):
    """B: SIGUSR1 to the batch shell; then scancel, a resubmission resumes; again: nothing to do."""
    job = submit(workdir, "dxb", env)
    outdir = workdir / "runs" / "dxb"
    wait_for("20 steps", lambda: lines(outdir / "metrics.jsonl") >= 20, 240, job, workdir, running=True)
    sh("scancel", "--batch", "--signal=USR1", job)
    log(f"scancel --batch --signal=USR1 {job} at {lines(outdir / 'metrics.jsonl')} steps")
    wait_requeued(job)
    wait_for("the requeued job to resume",
             lambda: len(resumed_at(job_output(workdir, job))) >= 1 and job_info(job).get("JobState") == "RUNNING",
             300, job, workdir)
    first = resumed_at(job_output(workdir, job))[0]
    out = job_output(workdir, job)
    if "batch shell got SIGUSR1" not in out or "preempted; requeueing" not in out:
        fail(f"B: the batch shell did not forward the signal and requeue:\n{out[-3000:]}")
    log(f"ok: B: job {job} forwarded USR1, requeued, resumed at step {first}")
    wait_for(f"steps beyond {first + 15}", lambda: lines(outdir / "metrics.jsonl") >= first + 15, 240, job, workdir,
             running=True)
    sh("scancel", job)
    log(f"scancel {job} at {lines(outdir / 'metrics.jsonl')} steps")
    wait_for("job B to be cancelled", lambda: finished(job, "CANCELLED"), 120, job, workdir)
    print(job_output(workdir, job)[-2000:])

    again = submit(workdir, "dxb", env)
    wait_for("the resubmitted job to complete", lambda: finished(again, "COMPLETED"), 400, again, workdir)
    out = job_output(workdir, again)
    print(out[-3000:])
    if not resumed_at(out) or resumed_at(out)[0] <= first:
        fail(f"B: the resubmitted job {again} did not resume past step {first}")
    log(f"ok: B: resubmitted as job {again}, resumed at step {resumed_at(out)[0]}, completed")
    check_run(outdir, "B")

    third = submit(workdir, "dxb", env)
    wait_for("the third job to end", lambda: finished(third, "COMPLETED"), 120, third, workdir)
    if "already holds a completed run" not in job_output(workdir, third):
        fail(f"B: a resubmission of a completed run should do nothing:\n{job_output(workdir, third)}")
    log(f"ok: B: job {third} found the run completed and did nothing")


def mpirun_fallback(workdir, env):
    """C: DYNAMIX_LAUNCHER=mpirun (what the script uses where srun offers no pmix): the batch
    shell's USR1 reaches the ranks through mpirun; requeue, resume, complete."""
    job = submit(workdir, "dxc", dict(env, DYNAMIX_LAUNCHER="mpirun"))
    outdir = workdir / "runs" / "dxc"
    wait_for("20 steps", lambda: lines(outdir / "metrics.jsonl") >= 20, 240, job, workdir, running=True)
    sh("scancel", "--batch", "--signal=USR1", job)
    log(f"scancel --batch --signal=USR1 {job} at {lines(outdir / 'metrics.jsonl')} steps")
    wait_requeued(job)
    wait_for("job C to complete", lambda: finished(job, "COMPLETED"), 400, job, workdir)
    out = job_output(workdir, job)
    if f"mpirun -np {TASKS}" not in out or "preempted; requeueing" not in out or not resumed_at(out):
        fail(f"C: expected mpirun, a requeue and a resumed run:\n{out[-3000:]}")
    log(f"ok: C: job {job} under mpirun preempted, requeued, resumed at step {resumed_at(out)[0]}, completed")
    check_run(outdir, "C")


def inside_cluster():
    with TempDir() as d:
        workdir = d / "elsewhere"  # not the repository root
        workdir.mkdir()
        write(workdir / "run.yaml", CONFIG)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        # The script finds the checkout's build/bin/dynamix by itself; pass DYNAMIX_BIN only for
        # a binary built elsewhere.
        if os.path.realpath(DYNAMIX) == os.path.realpath(SOURCE_DIR / "build" / "bin" / "dynamix"):
            env.pop("DYNAMIX_BIN", None)
        else:
            env["DYNAMIX_BIN"] = os.path.realpath(DYNAMIX)
        env.pop("DYNAMIX_OUTPUT_DIR", None)
        preempt_tasks(workdir, env)
        preempt_batch_shell_then_resubmit(workdir, env)
        mpirun_fallback(workdir, env)
    print("PASSED")


def main():
    if "--inside" in sys.argv:
        inside_cluster()
        return
    if os.geteuid() != 0:
        print("SKIP: a real Slurm needs root")
        sys.exit(SKIP)
    missing = [t for t in ("slurmctld", "slurmd", "munged", "sbatch")
               if not shutil.which(t, path=os.environ["PATH"] + ":/usr/sbin")]
    if missing:
        print(f"SKIP: {', '.join(missing)} not installed (scripts/setup.sh installs Slurm and munge)")
        sys.exit(SKIP)
    cluster = SOURCE_DIR / "scripts" / "slurm" / "local_slurm.sh"
    r = subprocess.run([str(cluster), sys.executable, os.path.abspath(__file__), "--inside"], timeout=1500)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
