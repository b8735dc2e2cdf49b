#!/usr/bin/env python3
"""Best throughput any fixed plan can reach on a static two-class suite scenario, as a fraction of
the noiseless balanced ideal that `dynamix agent eval` divides by.

A synchronous step lasts as long as its slowest rank, so under the simulator's lognormal step
noise the expected step is E[max_i t_i] + comm, above the noiseless balanced step. This searches
every integer plan that gives each class an even share (ranks of a class within one sample of
each other) and estimates E[max] by Monte Carlo with the simulator's noise model.
Usage: scripts/experiments/noise_bound.py configs/agent_suite/static_classes32.yaml [...]
"""
import sys

import numpy as np
import yaml


def even(total, k):
    q, r = divmod(total, k)
    return [q + 1] * r + [q] * (k - r)


def bound(path, samples=100000):
    with open(path) as f:
        cfg = yaml.safe_load(f)
    sim, batch = cfg["sim"], cfg["batch"]
    w = {k: float(v) for k, v in sim["workload"].items()}  # PyYAML reads 4.5e7 as text
    classes = sim["profile"]["classes"]
    if len(classes) != 2 or sim.get("events"):
        raise SystemExit(f"{path}: only static scenarios with two classes")
    counts = [c["count"] for c in classes]
    speed = np.repeat([c["speed"] for c in classes], counts)
    noise = np.repeat([c.get("noise", w["noise"]) for c in classes], counts)
    n, lo, hi = len(speed), batch["min"], batch["max"]
    B = batch["init"] * n
    a, c = w["alpha_s"] / speed, w["beta_s"] / speed
    comm = 2 * (n - 1) / n * w["grad_bytes"] / (w["bandwidth_gbps"] * 1e9 / 8) + 2 * (n - 1) * w["latency_us"] * 1e-6
    t_lo, t_hi = 0.0, 1e6  # noiseless ideal: equal finish time T, bisection
    for _ in range(200):
        T = (t_lo + t_hi) / 2
        t_lo, t_hi = (T, t_hi) if np.clip((T - a) / c, lo, hi).sum() < B else (t_lo, T)
    ideal = t_hi + comm
    factor = np.exp(noise * np.random.default_rng(0).standard_normal((samples, n)) - 0.5 * noise**2)
    best = (0.0, None)
    for second in range(counts[1] * lo, B - counts[0] * lo + 1):
        b = np.array(even(B - second, counts[0]) + even(second, counts[1]), float)
        if b.max() > hi:
            continue
        fraction = ideal / (((a + c * b) * factor).max(axis=1).mean() + comm)
        if fraction > best[0]:
            best = (fraction, b)
    return best


for p in sys.argv[1:]:
    f, b = bound(p)
    print(f"{p}: best fraction of the ideal {f:.4f} (per-rank batches {int(b[0])} and {int(b[-1])})")
