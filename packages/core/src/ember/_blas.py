"""The threads of ember's CPU products, and axpy/axpby from the OpenBLAS that numpy itself
links, for optimizer updates.

ember owns one pool of threads (``ember.set_num_threads``): numpy's OpenBLAS runs each
call on one thread, and ``matmul`` splits a large product, and ``axpy``/``axpby`` a large
update, over the pool (see "threads" below). The library is found through numpy's build
record (the scipy-openblas wheels, with their 64-bit integer interface); with any other
BLAS the updates fall back to numpy passes and products to numpy's own threading.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading

import numpy

__all__ = ["axpy", "axpby", "get_num_threads", "set_num_threads", "matmul"]

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
        _level1(lambda lo, hi, step: funcs[0](hi - lo, alpha, x.ctypes.data + lo * step, 1,
                                              y.ctypes.data + lo * step, 1), y)


def axpby(alpha: float, x, beta: float, y) -> None:
    """``y = alpha * x + beta * y`` in place (arrays of one shape and dtype; numpy or cupy)."""
    funcs = _blas_pair(x, y)
    if funcs is None:
        if beta != 1:
            y *= beta
        y += x if alpha == 1 else alpha * x
    else:
        _level1(lambda lo, hi, step: funcs[1](hi - lo, alpha, x.ctypes.data + lo * step, 1, beta,
                                              y.ctypes.data + lo * step, 1), y)


# an update split over the pool from this many elements on (a part is a few tens of us)
_SPLIT_MIN_SIZE = 1 << 18


def _level1(call, y) -> None:
    """``call(lo, hi, itemsize)`` over the elements of ``y``: in parts over the pool for a
    large ``y`` in pool mode (ctypes lets go of the GIL during each call), else at once."""
    parts = min(_threads[0], y.size // _SPLIT_MIN_SIZE) if POOL else 1
    if parts <= 1 or threading.current_thread().name.startswith(_WORKER_PREFIX):
        call(0, y.size, y.itemsize)
        return
    _run(lambda lo, hi: call(lo, hi, y.itemsize), y.size, parts)


# ---- threads: one pool for products and kernels (torch.set_num_threads) ------------------
#
# OpenBLAS's workers spin on their cores for about 2^28 cycles after every threaded product,
# so the numba kernels' pool threads that run next share those cores with them (ResNet-18
# at batch 8 took 1.7x as long for it). So ember keeps numpy's OpenBLAS on one thread per
# call and splits its large products over its own pool instead (``matmul``): the cores
# belong to one set of threads. ``EMBER_BLAS_POOL=0`` leaves OpenBLAS its own threads.

def _threads_functions():
    try:
        get_fn, set_fn = _LIB.scipy_openblas_get_num_threads64_, _LIB.scipy_openblas_set_num_threads64_
        get_fn.argtypes, get_fn.restype = [], ctypes.c_int
        set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
        return get_fn, set_fn
    except AttributeError:
        return None, None


_GET_THREADS, _SET_THREADS = _threads_functions()
POOL = _SET_THREADS is not None and os.environ.get("EMBER_BLAS_POOL", "1").strip().lower() not in (
    "0", "false", "off", "no")
# ember's thread count: OpenBLAS's own choice at load (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS
# or the cores), which OpenBLAS then gives up
_threads = [_GET_THREADS() if _GET_THREADS is not None else os.cpu_count() or 1]
if POOL:
    _SET_THREADS(1)


def get_num_threads() -> int:
    """The number of threads ember's CPU matrix products and kernels use."""
    if _GET_THREADS is not None and not POOL:
        return _GET_THREADS()
    return _threads[0]


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for CPU matrix products and kernels (torch.set_num_threads).

    Raises:
        RuntimeError: ``n`` not a positive int (torch's messages).
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    if _SET_THREADS is not None and not POOL:
        _SET_THREADS(n)
    else:
        _threads[0] = n


def blas_threads(n: int) -> None:
    """OpenBLAS's own thread count, for callers that split work themselves while OpenBLAS
    keeps its threads (``EMBER_BLAS_POOL=0``); nothing to do in pool mode."""
    if _SET_THREADS is not None and not POOL:
        _SET_THREADS(n)


class _Native(threading.local):
    depth = 0  # > 0 inside ``native_threads()`` on this thread: its products do not split


_NATIVE = _Native()
_NATIVE_LOCK = threading.Lock()
_native_users = [0]


class native_threads:
    """Within it, OpenBLAS threads this thread's products itself (with ember's thread count)
    instead of ``matmul`` splitting them: for loops of many small products (a recurrent
    layer's steps), where OpenBLAS's spinning hand-off between its workers beats a pool
    hand-off per product. Nothing changes outside pool mode."""

    def __enter__(self):
        if POOL:
            _NATIVE.depth += 1
            with _NATIVE_LOCK:
                _native_users[0] += 1
                if _native_users[0] == 1:
                    _SET_THREADS(_threads[0])
        return self

    def __exit__(self, *exc):
        if POOL:
            _NATIVE.depth -= 1
            with _NATIVE_LOCK:
                _native_users[0] -= 1
                if _native_users[0] == 0:
                    _SET_THREADS(1)
        return False


# a product below this many multiply-adds runs on the calling thread: handing a part to the
# pool costs tens of microseconds, about 2^21 multiply-adds on one core
SPLIT_MIN_MACS = 1 << 21
_SPLIT_DTYPES = tuple(numpy.dtype(t) for t in (numpy.float32, numpy.float64, numpy.complex64, numpy.complex128))
_ROW_ALIGN = 16


def matmul(a, b, out=None):
    """``numpy.matmul(a, b, out=out)``, split over ember's threads when the product is large
    (pool mode, numpy arrays of at least 2 dims): batches of a stacked product, else bands of
    the result's rows (or columns when it has fewer rows), each computed by one-thread
    OpenBLAS on one thread. Other arrays go to their backend's ``matmul`` (cupy's, meta's)."""
    if type(a) is not numpy.ndarray or type(b) is not numpy.ndarray:
        from .backends import backend_of_array
        xp = backend_of_array(b if type(a) is numpy.ndarray else a).xp
        return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)
    if not POOL or a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or a.dtype not in _SPLIT_DTYPES:
        return numpy.matmul(a, b, out=out)  # (numpy multiplies bfloat16 into float32: left to it)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = () if a.ndim == b.ndim == 2 else numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = 1
    for d in batch:
        count *= d
    parts = min(_threads[0], (count * m * n * k) // SPLIT_MIN_MACS)
    if parts <= 1 or _NATIVE.depth or threading.current_thread().name.startswith(_WORKER_PREFIX):
        return numpy.matmul(a, b, out=out)
    if out is None:
        out = numpy.empty(batch + (m, n), dtype=numpy.result_type(a, b))
    stacked = count >= parts and a.shape[:-2] == b.shape[:-2] == batch
    if stacked and out.flags.c_contiguous:
        _run(_batch_part, count, parts, a.reshape(count, m, k), b.reshape(count, k, n), out.reshape(count, m, n))
    elif stacked and batch[0] >= parts:  # a strided ``out`` (a band of a larger result): by its first dim
        _run(_batch_part, batch[0], parts, a, b, out)
    elif m >= n:
        _run(_row_part, m, parts, a, b, out)
    else:
        _run(_col_part, n, parts, a, b, out)
    return out


def _batch_part(lo, hi, a, b, out):
    numpy.matmul(a[lo:hi], b[lo:hi], out=out[lo:hi])


def _row_part(lo, hi, a, b, out):
    numpy.matmul(a[..., lo:hi, :], b, out=out[..., lo:hi, :])


def _col_part(lo, hi, a, b, out):
    numpy.matmul(a, b[..., lo:hi], out=out[..., lo:hi])


def _run(part, size, parts, *args):
    """``part(lo, hi, *args)`` over ``range(size)`` in ``parts`` bands (aligned to 16), the
    first on this thread."""
    from .cpu.kernels._runtime import _executor
    align = _ROW_ALIGN if size >= _ROW_ALIGN * parts else 1
    bounds = [min(size, (size * i // parts + align - 1) // align * align) for i in range(parts)] + [size]
    pool = _executor(parts - 1)
    futures = [pool.submit(part, bounds[i], bounds[i + 1], *args) for i in range(1, parts) if bounds[i] < bounds[i + 1]]
    part(bounds[0], bounds[1], *args)
    for f in futures:
        f.result()


_WORKER_PREFIX = "ember-kernel"  # the pool's thread names: a part never splits again
