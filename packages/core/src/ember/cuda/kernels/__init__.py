"""CUDA sources of ember's hand-written kernels, one module per family, each a complete
translation unit that cupy compiles with NVRTC at first launch (``cupy.RawModule``).

A family module defines ``SOURCE`` (the translation unit) and ``NAMES`` (its
``extern "C"`` kernels). ``python -m ember.cuda.kernels --list-sources DIR`` writes every
source out as ``DIR/<family>.cu``, so they can be compiled and read outside Python.
"""

from __future__ import annotations

import importlib
from typing import NamedTuple

__all__ = ["FAMILIES", "KernelSource", "sources"]

FAMILIES = ("attention", "conv", "dropout", "embedding", "loss", "norm", "optim", "pool", "rnn", "softmax")


class KernelSource(NamedTuple):
    family: str
    source: str  # one complete CUDA C++ translation unit
    names: tuple  # its extern "C" __global__ functions


def sources() -> dict[str, KernelSource]:
    """Every family's source, by family name."""
    found = {}
    for family in FAMILIES:
        module = importlib.import_module(f"{__name__}.{family}")
        found[family] = KernelSource(family, module.SOURCE, tuple(module.NAMES))
    return found


_MODULES: dict = {}  # (device id, family) -> cupy.RawModule, compiled at its first use


def function(family: str, name: str):
    """The compiled kernel ``name`` of ``family`` on the current device (a
    ``cupy.RawKernel``); the family is compiled on first use, and cupy caches the binary
    on disk. Raises KeyError for a name the family does not define, and torch's errors
    where there is no GPU (AssertionError without cupy, RuntimeError without a device)."""
    kernel = sources()[family]
    if name not in kernel.names:
        raise KeyError(f"the {family} kernels are {', '.join(kernel.names)}; got {name!r}")
    from .. import _require
    cupy = _require()
    key = (cupy.cuda.runtime.getDevice(), family)
    module = _MODULES.get(key)
    if module is None:
        module = _MODULES[key] = cupy.RawModule(code=kernel.source, options=("-std=c++17",))
    return module.get_function(name)
