"""The ``math`` module's functions on symbolic numbers while a program is recorded.

A ``float`` subclass given to a C function of ``math`` is read as its plain value, below
any method a SymFloat could override. While a recording runs, the functions torch traces
on symbolic numbers (``torch.fx.experimental.sym_node``'s ``math_op_names``: ``sqrt``,
``sin`` ...) give a SymFloat whose expression calls the function (a node of the graph),
and the other one-number functions (``exp``, ``log`` ...), which torch evaluates on the
concrete value, guard their arguments' values. ``math.floor``/``ceil``/``trunc`` need
nothing here: they call the number's own method.

The names are swapped in the ``math`` module while the program's own code runs (under the
recorder's lock; the originals come back while an op runs, so that numba, which resolves
``math.sqrt`` when it compiles a kernel, finds the functions it knows): calls written
``math.sqrt(x)`` see them; a name imported before (``from math import sqrt``) does not,
and the compiled function's second recording at another value finds what it baked in.
"""

from __future__ import annotations

import contextlib
import math

from ..fx._symbolic_floats import SymFloat, is_live, specialize

__all__ = ["recording", "install", "restore", "TRACED", "GUARDED"]

TRACED = ("sqrt", "cos", "cosh", "sin", "sinh", "tan", "tanh", "asin", "acos", "atan", "log2")
GUARDED = ("exp", "expm1", "exp2", "log", "log10", "log1p", "erf", "erfc", "gamma", "lgamma", "fabs", "degrees",
           "radians", "atan2", "pow", "hypot", "copysign", "fmod", "remainder", "isfinite", "isinf", "isnan",
           "isclose", "ldexp", "frexp", "modf", "cbrt", "asinh", "acosh", "atanh")


def _traced(fn):
    def wrapper(*args, **kwargs):
        if len(args) == 1 and not kwargs and is_live(args[0]) and not getattr(args[0], "static", False):
            x = args[0]
            raw = float.__float__(x) if isinstance(x, SymFloat) else int.__int__(x)
            return SymFloat(fn(raw), (fn, x.expr), x.owner)
        return fn(*(specialize(a) for a in args), **kwargs)
    return _named(wrapper, fn)


def _guarded(fn):
    def wrapper(*args, **kwargs):
        return fn(*(specialize(a) for a in args), **{k: specialize(v) for k, v in kwargs.items()})
    return _named(wrapper, fn)


def _named(wrapper, fn):
    wrapper.__name__, wrapper.__qualname__, wrapper.__doc__ = fn.__name__, fn.__name__, fn.__doc__
    wrapper.__module__ = "math"
    return wrapper


_ORIGINAL = {name: getattr(math, name) for name in TRACED + GUARDED if hasattr(math, name)}
_WRAPPERS = {name: (_traced if name in TRACED else _guarded)(fn) for name, fn in _ORIGINAL.items()}


def install() -> None:
    """``math``'s functions answer symbolic numbers from now on."""
    vars(math).update(_WRAPPERS)


def restore() -> None:
    """``math``'s own functions again."""
    vars(math).update(_ORIGINAL)


@contextlib.contextmanager
def recording():
    """``math``'s functions answer symbolic numbers while the block runs."""
    install()
    try:
        yield
    finally:
        restore()
