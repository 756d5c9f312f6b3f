"""The CPU backend: numpy arrays, scipy.special for special functions."""

from __future__ import annotations

import numpy

from .._device import CPU


class NumpyBackend:
    """Arrays on the CPU through numpy."""

    name = "cpu"
    xp = numpy
    device = CPU

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

    def new_bit_generator(self, seed: int):
        return numpy.random.Generator(numpy.random.PCG64(seed))

    def storage_dtype(self, d):
        """numpy stores every ember dtype natively (bfloat16 through ml_dtypes)."""
        return d.np


NUMPY = NumpyBackend()
