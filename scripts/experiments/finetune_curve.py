#!/usr/bin/python3
"""Throughput as a fraction of the balanced ideal over a simulated run (sim_windows.jsonl), per
fifth of the run, for several runs: a Markdown table and a PNG (moving average of 50 windows).
Usage: finetune_curve.py OUT RUN [RUN ...] (each RUN a directory under OUT with sim_windows.jsonl)."""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def fractions(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return [r["throughput"] / r["ideal_throughput"] for r in rows if r.get("ideal_throughput", 0) > 0]


def moving_average(values, width=50):
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v - (values[i - width] if i >= width else 0)
        out.append(total / min(i + 1, width))
    return out


def main():
    out, runs = Path(sys.argv[1]), sys.argv[2:]
    print("| run | windows | " + " | ".join(f"fifth {k}" for k in range(1, 6)) + " | whole run |")
    print("|---|---|" + "---|" * 6)
    plt.figure(figsize=(7, 3.5))
    for run in runs:
        f = fractions(out / run / "sim_windows.jsonl")
        q = len(f) // 5
        fifths = [sum(f[k * q:(k + 1) * q]) / q for k in range(5)]
        print(f"| {run} | {len(f)} | " + " | ".join(f"{v:.3f}" for v in fifths) + f" | {sum(f) / len(f):.3f} |")
        plt.plot(moving_average(f), label=run, linewidth=1)
    plt.xlabel("decision window")
    plt.ylabel("throughput / balanced ideal (50-window mean)")
    plt.legend()
    plt.tight_layout()
    plt.savefig(out / "curve.png", dpi=90)


if __name__ == "__main__":
    main()
