"""PyTorch replicas of the DYNAMIX pieces a side-by-side comparison must match exactly.

Each function names the C++ it mirrors; change both together.
  - Cnn                  models/simple.cc (layer sizes, ReLU, 2x2 max pooling; PyTorch's default init,
                         which LibTorch 1.13 shares, drawn in the same module order)
  - load_idx_split       datasets/idx_dataset.cc + datasets/load_dataset.cc (gz or plain IDX,
                         (x/255 - mean)/std as x*a + b in float32)
  - VariableBatchSampler framework/train/sampler.cc (SplitMix64 Fisher-Yates permutation per
                         epoch, rank i takes the slice at offset sum_{j<i} b_j, epoch tail split
                         by largest remainders)
  - lr_at                framework/train/lr_schedule.cc (linear | sqrt | none in B/B0, warmup)
  - load_config          the YAML config plus `--set key.sub=value` overrides (values parsed as YAML)
  - read_checkpoint_params  framework/train/checkpoint_file.cc: a 24-byte header, then a
                         TorchScript archive that torch.jit.load reads; parameters under model.*
And what the DDP scripts share: spawn_gloo and exit_now.
Debian's /usr/bin/python3 has torch 1.13, numpy and yaml.
"""
import copy
import gzip
import io
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
import yaml

M64 = (1 << 64) - 1

DATASETS = {  # name -> (default directory, mean, std), as datasets/load_dataset.cc
    "fashion_mnist": ("/usr/share/datasets/fashion-mnist", 0.2860, 0.3530),
    "mnist": ("/usr/share/datasets/mnist", 0.1307, 0.3081),
}


class Cnn(nn.Module):
    """models/simple.cc Cnn: conv3x3(32,pad 1)-ReLU-maxpool2, conv3x3(64,pad 1)-ReLU-maxpool2, fc 128, fc classes."""

    def __init__(self, channels=1, height=28, width=28, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * (height // 4) * (width // 4), 128)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x):
        return self.logits(x)

    def logits(self, x):
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def _read_maybe_gz(base):
    for p in (base, base + ".gz"):
        if os.path.isfile(p):
            with open(p, "rb") as f:
                data = f.read()
            return gzip.decompress(data) if p.endswith(".gz") else data
    raise FileNotFoundError(base + "(.gz): file not found")


def _parse_idx(data, ndim):
    dims = [int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims)


class IdxSplit:
    """Images kept as uint8; get() normalizes a batch exactly as IdxDataset::get does."""

    def __init__(self, images_u8, labels, mean, std):
        self.images = torch.from_numpy(images_u8.copy())
        self.labels = torch.from_numpy(labels.astype(np.int64))
        # float a = 1.0f / (255.0f * std_), b = -mean_ / std_  (float32 arithmetic)
        self.a = float(np.float32(1.0) / (np.float32(255.0) * np.float32(std)))
        self.b = float(-np.float32(mean) / np.float32(std))

    def __len__(self):
        return self.images.shape[0]

    def get(self, indices):
        idx = torch.as_tensor(indices, dtype=torch.int64)
        x = self.images.index_select(0, idx).to(torch.float32)
        x.mul_(self.a).add_(self.b)
        return x.unsqueeze(1), self.labels.index_select(0, idx)


def load_idx_split(directory, mean, std, split):
    stem = "train" if split == "train" else "t10k"
    images = _parse_idx(_read_maybe_gz(f"{directory}/{stem}-images-idx3-ubyte"), 3)
    labels = _parse_idx(_read_maybe_gz(f"{directory}/{stem}-labels-idx1-ubyte"), 1)
    return IdxSplit(images, labels, mean, std)


def load_dataset(cfg):
    name = cfg.get("dataset", {}).get("name", "fashion_mnist")
    if name not in DATASETS:
        raise SystemExit(f"dataset.name '{name}': the PyTorch replica supports {sorted(DATASETS)} only")
    default_dir, mean, std = DATASETS[name]
    directory = cfg.get("dataset", {}).get("path") or default_dir
    return load_idx_split(directory, mean, std, "train"), load_idx_split(directory, mean, std, "test")


# ---- sampler (framework/train/sampler.cc) ----

def _splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def epoch_permutation(size, seed, epoch):
    perm = list(range(size))
    state = (seed ^ ((0xD1B54A32D192ED03 * (epoch + 1)) & M64)) & M64
    for i in range(size - 1, 0, -1):
        n = i + 1
        limit = M64 - M64 % n
        while True:
            state, x = _splitmix64(state)
            if x < limit:
                break
        j = x % n
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def proportional_split(total, weights):
    wsum = sum(weights)
    out, rem, assigned = [], [], 0
    for i, w in enumerate(weights):
        num = total * w
        out.append(num // wsum)
        assigned += out[-1]
        rem.append((num % wsum, i))
    rem.sort(key=lambda r: -r[0])  # stable: ties to the lower rank
    k = 0
    while assigned < total:
        out[rem[k][1]] += 1
        k += 1
        assigned += 1
    return out


class VariableBatchSampler:
    def __init__(self, size, seed):
        self.size, self.seed = size, seed
        self.epoch, self.cursor = 0, 0
        self._perm_epoch, self._perm = -1, None

    def next(self, plan):
        """Returns (epoch, start, counts, offsets) of the next step."""
        if self.cursor >= self.size:
            self.epoch += 1
            self.cursor = 0
        left = self.size - self.cursor
        want = sum(plan)
        counts = list(plan) if want <= left else proportional_split(left, plan)
        offsets, off = [], 0
        for c in counts:
            offsets.append(off)
            off += c
        start = self.cursor
        self.cursor += off
        return self.epoch, start, counts, offsets

    def indices(self, step, rank):
        epoch, start, counts, offsets = step
        if self._perm_epoch != epoch:
            self._perm = epoch_permutation(self.size, self.seed, epoch)
            self._perm_epoch = epoch
        b = start + offsets[rank]
        return self._perm[b:b + counts[rank]]

    def fractional_epoch(self):
        return self.epoch + self.cursor / self.size


# ---- learning rate (framework/train/lr_schedule.cc) ----

def lr_at(step, global_batch, lr0, base_batch, scaling, warmup_steps):
    ratio = global_batch / base_batch
    f = ratio if scaling == "linear" else (ratio ** 0.5 if scaling == "sqrt" else 1.0)
    warm = (step + 1) / warmup_steps if warmup_steps > 0 and step < warmup_steps else 1.0
    return lr0 * f * warm


# ---- config ----

TRAIN_DEFAULTS = {"epochs": 1, "max_steps": 0, "lr": 0.01, "optimizer": "sgd", "momentum": 0.9,
                  "nesterov": False, "weight_decay": 0.0, "lr_scaling": "linear", "warmup_steps": 0,
                  "target_accuracy": None, "seed": 1, "eval_every": 0}


def load_config(path, overrides=()):
    with open(path) as f:
        cfg = yaml.safe_load(f) or {}
    cfg = copy.deepcopy(cfg)
    for o in overrides:
        key, sep, value = o.partition("=")
        if not sep:
            raise SystemExit(f"--set {o}: expected key.sub=value")
        node = cfg
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = yaml.safe_load(value)
    train = dict(TRAIN_DEFAULTS)
    train.update(cfg.get("train") or {})
    cfg["train"] = train
    return cfg


def per_rank(values, rank, default):
    """A per-rank config list: one value for every rank, or one per rank."""
    if values is None or values == []:
        return default
    if not isinstance(values, list):
        return values
    return values[0] if len(values) == 1 else values[rank]


# ---- DYNAMIX checkpoints ----

def read_checkpoint_params(path):
    """{name: tensor} of the model parameters in a DYNAMIX checkpoint.pt (names without 'model.')."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"DYNXCKPT":
        raise ValueError(f"{path}: not a DYNAMIX checkpoint (magic {data[:8]!r})")
    archive = torch.jit.load(io.BytesIO(data[24:]), map_location="cpu")
    return {k[len("model."):]: v.detach().clone() for k, v in archive.state_dict().items()
            if k.startswith("model.")}


# ---- gloo process groups ----

def _gloo_rank(rank, world, store, fn, args):
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    fn(rank, world, *args)
    exit_now()


def spawn_gloo(fn, world, args=()):
    """Runs fn(rank, world, *args) in `world` spawned processes joined in one gloo group.
    The group meets through a file in a fresh directory, not a TCP port: a port picked free and
    then released can be taken by another process before rank 0 binds it."""
    tmp = tempfile.mkdtemp(prefix="dynamix_gloo_")
    try:
        mp.spawn(_gloo_rank, args=(world, os.path.join(tmp, "store"), fn, args), nprocs=world, join=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def exit_now():
    """Ends this rank without interpreter finalization or freeing its DDP module. PyTorch 1.13's
    ProcessGroupGloo destructor joins its worker threads while holding the GIL, and a worker that
    frees a Python-visible tensor waits for the GIL: a deadlock, seen here at exit on 2026-11-24,
    and a CI run hung 300 s in ddp_baseline.py (2026-11-29) when train() returned and freed its
    DDP module first. So a rank that used DDP calls this from the frame that holds the module."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
