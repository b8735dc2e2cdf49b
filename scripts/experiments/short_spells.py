#!/usr/bin/python3
"""Writes a simulator scenario of short spells of interference at random (docs/AGENT.md item 24):
16 equal ranks; from step 50, one or two ranks drawn at random run 3x slower for MIN..MAX steps,
then a gap drawn from an exponential of mean GAP steps, and so on to STEPS. Pass the plan change's
cost with --set sim.workload.switch_cost=C (configs/experiments/sim_short_spells.yaml is seed 7,
3000 steps, 4-6 steps, gap 30, cost 1).
Usage: short_spells.py OUT.yaml [--steps N] [--min K] [--max K] [--gap G] [--seed S] [--window W]"""
import argparse
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--min", type=int, default=4, dest="lo")
    ap.add_argument("--max", type=int, default=6, dest="hi")
    ap.add_argument("--gap", type=float, default=30)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--window", type=int, default=10)
    a = ap.parse_args()
    if not (1 <= a.lo <= a.hi and a.gap > 0 and a.steps > 50 and a.window >= 1):
        sys.exit("short_spells.py: need 1 <= --min <= --max, --gap > 0, --steps > 50, --window >= 1")
    r = random.Random(a.seed)
    events, t = [], 50
    while t < a.steps:
        ranks = sorted(r.sample(range(16), r.choice([1, 1, 2])))
        length = r.randint(a.lo, a.hi)
        events.append(f"    - {{at_step: {t}, ranks: {ranks}, slowdown: 3.0, duration_steps: {length}}}")
        t += length + int(r.expovariate(1.0 / a.gap)) + 1
    with open(a.out, "w") as f:
        f.write(f"""# short_spells.py --steps {a.steps} --min {a.lo} --max {a.hi} --gap {a.gap:g} --seed {a.seed} --window {a.window}
sim:
  nodes: 16
  seed: 5
  max_steps: {a.steps}
  profile: {{classes: [{{count: 16, speed: 1.0}}]}}
  events:
""" + "\n".join(events) + f"""
  workload: {{alpha_s: 0.004, beta_s: 0.0004, grad_bytes: 4.5e7, bandwidth_gbps: 25, latency_us: 20,
             target_progress: 1.0e12, noise: 0.05}}
batch: {{init: 32, min: 4, max: 256, global: fixed}}
policy: {{name: static, window: {a.window}}}
""")


if __name__ == "__main__":
    main()
