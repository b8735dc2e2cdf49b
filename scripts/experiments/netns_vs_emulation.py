#!/usr/bin/python3
"""Real link caps (network namespaces + tc tbf, scripts/experiments/netns_run.sh) against the
`hetero.bandwidth_mbps` emulation at the same Mbit/s, on one training config, interleaved.

Usage: scripts/experiments/netns_vs_emulation.py OUT_DIR [--config CFG] [--caps 0,0,0,100]
           [--policies static,proportional,dynamix] [--reps 1] [--set KEY=VALUE ...]

For every repetition and policy (the policy order rotating each repetition) two runs back to back,
their order alternating too:
  emulated: mpirun -np N (Open MPI over TCP on loopback: --mca pml ob1 --mca btl tcp,self) with
            hetero.bandwidth_mbps = CAPS (the capped rank sleeps for the missing wire time);
  real:     netns_run.sh --caps CAPS, each rank in its own namespace, tbf on its veth in both
            directions, with hetero.bandwidth_mbps = 0.
Prints, per run, per rank: mean compute, comm and wait seconds a step, the rank's mean batch and
its last plan entry, and what the network monitor saw (mean tx+rx MB/s, retransmits/s, smoothed
RTT); and per run: mean step time, wait fraction, total time, samples/s. Writes OUT_DIR/table.md
and OUT_DIR/runs.json. Needs root for the real runs (netns_run.sh exits 77 elsewhere: those
runs are reported as skipped). Binary: $DYNAMIX_BIN or build/bin/dynamix.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NETNS = REPO / "scripts" / "experiments" / "netns_run.sh"


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def launch(mode, policy, caps, args, out, binary):
    run_dir = out / f"{policy}.{mode}.r{args.rep}"
    n = len(caps)
    sets = [f"policy.name={policy}", f"output.dir={run_dir}"] + args.set
    if mode == "emulated":
        sets.append(f"hetero.bandwidth_mbps={json.dumps(caps)}")
        cmd = ["mpirun", "-np", str(n), "--oversubscribe", "--bind-to", "none", "--mca", "pml", "ob1",
               "--mca", "btl", "tcp,self"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    else:
        sets.append(f"hetero.bandwidth_mbps={json.dumps([0] * n)}")
        cmd = ["bash", str(NETNS), "--caps", ",".join(str(c) for c in caps), "--"]
    cmd += [binary, "train", "--config", str(args.config), "--overwrite"]
    for s in sets:
        cmd += ["--set", s]
    log = run_dir.with_suffix(".log")
    print(f"+ {shlex.join(cmd)}", flush=True)
    t0 = time.monotonic()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=REPO).returncode
    wall = time.monotonic() - t0
    rec = {"mode": mode, "policy": policy, "rep": args.rep, "dir": str(run_dir), "log": str(log), "rc": rc,
           "wall_s": wall}
    if rc == 77 and mode == "real":
        rec["status"] = "skipped: " + log.read_text().strip().splitlines()[-1]
        return rec
    if rc != 0 or not (run_dir / "summary.json").is_file():
        rec["status"] = f"failed (exit {rc}; log {log})"
        return rec
    rec["status"] = "ok"
    rec["summary"] = json.loads((run_dir / "summary.json").read_text())
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    decisions = read_jsonl(run_dir / "decisions.jsonl")
    rows = [m for m in metrics if m["step"] > 2]  # past the bucket rebuild and warm-up
    mean = lambda key, r: statistics.fmean(m[key][r] for m in rows)
    ranks = []
    for r in range(n):
        nodes = [nd for d in decisions for nd in d["nodes"] if nd["rank"] == r]
        nmean = lambda k: statistics.fmean(nd[k] for nd in nodes) if nodes else float("nan")
        ranks.append({"compute_s": mean("compute_time", r), "comm_s": mean("comm_time", r),
                      "wait_s": mean("wait_time", r), "batch": mean("batch_sizes", r),
                      "plan_last": decisions[-1]["plan"][r] if decisions else None,
                      "net_MBps": (nmean("net_tx_bytes_per_s") + nmean("net_rx_bytes_per_s")) / 1e6,
                      "retrans_per_s": nmean("net_retransmits_per_s"), "srtt_ms": nmean("net_srtt_us") / 1e3})
    rec["ranks"] = ranks
    rec["step_s"] = statistics.fmean(m["step_time"] for m in rows)
    rec["monitor_source"] = rec["summary"].get("monitor_source")
    rec["plans"] = [d["plan"] for d in decisions]
    return rec


def table(records):
    lines = ["| policy | mode | rank | compute s | comm s | wait s | batch (mean; last plan) | net MB/s | "
             "retrans/s | srtt ms |", "|" + "---|" * 10]
    for rec in records:
        if rec["status"] != "ok":
            lines.append(f"| {rec['policy']} | {rec['mode']} | | {rec['status']} | | | | | | |")
            continue
        for r, x in enumerate(rec["ranks"]):
            lines.append(f"| {rec['policy']} | {rec['mode']} | {r} | {x['compute_s']:.3f} | {x['comm_s']:.3f} | "
                         f"{x['wait_s']:.3f} | {x['batch']:.1f}; {x['plan_last']} | {x['net_MBps']:.2f} | "
                         f"{x['retrans_per_s']:.1f} | {x['srtt_ms']:.2f} |")
    lines += ["", "| policy | mode | rep | step s | wait frac. | total s | samples/s | final acc. | monitor |",
              "|" + "---|" * 9]
    for rec in records:
        if rec["status"] != "ok":
            continue
        s = rec["summary"]
        acc = s.get("final_test_accuracy")
        lines.append(f"| {rec['policy']} | {rec['mode']} | {rec['rep']} | {rec['step_s']:.3f} | "
                     f"{s['mean_wait_fraction']:.3f} | {s['total_time_s']:.1f} | {s['mean_throughput']:.0f} | "
                     f"{'%.4f' % acc if acc is not None else '-'} | {rec['monitor_source']} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "experiments" / "fm_bandwidth_capped.yaml")
    ap.add_argument("--caps", default="0,0,0,100", help="per-rank Mbit/s, 0 = uncapped (default 0,0,0,100)")
    ap.add_argument("--policies", default="static,proportional,dynamix")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for every run")
    a = ap.parse_args()
    try:
        caps = [float(c) if "." in c else int(c) for c in a.caps.split(",")]
    except ValueError:
        ap.error(f"--caps: '{a.caps}' is not a comma-separated list of Mbit/s")
    if any(c < 0 for c in caps) or len(caps) < 2:
        ap.error("--caps: at least two ranks, every cap >= 0")
    if not a.config.is_file():
        ap.error(f"--config: {a.config} not found")
    a.config = a.config.resolve()
    binary = os.environ.get("DYNAMIX_BIN", str(REPO / "build" / "bin" / "dynamix"))
    if not Path(binary).is_file():
        ap.error(f"dynamix binary {binary} not found (set DYNAMIX_BIN)")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    a.out.mkdir(parents=True, exist_ok=True)
    a.out = a.out.resolve()
    policies = [p for p in a.policies.split(",") if p]
    records, turn = [], 0
    for rep in range(a.reps):
        a.rep = rep
        for k in range(len(policies)):
            policy = policies[(k + rep) % len(policies)]
            modes = ("emulated", "real") if turn % 2 == 0 else ("real", "emulated")
            turn += 1
            for mode in modes:
                rec = launch(mode, policy, caps, a, a.out, binary)
                records.append(rec)
                print(f"  {policy} {mode}: {rec['status']}"
                      + (f", total {rec['summary']['total_time_s']:.1f} s" if rec["status"] == "ok" else ""),
                      flush=True)
    (a.out / "runs.json").write_text(json.dumps(records, indent=1) + "\n")
    order = {p: k for k, p in enumerate(policies)}
    md = table(sorted(records, key=lambda r: (order[r["policy"]], r["mode"], r["rep"])))
    (a.out / "table.md").write_text(md)
    print(md)
    failed = [r for r in records if r["status"].startswith("failed")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
