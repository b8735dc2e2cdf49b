#!/usr/bin/python3
"""Plots of one training run from its outputs (metrics.jsonl, eval.jsonl, decisions.jsonl,
summary.json).

Usage: scripts/plots/plot_run.py RUN_DIR [--out DIR] [--smooth STEPS]

Writes into DIR (default RUN_DIR/plots):
  batch_sizes.png  per-rank batch size against wall-clock time
  step_wait.png    per-rank compute time and straggler wait per step (moving average)
  decisions.png    decision timeline: the plan per rank at every window, the windows where it
                   changed, and the policy's note for each change
  accuracy.png     test accuracy against wall-clock time, with the target and time to target
"""
import argparse
import json
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams["axes.titlesize"] = 9


def read_jsonl(path):
    if not path.is_file():
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def moving_average(values, k):
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= k:
            acc -= values[i - k]
        out.append(acc / min(i + 1, k))
    return out


def width(rank, ranks):
    """Lower ranks drawn thicker, so ranks with equal batches stay visible under each other."""
    return 1.2 if ranks > 8 else 1.0 + 2.0 * (ranks - 1 - rank) / max(1, ranks - 1)


def title(summary, what):
    if not summary:
        return what
    return (f"{what}: {summary.get('policy', '?')}, {summary.get('world_size', '?')} ranks, "
            f"{summary.get('model', '?')}/{summary.get('dataset', '?')}")


def plot_batch_sizes(metrics, summary, path):
    fig, ax = plt.subplots(figsize=(8, 4))
    t = [m["wall_time"] for m in metrics]
    n = len(metrics[0]["batch_sizes"])
    for r in range(n):
        ax.step(t, [m["batch_sizes"][r] for m in metrics], where="post", label=f"rank {r}", linewidth=width(r, n))
    ax.set_xlabel("wall-clock time (s)")
    ax.set_ylabel("batch size")
    ax.set_title(title(summary, "per-rank batch size"))
    ax.legend(fontsize="small", ncol=4)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_step_wait(metrics, summary, path, smooth):
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    steps = [m["step"] for m in metrics]
    for r in range(len(metrics[0]["compute_time"])):
        c = [m["compute_time"][r] for m in metrics]
        w = [m["wait_time"][r] for m in metrics]
        line, = a1.plot(steps, moving_average(c, smooth), label=f"rank {r}")
        a1.plot(steps, c, color=line.get_color(), alpha=0.15, linewidth=0.8)
        a2.plot(steps, moving_average(w, smooth), color=line.get_color(), label=f"rank {r}")
    a1.plot(steps, moving_average([m["step_time"] for m in metrics], smooth), "k--", linewidth=1, label="step")
    a1.set_ylabel("compute time (s)")
    a2.set_ylabel("wait time (s)")
    a2.set_xlabel("step")
    a1.set_title(title(summary, f"per-rank compute and wait per step (mean over {smooth} steps)"))
    a1.legend(fontsize="small", ncol=5)
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_decisions(decisions, metrics, summary, path, max_notes=12):
    changes, prev = [], (metrics[0]["batch_sizes"] if metrics else None)
    for d in decisions:
        if d.get("plan") and d["plan"] != prev:
            changes.append(d)
            prev = d["plan"]
    text_h = 0.2 + 0.14 * (min(len(changes), max_notes) + 1)
    fig, (ax, tx) = plt.subplots(2, 1, figsize=(9, 4.2 + text_h), gridspec_kw={"height_ratios": [4.2, text_h]})
    # The plan in force before the first decision is the first step's.
    plans = [(0, metrics[0]["batch_sizes"])] if metrics else []
    plans += [(d["step"], d["plan"]) for d in decisions if d.get("plan")]
    if metrics and metrics[-1]["step"] > plans[-1][0]:
        plans.append((metrics[-1]["step"], plans[-1][1]))  # the last plan holds to the end
    steps = [p[0] for p in plans]
    n = len(plans[0][1])
    for r in range(n):
        ax.step(steps, [p[1][r] for p in plans], where="post", label=f"rank {r}", linewidth=width(r, n))
    for k, d in enumerate(changes):
        ax.axvline(d["step"], color="grey", alpha=0.3, linewidth=0.8)
        if k < max_notes:
            ax.annotate(str(k + 1), (d["step"], 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                        ha="center", va="bottom")
    rewards = [(d["step"], d["reward"]) for d in decisions if d.get("reward") is not None]
    if rewards:
        rx = ax.twinx()
        rx.plot([s for s, _ in rewards], [v for _, v in rewards], "k:", linewidth=1, label="reward")
        rx.set_ylabel("reward (dotted)")
    ax.set_xlabel("step")
    ax.set_ylabel("planned batch size")
    ax.set_title(title(summary, f"decision timeline ({len(decisions)} windows, {len(changes)} plan changes)"),
                 pad=14)
    ax.legend(fontsize="small", ncol=4, loc="best", framealpha=0.6)
    ax.grid(alpha=0.3)
    lines = []
    for k, d in enumerate(changes[:max_notes]):
        note = d.get("note") or "(no note)"
        lines.append(f"{k + 1}. step {d['step']}: plan {d['plan']}: {note}")
    if len(changes) > max_notes:
        lines.append(f"... {len(changes) - max_notes} more changes")
    if not changes:
        lines.append("the plan never changed" + (f" ({decisions[0].get('note')})" if decisions and
                                                 decisions[0].get("note") else ""))
    wrapped = "\n".join(textwrap.shorten(l, 150) for l in lines)
    tx.axis("off")
    tx.text(0, 1, wrapped, va="top", ha="left", fontsize=7, family="monospace", transform=tx.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_accuracy(evals, summary, path):
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot([e["wall_time"] for e in evals], [e["test_accuracy"] for e in evals], "o-",
            label=summary.get("policy", "run") if summary else "run")
    target = (summary or {}).get("target_accuracy")
    if target:
        ax.axhline(target, color="grey", linestyle="--", linewidth=1, label=f"target {target}")
    ttt = (summary or {}).get("time_to_target_s")
    if ttt is not None:
        ax.axvline(ttt, color="green", linestyle=":", label=f"time to target {ttt:.1f} s")
    ax.set_xlabel("wall-clock time (s)")
    ax.set_ylabel("test accuracy")
    ax.set_title(title(summary, "test accuracy"))
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description="plots of one dynamix run")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--out", type=Path, help="folder for the PNGs (default RUN_DIR/plots)")
    ap.add_argument("--smooth", type=int, default=10, help="moving-average window in steps (default 10)")
    args = ap.parse_args(argv)
    run = args.run_dir
    metrics = read_jsonl(run / "metrics.jsonl")
    if not metrics:
        print(f"plot_run: error: {run / 'metrics.jsonl'} is missing or empty", file=sys.stderr)
        return 2
    summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").is_file() else None
    out = args.out or run / "plots"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    plot_batch_sizes(metrics, summary, out / "batch_sizes.png")
    written.append("batch_sizes.png")
    plot_step_wait(metrics, summary, out / "step_wait.png", max(1, args.smooth))
    written.append("step_wait.png")
    decisions = read_jsonl(run / "decisions.jsonl")
    if decisions:
        plot_decisions(decisions, metrics, summary, out / "decisions.png")
        written.append("decisions.png")
    else:
        print(f"plot_run: note: no decisions.jsonl in {run}: decisions.png skipped")
    evals = read_jsonl(run / "eval.jsonl")
    if evals:
        plot_accuracy(evals, summary, out / "accuracy.png")
        written.append("accuracy.png")
    else:
        print(f"plot_run: note: no eval.jsonl in {run}: accuracy.png skipped")
    for w in written:
        print(out / w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
