#!/usr/bin/python3
"""What batch sizes new to a process leave behind: a plain PyTorch loop of the Fashion-MNIST CNN
(scripts/pytorch/dynamix_ref.py's replica of models/simple.cc, SGD with momentum, one thread,
random data) with glibc set up as the
trainer sets it (train.keep_host_memory: every block from the heap, never trimmed).

468 steps at 32 samples, but for 12 excursions of 5 steps (after steps 40, 70, ..., 370), as set V
of docs/RESULTS.md §1 ("Stop 74") sent the spells cell's ranks:
  var   12 different sizes (40, 41, ..., 51): every excursion a size the process has not run
  one   46 each time
  none  no excursion (the control)
Prints the median step time of steps 10-40, of the steps at 32 outside the excursions and their
next 4 steps, and of steps 386-468, with the process's resident memory at the end.
--no-mkldnn runs the convolutions without oneDNN (torch.backends.mkldnn.enabled = False).
Usage: /usr/bin/python3 scripts/experiments/new_sizes_loop.py var|one|none [--no-mkldnn]
(Debian's python3-torch, the same LibTorch 1.13 the trainer links; pin it with taskset -c 1.)
"""
import argparse
import ctypes
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pytorch"))
import dynamix_ref  # noqa: E402

M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's mallopt(3) parameters
STEPS, EVEN = 468, 32


def excursions(arm):
    """Step -> batch size for the excursions' steps."""
    plan = {}
    for k, start in enumerate(range(40, 371, 30)):
        for j in range(1, 6):
            plan[start + j] = {"var": 40 + k, "one": 46, "none": EVEN}[arm]
    return plan


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("arm", choices=["var", "one", "none"])
    ap.add_argument("--no-mkldnn", action="store_true")
    args = ap.parse_args()
    libc = ctypes.CDLL("libc.so.6")
    if libc.mallopt(M_MMAP_MAX, 0) != 1 or libc.mallopt(M_TRIM_THRESHOLD, -1) != 1:
        raise SystemExit("glibc refused mallopt")
    if args.no_mkldnn:
        torch.backends.mkldnn.enabled = False
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = dynamix_ref.Cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data, labels = torch.randn(15000, 1, 28, 28), torch.randint(0, 10, (15000,))
    plan = excursions(args.arm)
    times, pos = [], 0
    for step in range(1, STEPS + 1):
        b = plan.get(step, EVEN)
        x, y = data[pos:pos + b], labels[pos:pos + b]
        pos = (pos + b) % (len(data) - 64)
        t = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        times.append((step, b, time.perf_counter() - t))
    near = lambda s: any(s - d in plan for d in range(5))  # noqa: E731
    early = [t for s, _, t in times if 10 <= s <= 40]
    outside = [t for s, b, t in times if s > 40 and b == EVEN and not near(s)]
    late = [t for s, _, t in times if s >= 386]
    with open("/proc/self/statm") as f:
        rss_mb = int(f.read().split()[1]) * 4096 / 2**20
    print(f"{args.arm}{' no-mkldnn' if args.no_mkldnn else ''}: steps 10-40 "
          f"{statistics.median(early) * 1e3:.2f} ms, at 32 outside the excursions "
          f"{statistics.median(outside) * 1e3:.2f} ms, steps 386-468 {statistics.median(late) * 1e3:.2f} ms, "
          f"resident {rss_mb:.0f} MB")


if __name__ == "__main__":
    main()
