#!/usr/bin/env python3
"""Write a suite of random simulator scenarios that no policy was tuned on.

The public suite (configs/agent_suite) has 18 hand-made clusters, and the agent's rules were
developed against them. This draws fresh ones from wider ranges, so that
`dynamix agent eval --suite DIR` can judge every policy on clusters nobody looked at first:

    scripts/experiments/random_suite.py --count 120 --seed 7 --out /tmp/rsuite
    build/bin/dynamix agent eval --suite /tmp/rsuite --seeds 2 --output /tmp/rsuite-eval

Families follow the names `agent eval` groups by: `homogeneous_*` (equal speeds, per-step noise,
nothing else), `static_*` (fixed speeds in 1-4 classes) and `dynamic_*` (static speeds plus one to
three events: a lasting slowdown, a transient one, drift, several ranks at once, or a recurring
slowdown). Ranges: 2-256 nodes (--max-nodes), speed ratios up to 16x, per-step noise 2-30 % (per
class), fixed cost per step 0-60 % of compute, communication 0-80 % of a balanced step, step times
1 ms to 5 s, decision windows of 5-40 steps. The same --seed writes the same files.

Every rank of such a cluster shares one knee alpha/beta (a class's speed divides both). With
--mixed-knees each non-homogeneous class also runs its fixed cost at a speed of its own,
fixed_speed = speed^g with g uniform in [0, 1] (a newer device faster per sample than at its
per-step overhead), drawn from a second generator: the same --seed writes the same clusters
otherwise, so a suite and its mixed-knee twin compare scenario by scenario.
"""

import argparse
import math
import os
import random

import yaml


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw_classes(rng, nodes, homogeneous):
    noise = round(rng.uniform(0.02, 0.3), 3)
    if homogeneous:
        return [{"count": nodes, "speed": 1.0, "noise": noise}], [1.0] * nodes
    k = min(nodes, rng.choice([1, 2, 2, 3, 4]))
    cuts = sorted(rng.sample(range(1, nodes), k - 1)) if k > 1 else []
    counts = [b - a for a, b in zip([0] + cuts, cuts + [nodes])]
    top = log_uniform(rng, 1.0, 16.0)
    classes, speeds = [], []
    for i, count in enumerate(counts):
        speed = 1.0 if i == 0 else round(1.0 / log_uniform(rng, 1.0, top), 4)
        c = {"count": count, "speed": speed}
        if rng.random() < 0.3:
            c["noise"] = round(rng.uniform(0.02, 0.3), 3)
        classes.append(c)
        speeds += [speed] * count
    return classes, speeds


def draw_workload(rng, nodes, speeds, init):
    step = log_uniform(rng, 1e-3, 5.0)  # compute of one step at speed 1 and the initial batch
    fixed_share = rng.choice([0.0, rng.uniform(0.0, 0.6)])
    alpha = step * fixed_share
    beta = (step - alpha) / init
    # communication as a share of a balanced step (compute at the balanced split + comm)
    rate = sum(speeds)
    balanced = alpha + beta * init * nodes / rate
    comm_share = rng.choice([0.0, rng.uniform(0.0, 0.8)]) if nodes > 1 else 0.0
    comm = balanced * comm_share / (1 - comm_share)
    latency_us = 10.0
    bandwidth_gbps = 25.0
    ring = 2.0 * (nodes - 1) / nodes
    wire = max(comm - 2 * (nodes - 1) * latency_us * 1e-6, 0.0)
    grad_bytes = wire * bandwidth_gbps * 1e9 / 8 / ring
    batch = init * nodes
    return {
        "alpha_s": float(f"{alpha:.6g}"),
        "beta_s": float(f"{beta:.6g}"),
        "grad_bytes": float(f"{grad_bytes:.6g}"),
        "bandwidth_gbps": bandwidth_gbps,
        "latency_us": latency_us,
        "b_noise": float(f"{batch * log_uniform(rng, 0.1, 2.0):.6g}"),
        "target_progress": rng.choice([600, 1000, 1500]),
        "noise": round(rng.uniform(0.02, 0.3), 3),
    }


def draw_events(rng, nodes, horizon):
    events = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.choice(["lasting", "transient", "drift", "recurring"])
        width = max(1, min(nodes - 1, round(nodes * rng.choice([0.0, 0.1, 0.25]))))
        ranks = sorted(rng.sample(range(nodes), width))
        at = rng.randrange(50, horizon // 2)
        slowdown = round(log_uniform(rng, 1.3, 6.0), 3)
        if kind == "lasting":
            events.append({"at_step": at, "ranks": ranks, "slowdown": slowdown})
        elif kind == "transient":
            events.append({"at_step": at, "ranks": ranks, "slowdown": slowdown,
                           "duration_steps": rng.randrange(10, 300)})
        elif kind == "drift":
            events.append({"at_step": at, "ranks": ranks, "slowdown": slowdown,
                           "period_steps": rng.randrange(100, 800)})
        else:
            on, period = rng.randrange(20, 200), rng.randrange(250, 600)
            for start in range(at, horizon, period):
                events.append({"at_step": start, "ranks": ranks, "slowdown": slowdown,
                               "duration_steps": on})
    return events


def mix_knees(knee_rng, classes):
    """Each class's fixed-cost speed, speed^g with g in [0, 1] (see the module's doc)."""
    for c in classes:
        c["fixed_speed"] = round(c["speed"] ** knee_rng.uniform(0.0, 1.0), 4)


def scenario(rng, family, index, max_nodes, knee_rng=None):
    nodes = int(round(log_uniform(rng, 2, max_nodes)))
    init = 32
    classes, speeds = draw_classes(rng, nodes, family == "homogeneous")
    if knee_rng is not None and family != "homogeneous":
        mix_knees(knee_rng, classes)
    workload = draw_workload(rng, nodes, speeds, init)
    window = rng.choice([5, 10, 20, 20, 40])
    sim = {"nodes": nodes, "seed": rng.randrange(1, 10**6), "profile": {"classes": classes}}
    if family == "dynamic":
        sim["events"] = draw_events(rng, nodes, int(workload["target_progress"] * 1.5))
    sim["workload"] = workload
    config = {"sim": sim, "batch": {"init": init, "min": 2, "max": 512, "global": "fixed"},
              "policy": {"name": "static", "window": window}}
    # innermost lists and mappings in flow style (one line per class, rank list, workload)
    body = yaml.safe_dump(config, default_flow_style=None, sort_keys=False, width=1 << 16)
    return f"# random_suite.py family {family}, scenario {index}\n" + body


def earlier_draw(outdir):
    """Scenario files already in `outdir` (none if it does not exist). A draw refuses such a
    directory: an earlier draw's scenarios beside its own would join every `agent eval` of it."""
    return [n for n in os.listdir(outdir) if n.endswith(".yaml")] if os.path.isdir(outdir) else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=120)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-nodes", type=int, default=256, help="cluster sizes are drawn from 2..this")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mixed-knees", action="store_true",
                    help="each class's fixed cost per step at a speed of its own (see above)")
    args = ap.parse_args()
    if args.count < 1 or args.max_nodes < 2:
        ap.error(f"--count must be >= 1 and --max-nodes >= 2, got {args.count} and {args.max_nodes}")
    old = earlier_draw(args.out)
    if old:
        ap.error(f"--out {args.out} already holds {len(old)} scenario files; give a new or empty directory")
    rng = random.Random(args.seed)
    knee_rng = random.Random(f"knees {args.seed}") if args.mixed_knees else None
    os.makedirs(args.out, exist_ok=True)
    for i in range(args.count):
        family = rng.choice(["homogeneous", "static", "static", "dynamic", "dynamic", "dynamic"])
        path = os.path.join(args.out, f"{family}_r{i:03d}.yaml")
        with open(path, "w") as f:
            f.write(scenario(rng, family, i, args.max_nodes, knee_rng))
    print(f"wrote {args.count} scenarios to {args.out}")


if __name__ == "__main__":
    main()
