"""Floating-point and integer numerics: NaN-ignoring fmax/fmin, frexp/ldexp, gcd/lcm,
heaviside, nextafter and signbit.

Each takes tensors only (torch's TypeError for a Python number in ``other``) and promotes
with torch's table; the gradient rules follow torch's ``derivatives.yaml`` (fmax sends a
tie to ``input``; nextafter passes the gradient to ``input`` alone).  heaviside has no
derivative in torch: its result records a node whose backward raises, as torch's does.
"""

from __future__ import annotations

import math

from .. import _dtype as D
from .. import return_types
from .._tensor import Tensor
from ..autograd.graph import record
from ._helpers import _type_name, be, needs_grad, operand, wrap
from .elementwise import _binary, _promote, where

__all__ = ["fmax", "fmin", "frexp", "ldexp", "gcd", "lcm", "heaviside", "nextafter", "signbit"]


def _check_tensors(name, input, other, other_name="other"):
    for pos, (arg, v) in enumerate((("input", input), (other_name, other)), 1):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(v).__name__}")


def _not_implemented_rule(name):
    """A gradient rule raising torch's error for an op without a derivative."""
    def rule(g, *saved):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return rule


# ---- NaN-ignoring extremes ----------------------------------------------------------

def fmax(input, other):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN), broadcasting;
    dtype by promotion, bool and integers kept.  RuntimeError for complex tensors.  The
    gradient goes to ``input`` where input >= other or other is NaN, else to ``other``
    (torch.fmax, C's fmax)."""
    return _nan_extreme(input, other, "fmax", "FmaxBackward0")


def fmin(input, other):
    """Elementwise minimum of the tensors ``input`` and ``other`` that ignores NaN (NaN only
    where both are NaN), broadcasting; dtype by promotion, bool and integers kept
    (torch.fmin, C's fmin). RuntimeError for complex tensors. The gradient goes to ``input``
    where input <= other or other is NaN, else to ``other``. ``out`` receives the result
    when given."""
    return _nan_extreme(input, other, "fmin", "FminBackward0")


def _nan_extreme(a, b, fname, node):
    _check_tensors(fname, a, b)
    if a.dtype.is_complex or b.dtype.is_complex:
        raise RuntimeError(f"{fname} not implemented for complex tensors.")
    dt = _promote(a, b)
    r = wrap(_binary(a, b, lambda xp, x, y: getattr(xp, fname)(x, y), dt), dt)
    if needs_grad(a, b):
        record(node, _nan_extreme_rule, (a, b), r, (a, b, fname == "fmax"))
    return r


def _nan_extreme_rule(g, a, b, is_max):
    to_a = ((a >= b) if is_max else (a <= b)) | (b != b)  # b != b: NaN
    return where(to_a, g, 0.0), where(to_a, 0.0, g)


# ---- mantissa and exponent ---------------------------------------------------------

def frexp(input):
    """The named tuple ``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` and
    ``|mantissa|`` in [0.5, 1) (0 and non-finite values: mantissa = input, exponent 0);
    mantissa keeps ``input``'s float dtype, exponent is int32 (torch.frexp). RuntimeError
    for integer and bool inputs."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xp = be(input).xp
    m, e = xp.frexp(input._data)
    mantissa, exponent = wrap(m, input.dtype), wrap(e, D.int32)
    if needs_grad(input):
        record("FrexpBackward0", _frexp_rule, (input,), (mantissa, exponent), (exponent,))
    return return_types.frexp(mantissa, exponent)


def _frexp_rule(grads, exponent):
    from .elementwise import exp2
    g = grads[0] if isinstance(grads, (tuple, list)) else grads
    return (g / exp2(exponent.to(g.dtype)),)


def ldexp(input, other):
    """input * 2 ** other, broadcasting; the promoted dtype, integers giving the default
    float (torch.ldexp).  The gradient for ``input`` is 2 ** other also for a negative
    integer ``other``, where torch's is 0 (it raises 2 to it in integer arithmetic)."""
    _check_tensors("ldexp", input, other)
    dt = _promote(input, other)
    if dt._category < 2:
        dt = D.get_default_dtype()
    r = wrap(_binary(input, other, lambda xp, x, y: x * xp.exp2(y), dt), dt)
    if needs_grad(input, other):
        record("LdexpBackward0", _ldexp_rule, (input, other), r, (input, other))
    return r


def _ldexp_rule(g, x, e):
    from .elementwise import exp2
    scale = exp2(e.to(g.dtype)) if not e.dtype.is_floating_point else exp2(e)
    gx = g * scale
    return gx, (gx * x * math.log(2.0) if e.dtype.is_floating_point else None)


# ---- integers ------------------------------------------------------------------------

def gcd(input, other):
    """Elementwise greatest common divisor (non-negative; gcd(0, 0) = 0) of the integer tensors
    ``input`` and ``other``, broadcast, in their promoted dtype (torch.gcd);
    NotImplementedError for float and bool dtypes, as torch. ``out`` receives the result
    when given."""
    return _integer_pair(input, other, "gcd")


def lcm(input, other):
    """Elementwise least common multiple (non-negative; 0 when either is 0) of the integer
    tensors ``input`` and ``other``, broadcast, in their promoted dtype (torch.lcm);
    NotImplementedError for float and bool dtypes. ``out`` receives the result when given."""
    return _integer_pair(input, other, "lcm")


def _integer_pair(a, b, fname):
    _check_tensors(fname, a, b)
    dt = _promote(a, b)
    if dt._category != 1:
        raise NotImplementedError(f"\"{fname}_cpu\" not implemented for '{_type_name(dt)}'")
    return wrap(_binary(a, b, lambda xp, x, y: getattr(xp, fname)(x, y), dt), dt)


# ---- step, neighbours, sign bit ------------------------------------------------------

def heaviside(input, values):
    """The step function of ``input``: 0 where input < 0, ``values`` (broadcast) where input ==
    0, 1 where input > 0 (NaN gives 0) (torch.heaviside). RuntimeError unless both dtypes
    are equal, or for complex ones; it has no derivative. ``out`` receives the result when
    given."""
    _check_tensors("heaviside", input, values, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if input.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    dt = input.dtype
    r = wrap(_binary(input, values, lambda xp, x, v: xp.where(x == 0, v, x > 0), dt), dt)
    if needs_grad(input, values):
        record("NotImplemented", _not_implemented_rule("heaviside"), (input, values), r)
    return r


def nextafter(input, other):
    """The next floating-point value after ``input`` towards ``other`` (promoted float
    dtypes only: NotImplementedError for integers).  Its gradient is the incoming one for
    ``input`` and zero for ``other``, as torch's."""
    _check_tensors("nextafter", input, other)
    dt = _promote(input, other)
    if dt._category != 2:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_type_name(dt)}'")
    bk = be(input)
    x, y = operand(input, dt, bk), operand(other, dt, bk)
    try:
        arr = bk.xp.nextafter(x, y)
    except ValueError:
        from .elementwise import broadcast_error
        raise broadcast_error(input, other) from None
    r = wrap(arr, dt)
    if needs_grad(input, other):
        record("NextafterBackward0", _nextafter_rule, (input, other), r)
    return r


def _nextafter_rule(g):
    return g, g * 0


def signbit(input):
    """True where the sign bit of ``input`` is set (negative values, -0.0 and NaNs carrying
    it), as a bool tensor of its shape; integers and bool accepted; NotImplementedError for
    complex (torch.signbit). ``out`` receives the result when given."""
    if input.dtype.is_complex:
        raise NotImplementedError("signbit is not implemented for complex tensors.")
    xp = be(input).xp
    data = input._data
    return wrap(xp.signbit(data) if input.dtype.is_floating_point else data < 0, D.bool_)
