"""The array backends: one small object per device type.

A backend carries the array module (``xp``: numpy or cupy) and what the array API lacks:
special functions, scatter-add, linalg, fft and the random generator.  Op code asks a
tensor for its backend once and writes against ``backend.xp``; it never names numpy
where it means "the array module".  cupy is imported only when a cuda tensor is made.
"""

from __future__ import annotations

from .numpy_backend import NUMPY

__all__ = ["backend_for_device", "backend_of_array", "NUMPY"]

_cuda_backends: dict = {}


def backend_for_device(dev):
    """The backend that stores tensors on ``dev`` (an ember.device)."""
    if dev.type == "cpu":
        return NUMPY
    index = dev.index or 0
    be = _cuda_backends.get(index)
    if be is None:
        from .cupy_backend import CupyBackend
        be = _cuda_backends[index] = CupyBackend(index)
    return be


def backend_of_array(arr):
    """The backend whose array module made ``arr``."""
    if type(arr).__module__ == "numpy":
        return NUMPY
    from .cupy_backend import CupyBackend
    return backend_for_device(CupyBackend.device_of(arr))
