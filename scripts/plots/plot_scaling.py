#!/usr/bin/python3
"""Simulator scaling plot: every policy from 4 to 1024 simulated nodes.

Usage: scripts/plots/plot_scaling.py [--config configs/sim_hetero32.yaml] [--nodes 4,8,...,1024]
                                     [--policies static,proportional,gns,dynamix] [--out DIR]

For each node count N it runs `dynamix sim --config CONFIG --set sim.nodes=N` with the profile
replaced by two equal speed classes (N/2 nodes at speed 1.0, N/2 at --slow-speed, default 0.5;
the config's events are kept), reads every policy's summary.json, and writes into DIR (default
runs/scaling): scaling.csv and scaling.png (throughput and time to target against N, per
policy). Binary: $DYNAMIX_BIN or build/bin/dynamix.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description="simulator scaling plot, 4 to 1024 nodes")
    ap.add_argument("--config", default=str(REPO / "configs" / "sim_hetero32.yaml"))
    ap.add_argument("--nodes", default="4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--policies", default="static,proportional,gns,dynamix")
    ap.add_argument("--slow-speed", type=float, default=0.5, help="speed of the slow half (default 0.5)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra `dynamix sim` override (repeatable)")
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "scaling")
    args = ap.parse_args(argv)
    binary = os.environ.get("DYNAMIX_BIN", str(REPO / "build" / "bin" / "dynamix"))
    nodes = [int(n) for n in args.nodes.split(",")]
    policies = args.policies.split(",")
    if any(n < 2 or n % 2 for n in nodes):
        print("plot_scaling: error: --nodes must be even counts >= 2 (two equal speed classes)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in nodes:
        out = args.out / f"n{n}"
        profile = json.dumps({"classes": [{"count": n // 2, "speed": 1.0}, {"count": n // 2, "speed": args.slow_speed}]})
        cmd = [binary, "sim", "--config", args.config, "--policies", ",".join(policies),
               "--set", f"sim.nodes={n}", "--set", f"sim.profile={profile}", "--set", f"output.dir={out}"]
        for s in args.set:
            cmd += ["--set", s]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"plot_scaling: error: {' '.join(cmd)} exited {r.returncode}:\n{r.stderr}", file=sys.stderr)
            return 1
        for p in policies:
            s = json.loads((out / p / "summary.json").read_text())
            rows.append({"nodes": n, "policy": p, "time_to_target_s": s.get("time_to_target_s"),
                         "total_time_s": s["total_time_s"], "mean_throughput": s["mean_throughput"],
                         "mean_wait_fraction": s["mean_wait_fraction"], "steps": s["steps"]})
        line = ", ".join(f"{row['policy']} {row['mean_throughput']:.0f}/s" for row in rows[-len(policies):])
        print(f"{n} nodes: {line}", flush=True)
    with open(args.out / "scaling.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    fig, (a1, a2, a3) = plt.subplots(1, 3, figsize=(15, 4))
    static = {r["nodes"]: r["time_to_target_s"] for r in rows if r["policy"] == "static"}
    for p in policies:
        pts = [r for r in rows if r["policy"] == p]
        a1.plot([r["nodes"] for r in pts], [r["mean_throughput"] for r in pts], "o-", label=p)
        ttt = [r for r in pts if r["time_to_target_s"] is not None]
        a2.plot([r["nodes"] for r in ttt], [r["time_to_target_s"] for r in ttt], "o-", label=p)
        rel = [r for r in ttt if static.get(r["nodes"])]
        a3.plot([r["nodes"] for r in rel], [r["time_to_target_s"] / static[r["nodes"]] for r in rel], "o-", label=p)
    for a in (a1, a2, a3):
        a.set_xscale("log", base=2)
        a.set_xticks(nodes)
        a.set_xticklabels([str(n) for n in nodes], fontsize=7)
        if a is not a3:
            a.set_yscale("log")
        a.set_xlabel("simulated nodes (half at speed 1.0, half at %.2g)" % args.slow_speed)
        a.grid(alpha=0.3, which="both")
        a.legend(fontsize="small")
    a1.set_ylabel("samples/s (simulated)")
    a1.set_title("throughput")
    a2.set_ylabel("simulated seconds")
    a2.set_title("time to target progress")
    a3.set_ylabel("time to target / static's")
    a3.set_title("relative to static (lower is better)")
    fig.suptitle(f"dynamix sim scaling ({Path(args.config).name})")
    fig.tight_layout()
    fig.savefig(args.out / "scaling.png", dpi=80)
    plt.close(fig)
    print(args.out / "scaling.csv")
    print(args.out / "scaling.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
