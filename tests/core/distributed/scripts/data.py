"""Inputs every rank makes for the collective tests, the same ones the tests rebuild for
their numpy references: small integers (exact in every dtype and under every op)."""

import ml_dtypes
import numpy as np

DTYPES = ["float32", "float64", "int32", "int64", "float16", "bfloat16", "bool", "complex64"]
SHAPES = [(), (5,), (2, 3)]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"]


def np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def ops_for(dtype):
    """The ReduceOps defined for a dtype (bitwise ops: integers and bool; no MIN/MAX on complex)."""
    if dtype == "bool":
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    if dtype.startswith("int"):
        return OPS[:-1]
    if dtype.startswith("complex"):
        return ["SUM", "AVG", "PRODUCT", "PREMUL_SUM"]
    return ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "PREMUL_SUM"]


NCCL_DTYPES = DTYPES  # bfloat16 as cupy 14 stores it (ml_dtypes), NCCL_BFLOAT16 on the wire


def nccl_ops(dtype):
    """The ReduceOps NCCL runs for a dtype: no bitwise ones; complex as pairs of reals, so no PRODUCT."""
    ops = [op for op in ops_for(dtype) if op not in ("BAND", "BOR", "BXOR")]
    return [op for op in ops if op != "PRODUCT"] if dtype.startswith("complex") else ops

def make(rank, dtype, shape, salt=0):
    rng = np.random.default_rng([rank, DTYPES.index(dtype), len(shape), salt])
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    values = rng.integers(1, 4, shape)
    if dtype.startswith("complex"):
        values = values + 1j * rng.integers(-2, 3, shape)
    return np.asarray(values).astype(np_dtype(dtype))


def plain(arr):
    """An array np.savez stores (bfloat16 and float16 widened: exact for these inputs)."""
    return arr.astype(np.float32) if arr.dtype in (np.float16, ml_dtypes.bfloat16) else arr
