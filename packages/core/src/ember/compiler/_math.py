"""The ``math`` module's functions on symbolic numbers while a program is recorded.

A ``float`` subclass given to a C function of ``math`` is read as its plain value, below
any method a SymFloat could override. While a recording runs, the functions torch traces
on symbolic numbers (``torch.fx.experimental.sym_node``'s ``math_op_names``: ``sqrt``,
``sin`` ...) give a SymFloat whose expression calls the function (a node of the graph),
and the other one-number functions (``exp``, ``log`` ...), which torch evaluates on the
concrete value, guard their arguments' values. ``math.floor``/``ceil``/``trunc`` need
nothing here: they call the number's own method.

The names are swapped in the ``math`` module while a recording with symbolic numbers runs
(one recording at a time): calls written ``math.sqrt(x)`` see them; a name imported before
(``from math import sqrt``) does not, and the compiled function's second recording at
another value finds what it baked in. Ops see the wrappers too and get the plain result (a
symbolic number is plain inside an op). The originals come back while numba compiles, on
any thread (its compiler lock's events): numba resolves ``math.fabs`` when it compiles a
kernel and knows only the functions of its own.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading

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


class _State:
    lock = threading.Lock()
    program = False  # a recording runs
    compiling = 0  # numba compilations in progress, on any thread
    swapped = False
    listening = False


def _apply() -> None:
    """Swap the names in or out as the state asks (under ``_State.lock``)."""
    want = _State.program and not _State.compiling
    if want != _State.swapped:
        vars(math).update(_WRAPPERS if want else _ORIGINAL)
        _State.swapped = want


def install() -> None:
    """``math``'s functions answer symbolic numbers from now on (numba compiling aside)."""
    if not _State.listening:
        _listen()
    with _State.lock:
        _State.program = True
        _apply()


def restore() -> None:
    """``math``'s own functions again."""
    with _State.lock:
        _State.program = False
        _apply()


def _compiling(delta: int) -> None:
    with _State.lock:
        _State.compiling += delta
        _apply()


def _listen() -> None:
    """Follow numba's compiler lock (numba imported here if it is installed)."""
    event = sys.modules.get("numba.core.event")
    if event is None:
        try:
            import numba.core.event as event
        except ImportError:
            _State.listening = True  # no numba: nothing to follow
            return

    class Compiles(event.Listener):
        def on_start(self, _event):
            _compiling(1)

        def on_end(self, _event):
            _compiling(-1)

    event.register("numba:compiler_lock", Compiles())
    _State.listening = True


@contextlib.contextmanager
def recording():
    """``math``'s functions answer symbolic numbers while the block runs."""
    install()
    try:
        yield
    finally:
        restore()
