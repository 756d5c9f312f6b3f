"""The array backends: one small object per device type.

A backend carries the array module (``xp``: numpy or cupy) and what the array API lacks:
special functions, scatter-add, linalg, fft, the random generator, dtype spelling and the
memory layout queries (strides, addresses, reshaping as a view).  Op code asks a tensor for
its backend once and writes against ``backend.xp``; it never names numpy where it means
"the array module".  cupy is imported only when a cuda tensor is made.

CPU tensors are numpy arrays.  For tests, the CPU backend may be swapped for one built on
``array-api-strict`` (a test dependency), which proves that ops reach their arrays only
through the array API standard and the backend object: set ``EMBER_CPU_BACKEND=array-api-strict``
before importing ember, or wrap code in ``with ember.backends.cpu_backend("array-api-strict"):``.
The choice is read when a tensor is made; ops on existing tensors follow their arrays' type,
so the numpy path costs nothing more.
"""

from __future__ import annotations

import contextlib
import os

from . import cuda, cudnn, mkldnn, mps, openmp  # noqa: F401  (torch.backends' flags and queries)
from .numpy_backend import NUMPY

__all__ = ["backend_for_device", "backend_of_array", "cpu_backend", "set_cpu_backend", "NUMPY"]

_cuda_backends: dict = {}
# array types of the non-numpy CPU backends in use -> their backend
_array_types: dict = {}
_cpu = NUMPY


def _make_cpu_backend(name: str):
    if name in ("numpy", "", None):
        return NUMPY
    if name == "array-api-strict":
        from .array_api_strict_backend import STRICT
        _array_types[STRICT.array_type] = STRICT
        return STRICT
    raise ValueError(f"unknown CPU backend {name!r} (expected 'numpy' or 'array-api-strict')")


def set_cpu_backend(name: str):
    """Make ``name`` ('numpy' or 'array-api-strict') store the CPU tensors made from now on;
    returns the previous backend's name."""
    global _cpu
    prev = _cpu.kind
    _cpu = _make_cpu_backend(name)
    return prev


@contextlib.contextmanager
def cpu_backend(name: str):
    """Within the block, new CPU tensors are stored by backend ``name`` (tests only)."""
    prev = set_cpu_backend(name)
    try:
        yield _cpu
    finally:
        set_cpu_backend(prev)


def cuda_index(dev) -> int:
    """The CUDA device ``dev`` names: its index, or the current device for a bare "cuda" (0
    where no GPU answers, so that making its backend raises torch's error)."""
    if dev.index is not None:
        return dev.index
    from .. import cuda as ember_cuda  # this package's own ``cuda`` is torch.backends.cuda's flags
    return ember_cuda.current_device() if ember_cuda.is_available() else 0


def backend_for_device(dev):
    """The backend that stores tensors on ``dev`` (an ember.device)."""
    if dev.type == "cpu":
        return _cpu
    if dev.type == "meta":
        return _meta()
    index = cuda_index(dev)
    be = _cuda_backends.get(index)
    if be is None:
        from .cupy_backend import CupyBackend
        be = _cuda_backends[index] = CupyBackend(index)
    return be


def _meta():
    from .meta_backend import META, MetaArray
    _array_types[MetaArray] = META
    return META


def backend_of_array(arr):
    """The backend whose array module made ``arr``."""
    if type(arr).__module__ == "numpy":
        return NUMPY
    be = _array_types.get(type(arr))
    if be is not None:
        return be
    from .cupy_backend import CupyBackend
    return backend_for_device(CupyBackend.device_of(arr))


if os.environ.get("EMBER_CPU_BACKEND"):
    set_cpu_backend(os.environ["EMBER_CPU_BACKEND"])
