#!/usr/bin/python3
"""Converts a Python data set to the .npy folder `dataset: {name: npy, path: DIR}` reads.

DIR receives train_inputs.npy, train_labels.npy, test_inputs.npy, test_labels.npy: inputs of
shape (N, ...) (the model's per-sample shape after the first axis), labels of shape (N,) holding
integer class ids. Needs NumPy (Debian: python3-numpy); PyTorch only for tensors.

From the command line, each split comes from a Python callable `module:function` (module on
PYTHONPATH or a .py file) returning either a map-style data set (len() and [i] -> (input, label),
as torchvision's data sets with transform=ToTensor()) or a tuple (inputs, labels) of arrays/tensors:

    python3 scripts/tools/to_npy.py DIR --train mydata.py:train_set --test mydata.py:test_set

From Python:

    sys.path.insert(0, "scripts/tools"); import to_npy
    to_npy.save(DIR, train=(x_train, y_train), test=torchvision_test_set)
"""
import argparse
import importlib
import importlib.util
import os
import sys

import numpy as np


def to_array(value):
    """A NumPy array from an array, a tensor (detached, on the CPU), a PIL image or a number."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def arrays_of(split):
    """(inputs, labels) from a tuple of two arrays or from a map-style data set of (input, label)."""
    if isinstance(split, tuple):
        if len(split) != 2:
            raise ValueError(f"expected a tuple (inputs, labels), got {len(split)} items")
        return to_array(split[0]), to_array(split[1])
    inputs, labels = [], []
    for i in range(len(split)):
        x, y = split[i]
        inputs.append(to_array(x))
        labels.append(int(to_array(y)))
    if not inputs:
        raise ValueError("the data set is empty")
    return np.stack(inputs), np.asarray(labels)


def save_split(out_dir, name, split, inputs_dtype=None):
    inputs, labels = arrays_of(split)
    if inputs.ndim < 2:
        inputs = inputs.reshape(-1, 1)  # one feature per sample
    if inputs_dtype is not None:
        inputs = inputs.astype(inputs_dtype)
    elif inputs.dtype == np.float64:
        inputs = inputs.astype(np.float32)  # what the models take; halves the file
    if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"{name}: labels must be integer class ids of shape (N,), got {labels.dtype} "
                         f"{labels.shape}")
    if len(inputs) != len(labels):
        raise ValueError(f"{name}: {len(inputs)} inputs but {len(labels)} labels")
    # Little-endian, C order: the layout the reader maps.
    inputs = np.ascontiguousarray(inputs, dtype=inputs.dtype.newbyteorder("<"))
    labels = np.ascontiguousarray(labels, dtype=np.dtype("<i8"))
    np.save(os.path.join(out_dir, f"{name}_inputs.npy"), inputs)
    np.save(os.path.join(out_dir, f"{name}_labels.npy"), labels)
    print(f"{name}: inputs {inputs.shape} {inputs.dtype}, labels {labels.shape}, "
          f"classes {int(labels.max()) + 1 if len(labels) else 0}")


def save(out_dir, train, test, inputs_dtype=None):
    """Writes both splits; each is a map-style data set or a tuple (inputs, labels)."""
    os.makedirs(out_dir, exist_ok=True)
    save_split(out_dir, "train", train, inputs_dtype)
    save_split(out_dir, "test", test, inputs_dtype)


def load_callable(spec):
    """`module:function` or `path/to/file.py:function`."""
    module_name, _, function = spec.rpartition(":")
    if not module_name or not function:
        raise SystemExit(f"{spec}: expected module:function or file.py:function")
    if module_name.endswith(".py"):
        loaded = importlib.util.spec_from_file_location(os.path.basename(module_name)[:-3], module_name)
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    return getattr(module, function)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--train", required=True, help="module:function returning the training split")
    p.add_argument("--test", required=True, help="module:function returning the test split")
    p.add_argument("--inputs-dtype", help="cast the inputs, e.g. float32, uint8, int64 (default: as given; "
                   "float64 becomes float32)")
    a = p.parse_args()
    sys.path.insert(0, os.getcwd())
    save(a.out_dir, load_callable(a.train)(), load_callable(a.test)(), a.inputs_dtype)


if __name__ == "__main__":
    main()
