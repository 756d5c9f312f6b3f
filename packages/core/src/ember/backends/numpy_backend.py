"""The CPU backend: numpy arrays, scipy.special for special functions."""

from __future__ import annotations

import numpy

from .._device import CPU


class NumpyBackend:
    """Arrays on the CPU through numpy."""

    name = "cpu"
    kind = "numpy"
    xp = numpy
    device = CPU
    # multiplying floats by a bool mask is allowed (and faster than where)
    mixed_kinds = True

    def asarray(self, obj, dtype=None):
        return numpy.asarray(obj, dtype=dtype)

    def to_host(self, arr):
        return arr

    def synchronize(self) -> None:
        pass

    def scatter_add(self, target, index, values) -> None:
        """target[index] += values, summing repeated indices."""
        numpy.add.at(target, index, values)

    @property
    def special(self):
        import scipy.special
        return scipy.special

    @property
    def linalg(self):
        return numpy.linalg

    @property
    def fft(self):
        return numpy.fft

    def new_bit_generator(self, seed: int, reserve=None):
        """numpy's PCG64 from ``seed``; ``reserve`` (a counter-based stream's) is unused."""
        return numpy.random.Generator(numpy.random.PCG64(seed))

    def storage_dtype(self, d):
        """numpy stores every ember dtype natively (bfloat16 through ml_dtypes)."""
        return d.np

    def dtype_of(self, arr):
        """The ember dtype of ``arr``."""
        from .._dtype import from_numpy_dtype
        return from_numpy_dtype(arr.dtype)

    def astype(self, arr, d):
        """``arr`` in ember dtype ``d`` (``arr`` itself when it already is)."""
        return arr if arr.dtype == d.np else arr.astype(d.np)

    def copy(self, arr):
        return arr.copy()

    def item(self, arr):
        return arr.reshape(()).item()

    # ---- memory layout -----------------------------------------------------------
    def reshape_view(self, arr, shape):
        """``arr`` reshaped as a view, or None when its strides do not allow one."""
        try:
            return arr.reshape(shape, copy=False)  # the method: numpy.reshape dispatches at twice its cost
        except ValueError:  # the strides allow no view
            return None

    def byte_strides(self, arr):
        return arr.strides

    def address(self, arr) -> int:
        return arr.__array_interface__["data"][0]

    def is_c_contiguous(self, arr) -> bool:
        return arr.flags.c_contiguous

    def ascontiguousarray(self, arr):
        return numpy.ascontiguousarray(arr)

    def nan_to_num(self, arr, nan, posinf, neginf):
        return numpy.nan_to_num(arr, nan=nan, posinf=posinf, neginf=neginf)


NUMPY = NumpyBackend()
