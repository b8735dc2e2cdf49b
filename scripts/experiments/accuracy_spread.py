#!/usr/bin/env python3
"""Final test accuracy of real runs, grouped by label, with the difference between labels.

Usage: accuracy_spread.py DIR [DIR ...]

Each DIR holds runs LABEL.K/summary.json (compare_policies.sh, plan_accuracy.sh). Prints, per
label, the runs' count, mean, standard deviation, minimum and maximum final accuracy, and for
every pair of labels the difference of the means with its standard error (Welch) and a two-sided
permutation p-value (exact up to 20,000 relabellings, else that many drawn with a fixed seed).
One epoch of SGD at a constant learning rate ends on a noisy iterate, and any change of plan
changes the float rounding, so single runs of two policies differ by chance; this says by how much.
"""
import itertools
import json
import math
import random
import statistics
import sys
from pathlib import Path

MAX_RELABELLINGS = 20000


def load(dirs):
    groups = {}
    for d in dirs:
        for summary in sorted(Path(d).glob("*/summary.json")):
            label = summary.parent.name.rsplit(".", 1)[0]
            acc = json.loads(summary.read_text()).get("final_test_accuracy")
            if acc is not None:
                groups.setdefault(label, []).append(float(acc))
    return groups


def permutation_p(a, b):
    pooled, n = a + b, len(a)
    observed = abs(statistics.fmean(a) - statistics.fmean(b))
    total = math.comb(len(pooled), n)
    if total <= MAX_RELABELLINGS:
        splits = (set(c) for c in itertools.combinations(range(len(pooled)), n))
    else:
        rng = random.Random(1)
        splits = (set(rng.sample(range(len(pooled)), n)) for _ in range(MAX_RELABELLINGS))
        total = MAX_RELABELLINGS
    extreme = 0
    for first in splits:
        x = [v for i, v in enumerate(pooled) if i in first]
        y = [v for i, v in enumerate(pooled) if i not in first]
        extreme += abs(statistics.fmean(x) - statistics.fmean(y)) >= observed - 1e-12
    return extreme / total


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: accuracy_spread.py DIR [DIR ...]")
    groups = load(sys.argv[1:])
    if not groups:
        sys.exit("accuracy_spread: no LABEL.K/summary.json with a final_test_accuracy under " + " ".join(sys.argv[1:]))
    print(f"{'label':32} {'runs':>4} {'mean':>7} {'sd':>7} {'min':>7} {'max':>7}")
    for label, v in sorted(groups.items()):
        sd = statistics.stdev(v) if len(v) > 1 else float("nan")
        print(f"{label:32} {len(v):4d} {statistics.fmean(v):7.4f} {sd:7.4f} {min(v):7.4f} {max(v):7.4f}")
    for (la, a), (lb, b) in itertools.combinations(sorted(groups.items()), 2):
        if len(a) < 2 or len(b) < 2:
            continue
        diff = statistics.fmean(a) - statistics.fmean(b)
        se = math.sqrt(statistics.variance(a) / len(a) + statistics.variance(b) / len(b))
        print(f"{la} - {lb}: {diff:+.4f} (se {se:.4f}, permutation p {permutation_p(a, b):.3f})")


if __name__ == "__main__":
    main()
