#!/usr/bin/python3
"""Plots of a suite run by scripts/experiments/run_suite.py.

Usage: scripts/plots/plot_suite.py SUITE_OUT_DIR [--out DIR]

Reads SUITE_OUT_DIR/runs.jsonl, results.csv and every run's eval.jsonl; writes into DIR
(default SUITE_OUT_DIR/plots):
  accuracy_vs_time.png  test accuracy against wall-clock time, one panel per scenario, one colour
                        per variant, one line per run (seed x repetition)
  time_to_target.png    per scenario and variant: median time to target with min-max bars
                        (total time, hatched, in scenarios where some run missed the target, as
                        in the table's ratios); failed runs are counted under the bars
"""
import argparse
import csv
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_jsonl(path):
    if not path.is_file():
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def number(s):
    return float(s) if s not in ("", None) else None


def plot_accuracy(records, scenarios, variants, colors, path):
    cols = min(3, len(scenarios))
    rows = math.ceil(len(scenarios) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for k, sc in enumerate(scenarios):
        ax = axes[k // cols][k % cols]
        target = None
        for v in variants:
            first = True
            for r in records:
                if r["scenario"] != sc or r["variant"] != v:
                    continue
                evals = read_jsonl(Path(r["dir"]) / "eval.jsonl")
                target = target or (r.get("summary") or {}).get("target_accuracy")
                if not evals:
                    continue
                ax.plot([e["wall_time"] for e in evals], [e["test_accuracy"] for e in evals], "-",
                        marker=".", color=colors[v], alpha=0.8, label=v if first else None)
                first = False
        if target:
            ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.set_title(sc)
        ax.set_xlabel("wall-clock time (s)")
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="small")
        else:
            ax.text(0.5, 0.5, "no evaluations (failed runs?)", ha="center", transform=ax.transAxes)
    for k in range(len(scenarios), rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.suptitle("test accuracy vs wall-clock time (dashed: target)")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def plot_time_to_target(table, scenarios, variants, colors, path):
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(scenarios) * max(1, len(variants)) / 3), 4.5))
    width = 0.8 / max(1, len(variants))
    ymax = 0
    for j, v in enumerate(variants):
        for i, sc in enumerate(scenarios):
            row = table.get((sc, v))
            if not row:
                continue
            stem = "ttt_s" if row["ratio_basis"] == "time_to_target" else "total_s"
            med, lo, hi = (number(row[f"{stem}_{q}"]) for q in ("median", "min", "max"))
            x = i + (j - (len(variants) - 1) / 2) * width
            if med is not None:
                ax.bar(x, med, width, color=colors[v], label=v if i == 0 else None,
                       hatch="//" if stem == "total_s" else None, edgecolor="white")
                ax.errorbar(x, med, yerr=[[med - lo], [hi - med]], color="black", capsize=2, linewidth=1)
                ymax = max(ymax, hi)
            failed = int(row["failed"])
            if failed or med is None:
                ax.annotate(f"{failed} failed" if failed else "n/a", (x, 0), xytext=(0, 2),
                            textcoords="offset points", rotation=90, fontsize=7, ha="center", va="bottom",
                            color="red")
    ax.set_xticks(range(len(scenarios)))
    ax.set_xticklabels(scenarios, rotation=15)
    ax.set_ylabel("seconds (median, min-max)")
    ax.set_ylim(0, ymax * 1.1 if ymax else 1)
    ax.set_title("time to target (hatched: total time, target missed by some run)")
    ax.legend(fontsize="small", ncol=min(5, len(variants)))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description="plots of a run_suite.py output folder")
    ap.add_argument("suite_dir", type=Path)
    ap.add_argument("--out", type=Path, help="folder for the PNGs (default SUITE_OUT_DIR/plots)")
    args = ap.parse_args(argv)
    records = read_jsonl(args.suite_dir / "runs.jsonl")
    csv_path = args.suite_dir / "results.csv"
    if not records or not csv_path.is_file():
        print(f"plot_suite: error: {args.suite_dir} has no runs.jsonl or results.csv (run run_suite.py)",
              file=sys.stderr)
        return 2
    with open(csv_path) as f:
        table = {(r["scenario"], r["variant"]): r for r in csv.DictReader(f)}
    scenarios = ordered(r["scenario"] for r in records)
    variants = ordered(k[1] for k in table)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = {v: palette[k % len(palette)] for k, v in enumerate(variants)}
    out = args.out or args.suite_dir / "plots"
    out.mkdir(parents=True, exist_ok=True)
    plot_accuracy(records, scenarios, variants, colors, out / "accuracy_vs_time.png")
    plot_time_to_target(table, scenarios, variants, colors, out / "time_to_target.png")
    print(out / "accuracy_vs_time.png")
    print(out / "time_to_target.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
