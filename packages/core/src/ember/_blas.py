"""axpy and axpby from the OpenBLAS that numpy itself links, for optimizer updates.

An optimizer step is a few passes over every parameter.  numpy runs each pass on one
core, and the other cores are held by OpenBLAS's workers, which spin for tens of
milliseconds after every matrix product; an update handed to that same OpenBLAS runs on
those workers instead (twice as fast on two cores for a 400K-float parameter).  The
library is found through numpy's build record (the scipy-openblas wheels, with their
64-bit integer interface); with any other BLAS the functions fall back to numpy passes.
"""

from __future__ import annotations

import ctypes
import glob
import os

import numpy

__all__ = ["axpy", "axpby"]

# below this many elements the ctypes call costs more than the pass it saves
_MIN_SIZE = 1 << 14


def _load():
    """{numpy dtype: (axpy, axpby)} from numpy's scipy-openblas, or {} when not found."""
    try:
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        if blas.get("name") != "scipy-openblas" or "USE64BITINT" not in blas.get("openblas configuration", ""):
            return {}
        libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__) + ".libs", "libscipy_openblas64_*.so"))
        lib = ctypes.CDLL(libs[0])
        found = {}
        for dt, ct, p in ((numpy.dtype(numpy.float32), ctypes.c_float, "s"),
                          (numpy.dtype(numpy.float64), ctypes.c_double, "d")):
            axpy_fn = getattr(lib, f"scipy_cblas_{p}axpy64_")
            axpy_fn.argtypes = [ctypes.c_int64, ct, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
            axpy_fn.restype = None
            axpby_fn = getattr(lib, f"scipy_cblas_{p}axpby64_")
            axpby_fn.argtypes = [ctypes.c_int64, ct, ctypes.c_void_p, ctypes.c_int64, ct, ctypes.c_void_p,
                                 ctypes.c_int64]
            axpby_fn.restype = None
            found[dt] = (axpy_fn, axpby_fn)
        return found
    except (KeyError, IndexError, OSError, AttributeError, TypeError):
        return {}


_FUNCS = _load()


def _blas_pair(x, y):
    """The BLAS functions for ``x`` and ``y`` when both qualify, else None."""
    if type(x) is not numpy.ndarray or type(y) is not numpy.ndarray or y.size < _MIN_SIZE:
        return None
    funcs = _FUNCS.get(y.dtype)
    if funcs is None or x.dtype != y.dtype or x.shape != y.shape or not (
            x.flags.c_contiguous and y.flags.c_contiguous and y.flags.writeable):
        return None
    return funcs


def axpy(alpha: float, x, y) -> None:
    """``y += alpha * x`` in place (arrays of one shape and dtype; numpy or cupy)."""
    funcs = _blas_pair(x, y)
    if funcs is None:
        y += x if alpha == 1 else alpha * x
    else:
        funcs[0](y.size, alpha, x.ctypes.data, 1, y.ctypes.data, 1)


def axpby(alpha: float, x, beta: float, y) -> None:
    """``y = alpha * x + beta * y`` in place (arrays of one shape and dtype; numpy or cupy)."""
    funcs = _blas_pair(x, y)
    if funcs is None:
        if beta != 1:
            y *= beta
        y += x if alpha == 1 else alpha * x
    else:
        funcs[1](y.size, alpha, x.ctypes.data, 1, beta, y.ctypes.data, 1)
