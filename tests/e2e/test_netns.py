"""Issue #15 item 3: real network heterogeneity (scripts/experiments/netns_run.sh). Two ranks, each
in its own network namespace on a bridge, Open MPI over TCP between them; the same short run twice,
interleaved: links uncapped, then rank 1's link capped by `tc tbf` at CAP Mbit/s (both directions).
  - both runs complete (watchdog on: it reaches rank 0 across namespaces) and pass check-outputs.py;
  - the capped run's tbf moved the gradient traffic (the script reports what it sent);
  - a real cap slows the collective itself, so both ranks' comm time grows, and it cannot be less
    than what rank 1 sent divided by the cap, while compute stays what it was and neither rank
    waits for the other (equal compute), unlike hetero.bandwidth_mbps's emulation which only adds
    sleep on the capped rank;
  - the network monitor, run inside the namespaces, saw the traffic (tx bytes > 0 on both ranks).
Needs root, iproute2 and a kernel with netns, veth, bridge and tbf; skips (CTest status 77)
printing the reason otherwise. Run by hand: /usr/bin/python3 this file."""
import json
import os
import re
import statistics
import sys

from e2e_util import DYNAMIX, SOURCE_DIR, TempDir, check_outputs, fail, read_jsonl, run, write

SKIP = 77
STEPS = 12
CAP = 40  # Mbit/s; the CNN's 1.6 MB gradient takes >= 0.32 s a step through it
SCRIPT = SOURCE_DIR / "scripts" / "experiments" / "netns_run.sh"
# Names and subnet of their own, so that a netns_run.sh run by hand (dmx, 10.77.0) does not clash.
NET = ["--prefix", "dmt", "--subnet", "10.78.0"]
CONFIG = f"""
model: cnn
dataset: {{name: synthetic, shape: [1, 28, 28], classes: 10, train_size: 2000, test_size: 64}}
batch: {{init: [16, 16], min: 4, max: 64}}
train: {{max_steps: {STEPS}, epochs: 5, optimizer: sgd, lr: 0.05, seed: 4, eval_every: 0}}
policy: {{name: static, window: 4}}
output: {{dir: OUT, checkpoint_every: 0}}
"""


def launch(d, caps):
    out = d / f"caps_{caps.replace(',', '_')}"
    cfg = write(d / "netns.yaml", CONFIG.replace("OUT", str(out)))
    cmd = ["bash", str(SCRIPT), *NET, "--caps", caps, "--", DYNAMIX, "train", "--config", str(cfg)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = run(cmd, timeout=240, env=env)
    text = r.stdout + r.stderr
    if r.returncode == SKIP:
        print(f"SKIP: {text.strip().splitlines()[-1] if text.strip() else 'netns_run.sh exited 77'}")
        sys.exit(SKIP)
    if r.returncode != 0:
        fail(f"netns_run.sh --caps {caps}: exit {r.returncode}\n{text[-3000:]}")
    check_outputs(out)
    summary = json.loads((out / "summary.json").read_text())
    if summary["steps"] != STEPS:
        fail(f"--caps {caps}: {summary['steps']} steps, expected {STEPS}")
    return out, text


def per_rank(out, key):
    """Median over steps 3..N (after the bucket rebuild of step 1 and warm-up) of metrics[key][rank]."""
    rows = [m for m in read_jsonl(out / "metrics.jsonl") if m["step"] > 2]
    return [statistics.median(m[key][r] for m in rows) for r in range(2)]


def main():
    if os.geteuid() != 0:
        print(f"SKIP: network namespaces and tc need root (uid {os.geteuid()})")
        sys.exit(SKIP)
    with TempDir() as d:
        free, _ = launch(d, "0,0")
        capped, text = launch(d, f"0,{CAP}")
        leftovers = run(["ip", "netns", "list"]).stdout.split()
        if any(n.startswith("dmt") for n in leftovers):
            fail(f"namespaces left behind: {leftovers}")

        sent = re.search(r"rank 1 tbf \(sending side\): sent (\d+) bytes", text)
        if not sent:
            fail(f"netns_run.sh did not report rank 1's tbf counters:\n{text[-2000:]}")
        sent_bytes = int(sent.group(1))
        comm_free, comm_cap = per_rank(free, "comm_time"), per_rank(capped, "comm_time")
        wait_free, wait_cap = per_rank(free, "wait_time"), per_rank(capped, "wait_time")
        comp_free, comp_cap = per_rank(free, "compute_time"), per_rank(capped, "compute_time")
        # What rank 1 had to push through the cap, per step (the run's whole traffic over its steps,
        # so a lower bound on the per-step wire time up to start-up and evaluation traffic).
        floor_s = sent_bytes * 8 / (CAP * 1e6) / STEPS
        print(f"rank 1 sent {sent_bytes} bytes through tbf: >= {floor_s:.3f} s a step at {CAP} Mbit/s")
        print(f"comm s/step  uncapped {comm_free}  capped {comm_cap}")
        print(f"wait s/step  uncapped {wait_free}  capped {wait_cap}")
        print(f"compute s/step  uncapped {comp_free}  capped {comp_cap}")
        if sent_bytes < STEPS * 1.0e6:
            fail(f"rank 1 sent only {sent_bytes} bytes through its tbf in {STEPS} steps of a 1.6 MB gradient: "
                 "MPI traffic did not cross the capped veth")
        for r in range(2):
            if comm_cap[r] < 0.6 * floor_s:
                fail(f"rank {r}: comm {comm_cap[r]:.3f} s/step under a {CAP} Mbit/s cap, below the wire time "
                     f"{floor_s:.3f} s: the cap did not hold")
            if comm_cap[r] < 3 * comm_free[r] or comm_cap[r] - comm_free[r] < 0.15:
                fail(f"rank {r}: comm {comm_cap[r]:.3f} s/step capped vs {comm_free[r]:.3f} uncapped: the cap "
                     "did not slow the collective")
            # Equal compute: the cap is in the collective, not in anybody's wait for a slow peer.
            if wait_cap[r] > 0.3 * comm_cap[r]:
                fail(f"rank {r}: wait {wait_cap[r]:.3f} s/step under the cap (comm {comm_cap[r]:.3f}): the cap "
                     "should show as communication time, not waiting")

        decisions = read_jsonl(capped / "decisions.jsonl")
        source = decisions[-1].get("monitor_source", "")
        tx = [max(n["net_tx_bytes_per_s"] for w in decisions for n in w["nodes"] if n["rank"] == r) for r in range(2)]
        print(f"monitor source {source!r}: peak tx bytes/s per rank {tx}")
        if source not in ("null", "none", "") and min(tx) <= 0:
            fail(f"the {source} monitor saw no traffic from a rank inside its namespace: {tx}")
    print("ok: netns: real tbf cap slows the collective on both ranks, outputs valid, nothing left behind")


if __name__ == "__main__":
    main()
