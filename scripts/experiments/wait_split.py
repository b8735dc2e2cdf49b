#!/usr/bin/env python3
"""Splits a run's mean wait into the part a batch split can remove and the part it cannot.

A rank waits, each step, for the slowest rank: wait_i = max_j busy_j - busy_i, busy = data +
compute (the trainer's own definition; summary.json's mean_wait_fraction is the mean over steps
of mean_i wait_i / step_time). Within each stretch of steps that ran one plan, the ranks' mean busy
times may differ (imbalance: a better split removes it) and each step scatters around those means
(scatter: no split removes it). The scatter part is the wait the same steps would have had with
every rank's mean made equal and each step's deviations kept; the imbalance part is the rest.

Means are taken per plan, over that plan's steps, so a stretch of a few steps counts mostly as
scatter (one step alone is all scatter): compare runs whose plans last similar stretches. Equal
means are not always the fastest split: where ranks scatter unequally, giving the noisier ones a
little less (dynamix's noise-aware split) shortens the step and shows here as imbalance. Nor can
every imbalance be split away: a rank held at batch.min whose step is still the longest (a fixed
cost per step no batch changes, configs/experiments/fm_mixed_knees.yaml) keeps it under any plan.

Usage: wait_split.py RUN_DIR [RUN_DIR ...]   (each with a metrics.jsonl)
"""
import json
import sys
from pathlib import Path


def step_rows(run_dir):
    rows = []
    with open(Path(run_dir) / "metrics.jsonl") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if "step_time" in row:
                    rows.append(row)
    return rows


def busy_times(row):
    data = row.get("data_time") or [0.0] * len(row["compute_time"])
    return [d + c for d, c in zip(data, row["compute_time"])]


def mean_wait_fraction(busy, step_time):
    slowest = max(busy)
    return sum(slowest - b for b in busy) / len(busy) / step_time if step_time > 0 else 0.0


def plan_stretches(rows):
    """Consecutive rows that ran the same batch_sizes."""
    stretches = []
    for row in rows:
        if stretches and stretches[-1][0]["batch_sizes"] == row["batch_sizes"]:
            stretches[-1].append(row)
        else:
            stretches.append([row])
    return stretches


def split(rows):
    """(mean wait, its imbalance part, its scatter part, plan stretches), fractions of step time."""
    total = scatter = 0.0
    stretches = plan_stretches(rows)
    for stretch in stretches:
        busy = [busy_times(r) for r in stretch]
        ranks = len(busy[0])
        mean = [sum(b[i] for b in busy) / len(busy) for i in range(ranks)]
        common = sum(mean) / ranks
        for b, r in zip(busy, stretch):
            total += mean_wait_fraction(b, r["step_time"])
            scatter += mean_wait_fraction([b[i] - mean[i] + common for i in range(ranks)], r["step_time"])
    n = max(1, len(rows))
    return total / n, (total - scatter) / n, scatter / n, len(stretches)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(f"{'run':32} {'steps':>6} {'plans':>5} {'wait':>6} {'imbalance':>9} {'scatter':>7}")
    for run_dir in argv[1:]:
        try:
            rows = step_rows(run_dir)
        except (OSError, ValueError, KeyError) as e:
            print(f"wait_split: {run_dir}: cannot read metrics.jsonl: {e}", file=sys.stderr)
            return 1
        if not rows:
            print(f"wait_split: {run_dir}: metrics.jsonl has no steps", file=sys.stderr)
            return 1
        wait, imbalance, scatter, plans = split(rows)
        print(f"{str(run_dir):32} {len(rows):6d} {plans:5d} {wait:6.3f} {imbalance:9.3f} {scatter:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
