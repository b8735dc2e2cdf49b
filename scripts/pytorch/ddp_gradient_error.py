#!/usr/bin/python3
"""The gradient error of DDP with unequal per-rank batches, and DYNAMIX's lack of it, on one fixed step.

Four ranks hold b = 48, 32, 16, 8 samples (B = 104) of DYNAMIX's first Fashion-MNIST step (its
sampler, seed 1). The exact gradient of the mean loss over all B samples is

    g_exact = sum_i (b_i / B) g_i          (g_i: rank i's mean gradient over its b_i samples)

  (i)   g_exact: one float64 backward pass over the union of the 104 samples (PyTorch).
  (ii)  DDP: real torch DistributedDataParallel, gloo, 4 processes, each with its own slice; its
        averaged .grad is read back (DDP averages per-rank means equally: (1/N) sum_i g_i).
  (iii) DYNAMIX: the real binary, `mpirun -np 4 dynamix train`, one SGD step without momentum,
        lr_scaling none, no warmup: run once with lr 1e-30 (DYNAMIX refuses lr 0; 1e-30 x g is far
        below float32's resolution of the weights, so checkpoint.pt holds the initial weights w0)
        and once with lr L (w1); its applied gradient is (w0 - w1) / L.
        Without the binary (--no-binary, or none found) (iii) is the formula sum_i (b_i/B) g_i
        computed in PyTorch, and the output says so.

Prints ||g - g_exact|| / ||g_exact|| for each, and writes --json. Exits 1 if DYNAMIX's error is
not ~0 or DDP's is not clearly non-zero.

Usage: /usr/bin/python3 scripts/pytorch/ddp_gradient_error.py [--batches 48,32,16,8] [--json OUT]
       (DYNAMIX_BIN selects the binary; default build/bin/dynamix)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dynamix_ref as ref  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FMNIST = "/usr/share/datasets/fashion-mnist"


def flat(tensors):
    return torch.cat([t.reshape(-1).to(torch.float64) for t in tensors])


def small_dataset_dir(root, n_test=16):
    """The real training files (symlinks) and a 16-sample test split, so DYNAMIX's end-of-run
    evaluation (which a 1-step run cannot skip) costs nothing; training data are untouched."""
    d = Path(root) / "data"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir()
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        src = next(p for p in (Path(FMNIST) / stem, Path(FMNIST) / (stem + ".gz")) if p.exists())
        (d / src.name).symlink_to(src)
    test = ref.load_idx_split(FMNIST, 0.0, 1.0, "test")
    imgs = test.images[:n_test].numpy()
    labels = test.labels[:n_test].numpy().astype(np.uint8)
    with open(d / "t10k-images-idx3-ubyte", "wb") as f:
        f.write((0x803).to_bytes(4, "big") + n_test.to_bytes(4, "big") + (28).to_bytes(4, "big") * 2)
        f.write(imgs.tobytes())
    with open(d / "t10k-labels-idx1-ubyte", "wb") as f:
        f.write((0x801).to_bytes(4, "big") + n_test.to_bytes(4, "big") + labels.tobytes())
    return d


def run_dynamix(binary, workdir, datadir, batches, seed, lr, tag):
    out = Path(workdir) / tag
    cfg = Path(workdir) / f"{tag}.yaml"
    cfg.write_text(
        "model: cnn\n"
        f"dataset: {{name: fashion_mnist, path: {datadir}}}\n"
        f"batch: {{init: [{', '.join(map(str, batches))}], min: 1, max: 512, global: fixed}}\n"
        f"train: {{epochs: 1, max_steps: 1, optimizer: sgd, momentum: 0.0, lr: {lr!r}, lr_scaling: none,\n"
        f"        warmup_steps: 0, seed: {seed}, eval_every: 0}}\n"
        "policy: {name: static, window: 20}\n"
        "monitor: {enabled: false}\n"
        f"output: {{dir: {out}}}\n")
    cmd = ["mpirun", "-np", str(len(batches)), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [binary, "train", "--config", str(cfg), "--overwrite"]
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"dynamix failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return ref.read_checkpoint_params(out / "checkpoint.pt")


def ddp_worker(rank, world, w0, batches_x, batches_y, result_path):
    torch.set_num_threads(1)
    model = ref.Cnn()
    model.load_state_dict(w0)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    loss = F.cross_entropy(ddp(batches_x[rank]), batches_y[rank])  # mean over this rank's b_i samples
    loss.backward()  # DDP's allreduce: sum of the per-rank means, divided by the world size
    if rank == 0:
        torch.save([p.grad.detach().clone() for p in model.parameters()], result_path)
    dist.barrier()
    ref.exit_now()  # here, while this frame still holds `ddp`


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="48,32,16,8")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1.0, help="DYNAMIX's learning rate for the revealing step")
    ap.add_argument("--no-binary", action="store_true", help="(iii) from the formula, not the binary")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="keep the work directory here (default: a temporary one, removed)")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    world, B = len(batches), sum(batches)
    torch.set_num_threads(1)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ddp_grad_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        binary = os.environ.get("DYNAMIX_BIN", str(REPO / "build/bin/dynamix"))
        use_binary = not args.no_binary and os.access(binary, os.X_OK) and shutil.which("mpirun")
        w0 = w1 = None
        if use_binary:
            datadir = small_dataset_dir(work)
            w0 = run_dynamix(binary, work, datadir, batches, args.seed, 1e-30, "w0")
            w1 = run_dynamix(binary, work, datadir, batches, args.seed, args.lr, "step")
        elif not args.no_binary:
            print(f"note: no executable DYNAMIX binary at {binary} (or no mpirun): (iii) is the formula")

        # PyTorch's init under the same seed (what ddp_baseline.py starts from): equal to DYNAMIX's?
        torch.manual_seed(args.seed)
        py_init = ref.Cnn().state_dict()
        init_match = None
        if w0 is not None:
            init_match = all(torch.equal(py_init[k], w0[k]) for k in py_init)
        else:
            w0 = py_init
        names = list(py_init.keys())

        # The step's samples: DYNAMIX's sampler, epoch 0, first step, plan = batches.
        train, _ = ref.load_dataset({"dataset": {"name": "fashion_mnist"}})
        sampler = ref.VariableBatchSampler(len(train), args.seed)
        step = sampler.next(batches)
        xs, ys = [], []
        for r in range(world):
            x, y = train.get(sampler.indices(step, r))
            xs.append(x)
            ys.append(y)

        # (i) exact, float64, one pass over the union; per-rank means g_i for the formulas.
        m64 = ref.Cnn().double()
        m64.load_state_dict({k: v.double() for k, v in w0.items()})

        def grad_of(x, y):
            m64.zero_grad()
            F.cross_entropy(m64(x.double()), y).backward()
            return flat(p.grad for p in m64.parameters())

        g_exact = grad_of(torch.cat(xs), torch.cat(ys))
        g_rank = [grad_of(xs[r], ys[r]) for r in range(world)]
        g_ddp_formula = sum(g_rank) / world
        g_dx_formula = sum((b / B) * g for b, g in zip(batches, g_rank))

        # (ii) real DDP, gloo, one process per rank.
        result = work / "ddp_grad.pt"
        ref.spawn_gloo(ddp_worker, world, (w0, xs, ys, str(result)))
        g_ddp = flat(torch.load(result))

        # (iii) DYNAMIX's applied gradient from its weights, or the formula.
        if w1 is not None:
            g_dx = flat((w0[k].double() - w1[k].double()) / args.lr for k in names)
            dx_source = "binary"
        else:
            g_dx = g_dx_formula
            dx_source = "formula"

        def rel(g):
            return float((g - g_exact).norm() / g_exact.norm())

        res = {
            "batches": batches, "global_batch": B, "seed": args.seed, "params": int(g_exact.numel()),
            "grad_norm_exact": float(g_exact.norm()),
            "rel_error_ddp": rel(g_ddp), "rel_error_ddp_formula": rel(g_ddp_formula),
            "rel_error_dynamix": rel(g_dx), "rel_error_dynamix_formula": rel(g_dx_formula),
            "dynamix_source": dx_source,
            "ddp_vs_its_formula": float((g_ddp - g_ddp_formula).norm() / g_ddp_formula.norm()),
            "pytorch_init_equals_dynamix_init": init_match,
        }
        print(f"one step, {world} ranks with b = {batches} (B = {B}), DYNAMIX's first Fashion-MNIST step "
              f"(seed {args.seed}), CNN with {res['params']} parameters, |g_exact| = {res['grad_norm_exact']:.4g}")
        print(f"{'gradient':52} {'||g - g_exact|| / ||g_exact||':>30}")
        print(f"{'(ii)  PyTorch DDP (gloo, real run): mean of g_i':52} {res['rel_error_ddp']:30.3e}")
        print(f"{'      DDP formula (1/N) sum g_i (float64)':52} {res['rel_error_ddp_formula']:30.3e}")
        if dx_source == "binary":
            print(f"{'(iii) DYNAMIX binary: (w0 - w1)/lr after 1 SGD step':52} {res['rel_error_dynamix']:30.3e}")
        else:
            print(f"{'(iii) DYNAMIX FORMULA (not the binary): sum (b_i/B) g_i':52} {res['rel_error_dynamix']:30.3e}")
        print(f"{'      DYNAMIX formula sum (b_i/B) g_i (float64)':52} {res['rel_error_dynamix_formula']:30.3e}")
        if init_match is not None:
            print("PyTorch's init under torch.manual_seed(seed) "
                  f"{'EQUALS' if init_match else 'DIFFERS FROM'} DYNAMIX's initial weights (bit for bit)")
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
        ok = res["rel_error_dynamix"] < 1e-4 and res["rel_error_ddp"] > 1e-2
        print("result:", "ok" if ok else "UNEXPECTED (DYNAMIX error not ~0 or DDP error not clearly > 0)")
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
