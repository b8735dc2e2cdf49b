#!/usr/bin/python3
"""Writes the .npy fixtures of tests/datasets/npy_test.cc with NumPy itself (run from this folder).

Each file holds np.arange(24).reshape(4, 2, 3) cast to its dtype (bool: odd numbers), written
with the named format version.
"""
import numpy as np
from numpy.lib import format as npy_format

FIXTURES = [((1, 0), dt) for dt in ("<f2", "<f4", "<f8", "|u1", "|i1", "<i2", "<i4", "<i8", "|b1")]
FIXTURES += [((2, 0), "<f4"), ((3, 0), "<f4"), ((2, 0), "<i8"), ((3, 0), "|u1")]

for version, dtype in FIXTURES:
    values = np.arange(24).reshape(4, 2, 3)
    array = (values % 2 == 1) if dtype == "|b1" else values.astype(dtype)
    name = f"v{version[0]}_{np.dtype(dtype).str[1:]}.npy"
    with open(name, "wb") as f:
        npy_format.write_array(f, array, version=version)
    print(name, array.dtype, array.shape)
