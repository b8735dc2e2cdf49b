#!/usr/bin/env python3
"""Short spells of real CPU interference on some cores, for as long as a process lives.

Usage: cpu_spells.py --pid PID [--cpus 1] [--hogs 3] [--on 0.25:0.4] [--off 1.5:3]
                     [--seed 1] [--log FILE]

Starts HOGS busy-looping processes pinned to CPUS, stopped (SIGSTOP), and lets them run
(SIGCONT) for spells of ON seconds separated by gaps of OFF seconds, both uniform in the given
ranges and drawn from SEED, until PID exits; then kills them. A rank sharing those cores gets a
smaller share of them while a spell lasts: a neighbour's burst on a shared node. Each spell is
logged as "start end" in seconds since the spells began (FILE, default: none).
spells_rank.sh starts it beside rank 0 of a training run.
"""
import argparse
import os
import random
import signal
import sys
import time


def span(text):
    lo, _, hi = text.partition(":")
    lo, hi = float(lo), float(hi or lo)
    if not 0 < lo <= hi:
        raise argparse.ArgumentTypeError(f"'{text}' is not a range LO:HI of seconds with 0 < LO <= HI")
    return lo, hi


def cpu_list(text):
    try:
        cpus = {int(c) for c in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of CPU numbers")
    missing = cpus - os.sched_getaffinity(0)
    if missing:
        raise argparse.ArgumentTypeError(f"CPU {sorted(missing)} is not available here")
    return cpus


def alive(pid):
    """Running, not exited: an exited child its parent has not reaped yet is a zombie here."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def start_hog(cpus):
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, cpus)
        os.kill(os.getpid(), signal.SIGSTOP)  # wait for the first spell
        while True:
            pass
    return pid


def sleep_while(pid, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return False
        time.sleep(min(0.02, max(0.0, end - time.monotonic())))
    return alive(pid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pid", type=int, required=True, help="run the spells while this process lives")
    ap.add_argument("--cpus", type=cpu_list, default={1}, help="cores the hogs run on (default 1)")
    ap.add_argument("--hogs", type=int, default=3, help="busy processes per spell (default 3)")
    ap.add_argument("--on", type=span, default=(0.25, 0.4), help="spell length range, s")
    ap.add_argument("--off", type=span, default=(1.5, 3.0), help="gap between spells range, s")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", help="file for the spells' start and end times")
    args = ap.parse_args()
    if args.hogs < 1:
        ap.error("--hogs must be at least 1")
    if not alive(args.pid):
        ap.error(f"--pid {args.pid}: no such process")
    rng = random.Random(args.seed)
    hogs = [start_hog(args.cpus) for _ in range(args.hogs)]
    log = open(args.log, "w") if args.log else None
    t0 = time.monotonic()
    try:
        while sleep_while(args.pid, rng.uniform(*args.off)):
            start = time.monotonic() - t0
            for h in hogs:
                os.kill(h, signal.SIGCONT)
            running = sleep_while(args.pid, rng.uniform(*args.on))
            for h in hogs:
                os.kill(h, signal.SIGSTOP)
            if log:
                print(f"{start:.3f} {time.monotonic() - t0:.3f}", file=log, flush=True)
            if not running:
                break
    finally:
        for h in hogs:
            os.kill(h, signal.SIGKILL)
            os.waitpid(h, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
