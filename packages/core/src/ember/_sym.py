"""torch's ``sym_*`` helpers on plain Python numbers (torch docs, "torch.sym_int" ...).

torch writes them so that code traced by its compiler can reason about symbolic sizes;
on concrete ints, floats and bools, which is all ember passes them, each is the plain
Python operation below (with torch's type rules and assertion errors).
"""

from __future__ import annotations

import builtins
import math

import numpy

__all__ = ["sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum", "sym_ite",
           "sym_fresh_size", "sym_constrain_range", "sym_constrain_range_for_size"]

_NUMBERS = (numpy.integer, numpy.floating, builtins.int, builtins.float)
_FLOATS = (numpy.floating, builtins.float)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def sym_int(a):
    """``int(a)`` of the number ``a``: a float is truncated toward zero (torch.sym_int; ember
    has no symbolic sizes, so every value is concrete)."""
    return builtins.int(a)


def sym_float(a):
    """``float(a)`` of the number ``a`` (torch.sym_float)."""
    return builtins.float(a)


def _check_numbers(a, b):
    for x in (a, b):
        if not isinstance(x, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(x)}")


def sym_max(a, b):
    """The larger of the numbers ``a`` and ``b``, a float when either is one (unlike ``max``,
    which keeps the winner's type) (torch.sym_max).

    Raises:
        AssertionError: an argument is not an int or float (Python's or numpy's)."""
    _check_numbers(a, b)
    out = builtins.max(a, b)
    return builtins.float(out) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else out


def sym_min(a, b):
    """The smaller of the numbers ``a`` and ``b``, a float when either is one (see ``sym_max``)
    (torch.sym_min)."""
    _check_numbers(a, b)
    out = builtins.min(a, b)
    return builtins.float(out) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else out


def sym_not(a):
    """The logical negation of ``a``: ``not a`` (torch.sym_not)."""
    return not a


def sym_sqrt(a):
    """``math.sqrt(a)`` of the number ``a``, a float (ValueError for a negative number)
    (torch.sym_sqrt)."""
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of numbers given as one list or tuple, or as separate arguments."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """``t if b else f``.

    Raises:
        AssertionError: ``b`` is not a bool, or ``t`` and ``f`` differ in type.
    """
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_fresh_size(expr):
    """``expr`` as a Python number, through a tensor as torch does (``tensor(expr).item()``)."""
    from .ops import tensor
    return tensor(expr).item()


def _constrain(name, size, lo, hi):
    if not isinstance(size, (builtins.int, builtins.float)):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be Number, not "
                        f"{type(size).__name__}")
    if not lo <= size <= hi:
        raise RuntimeError(f"Invalid value range for {size} between [{lo}, {hi}].")


def sym_constrain_range(size, *, min=None, max=None) -> None:  # noqa: A002  (torch's names)
    """Assert ``min <= size <= max`` for the number ``size``; ``min`` and ``max`` default to
    int64's limits (torch.sym_constrain_range).

    Raises:
        RuntimeError: ``size`` is outside the range.
        TypeError: ``size`` is not a number."""
    _constrain("sym_constrain_range", size, _INT64[0] if min is None else min, _INT64[1] if max is None else max)


def sym_constrain_range_for_size(size, *, min=None, max=None) -> None:  # noqa: A002
    """``sym_constrain_range`` for a ``size``: ``min`` defaults to 0, ``max`` to int64's
    largest value (torch.sym_constrain_range_for_size)."""
    _constrain("sym_constrain_range_for_size", size, 0 if min is None else min, _INT64[1] if max is None else max)
