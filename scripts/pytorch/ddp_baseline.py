#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo, CPU) on DYNAMIX's own config: the baseline to compare with.

Reads a DYNAMIX YAML config (plus --set overrides) and trains what `dynamix train` would with
policy static, as plain DDP does it:
  - the same CNN (models/simple.cc) and the same initial weights (torch.manual_seed(train.seed)
    before construction; checked bit for bit against DYNAMIX by ddp_gradient_error.py);
  - the same data, normalisation and sample order (DYNAMIX's sampler, replicated: every sample once
    per epoch, rank i's slice at offset sum_{j<i} b_j, the epoch tail split by largest remainders);
  - the same per-rank batches batch.init (DDP cannot change them), SGD with momentum/nesterov/weight
    decay, lr(B) = lr0 * scaling(B/B0) with linear warmup (framework/train/lr_schedule.cc);
  - DDP's gradient: the plain mean of per-rank mean gradients (exact only when batches are equal);
  - heterogeneity emulation as framework/train/hetero_emulator.cc: rank i sleeps (f_i - 1) x its
    measured compute time, paced when each gradient bucket is ready (a DDP comm hook, as DYNAMIX
    paces in its bucket-ready hook), before that bucket's allreduce; hetero.events with slowdown too;
  - the same evaluation: every train.eval_every steps, at the epoch end and at the end; the test set
    sharded contiguously over ranks in chunks of 500, correct/total/loss summed over ranks;
  - torch threads per rank: DYNAMIX's rule (framework/cli/train_command.cc): unless OMP_NUM_THREADS
    is set, max(1, cores / ranks on this node); with OMP_NUM_THREADS, that many.
Outputs in output.dir (rank 0), with DYNAMIX's contract keys: summary.json (policy "ddp", backend
"gloo"), metrics.jsonl (per step; per-rank times gathered once at the end, so no extra collective
per step), eval.jsonl, decisions.jsonl (one record: the fixed plan; DDP makes no decisions).
Not replicated: checkpoints (DYNAMIX writes one at the end, and every output.checkpoint_every steps),
the batch prefetch thread (a batch here is one index_select of uint8 images in the main thread).

Launch: /usr/bin/python3 scripts/pytorch/ddp_baseline.py --nproc 4 --config CONFIG [--set k=v ...]
    or: torchrun --nproc_per_node 4 scripts/pytorch/ddp_baseline.py --config CONFIG [--set k=v ...]
        (PyTorch 2; Debian's torch 1.13 launcher fails under Python 3.11 before starting a rank:
        AttributeError in torch/distributed/elastic/multiprocessing/api.py, to_map)
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dynamix_ref as ref  # noqa: E402

IGNORED_BLOCKS = ("policy", "agent", "comm", "monitor")


def threads_for(local_world):
    if os.environ.get("OMP_NUM_THREADS"):
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    return max(1, (os.cpu_count() or 1) // max(1, local_world))


class Pacer:
    """HeteroEmulator::pace(): sleep (f - 1) x the compute since the last mark, then mark again."""

    def __init__(self, slowdown):
        self.slowdown = slowdown
        self.mark = time.perf_counter()
        self.compute_end = self.mark

    def start(self):
        self.mark = time.perf_counter()

    def pace(self):
        now = time.perf_counter()
        if self.slowdown > 1.0:
            time.sleep((self.slowdown - 1.0) * (now - self.mark))
        self.mark = self.compute_end = time.perf_counter()


def paced_allreduce_hook(pacer, bucket):
    pacer.pace()
    return default_hooks.allreduce_hook(None, bucket)  # sum over ranks / world size, as DDP does


def evaluate(model, test, rank, world, chunk=500):
    model.eval()
    n = len(test)
    begin, end = n * rank // world, n * (rank + 1) // world
    sums = torch.zeros(3, dtype=torch.float64)  # loss x count, correct, count
    with torch.no_grad():
        for s in range(begin, end, chunk):
            x, y = test.get(list(range(s, min(end, s + chunk))))
            logits = model(x)
            sums[0] += float(F.cross_entropy(logits, y, reduction="sum"))
            sums[1] += float((logits.argmax(1) == y).sum())
            sums[2] += y.numel()
    if world > 1:
        dist.all_reduce(sums)
    model.train()
    return (float(sums[0] / sums[2]), float(sums[1] / sums[2])) if sums[2] > 0 else (0.0, 0.0)


def train(rank, world, local_world, cfg):
    """Trains this rank in an initialized gloo group; never returns (see ref.exit_now)."""
    t = cfg["train"]
    threads = threads_for(local_world)
    torch.set_num_threads(threads)
    if cfg.get("model", "cnn") != "cnn":
        raise SystemExit(f"model '{cfg.get('model')}': the DDP baseline replicates DYNAMIX's cnn only")
    if t["optimizer"] != "sgd":
        raise SystemExit(f"train.optimizer '{t['optimizer']}': the DDP baseline replicates sgd only")
    train_set, test_set = ref.load_dataset(cfg)
    batch = cfg.get("batch") or {}
    init = batch.get("init", [32])
    init = init if isinstance(init, list) else [init]
    if len(init) not in (1, world):
        raise SystemExit(f"batch.init has {len(init)} entries for {world} ranks")
    plan = [int(init[0])] * world if len(init) == 1 else [int(b) for b in init]
    hetero = cfg.get("hetero") or {}
    slowdown = float(ref.per_rank(hetero.get("slowdown"), rank, 1.0))
    events = [e for e in (hetero.get("events") or []) if "slowdown" in e]
    log = print if rank == 0 else (lambda *a, **k: None)
    if rank == 0:
        ignored = [k for k in IGNORED_BLOCKS if k in cfg]
        if ignored:
            log(f"ddp: ignoring DYNAMIX-only blocks {ignored} (DDP keeps batch.init fixed)")
        if len(set(plan)) > 1:
            log(f"ddp: unequal batches {plan}: DDP averages per-rank means equally, a biased gradient")

    torch.manual_seed(int(t["seed"]))  # identical initial weights to DYNAMIX's (same generator, same order)
    model = ref.Cnn(num_classes=10)
    ddp = torch.nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    pacer = Pacer(slowdown)
    ddp.register_comm_hook(pacer, paced_allreduce_hook)
    torch.manual_seed(int(t["seed"]) + 1000003 * rank + 1)  # as DYNAMIX after its broadcast
    opt = torch.optim.SGD(model.parameters(), lr=float(t["lr"]), momentum=float(t["momentum"]),
                          nesterov=bool(t["nesterov"]), weight_decay=float(t["weight_decay"]))
    sampler = ref.VariableBatchSampler(len(train_set), int(t["seed"]))
    base_batch = sum(plan)
    epochs, max_steps, eval_every = float(t["epochs"]), int(t["max_steps"] or 0), int(t["eval_every"] or 0)
    target = t.get("target_accuracy")

    out = Path((cfg.get("output") or {}).get("dir", "runs/ddp"))
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        for name in ("metrics.jsonl", "eval.jsonl", "decisions.jsonl"):
            (out / name).write_text("")
        with open(out / "decisions.jsonl", "w") as f:
            f.write(json.dumps({"window": 0, "step": 0, "policy": "ddp", "actions": [], "plan": plan,
                                "reward": None, "note": "PyTorch DDP: fixed per-rank batches, no decisions"}) + "\n")
    evals = []
    rows = []  # this rank's per-step record
    step, samples_seen, last_eval_step = 0, 0, -1
    last_acc, best_acc, time_to_target = None, None, None
    log(f"ddp: {world} ranks, backend gloo, model cnn, dataset {cfg.get('dataset', {}).get('name')} "
        f"({len(train_set)} train / {len(test_set)} test), plan {plan}, {threads} torch thread(s) per rank, "
        f"slowdowns {hetero.get('slowdown', [1.0])}")
    dist.barrier()
    start = time.perf_counter()

    def elapsed():
        return time.perf_counter() - start

    def finished():
        return (max_steps > 0 and step >= max_steps) or sampler.fractional_epoch() >= epochs - 1e-12

    def maybe_eval(force):
        nonlocal last_eval_step, last_acc, best_acc, time_to_target
        due = force or sampler.cursor == len(train_set) or (eval_every > 0 and step % eval_every == 0)
        if not due or last_eval_step == step:
            return
        last_eval_step = step
        loss, acc = evaluate(model, test_set, rank, world)
        now = elapsed()
        last_acc, best_acc = acc, acc if best_acc is None else max(best_acc, acc)
        if target is not None and time_to_target is None and acc >= target:
            time_to_target = now
        evals.append({"step": step, "wall_time": now, "test_loss": loss, "test_accuracy": acc})
        log(f"[epoch {sampler.fractional_epoch():.2f} step {step}] test loss {loss:.4f} acc {acc:.4f} | "
            f"{samples_seen / now:.0f} samples/s | {now:.1f} s")

    while not finished():
        step_start = time.perf_counter()
        for e in events:
            if int(e["at_step"]) == step and int(e["rank"]) == rank:
                pacer.slowdown = float(e["slowdown"])
        a = sampler.next(plan)
        x, y = train_set.get(sampler.indices(a, rank))
        data_s = time.perf_counter() - step_start
        lr = ref.lr_at(step, sum(plan), float(t["lr"]), base_batch, t["lr_scaling"], int(t["warmup_steps"]))
        for g in opt.param_groups:
            g["lr"] = lr
        t0 = time.perf_counter()
        opt.zero_grad()
        pacer.start()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()  # DDP: buckets allreduced (after pacing) as backward goes; returns when all are done
        t1 = time.perf_counter()
        compute_s = pacer.compute_end - t0
        allreduce_s = t1 - pacer.compute_end
        opt.step()
        n = a[2][rank]
        step += 1
        samples_seen += sum(a[2])
        rows.append([data_s, compute_s, allreduce_s, float(loss) * n, time.perf_counter() - step_start,
                     elapsed(), lr, sum(a[2]), a[2], sampler.fractional_epoch()])
        maybe_eval(False)
    maybe_eval(True)
    total = elapsed()

    # Per-rank step records, gathered once: wait_i = max_j(data_j + compute_j) - (data_i + compute_i).
    all_rows = [None] * world
    dist.all_gather_object(all_rows, rows)
    if rank == 0:
        wait_sum = 0.0
        with open(out / "metrics.jsonl", "w") as f:
            for s in range(len(rows)):
                per = [all_rows[r][s] for r in range(world)]
                busy = [p[0] + p[1] for p in per]
                wait = [max(busy) - b for b in busy]
                step_time = rows[s][4]
                wait_sum += sum(w / step_time for w in wait) / world if step_time > 0 else 0.0
                f.write(json.dumps({
                    "step": s + 1, "epoch": rows[s][9], "wall_time": rows[s][5],
                    "loss": sum(p[3] for p in per) / rows[s][7], "lr": rows[s][6], "global_batch": rows[s][7],
                    "batch_sizes": rows[s][8], "step_time": step_time,
                    "compute_time": [p[1] for p in per], "comm_time": [max(0.0, p[2] - w) for p, w in zip(per, wait)],
                    "wait_time": wait, "data_time": [p[0] for p in per],
                    "throughput": rows[s][7] / step_time if step_time > 0 else 0.0}) + "\n")
        with open(out / "eval.jsonl", "w") as f:
            for e in evals:
                f.write(json.dumps(e) + "\n")
        summary = {
            "world_size": world, "policy": "ddp", "model": "cnn",
            "dataset": cfg.get("dataset", {}).get("name", "fashion_mnist"), "steps": step,
            "epochs": sampler.fractional_epoch(), "total_time_s": total, "final_test_accuracy": last_acc,
            "best_test_accuracy": best_acc, "target_accuracy": target, "time_to_target_s": time_to_target,
            "mean_throughput": samples_seen / total if total > 0 else 0.0,
            "mean_wait_fraction": wait_sum / max(1, step), "monitor_source": "none", "backend": "gloo",
            "oom_events": 0, "completed": finished(), "framework": f"pytorch {torch.__version__} DDP",
            "torch_threads_per_rank": threads, "batch_sizes": plan,
        }
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        ttt = f"time to {target:.2f}: {time_to_target:.1f} s" if time_to_target is not None else \
            (f"target {target:.2f} not reached" if target is not None else "no target")
        log(f"result: {world} ranks, ddp, {step} steps, {sampler.fractional_epoch():.2f} epochs in {total:.1f} s, "
            f"final test accuracy {last_acc:.4f}, {samples_seen / total:.0f} samples/s, "
            f"wait {100 * wait_sum / max(1, step):.1f}%, {ttt}")
    dist.barrier()
    ref.exit_now()  # here, while this frame still holds `ddp`


def spawned(rank, world, cfg):
    train(rank, world, world, cfg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", "-c", required=True, help="a DYNAMIX YAML config")
    ap.add_argument("--set", action="append", default=[], help="override key.sub=value (repeatable)")
    ap.add_argument("--nproc", type=int, help="spawn this many ranks here (default: under torchrun, its ranks)")
    args = ap.parse_args()
    cfg = ref.load_config(args.config, args.set)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun
        dist.init_process_group("gloo")
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
              int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"])), cfg)
    world = args.nproc or len((cfg.get("batch") or {}).get("init", [1])) or 1
    ref.spawn_gloo(spawned, world, (cfg,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
