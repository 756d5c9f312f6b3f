"""Compiled CPU kernels (numba): alternative forwards and backwards of existing ops.

A kernel replaces one pass chain of an op for numpy float32/float64 arrays; the op, its
gradient rule and its tests stay one, and the numpy code beside it stays the reference
(``EMBER_NUMBA=0`` runs it).  An op asks::

    from ..cpu import kernels
    if kernels.accepts(x):
        out = kernels.activation.gelu(x, approximate)

Families are imported on first use (they import numba); ``_runtime`` owns numba's
switch, cache folder and threads, ``_math`` the vectorizable elementary functions.
"""

from __future__ import annotations

import contextlib
import importlib

from ._runtime import STATE, accepts, dense_order, enabled, flat, parallel_for

__all__ = ["accepts", "enabled", "disabled", "parallel_for", "flat", "dense_order"]

_FAMILIES = ("activation", "softmax", "norm", "conv", "winograd", "pool", "rnn", "optim", "dropout", "embedding")


@contextlib.contextmanager
def disabled():
    """Run the numpy implementations inside the block (process-wide; for tests and
    benchmarks that compare the two paths)."""
    saved = STATE.on
    STATE.on = False
    try:
        yield
    finally:
        STATE.on = saved


def __getattr__(name):
    if name in _FAMILIES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
