#!/usr/bin/python3
"""Markdown table from agent_ablation.sh's (or rule_ablation.sh's) outputs: per removed feature
group (or rule switched off), the dynamix policy's time to target against the best heuristic
(median, worst, median of the dynamic scenarios), against static on the homogeneous ones (worst),
and the fraction of the balanced ideal throughput on the static ones (median).
Usage: ablation_table.py OUT [--label LABEL NAME ...] (default: the feature groups)."""
import json
import statistics
import sys
from pathlib import Path

GROUPS = ["none", "balance", "timing", "memory", "system", "network", "statistics"]


def summary(path):
    rows = [r for r in json.loads(path.read_text())["rows"] if r["policy"] == "dynamix"]
    of = lambda prefix, key: [r[key] for r in rows if r["scenario"].startswith(prefix)]
    best = [r["vs_best_heuristic"] for r in rows]
    return (statistics.median(best), max(best), statistics.median(of("dynamic", "vs_best_heuristic")),
            max(of("homogeneous", "vs_static")), statistics.median(of("static", "ideal_fraction")))


def main():
    out = Path(sys.argv[1])
    label, names = "removed group", GROUPS
    if len(sys.argv) > 3 and sys.argv[2] == "--label":
        label, names = sys.argv[3], sys.argv[4:]
    print(f"| {label} | vs best heuristic, median | worst | dynamic, median "
          "| homogeneous vs static, worst | static: ideal fraction, median |")
    print("|---|---|---|---|---|---|")
    for g in names:
        f = out / f"eval_{g}" / "eval.json"
        if not f.is_file():
            print(f"| {g} | missing: {f} | | | | |")
            continue
        print(f"| {g} | " + " | ".join(f"{v:.3f}" for v in summary(f)) + " |")


if __name__ == "__main__":
    main()
