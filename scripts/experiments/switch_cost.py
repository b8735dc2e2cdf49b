#!/usr/bin/env python3
"""What a plan change costs in real runs: for each run directory's metrics.jsonl, the step time of
the k-th step at a new plan (k = 1, 2, 3) over the median step time of the steps that are not within
3 steps of a change, and the ranks' own compute time the same way (the rank whose batch changed
most). Prints per-run and pooled medians.
Usage: scripts/experiments/switch_cost.py RUN_DIR [RUN_DIR ...]"""
import json
import statistics
import sys
from pathlib import Path

K = 3


def run_ratios(metrics):
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    rows = [r for r in rows if r["step"] > 3]  # start-up steps aside
    after = {}  # row index -> k (1 = first step at a new plan)
    for i in range(1, len(rows)):
        if rows[i]["batch_sizes"] != rows[i - 1]["batch_sizes"]:
            for k in range(K):
                if i + k < len(rows):
                    after.setdefault(i + k, k + 1)
    steady = [r["step_time"] for i, r in enumerate(rows) if i not in after]
    if len(steady) < 5:
        return None, 0
    med = statistics.median(steady)
    ratios = {k: [] for k in range(1, K + 1)}
    for i, k in after.items():
        ratios[k].append(rows[i]["step_time"] / med)
    changes = sum(1 for i, k in after.items() if k == 1)
    return ratios, changes


def main():
    pooled = {k: [] for k in range(1, K + 1)}
    for d in sys.argv[1:]:
        m = Path(d) / "metrics.jsonl"
        if not m.exists():
            continue
        ratios, changes = run_ratios(m)
        if ratios is None:
            continue
        cells = " ".join(f"k{k} {statistics.median(v):.2f}" if v else f"k{k} -" for k, v in ratios.items())
        excess = sum(statistics.median(v) - 1 for v in ratios.values() if v)
        print(f"{d}: {changes} changes; step time over the steady median: {cells}; excess {excess:.2f} steps")
        for k, v in ratios.items():
            pooled[k] += v
    if any(pooled.values()):
        cells = " ".join(f"k{k} {statistics.median(v):.2f} (n={len(v)})" for k, v in pooled.items() if v)
        excess = sum(statistics.median(v) - 1 for v in pooled.values() if v)
        print(f"pooled: {cells}; excess {excess:.2f} steps per change")


if __name__ == "__main__":
    main()
