#!/usr/bin/python3
"""Writes a CIFAR-10 binary folder made from the real Fashion-MNIST images (no download).

Usage: scripts/tools/fashion_to_cifar.py OUT_DIR [--train N] [--test N] [--source DIR]

There is no CIFAR-10 on this machine and nothing may be downloaded; Debian's dataset-fashion-mnist
is. Each 28x28 grey image is padded to 32x32 (2 black pixels each side) and repeated over the
three colour planes, its label kept: OUT_DIR/data_batch_1.bin .. data_batch_5.bin (the first N
training images, split in five) and test_batch.bin (the first N test images), in CIFAR-10's
binary record format (1 label byte, then 1024 red, 1024 green, 1024 blue bytes), gzip-compressed
(.bin.gz, which `dataset.name: cifar10` reads). So `model: resnet18_cifar` trains on CIFAR-format
input of CIFAR's shape with real images and labels; the task is Fashion-MNIST's, not CIFAR's.
A folder already written with the same N is left alone (OUT_DIR/SOURCE.txt records them).
"""
import argparse
import gzip
import struct
import sys
from pathlib import Path

SIDE, PAD = 28, 2
OUT_SIDE = SIDE + 2 * PAD


def read_idx(path, magic, dims):
    with gzip.open(path, "rb") as f:
        data = f.read()
    head = struct.unpack(">" + "I" * (1 + dims), data[:4 * (1 + dims)])
    if head[0] != magic:
        raise SystemExit(f"fashion_to_cifar: {path}: not an IDX file of the expected kind (magic {head[0]:#x})")
    return head[1:], data[4 * (1 + dims):]


def records(source, split, count):
    prefix = "train" if split == "train" else "t10k"
    (n, rows, cols), pixels = read_idx(source / f"{prefix}-images-idx3-ubyte.gz", 0x803, 3)
    (n_labels,), labels = read_idx(source / f"{prefix}-labels-idx1-ubyte.gz", 0x801, 1)
    if (rows, cols) != (SIDE, SIDE) or n != n_labels:
        raise SystemExit(f"fashion_to_cifar: {source}: unexpected shapes ({n}x{rows}x{cols}, {n_labels} labels)")
    if count > n:
        raise SystemExit(f"fashion_to_cifar: --{split} {count}: the {split} split has only {n} images")
    blank = bytes(OUT_SIDE)
    for i in range(count):
        img = pixels[i * SIDE * SIDE:(i + 1) * SIDE * SIDE]
        plane = bytearray(blank * PAD)
        for r in range(SIDE):
            plane += bytes(PAD) + img[r * SIDE:(r + 1) * SIDE] + bytes(PAD)
        plane += blank * PAD
        yield bytes([labels[i]]) + bytes(plane) * 3


def write(path, recs):
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wb", compresslevel=6) as f:
        for rec in recs:
            f.write(rec)
    tmp.replace(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--train", type=int, default=10000, help="training images (default 10000; at most 60000)")
    ap.add_argument("--test", type=int, default=1000, help="test images (default 1000; at most 10000)")
    ap.add_argument("--source", type=Path, default=Path("/usr/share/datasets/fashion-mnist"),
                    help="Fashion-MNIST IDX folder (default: Debian's dataset-fashion-mnist)")
    a = ap.parse_args()
    if a.train < 5 or a.test < 1:
        ap.error("--train must be >= 5 (five batch files) and --test >= 1")
    if not (a.source / "train-images-idx3-ubyte.gz").is_file():
        raise SystemExit(f"fashion_to_cifar: {a.source}: no Fashion-MNIST there "
                         "(apt-get install dataset-fashion-mnist, or --source DIR)")
    stamp = f"fashion-mnist {a.source} train {a.train} test {a.test}, padded to 32x32, grey in R=G=B\n"
    marker = a.out / "SOURCE.txt"
    if marker.is_file() and marker.read_text() == stamp:
        print(f"fashion_to_cifar: {a.out} is up to date ({stamp.strip()})")
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    train = records(a.source, "train", a.train)
    per_file = [a.train // 5 + (1 if k < a.train % 5 else 0) for k in range(5)]
    for k, n in enumerate(per_file, 1):
        write(a.out / f"data_batch_{k}.bin.gz", (next(train) for _ in range(n)))
    write(a.out / "test_batch.bin.gz", records(a.source, "test", a.test))
    marker.write_text(stamp)
    print(f"fashion_to_cifar: wrote {a.out} ({a.train} train, {a.test} test images, CIFAR-10 binary, gzip)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
