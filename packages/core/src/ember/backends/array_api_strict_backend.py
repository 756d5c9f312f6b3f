"""A CPU backend on ``array-api-strict``, for tests only.

Its array module is the strict reference implementation of the Python array API standard,
which refuses everything the standard leaves out (numpy-only functions and methods, mixed
kind promotion, numpy dtypes...).  Running ops on it proves they reach arrays only through
``xp`` and the backend object.  What the standard lacks (special functions, scatter-add,
strides and addresses, reshaping as a view) is done here on the numpy array that an
array-api-strict array wraps: that is the backend's business, never an op's.

Selected by ``EMBER_CPU_BACKEND=array-api-strict`` or ``ember.backends.cpu_backend(...)``.
float16 and bfloat16 have no array API dtype: they raise TypeError here.
"""

from __future__ import annotations

import array_api_strict
import numpy

from .._device import CPU


def _np(arr):
    """The numpy array behind a strict array (the backend may look inside, ops may not)."""
    return arr._array


class _Special:
    """scipy.special functions on strict arrays."""

    def __init__(self, backend):
        self._be = backend

    def __getattr__(self, name):
        import scipy.special
        fn = getattr(scipy.special, name)

        def call(*args):
            out = fn(*(_np(a) if isinstance(a, self._be.array_type) else a for a in args))
            return self._be.from_numpy(out)
        return call


class ArrayApiStrictBackend:
    """Arrays on the CPU through array_api_strict."""

    name = "cpu"
    kind = "array-api-strict"
    xp = array_api_strict
    device = CPU
    # the standard has no mixed-kind arithmetic (float * bool)
    mixed_kinds = False
    array_type = type(array_api_strict.asarray(0))

    def __init__(self):
        self._dtypes = {}
        for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float32", "float64",
                     "complex64", "complex128"):
            self._dtypes[name] = getattr(array_api_strict, name)

    def from_numpy(self, arr):
        return array_api_strict.asarray(numpy.asarray(arr))

    def asarray(self, obj, dtype=None):
        """A strict array copying ``obj`` (numpy dtype ``dtype`` as creation passes it)."""
        a = numpy.array(obj, dtype=dtype, copy=True)
        if a.dtype.name not in self._dtypes:
            raise TypeError(f"the array-api-strict backend has no dtype {a.dtype.name}")
        return array_api_strict.asarray(a)

    def to_host(self, arr):
        return numpy.from_dlpack(arr)

    def synchronize(self) -> None:
        pass

    def scatter_add(self, target, index, values) -> None:
        idx = tuple(_np(i) if isinstance(i, self.array_type) else i for i in index) \
            if isinstance(index, tuple) else (_np(index) if isinstance(index, self.array_type) else index)
        numpy.add.at(_np(target), idx, _np(values) if isinstance(values, self.array_type) else values)

    @property
    def special(self):
        return _Special(self)

    @property
    def linalg(self):
        return array_api_strict.linalg

    @property
    def fft(self):
        return array_api_strict.fft

    def new_bit_generator(self, seed: int, reserve=None):
        return numpy.random.Generator(numpy.random.PCG64(seed))

    def storage_dtype(self, d):
        dt = self._dtypes.get(d.name)
        if dt is None:
            raise TypeError(f"{d.name} tensors are not supported by the array-api-strict backend")
        return dt

    def dtype_of(self, arr):
        from .. import _dtype as D
        for name, dt in self._dtypes.items():
            if arr.dtype == dt:
                return D._dtype_by_name(name)
        raise TypeError(f"unsupported dtype {arr.dtype}")

    def astype(self, arr, d):
        dt = self.storage_dtype(d)
        return arr if arr.dtype == dt else array_api_strict.astype(arr, dt)

    def copy(self, arr):
        return array_api_strict.asarray(arr, copy=True)

    def item(self, arr):
        return _np(arr).reshape(()).item()

    # ---- memory layout -----------------------------------------------------------
    def reshape_view(self, arr, shape):
        if arr.size == 0:
            return array_api_strict.reshape(arr, shape)  # no memory to share
        try:
            return array_api_strict.reshape(arr, shape, copy=False)
        except (AttributeError, ValueError):
            return None

    def byte_strides(self, arr):
        return _np(arr).strides

    def address(self, arr) -> int:
        return _np(arr).__array_interface__["data"][0]

    def is_c_contiguous(self, arr) -> bool:
        return _np(arr).flags.c_contiguous

    def ascontiguousarray(self, arr):
        return array_api_strict.asarray(numpy.ascontiguousarray(_np(arr)))

    def nan_to_num(self, arr, nan, posinf, neginf):
        return array_api_strict.asarray(numpy.nan_to_num(_np(arr), nan=nan, posinf=posinf, neginf=neginf))


STRICT = ArrayApiStrictBackend()
