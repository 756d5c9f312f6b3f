"""A stand-in for cupy over numpy, for running ``ember.cuda.kernels``' launchers on the CPU:
arrays are numpy arrays under a cupy-named type (the kernels' guards take them for cupy
arrays), and the module has the functions the launchers call."""

import sys
import types

import ml_dtypes  # noqa: F401  (numpy's "bfloat16" dtype)
import numpy as np


class FakeArray(np.ndarray):
    """A numpy array that the kernels' guards take for a cupy array."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)

    def get(self):
        return np.asarray(self)


FakeArray.__module__ = "cupy._stand_in"


def fake(a):
    """``a`` as a stand-in cupy array (a view, no copy)."""
    return np.asarray(a).view(FakeArray)


def wrap(fn):
    """``fn`` with its result as a stand-in cupy array."""
    return lambda *args, **kwargs: fake(fn(*args, **kwargs))


CUPY = types.ModuleType("cupy")
for _name in ("ascontiguousarray", "empty", "empty_like", "zeros", "full", "asarray", "bincount", "broadcast_to",
              "moveaxis"):
    setattr(CUPY, _name, wrap(getattr(np, _name)))
# cupy's products keep bfloat16 (cuBLAS's bfloat16 GEMM); ml_dtypes' numpy product gives float32
CUPY.matmul = lambda a, b: fake(np.matmul(a, b).astype(np.result_type(a, b), copy=False))


def install(monkeypatch):
    """Make ``import cupy`` give the stand-in for the rest of the test."""
    monkeypatch.setitem(sys.modules, "cupy", CUPY)
