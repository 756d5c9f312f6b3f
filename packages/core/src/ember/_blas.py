"""axpy and axpby from the OpenBLAS that numpy itself links, for optimizer updates, and
the BLAS thread count behind ``ember.set_num_threads``.

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

__all__ = ["axpy", "axpby", "get_num_threads", "set_num_threads"]

# below this many elements the ctypes call costs more than the pass it saves
_MIN_SIZE = 1 << 14


def _library():
    """numpy's scipy-openblas (64-bit integer interface) as a ctypes library, or None."""
    try:
        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        if blas.get("name") != "scipy-openblas" or "USE64BITINT" not in blas.get("openblas configuration", ""):
            return None
        libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__) + ".libs", "libscipy_openblas64_*.so"))
        return ctypes.CDLL(libs[0])
    except (KeyError, IndexError, OSError, AttributeError, TypeError):
        return None


_LIB = _library()


def _load():
    """{numpy dtype: (axpy, axpby)} from numpy's scipy-openblas, or {} when not found."""
    if _LIB is None:
        return {}
    try:
        lib = _LIB
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
    except (AttributeError, TypeError):
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


# ---- the BLAS thread count (torch.set_num_threads) ----------------------------------------

def _threads_functions():
    try:
        get_fn, set_fn = _LIB.scipy_openblas_get_num_threads64_, _LIB.scipy_openblas_set_num_threads64_
        get_fn.argtypes, get_fn.restype = [], ctypes.c_int
        set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
        return get_fn, set_fn
    except AttributeError:
        return None, None


_GET_THREADS, _SET_THREADS = _threads_functions()
_threads_without_blas = [os.cpu_count() or 1]


def get_num_threads() -> int:
    """The number of threads ember's CPU matrix products use (numpy's OpenBLAS)."""
    return _GET_THREADS() if _GET_THREADS is not None else _threads_without_blas[0]


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for CPU matrix products (torch.set_num_threads). On a loaded
    machine, 1 often runs small models faster: idle BLAS workers spin between products.

    Raises:
        RuntimeError: ``n`` not a positive int (torch's messages).
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    if _SET_THREADS is not None:
        _SET_THREADS(n)
    else:
        _threads_without_blas[0] = n
