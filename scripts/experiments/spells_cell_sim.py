#!/usr/bin/python3
"""Writes simulator scenarios of the real spells cell, one per seed, for `dynamix agent eval`.

The real cell (spells_rank.sh with DYNAMIX_SPELLS="--hogs 3 --on 0.6:0.9 --off 1.5:3" on
configs/experiments/fm_homogeneous.yaml): 4 equal ranks, one epoch of 469 steps, window 20; ranks
2 and 3 share the core the hogs run on and compute about 3x slower for 6-9 steps at a time, with
45-95 steps between spells; a step computes in about 21 ms (2 ms fixed, 0.6 ms a sample at 32
samples), scatters by about 15 %, and exchanges 1.7 MB. Each seed draws its own spells.
Usage: spells_cell_sim.py OUTDIR [--seeds N] [--first S]
  then: build/bin/dynamix agent eval --suite OUTDIR --seeds 1 --policies static gns dynamix
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from random_suite import earlier_draw  # noqa: E402

STEPS = 469


def spells(seed):
    r = random.Random(seed)
    events, t = [], r.randint(20, 60)
    while t < STEPS - 9:
        length = r.randint(6, 9)
        events.append(f"    - {{at_step: {t}, ranks: [2, 3], slowdown: 3.0, duration_steps: {length}}}")
        t += length + r.randint(45, 95)
    return events


def scenario(seed):
    return f"""# spells_cell_sim.py, seed {seed}: the real spells cell in the simulator
sim:
  nodes: 4
  seed: {seed}
  max_steps: {STEPS}
  profile: {{classes: [{{count: 4, speed: 1.0}}]}}
  events:
""" + "\n".join(spells(seed)) + """
  workload: {alpha_s: 0.002, beta_s: 0.0006, grad_bytes: 1.7e6, bandwidth_gbps: 4, latency_us: 50,
             target_progress: 1.0e12, noise: 0.15, switch_cost: 0.0}
batch: {init: 32, min: 8, max: 512, global: fixed}
policy: {name: static, window: 20}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--first", type=int, default=1)
    a = ap.parse_args()
    if a.seeds < 1:
        sys.exit("spells_cell_sim.py: --seeds must be at least 1")
    held = earlier_draw(a.outdir)
    if held:
        sys.exit(f"spells_cell_sim.py: {a.outdir} already holds {len(held)} scenario files "
                 "(they would join this draw in every later eval)")
    os.makedirs(a.outdir, exist_ok=True)
    for seed in range(a.first, a.first + a.seeds):
        with open(os.path.join(a.outdir, f"spells_cell_s{seed:03d}.yaml"), "w") as f:
            f.write(scenario(seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
