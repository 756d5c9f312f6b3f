"""The one place that owns numba: the switch, the cache folder, compilation and threads.

* Switch: ``EMBER_NUMBA=0`` turns every kernel off (the numpy path runs, as where numba
  cannot be imported; that case warns once).  numba is imported at the first kernel call,
  never by ``import ember``.
* Cache: compiled kernels are kept in ``$NUMBA_CACHE_DIR`` when the user set it, else in
  ``$EMBER_HOME/numba/<stamp>``, where the stamp is a hash of the kernel sources (numba's
  own cache only notices a change to the file of the function it compiled, not to the
  helpers it inlines from other files); inside it a kernel is filed by its module's folder
  name, not by where ember is installed (``_cache``), so every install of the same sources
  shares the compiled kernels.
* Vectors: on CPUs with AVX-512 kernels are compiled for 512-bit registers
  (``_prefer_wide_vectors``).
* Threads: no numba threading layer is used.  Kernels are compiled ``nogil`` and work on a
  range of rows; ``parallel_for`` splits the rows over the calling thread and a pool of
  ``ember.get_num_threads() - 1`` workers.  So a kernel may be called from several threads
  at once (the pool is shared, callers never wait on each other), a forked child (a
  DataLoader worker) starts a fresh pool, and the thread count is the one that also
  holds OpenBLAS's threads.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy

__all__ = ["enabled", "jit", "parallel_for", "numba"]

_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))
_HERE = os.path.dirname(os.path.abspath(__file__))

# below this many elements of work one thread does the whole call: handing rows to the
# pool costs tens of microseconds
PARALLEL_MIN_WORK = 1 << 16


def _switch_on() -> bool:
    return os.environ.get("EMBER_NUMBA", "1").strip().lower() not in ("0", "false", "off", "no")


class _State:
    on = _switch_on()   # False once numba failed to import, or when EMBER_NUMBA=0
    numba = None        # the numba module, once imported


STATE = _State()


def enabled() -> bool:
    """Whether the numba kernels run (``EMBER_NUMBA`` is not 0 and numba imports)."""
    if STATE.on and STATE.numba is None:
        _import_numba()
    return STATE.on


def _import_numba():
    try:
        import numba
    except Exception as e:  # ImportError, or a numba built for another numpy
        STATE.on = False
        warnings.warn(f"ember's CPU kernels are off: numba could not be imported ({e}); "
                      "the numpy implementations run instead", RuntimeWarning, stacklevel=3)
        return None
    _prefer_wide_vectors(numba)
    STATE.numba = numba
    return numba


def _prefer_wide_vectors(numba):
    """Let LLVM vectorize with 512-bit registers where the CPU has AVX-512.

    LLVM's tuning for most AVX-512 CPUs prefers 256-bit vectors (early parts lowered their
    clock for 512-bit work); torch's CPU kernels use 512-bit ones there, and ember's
    compute-bound kernels run up to a third faster with them (benchmarks/NOTES.md).  Set
    before the first compilation, as numba reads it when it builds its code generator; the
    cache keys each kernel by these features.  A user's ``NUMBA_CPU_FEATURES`` or
    ``NUMBA_CPU_NAME`` wins."""
    config = numba.core.config
    if config.CPU_FEATURES is not None or config.CPU_NAME is not None:
        return
    from llvmlite import binding
    features = binding.get_host_cpu_features()
    if features.get("avx512f"):
        config.CPU_FEATURES = features.flatten() + ",-prefer-256-bit"


_cache_dir = []


def cache_dir() -> str:
    """Where compiled kernels are kept (see the module docstring)."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return user
    if _cache_dir:
        return _cache_dir[0]
    from ...hub import _get_ember_home
    stamp = hashlib.sha256()
    for name in sorted(os.listdir(_HERE)):
        if name.endswith(".py"):
            with open(os.path.join(_HERE, name), "rb") as f:
                stamp.update(name.encode() + b"\0" + f.read())
    _cache_dir.append(os.path.join(_get_ember_home(), "numba", stamp.hexdigest()[:16]))
    return _cache_dir[0]


_CONFIG_LOCK = threading.Lock()


def jit(fn=None, **options):
    """``numba.njit(nogil=True, cache=True, error_model="numpy", **options)`` with the cache
    folder above (numpy's error model: a division by zero gives inf, as in numpy, and
    leaves loops free of checks so that they vectorize).

    Kernel modules import numba at their top and are imported only once ``enabled()``
    said yes, so this runs with numba present."""
    if fn is None:
        return lambda f: jit(f, **options)
    numba = STATE.numba or _import_numba()
    config = numba.core.config
    with _CONFIG_LOCK:  # two family modules may be imported by two threads at once
        saved = config.CACHE_DIR, getattr(config, "CACHE_LOCATOR_CLASSES", None)
        # both read once, when the dispatcher picks its cache locator; a user's own folder
        # keeps numba's layout, and a numba without CACHE_LOCATOR_CLASSES ignores it
        config.CACHE_DIR = cache_dir()
        if not os.environ.get("NUMBA_CACHE_DIR"):
            config.CACHE_LOCATOR_CLASSES = f"{__package__}._cache.InstallIndependentLocator"
        try:
            return numba.njit(nogil=True, cache=True, error_model="numpy", **options)(fn)
        finally:
            config.CACHE_DIR, config.CACHE_LOCATOR_CLASSES = saved


# ---- threads ----------------------------------------------------------------------------

class _Pool:
    executor = None
    size = 0
    lock = threading.Lock()


def _reset_after_fork():
    _Pool.executor, _Pool.size, _Pool.lock = None, 0, threading.Lock()


os.register_at_fork(after_in_child=_reset_after_fork)


def _executor(workers: int):
    """The shared pool, with at least ``workers`` threads (it only grows: callers asking
    for different part counts must not rebuild it)."""
    with _Pool.lock:
        if _Pool.size < workers:
            if _Pool.executor is not None:
                _Pool.executor.shutdown(wait=False)
            _Pool.executor = ThreadPoolExecutor(workers, thread_name_prefix="ember-kernel")
            _Pool.size = workers
        return _Pool.executor


def threads() -> int:
    from ..._blas import get_num_threads
    return max(1, get_num_threads())


def parallel_for(kernel, n: int, *args, work_per_item: int = 1) -> None:
    """Run ``kernel(start, stop, *args)`` over ``range(n)`` split into contiguous parts, one
    per thread; the calling thread runs the first part.  ``work_per_item`` (elements per
    item) decides whether the call is large enough to split."""
    most = min(n, (n * work_per_item) // PARALLEL_MIN_WORK)
    parts = min(threads(), most) if most > 1 else 1  # threads() is a call into OpenBLAS: skip it for small work
    if parts <= 1:
        kernel(0, n, *args)
        return
    bounds = [n * i // parts for i in range(parts + 1)]
    pool = _executor(parts - 1)
    futures = [pool.submit(kernel, bounds[i], bounds[i + 1], *args) for i in range(1, parts)]
    kernel(bounds[0], bounds[1], *args)
    for f in futures:
        f.result()


# ---- which arrays the kernels take ---------------------------------------------------------

def accepts(*arrays) -> bool:
    """True when the kernels are on and every array is a numpy float32/float64 array of one
    dtype (the kernels' domain; anything else takes the numpy or cupy path)."""
    if not STATE.on:
        return False
    dt = None
    for a in arrays:
        if type(a) is not numpy.ndarray or a.dtype not in _FLOATS or (dt is not None and a.dtype != dt):
            return False
        dt = a.dtype
    return enabled()


def dense_order(a):
    """The axis order that makes ``a`` C-contiguous (``a.transpose(order)`` is), or None
    when ``a`` is not a dense, non-overlapping block (a slice with gaps, a broadcast).
    Channels-last and Fortran-ordered arrays are dense in some order."""
    if a.flags.c_contiguous:
        return tuple(range(a.ndim))
    order = tuple(sorted(range(a.ndim), key=lambda d: (-a.strides[d], d)))
    t = a.transpose(order)
    return order if t.flags.c_contiguous else None


def flat(a):
    """``a``'s elements as a 1-d contiguous array (a view when ``a`` is dense in some axis
    order, else a copy) and a function that gives a 1-d result of the same length
    ``a``'s shape and memory layout."""
    order = dense_order(a)
    if order is None:
        a = numpy.ascontiguousarray(a)
        order = tuple(range(a.ndim))
    t = a.transpose(order)
    inverse = tuple(numpy.argsort(order))
    shape = t.shape

    def restore(r):
        return r.reshape(shape).transpose(inverse)
    return t.reshape(-1), restore


class _Numba:
    """``numba`` for kernel modules, imported on first attribute access."""

    def __getattr__(self, name):
        return getattr(STATE.numba or _import_numba(), name)


numba = _Numba()
