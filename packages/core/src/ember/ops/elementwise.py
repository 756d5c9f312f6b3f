"""Elementwise ops: arithmetic, comparison, logic and unary math, each with its gradient
rule beside it.  Binary ops promote with torch's table (``_dtype.result_type``) before the
array module sees the operands, so numpy's own promotion never decides a result dtype."""

from __future__ import annotations

import builtins
import math

import numpy
from scipy.special import expit as _expit

from .. import _dtype as D
from .._tensor import Tensor, _make
from ..autograd.graph import on_arrays, record
from ..backends import NUMPY
from ..cpu import kernels
from ._helpers import _STATE, be, check_same_device, inplace, needs_grad, operand, wrap

_float_default = D.get_default_dtype


# ---- binary machinery --------------------------------------------------------------

_NP = NUMPY.xp
_ndarray = _NP.ndarray


def _fast_pair(a, b) -> bool:
    """Both operands numpy-backed tensors of one dtype: no promotion, casting or device
    check to do (the common case, taken without the general machinery)."""
    return (isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype is b.dtype
            and type(a._data) is _ndarray and type(b._data) is _ndarray)


_FAST_SCALAR_DTYPES = (D.float32, D.float64, D.float16)
_PLAIN_FLOATS = (D.float32, D.float64)


def _fast_scalar(a, b) -> bool:
    """A numpy-backed float tensor with a Python int or float: numpy keeps the tensor's
    dtype for a Python number (NEP 50), as torch does."""
    return ((type(b) is float or type(b) is int) and isinstance(a, Tensor) and type(a._data) is _ndarray
            and a.dtype in _FAST_SCALAR_DTYPES)


def _fast_result(arr, dtype) -> Tensor:
    # numpy turns 0-d results into scalars; a tensor always holds an array
    return _make(arr if type(arr) is _ndarray else _NP.asarray(arr), dtype)


def _promote(a, b) -> D.dtype:
    if type(b) is Tensor and type(a) is Tensor and a.dtype is b.dtype:
        return a.dtype
    return D.result_type(a, b)


def _xp(a, b):
    t = a if isinstance(a, Tensor) else b
    return be(t).xp


def _binary(a, b, array_fn, dtype: D.dtype):
    """Apply ``array_fn(xp, x, y)`` to the operands cast to ``dtype``."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and type(a._data) is not type(b._data):
        check_same_device(a, b, "binary op")
    bk = be(a if isinstance(a, Tensor) else b)
    try:
        return array_fn(bk.xp, operand(a, dtype, bk), operand(b, dtype, bk))
    except ValueError:
        raise broadcast_error(a, b) from None


def broadcast_error(*operands) -> RuntimeError:
    """torch's error for shapes that do not broadcast (names the first clashing dim)."""
    shapes = [tuple(x.shape) for x in operands if isinstance(x, Tensor)]
    nd = builtins.max(len(s) for s in shapes)
    padded = [(1,) * (nd - len(s)) + s for s in shapes]
    for i in range(nd - 1, -1, -1):
        sizes = [s[i] for s in padded]
        big = [n for n in sizes if n != 1]
        if big and builtins.any(n != big[0] for n in big):
            a, b = big[0], next(n for n in big if n != big[0])
            return RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                                f"non-singleton dimension {i}")
    return RuntimeError(f"shapes {[list(s) for s in shapes]} cannot be broadcast together")


def scalar_like(x, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor on ``like``'s device (keeps its weak dtype rank)."""
    if isinstance(x, Tensor):
        return x
    d = D.result_type(x)
    if d._category < like.dtype._category or (d._category == like.dtype._category):
        d = like.dtype if d._category <= like.dtype._category else d
    b = be(like)
    return _make(b.astype(b.xp.asarray(x), d), d)  # astype wraps out-of-range ints, as torch


# ---- arithmetic --------------------------------------------------------------------

def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``, elementwise with broadcasting (torch.add).

    ``input`` is a tensor (or a number when ``other`` is a tensor), ``other`` a tensor or a
    number, ``alpha`` a number scaling ``other``. The result has the broadcast shape and the
    dtype of torch's type promotion; ``out`` receives it when given."""
    if alpha == 1 and out is None and _fast_pair(input, other):
        r = _fast_result(_np_binary(_NP.add, input, other), input.dtype)
        if _STATE.enabled and (input._requires_grad or other._requires_grad):
            record("AddBackward0", _add_rule, (input, other), r, (1,))
        return r
    if alpha == 1 and out is None and _fast_scalar(input, other):
        r = _fast_result(_NP.add(input._data, other), input.dtype)
        if _STATE.enabled and input._requires_grad:
            record("AddBackward0", _add_rule, (input, other), r, (1,))
        return r
    if alpha == 1 and out is None and _fast_scalar(other, input):  # 2 + x
        r = _fast_result(_NP.add(input, other._data), other.dtype)
        if _STATE.enabled and other._requires_grad:
            record("AddBackward0", _add_rule, (input, other), r, (1,))
        return r
    dt = _promote(input, other)
    if alpha == 1:
        r = wrap(_binary(input, other, lambda xp, x, y: xp.add(x, y), dt), dt)
    else:
        r = wrap(_binary(input, other, lambda xp, x, y: xp.add(x, xp.multiply(y, alpha)), dt), dt)
    if needs_grad(input, other):
        record("AddBackward0", _add_rule, (input, other), r, (alpha,))
    return _out(r, out)


@on_arrays()
def _add_rule(g, alpha):
    return g, (g if alpha == 1 else g * alpha)


def sub(input, other, *, alpha=1, out=None, _node="SubBackward0"):
    """``input - alpha * other``, elementwise with broadcasting (torch.sub; ``subtract`` is the
    same function).

    ``input`` and ``other`` are tensors or numbers (one at least a tensor), ``alpha`` a
    number scaling ``other``. The result has the broadcast shape and the promoted dtype;
    ``out`` receives it when given. Raises RuntimeError when either operand is bool."""
    if alpha == 1 and out is None:
        if _fast_pair(input, other) and input.dtype in _FAST_SCALAR_DTYPES:
            r = _fast_result(_np_binary(_NP.subtract, input, other), input.dtype)
            if _STATE.enabled and (input._requires_grad or other._requires_grad):
                record(_node, _sub_rule, (input, other), r, (1,))
            return r
        if _fast_scalar(input, other):
            r = _fast_result(_NP.subtract(input._data, other), input.dtype)
            if _STATE.enabled and input._requires_grad:
                record(_node, _sub_rule, (input, other), r, (1, False))
            return r
    a_bool = input.dtype is D.bool_ if isinstance(input, Tensor) else type(input) is builtins.bool
    b_bool = other.dtype is D.bool_ if isinstance(other, Tensor) else type(other) is builtins.bool
    if a_bool and b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if a_bool or b_bool:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    dt = _promote(input, other)
    r = wrap(_binary(input, other, lambda xp, x, y: xp.subtract(x, y if alpha == 1 else xp.multiply(y, alpha)), dt), dt)
    if needs_grad(input, other):
        record(_node, _sub_rule, (input, other), r, (alpha,))
    return _out(r, out)


@on_arrays()
def _sub_rule(g, alpha, other_needs=True):
    if not other_needs:
        return g, None
    return g, -g if alpha == 1 else g * -alpha


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``: ``sub`` with its operands swapped (torch.rsub).

    ``input`` is a tensor, ``other`` a tensor or a number, ``alpha`` a number scaling
    ``input``. The result has the broadcast shape and the promoted dtype; bool operands
    raise RuntimeError, as in ``sub``."""
    if alpha != 1:
        input = mul(input, alpha)
    return sub(other, input, _node="RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1")


def mul(input, other, *, out=None):
    """``input * other``, elementwise with broadcasting (torch.mul; ``multiply`` is the same
    function).

    ``input`` and ``other`` are tensors or numbers (one at least a tensor). The result has
    the broadcast shape and the promoted dtype; ``out`` receives it when given. A complex
    factor passes its conjugate to the gradient, as torch does."""
    if out is None and _fast_pair(input, other) and input.dtype is not D.bool_:
        r = _fast_result(_np_binary(_NP.multiply, input, other), input.dtype)
        if _STATE.enabled and (input._requires_grad or other._requires_grad):
            record("MulBackward0", _mul_rule_complex if input.dtype.is_complex else _mul_rule, (input, other), r,
                   (input if other._requires_grad else None, other if input._requires_grad else None))
        return r
    if out is None and _fast_scalar(input, other):
        r = _fast_result(_NP.multiply(input._data, other), input.dtype)
        if _STATE.enabled and input._requires_grad:
            record("MulBackward0", _mul_rule, (input, other), r, (None, other))
        return r
    if out is None and _fast_scalar(other, input):  # 2 * x
        r = _fast_result(_NP.multiply(input, other._data), other.dtype)
        if _STATE.enabled and other._requires_grad:
            record("MulBackward0", _mul_rule, (input, other), r, (input, None))
        return r
    dt = _promote(input, other)
    r = wrap(_binary(input, other, lambda xp, x, y: xp.multiply(x, y), dt), dt)
    if needs_grad(input, other):
        # keep only what the wanted gradients need: a scalar-times-view stays valid after
        # the view is written to, as in torch
        record("MulBackward0", _mul_rule_complex if dt.is_complex else _mul_rule, (input, other), r,
               (input if _req(other) else None, other if _req(input) else None))
    return _out(r, out)


@on_arrays()
def _mul_rule(g, a, b):
    return (None if b is None else g * b), (None if a is None else g * a)


@on_arrays()
def _mul_rule_complex(g, a, b):
    # a complex factor passes its conjugate back (torch's convention for complex gradients)
    return (None if b is None else g * _conj(b)), (None if a is None else g * _conj(a))


def _conj(x):
    """``x`` conjugated when it is complex (a tensor, an array, a number)."""
    t = type(x)
    if t is float or t is int or t is bool:
        return x
    if t is _ndarray:
        return x.conj() if x.dtype.kind == "c" else x
    if t is complex or isinstance(x, numpy.generic):
        return x.conjugate()
    return x.conj() if x.dtype.is_complex else x


def _holomorphic(*rules):
    """Give each rule ``g, v -> g * f'(v)`` (v the saved input or output) a ``for_complex``
    form: torch passes ``g * conj(f'(z))`` back, which is f' at conj(v) for the real
    coefficient functions here."""
    for rule in rules:
        arrays = rule.on_arrays
        rule.for_complex = on_arrays(lambda g, v, *rest, _f=arrays: _f(g, _conj(v), *rest))(
            lambda g, v, *rest, _f=rule: _f(g, _conj(v), *rest))


def _complex_form(rule, dtype):
    return rule.for_complex if dtype.is_complex and hasattr(rule, "for_complex") else rule


def _req(x) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def div(input, other, *, rounding_mode=None, out=None):
    """``input / other``, elementwise with broadcasting (torch.div; ``divide`` and
    ``true_divide`` are the same function).

    ``input`` and ``other`` are tensors or numbers. Without ``rounding_mode`` the division
    is true division: integer and bool inputs give the default float dtype.
    ``rounding_mode`` ``'trunc'`` rounds towards zero, ``'floor'`` towards minus infinity,
    both in the promoted dtype (integer division by zero raises RuntimeError); any other
    mode raises RuntimeError. ``out`` receives the result when given."""
    if rounding_mode is None and out is None:
        if _fast_pair(input, other) and input.dtype in _FAST_SCALAR_DTYPES:
            r = _fast_result(_np_binary(_NP.divide, input, other), input.dtype)
            if _STATE.enabled and (input._requires_grad or other._requires_grad):
                record("DivBackward0", _div_rule, (input, other), r,
                       (input if other._requires_grad else None, other, input._requires_grad))
            return r
        if _fast_scalar(input, other):
            r = _fast_result(_NP.divide(input._data, other), input.dtype)
            if _STATE.enabled and input._requires_grad:
                record("DivBackward0", _div_rule, (input, other), r, (None, other, True))
            return r
    dt = _promote(input, other)
    if rounding_mode is None:
        if dt._category < 2:
            dt = _float_default()
        r = wrap(_binary(input, other, lambda xp, x, y: xp.divide(x, y), dt), dt)
        if needs_grad(input, other):
            record("DivBackward0", _div_rule_complex if dt.is_complex else _div_rule, (input, other), r,
                   (input if _req(other) else None, other, _req(input)))
        return _out(r, out)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        if dt._category >= 2:
            arr = _binary(input, other, lambda xp, x, y: xp.trunc(xp.divide(x, y)), dt)
        else:
            _check_int_zero_division(other)
            arr = _binary(input, other, lambda xp, x, y: _int_trunc_div(xp, x, y), dt)
        r = wrap(arr, dt)
        if needs_grad(input, other):
            record("DivBackward2", _zero_rule2, (input, other), r)
        return _out(r, out)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")


def _int_trunc_div(xp, x, y):
    q = xp.floor_divide(x, y)
    fix = (xp.remainder(x, y) != 0) & ((xp.asarray(x) < 0) != (xp.asarray(y) < 0))
    return xp.where(fix, q + 1, q)


def _np_binary(ufunc, a, b):
    try:
        return ufunc(a._data, b._data)
    except ValueError:
        raise broadcast_error(a, b) from None


def _check_int_zero_division(other):
    if isinstance(other, Tensor):
        if not other.dtype.is_floating_point and be(other).xp.any(other._data == 0):
            raise RuntimeError("ZeroDivisionError")
    elif other == 0:
        raise RuntimeError("ZeroDivisionError")


@on_arrays()
def _div_rule(g, a, b, a_needs):
    return (g / b if a_needs else None), (None if a is None else -g * a / (b * b))


@on_arrays()
def _div_rule_complex(g, a, b, a_needs):
    return (g / _conj(b) if a_needs else None), (None if a is None else -g * _conj(a / (b * b)))


@on_arrays()
def _zero_rule2(g):
    return g * 0, g * 0


true_divide = divide = div
multiply = mul
subtract = sub


def floor_divide(input, other, *, out=None):
    """``input // other``: division rounded towards minus infinity, elementwise with
    broadcasting (torch.floor_divide, Python's ``//``).

    ``input`` and ``other`` are tensors or numbers; the result has the promoted dtype,
    ``out`` receives it when given. Integer division by zero raises RuntimeError. The
    gradient is zero."""
    dt = _promote(input, other)
    if dt._category < 2:
        _check_int_zero_division(other)
    r = wrap(_binary(input, other, lambda xp, x, y: xp.floor_divide(x, y), dt), dt)
    if needs_grad(input, other):
        record("DivBackward1", _zero_rule2, (input, other), r)
    return _out(r, out)


def remainder(input, other, *, out=None):
    """Python's modulus ``input - floor(input / other) * other``: the result has the sign of
    the divisor (torch.remainder).

    ``input`` and ``other`` are tensors or numbers, broadcast together; the result has the
    promoted dtype and ``out`` receives it when given. Integer division by zero raises
    RuntimeError."""
    dt = _promote(input, other)
    if dt._category < 2:
        _check_int_zero_division(other)
    r = wrap(_binary(input, other, lambda xp, x, y: xp.remainder(x, y), dt), dt)
    if needs_grad(input, other):
        record("RemainderBackward0", _remainder_rule, (input, other), r, (input, other))
    return _out(r, out)


def _remainder_rule(g, a, b):
    return g, (-g * floor_divide(a, b) if _req(b) else None)


def fmod(input, other, *, out=None):
    """C's ``fmod``: ``input - trunc(input / other) * other``, with the sign of the dividend
    (torch.fmod).

    ``input`` and ``other`` are tensors or numbers, broadcast together; the result has the
    promoted dtype and ``out`` receives it when given. Integer division by zero raises
    RuntimeError."""
    dt = _promote(input, other)
    if dt._category < 2:
        _check_int_zero_division(other)
    r = wrap(_binary(input, other, lambda xp, x, y: xp.fmod(x, y), dt), dt)
    if needs_grad(input, other):
        record("FmodBackward0", _fmod_rule, (input, other), r, (input, other))
    return _out(r, out)


def _fmod_rule(g, a, b):
    return g, (-g * div(a, b, rounding_mode="trunc") if _req(b) else None)


def pow(input, exponent, *, out=None):
    """``input ** exponent``, elementwise with broadcasting (torch.pow).

    ``input`` is a tensor or a number, ``exponent`` a tensor or a number; the result has the
    promoted dtype and ``out`` receives it when given. An integer tensor raised to a
    negative integer number raises RuntimeError, as in torch."""
    scalar_base = not isinstance(input, Tensor)
    if scalar_base:
        input = scalar_like(input, exponent)
    dt = _promote(input, exponent)
    if dt._category == 1 and not isinstance(exponent, Tensor) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if not isinstance(exponent, Tensor) and dt._category >= 2 and exponent == 2:
        r = wrap(_binary(input, input, lambda xp, x, y: xp.multiply(x, y), dt), dt)
    elif dt._category == 1:
        r = wrap(_binary(input, exponent, _int_power, dt), dt)
    else:
        r = wrap(_binary(input, exponent, lambda xp, x, y: xp.pow(x, y), dt), dt)
    if needs_grad(input, exponent):
        if isinstance(exponent, Tensor):
            record("PowBackward2" if scalar_base else "PowBackward1", _pow_rule, (input, exponent), r,
                   (input, exponent, r))
        else:
            record("PowBackward0", _pow_scalar_rule, (input,), r, (input, exponent))
    return _out(r, out)


def _int_power(xp, x, y):
    """Integer power; a negative exponent gives 1/x rounded toward zero, as torch does."""
    neg = xp.asarray(y) < 0
    if not xp.any(neg):
        return xp.pow(x, y)
    r = xp.pow(x, xp.where(neg, 0, y))
    odd = (y % 2) != 0
    one = xp.ones_like(r)
    return xp.astype(xp.where(neg, xp.where(x == 1, 1, xp.where(x == -1, xp.where(odd, -one, one), 0)), r), r.dtype)


@on_arrays()
def _pow_scalar_rule(g, a, e):
    if e == 0:
        return g * 0
    return g * e * _conj(a ** (e - 1))


def _pow_rule(g, a, e, r):
    # a zero exponent contributes nothing, even at a = 0 where e * a ** (e - 1) is 0 * inf
    ga = where(e == 0, 0.0, g * e * a ** (e - 1)) if _req(a) else None
    gb = None
    if _req(e):
        gb = g * where((a == 0) & (e >= 0), 0.0, r * log(a))
    return ga, gb


def neg(input, *, out=None):
    """``-input``, elementwise (torch.neg; ``negative`` is the same function).

    ``input`` is a tensor of any dtype but bool (which raises RuntimeError); the result
    keeps its shape and dtype, ``out`` receives it when given."""
    if input.dtype is D.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    r = wrap(be(input).xp.negative(input._data), input.dtype)
    if needs_grad(input):
        record("NegBackward0", _neg_rule, (input,), r)
    return _out(r, out)


@on_arrays()
def _neg_rule(g):
    return -g


negative = neg


def maximum(input, other, *, out=None):
    """Elementwise maximum of ``input`` and ``other`` (both tensors, broadcast together), in
    the promoted dtype; NaN propagates. A tie sends half the gradient to each side, as torch
    does. ``out`` receives the result when given; a number for ``other`` raises TypeError
    (torch.maximum)."""
    return _out(_minmax(input, other, "maximum", "MaximumBackward0"), out)


def minimum(input, other, *, out=None):
    """Elementwise minimum of ``input`` and ``other`` (both tensors, broadcast together), in
    the promoted dtype; NaN propagates. A tie sends half the gradient to each side. ``out``
    receives the result when given; a number for ``other`` raises TypeError (torch.minimum)."""
    return _out(_minmax(input, other, "minimum", "MinimumBackward0"), out)


def _minmax(a, b, fname, node):
    if not isinstance(b, Tensor):
        raise TypeError(f"{fname}(): argument 'other' must be Tensor, not {type(b).__name__}")
    dt = _promote(a, b)
    r = wrap(_binary(a, b, lambda xp, x, y: getattr(xp, fname)(x, y), dt), dt)
    if needs_grad(a, b):
        record(node, _minmax_rule, (a, b), r, (a, b, fname == "maximum"))
    return r


def _minmax_rule(g, a, b, is_max):
    a_wins = (a > b) if is_max else (a < b)
    tie = a == b
    half = g * 0.5
    ga = where(tie, half, where(a_wins, g, 0.0))
    gb = where(tie, half, where(a_wins, 0.0, g))
    return ga, gb


def clamp(input, min=None, max=None, *, out=None):
    """``input`` clamped into ``[min, max]`` (torch.clamp; ``clip`` is the same function).

    ``min`` and ``max`` are numbers or tensors broadcastable to ``input``; either may be
    None, not both (RuntimeError). The result has the dtype promoted from ``input`` and the
    bounds; ``out`` receives it when given. The gradient passes where ``min <= input <=
    max`` and, for tensor bounds, to the bound that was taken."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dt = input.dtype
    for bound in (min, max):
        if bound is not None:
            dt = D.result_type(_make(input._data[:0, ...], dt) if input.ndim else input, bound) \
                if not isinstance(bound, Tensor) else D.promote_types(dt, bound.dtype)
    bk = be(input)
    xp = bk.xp
    arr = operand(input, dt, bk)
    if min is not None:
        arr = xp.maximum(arr, operand(min, dt, bk))
    if max is not None:
        arr = xp.minimum(arr, operand(max, dt, bk))
    r = wrap(arr, dt)
    if needs_grad(input, min, max):
        record("ClampBackward0" if isinstance(min, Tensor) or isinstance(max, Tensor) else "ClampBackward1",
               _clamp_rule, (input, min, max), r, (input, min, max, (_req(input), _req(min), _req(max))))
    return _out(r, out)


def _clamp_grads(g, x, lo, hi, needs, masked):
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        m2 = x <= hi
        mask = m2 if mask is None else mask & m2
    return (masked(g, mask) if needs[0] else None, masked(g, x < lo) if needs[1] else None,
            masked(g, x > hi) if needs[2] else None)


@on_arrays(lambda g, x, lo, hi, needs: _clamp_grads(g, x, lo, hi, needs, masked_grad))
def _clamp_rule(g, x, lo, hi, needs):
    return _clamp_grads(g, x, lo, hi, needs, lambda g, mask: where(mask, g, 0.0))


def masked_grad(g, mask):
    """``g`` where ``mask`` else 0 on numpy arrays.  On large arrays a product is several
    times faster than ``where``, which then decides only when ``g`` is not finite (inf * 0
    is nan): a finite sum proves every element finite, and costs less than ``isfinite``."""
    if g.size <= 4096:
        return _NP.where(mask, g, g.dtype.type(0))
    arr = g * mask
    return arr if _NP.isfinite(arr.sum()) else _NP.where(mask, g, g.dtype.type(0))


clip = clamp


def clamp_min(input, min):
    """``input`` clamped from below: ``clamp(input, min=min)`` (torch.clamp_min). ``min`` is a
    number or a tensor broadcastable to ``input``."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """``input`` clamped from above: ``clamp(input, max=max)`` (torch.clamp_max). ``max`` is a
    number or a tensor broadcastable to ``input``."""
    return clamp(input, max=max)


def where(condition, input=None, other=None, *, out=None):
    """``input`` where ``condition`` is True, else ``other`` (torch.where).

    ``condition`` is a bool tensor (another dtype raises RuntimeError); ``input`` and
    ``other`` are tensors or numbers, broadcast with it; the result has the broadcast shape
    and the promoted dtype, and ``out`` receives it when given. With ``condition`` alone it
    is ``nonzero(condition, as_tuple=True)``: a tuple of int64 index tensors, one per dim."""
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if condition.dtype is not D.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_name(condition.dtype)}")
    dt = _promote(input, other)
    bk = be(condition)
    xp = bk.xp
    try:
        arr = _masked_select_zero(xp, condition._data, input, other, dt) if bk.mixed_kinds else None
        if arr is None:
            arr = xp.where(condition._data, operand(input, dt, bk), operand(other, dt, bk))
    except ValueError:
        raise broadcast_error(condition, input, other) from None
    r = wrap(arr, dt)
    if needs_grad(input, other):
        record("WhereBackward0", _where_rule, (condition, input, other), r, (condition,))
    return _out(r, out)


def _masked_select_zero(xp, cond, input, other, dt):
    """where(cond, x, 0) as x * cond: several times faster than the array module's where on
    floats (the form every masking gradient takes). None when it does not apply, or when
    the product is not finite (inf * 0 is nan, where gives 0): then where decides."""
    if not dt.is_floating_point:
        return None
    if type(other) in (int, float) and other == 0 and isinstance(input, Tensor) and input.dtype is dt:
        arr = xp.multiply(input._data, cond)
    elif type(input) in (int, float) and input == 0 and isinstance(other, Tensor) and other.dtype is dt:
        arr = xp.multiply(other._data, xp.logical_not(cond))
    else:
        return None
    return arr if arr.dtype == dt.np and xp.all(xp.isfinite(arr)) else None


@on_arrays(lambda g, cond: (None, masked_grad(g, cond), masked_grad(g, ~cond)))
def _where_rule(g, cond):
    return None, where(cond, g, 0.0), where(cond, 0.0, g)


def lerp(input, end, weight):
    """Linear interpolation ``input + weight * (end - input)`` (torch.lerp).

    ``input`` and ``end`` are tensors, ``weight`` a number or a tensor; all broadcast
    together and the result has the promoted dtype."""
    return input + weight * (end - input)


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``, elementwise with broadcasting (torch.addcmul).

    ``input``, ``tensor1`` and ``tensor2`` are tensors, ``value`` a number; the result has
    the broadcast shape and the promoted dtype, ``out`` receives it when given."""
    return input + value * tensor1 * tensor2


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``, elementwise with broadcasting (torch.addcdiv).

    ``input``, ``tensor1`` and ``tensor2`` are tensors, ``value`` a number; the division is
    true division, so the result has a floating dtype; ``out`` receives it when given."""
    return input + value * tensor1 / tensor2


# ---- comparison and logic (no gradients) -------------------------------------------

def _compare(a, b, fname):
    dt = _promote(a, b)
    return wrap(_binary(a, b, lambda xp, x, y: getattr(xp, fname)(x, y), dt), D.bool_)


def eq(input, other):
    """``input == other`` elementwise, as a bool tensor of the broadcast shape (torch.eq).
    ``input`` is a tensor, ``other`` a tensor or a number; they are compared in their
    promoted dtype. ``out`` receives the result when given."""
    return _compare(input, other, "equal")
def ne(input, other):
    """``input != other`` elementwise, as a bool tensor of the broadcast shape (torch.ne;
    ``not_equal`` is the same function). ``input`` is a tensor, ``other`` a tensor or a
    number, compared in their promoted dtype. ``out`` receives the result when given."""
    return _compare(input, other, "not_equal")
def lt(input, other):
    """``input < other`` elementwise, as a bool tensor of the broadcast shape (torch.lt;
    ``less`` is the same function). ``input`` is a tensor, ``other`` a tensor or a number,
    compared in their promoted dtype. ``out`` receives the result when given."""
    return _compare(input, other, "less")
def le(input, other):
    """``input <= other`` elementwise, as a bool tensor of the broadcast shape (torch.le;
    ``less_equal`` is the same function). ``input`` is a tensor, ``other`` a tensor or a
    number, compared in their promoted dtype. ``out`` receives the result when given."""
    return _compare(input, other, "less_equal")
def gt(input, other):
    """``input > other`` elementwise, as a bool tensor of the broadcast shape (torch.gt;
    ``greater`` is the same function). ``input`` is a tensor, ``other`` a tensor or a
    number, compared in their promoted dtype. ``out`` receives the result when given."""
    return _compare(input, other, "greater")
def ge(input, other):
    """``input >= other`` elementwise, as a bool tensor of the broadcast shape (torch.ge;
    ``greater_equal`` is the same function). ``input`` is a tensor, ``other`` a tensor or a
    number, compared in their promoted dtype. ``out`` receives the result when given."""
    return _compare(input, other, "greater_equal")


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def equal(input, other) -> bool:
    """True when tensors ``input`` and ``other`` have the same shape and equal values (a Python
    bool; NaN is never equal to itself) (torch.equal)."""
    return input.shape == other.shape and bool(be(input).xp.all(eq(input, other)._data))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` as a bool tensor of the
    broadcast shape (torch.isclose).

    ``input`` and ``other`` are tensors of one dtype (different dtypes raise RuntimeError);
    ``rtol`` and ``atol`` are the relative and absolute tolerances. An infinity is close
    only to itself; NaN is close to NaN only with ``equal_nan``."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{_name(input.dtype)} did not match {_name(other.dtype)}")
    b = be(input)
    xp, x, y = b.xp, input._data, other._data
    close = x == y
    if input.dtype is not D.bool_:
        if input.dtype._category < 2:
            x, y = b.astype(x, D.float64), b.astype(y, D.float64)
        with numpy.errstate(invalid="ignore", over="ignore"):  # inf - inf: excluded below
            diff = xp.abs(x - y)
        close = close | (xp.isfinite(diff) & (diff <= atol + rtol * xp.abs(y)))
    if equal_nan and input.dtype._category >= 2:
        close = close | (xp.isnan(x) & xp.isnan(y))
    return wrap(close, D.bool_)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True when every element of ``input`` is close to ``other`` (a Python bool), with
    ``rtol``, ``atol`` and ``equal_nan`` as in ``isclose`` (torch.allclose)."""
    return bool(be(input).xp.all(isclose(input, other, rtol, atol, equal_nan)._data))


def _logical(a, b, fname):
    xp = _xp(a, b)
    return wrap(getattr(xp, fname)(_truth(a, xp), _truth(b, xp)), D.bool_)


def _truth(x, xp):
    """``x`` as booleans (the standard's logical functions take bool arrays only)."""
    if isinstance(x, Tensor):
        return x._data if x.dtype is D.bool_ else x._data != 0
    return xp.asarray(builtins.bool(x))


def logical_and(input, other):
    """Elementwise logical and of ``input`` and ``other`` (nonzero is True), as a bool tensor
    of the broadcast shape (torch.logical_and). ``out`` receives the result when given."""
    return _logical(input, other, "logical_and")
def logical_or(input, other):
    """Elementwise logical or of ``input`` and ``other`` (nonzero is True), as a bool tensor of
    the broadcast shape (torch.logical_or). ``out`` receives the result when given."""
    return _logical(input, other, "logical_or")
def logical_xor(input, other):
    """Elementwise logical exclusive or of ``input`` and ``other`` (nonzero is True), as a bool
    tensor of the broadcast shape (torch.logical_xor). ``out`` receives the result when
    given."""
    return _logical(input, other, "logical_xor")


def logical_not(input):
    """Elementwise logical not of ``input`` (zero becomes True), as a bool tensor of its shape
    (torch.logical_not). ``out`` receives the result when given."""
    xp = be(input).xp
    return wrap(xp.logical_not(_truth(input, xp)), D.bool_)


def _bitwise(a, b, fname):
    dt = _promote(a, b)
    if dt._category >= 2:
        raise RuntimeError(f"\"{fname}_cpu\" not implemented for '{_name(dt)}'")
    return wrap(_binary(a, b, lambda xp, x, y: getattr(xp, fname)(x, y), dt), dt)


def bitwise_and(input, other):
    """Elementwise bitwise and (``&``) of integer or bool ``input`` and ``other``, broadcast,
    in their promoted dtype (torch.bitwise_and). Floating dtypes raise RuntimeError. ``out``
    receives the result when given."""
    return _bitwise(input, other, "bitwise_and")
def bitwise_or(input, other):
    """Elementwise bitwise or (``|``) of integer or bool ``input`` and ``other``, broadcast, in
    their promoted dtype (torch.bitwise_or). Floating dtypes raise RuntimeError. ``out``
    receives the result when given."""
    return _bitwise(input, other, "bitwise_or")
def bitwise_xor(input, other):
    """Elementwise bitwise exclusive or (``^``) of integer or bool ``input`` and ``other``,
    broadcast, in their promoted dtype (torch.bitwise_xor). Floating dtypes raise
    RuntimeError. ``out`` receives the result when given."""
    return _bitwise(input, other, "bitwise_xor")


def bitwise_not(input):
    """Elementwise bitwise not (``~``) of an integer or bool tensor ``input``, in its dtype
    (bool is logical not) (torch.bitwise_not). Floating dtypes raise TypeError. ``out``
    receives the result when given."""
    if input.dtype._category >= 2:
        raise TypeError(f"bitwise_not is only supported for integer and boolean tensors, got {input.dtype}")
    xp = be(input).xp
    fn = xp.logical_not if input.dtype is D.bool_ else xp.bitwise_invert
    return wrap(fn(input._data), input.dtype)


def isnan(input):
    """True where ``input`` is NaN: a bool tensor of its shape (torch.isnan)."""
    return _make(be(input).xp.isnan(input._data), D.bool_)
def isinf(input):
    """True where ``input`` is +inf or -inf: a bool tensor of its shape (torch.isinf)."""
    return _make(be(input).xp.isinf(input._data), D.bool_)
def isfinite(input):
    """True where ``input`` is neither infinite nor NaN: a bool tensor of its shape
    (torch.isfinite)."""
    return _make(be(input).xp.isfinite(input._data), D.bool_)


def isposinf(input):
    """True where ``input`` is +inf: a bool tensor of its shape (torch.isposinf). ``out``
    receives the result when given."""
    return _make(be(input).xp.isinf(input._data) & (input._data > 0), D.bool_)


def isneginf(input):
    """True where ``input`` is -inf: a bool tensor of its shape (torch.isneginf). ``out``
    receives the result when given."""
    return _make(be(input).xp.isinf(input._data) & (input._data < 0), D.bool_)


def isreal(input):
    """True where ``input`` has a zero imaginary part (everywhere for real dtypes): a bool
    tensor of its shape (torch.isreal)."""
    xp = be(input).xp
    if input.dtype.is_complex:
        return _make(xp.imag(input._data) == 0, D.bool_)
    return _make(xp.ones(input._data.shape, dtype=bool), D.bool_)


def bitwise_left_shift(input, other):
    """``input`` shifted left by ``other`` bits (``input * 2**other``) for integer tensors or
    numbers, broadcast, in their promoted dtype (torch.bitwise_left_shift). Floating dtypes
    raise RuntimeError."""
    return _bitwise(input, other, "bitwise_left_shift")


def bitwise_right_shift(input, other):
    """``input`` shifted right by ``other`` bits (``input // 2**other``, arithmetic for signed
    dtypes) for integer tensors or numbers, broadcast, in their promoted dtype
    (torch.bitwise_right_shift). Floating dtypes raise RuntimeError."""
    return _bitwise(input, other, "bitwise_right_shift")


def _name(d):
    from ._helpers import _type_name
    return _type_name(d)


# ---- unary math --------------------------------------------------------------------

def _unary(x, fname, node, rule, save, out=None, keep_int=False):
    """``xp.<fname>`` on x (integers become the default float unless ``keep_int``)."""
    if out is None and type(x._data) is _ndarray and x.dtype in _PLAIN_FLOATS:
        r = _fast_result(getattr(_NP, fname)(x._data), x.dtype)
        if rule is not None and _STATE.enabled and x._requires_grad:
            record(node, rule, (x,), r, (r,) if save == "out" else (x,))
        return r
    dt = x.dtype
    if not keep_int and dt._category < 2:
        dt = _float_default()
    bk = be(x)
    arr = getattr(bk.xp, fname)(operand(x, dt, bk))
    r = wrap(arr, dt)
    if rule is not None and needs_grad(x):
        record(node, _complex_form(rule, dt), (x,), r, (r,) if save == "out" else (x,))
    return _out(r, out)


def _big(arr) -> bool:
    """Large enough for a kernel to beat numpy's one-pass ufunc (threads, no temporaries)
    by more than its call overhead."""
    return arr.size >= 16384


# Gradient rules of the unary ops; those written with operators only run unchanged on
# arrays when no graph of the gradient is wanted.  They are written for real inputs; a
# complex input records the rule's ``for_complex`` form (see _holomorphic).
@on_arrays()
def _exp_rule(g, r): return g * r
@on_arrays()
def _exp2_rule(g, r): return g * r * math.log(2.0)
@on_arrays()
def _log_rule(g, x): return g / x
@on_arrays()
def _log2_rule(g, x): return g / (x * math.log(2.0))
@on_arrays()
def _log10_rule(g, x): return g / (x * math.log(10.0))
@on_arrays()
def _log1p_rule(g, x): return g / (x + 1)
@on_arrays()
def _expm1_rule(g, r): return g * (r + 1)
@on_arrays()
def _sqrt_rule(g, r): return g / (2 * r)
@on_arrays()
def _rsqrt_rule(g, r): return -0.5 * g * r * r * r
@on_arrays()
def _tan_rule(g, r): return g * (1 + r * r)
@on_arrays(lambda g, r: kernels.activation.tanh_grad(g, r) if _big(r) and kernels.accepts(g, r) else g * (1 - r * r))
def _tanh_rule(g, r): return g * (1 - r * r)
@on_arrays(lambda g, r: kernels.activation.sigmoid_grad(g, r) if _big(r) and kernels.accepts(g, r) else g * r * (1 - r))
def _sigmoid_rule(g, r): return g * r * (1 - r)
@on_arrays()
def _reciprocal_rule(g, r): return -g * r * r
@on_arrays(lambda g, x: g * _sign_array(_NP, x, True))
def _abs_rule(g, x): return g * sign(x)
@on_arrays(lambda g, x: g * _NP.cos(x))
def _sin_rule(g, x): return g * cos(x)
@on_arrays(lambda g, x: -g * _NP.sin(x))
def _cos_rule(g, x): return -g * sin(x)


_holomorphic(_exp_rule, _exp2_rule, _log_rule, _log2_rule, _log10_rule, _log1p_rule, _expm1_rule, _sqrt_rule,
             _rsqrt_rule, _tan_rule, _tanh_rule, _sigmoid_rule, _reciprocal_rule, _sin_rule, _cos_rule)


def abs(input, *, out=None):
    """``|input|`` elementwise (torch.abs; ``absolute`` is the same function).

    Integer dtypes are kept; a complex ``input`` gives its modulus in the matching real
    dtype (complex64 -> float32). ``out`` receives the result when given."""
    if input.dtype.is_complex:
        from .complex_ops import complex_abs
        return _out(complex_abs(input), out)
    return _unary(input, "abs", "AbsBackward0", _abs_rule, "in", out, keep_int=True)


absolute = abs


def exp(input, *, out=None):
    """``e ** input`` elementwise (torch.exp). Integer and bool ``input`` gives the default
    float dtype; ``out`` receives the result when given."""
    return _unary(input, "exp", "ExpBackward0", _exp_rule, "out", out)


def exp2(input, *, out=None):
    """``2 ** input`` elementwise (torch.exp2, torch.special.exp2). Integer and bool ``input``
    gives the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "exp2", "Exp2Backward0", _exp2_rule, "out", out)


def log(input, *, out=None):
    """Natural logarithm of ``input`` elementwise: NaN below zero, -inf at zero (torch.log).
    Integer and bool ``input`` gives the default float dtype; ``out`` receives the result
    when given."""
    return _unary(input, "log", "LogBackward0", _log_rule, "in", out)


def log2(input, *, out=None):
    """Base-2 logarithm of ``input`` elementwise (torch.log2). Integer and bool ``input`` gives
    the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "log2", "Log2Backward0", _log2_rule, "in", out)


def log10(input, *, out=None):
    """Base-10 logarithm of ``input`` elementwise (torch.log10). Integer and bool ``input``
    gives the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "log10", "Log10Backward0", _log10_rule, "in", out)


def log1p(input, *, out=None):
    """``log(1 + input)`` elementwise, accurate for small ``input`` (torch.log1p,
    torch.special.log1p). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _unary(input, "log1p", "Log1PBackward0", _log1p_rule, "in", out)


def expm1(input, *, out=None):
    """``exp(input) - 1`` elementwise, accurate for small ``input`` (torch.expm1,
    torch.special.expm1). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    return _unary(input, "expm1", "Expm1Backward0", _expm1_rule, "out", out)


def sqrt(input, *, out=None):
    """Square root of ``input`` elementwise: NaN below zero for real dtypes (torch.sqrt).
    Integer and bool ``input`` gives the default float dtype; ``out`` receives the result
    when given."""
    return _unary(input, "sqrt", "SqrtBackward0", _sqrt_rule, "out", out)


def rsqrt(input, *, out=None):
    """``1 / sqrt(input)`` elementwise: inf at zero, NaN below it for real dtypes
    (torch.rsqrt). Integer and bool ``input`` gives the default float dtype; ``out``
    receives the result when given."""
    dt = input.dtype if input.dtype._category >= 2 else _float_default()
    bk = be(input)
    xp = bk.xp
    r = wrap(xp.reciprocal(xp.sqrt(operand(input, dt, bk))), dt)
    if needs_grad(input):
        record("RsqrtBackward0", _complex_form(_rsqrt_rule, dt), (input,), r, (r,))
    return _out(r, out)


def sin(input, *, out=None):
    """Sine of ``input`` (radians) elementwise (torch.sin). Integer and bool ``input`` gives
    the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "sin", "SinBackward0", _sin_rule, "in", out)


def cos(input, *, out=None):
    """Cosine of ``input`` (radians) elementwise (torch.cos). Integer and bool ``input`` gives
    the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "cos", "CosBackward0", _cos_rule, "in", out)


def tan(input, *, out=None):
    """Tangent of ``input`` (radians) elementwise (torch.tan). Integer and bool ``input`` gives
    the default float dtype; ``out`` receives the result when given."""
    return _unary(input, "tan", "TanBackward0", _tan_rule, "out", out)


def tanh(input, *, out=None):
    """Hyperbolic tangent of ``input`` elementwise, in (-1, 1) for real inputs (torch.tanh).
    Integer and bool ``input`` gives the default float dtype; ``out`` receives the result
    when given."""
    if out is None and input.dtype in _PLAIN_FLOATS and _big(input._data) and kernels.accepts(input._data):
        r = _make(kernels.activation.tanh(input._data), input.dtype)  # one pass, over the threads
        if _STATE.enabled and input._requires_grad:
            record("TanhBackward0", _tanh_rule, (input,), r, (r,))
        return r
    return _unary(input, "tanh", "TanhBackward0", _tanh_rule, "out", out)


def sigmoid(input, *, out=None):
    """The logistic function ``1 / (1 + exp(-input))`` elementwise, computed without overflow
    (torch.sigmoid, torch.special.expit). Integer and bool ``input`` gives the default float
    dtype; ``out`` receives the result when given."""
    dt = input.dtype if input.dtype._category >= 2 else _float_default()
    if dt in _PLAIN_FLOATS and input.dtype is dt and _big(input._data) and kernels.accepts(input._data):
        r = _make(kernels.activation.sigmoid(input._data), dt)  # one pass, over the threads
    elif type(input._data) is _ndarray and dt in _PLAIN_FLOATS:
        # scipy's logistic function: one pass, never overflows (of integers: in the float dtype)
        r = _fast_result(_expit(input._data if input.dtype is dt else operand(input, dt)), dt)
    else:
        bk = be(input)
        xp = bk.xp
        x = operand(input, dt, bk)
        if dt.is_complex:
            r = wrap(1 / (1 + xp.exp(-x)), dt)
        else:  # exp of -|x| never overflows; the two branches are the same function
            e = xp.exp(-xp.abs(x))
            r = wrap(xp.where(x >= 0, 1 / (1 + e), e / (1 + e)), dt)
    if needs_grad(input):
        record("SigmoidBackward0", _complex_form(_sigmoid_rule, dt), (input,), r, (r,))
    return _out(r, out)


def relu(input):
    """``max(input, 0)`` elementwise, in ``input``'s shape and dtype; the gradient is 1 where
    the result is positive, 0 elsewhere (torch.relu)."""
    x = input._data
    if input.dtype in _PLAIN_FLOATS and _big(x) and kernels.accepts(x):
        r = _make(kernels.activation.relu(x), input.dtype)  # one pass over the threads
    else:
        r = wrap(be(input).xp.maximum(x, 0), input.dtype)
    if _STATE.enabled and input._requires_grad:
        record("ReluBackward0", _relu_rule, (input,), r, (r,))
    return r


def relu_(self):
    """``relu`` written into ``self`` and returned (``torch.relu_``).  Where no graph is recorded
    (no grad, or ``self`` needs none) a C-contiguous float array is rectified where it lies,
    in one pass over the kernels' threads: ``nn.ReLU(inplace=True)`` in inference then
    touches one buffer, not three (result, copy back)."""
    x = self._data
    if (not (_STATE.enabled and self._requires_grad) and self.dtype in _PLAIN_FLOATS and _big(x)
            and x.flags.c_contiguous and (type(self._vc) is list or _STATE.inference)
            and type(self)._vmap_commit is None and kernels.accepts(x)):
        kernels.activation.relu_(x)
        if type(self._vc) is list:  # an inference tensor keeps no version
            self._vc[0] += 1
        return self
    return inplace(self, relu)


def _relu_grad_arrays(g, r):
    if _big(r) and kernels.accepts(g, r):
        return kernels.activation.relu_grad(g, r)  # one pass: a select, no mask array
    return masked_grad(g, ~(r <= 0))


# torch's threshold_backward: 0 where the result is <= 0, the gradient elsewhere (NaN included)
@on_arrays(_relu_grad_arrays)
def _relu_rule(g, r):
    return where(r <= 0, 0.0, g)


def _sign_array(xp, a, floating: bool):
    """-1, 0 or 1 as torch's ``(a > 0) - (a < 0)``: 0 at NaN, where the array libraries' sign
    gives NaN."""
    s = xp.sign(a)
    return xp.where(xp.isnan(s), xp.zeros_like(s), s) if floating else s


def sign(input, *, out=None):
    """The sign of ``input`` elementwise: -1, 0 or 1 in its dtype (torch.sign). The gradient is
    zero. ``out`` receives the result when given."""
    if input.dtype == D.bool_:  # its own sign (the array libraries have no bool sign)
        return _out(wrap(input._data != False, input.dtype), out)  # noqa: E712  (a new array)
    r = wrap(_sign_array(be(input).xp, input._data, input.dtype.is_floating_point), input.dtype)
    if needs_grad(input):
        record("SignBackward0", lambda g: g * 0, (input,), r)
    return _out(r, out)


def _rounding(fname, node):
    def op(input, *, out=None):
        if input.dtype._category < 2:
            return input.clone()
        r = wrap(getattr(be(input).xp, fname)(input._data), input.dtype)
        if needs_grad(input):
            record(node, lambda g: g * 0, (input,), r)
        return _out(r, out)
    op.__name__ = fname
    op.__doc__ = (f"Elementwise {fname} of ``input`` (torch.{fname}), in its shape and dtype; integer tensors "
                  "come back unchanged (a copy). ``out`` receives the result when given. The gradient is zero.")
    return op


floor = _rounding("floor", "FloorBackward0")
ceil = _rounding("ceil", "CeilBackward0")
trunc = _rounding("trunc", "TruncBackward0")
fix = trunc


def round(input, *, decimals=0, out=None):
    """``input`` rounded to ``decimals`` decimal places, halves to even (torch.round,
    torch.special.round).

    ``decimals`` is an int (negative rounds to tens, hundreds, ...); the result keeps the
    shape and dtype, integer tensors come back unchanged (a copy). ``out`` receives the
    result when given. The gradient is zero."""
    if input.dtype._category < 2:
        return input.clone()
    xp = be(input).xp
    if decimals == 0:
        arr = xp.round(input._data)
    else:
        scale = 10.0 ** decimals
        arr = xp.divide(xp.round(xp.multiply(input._data, scale)), scale)
    r = wrap(arr, input.dtype)
    if needs_grad(input):
        record("RoundBackward0", lambda g: g * 0, (input,), r)
    return _out(r, out)


def square(input, *, out=None):
    """``input * input`` elementwise (torch.square). A bool ``input`` gives int64; other dtypes
    are kept. ``out`` receives the result when given."""
    return pow(input, 2, out=out) if input.dtype is not D.bool_ else input.to(D.int64) * input.to(D.int64)


def reciprocal(input, *, out=None):
    """``1 / input`` elementwise (torch.reciprocal). Integer and bool ``input`` gives the
    default float dtype; ``out`` receives the result when given."""
    return _unary(input, "reciprocal", "ReciprocalBackward0", _reciprocal_rule, "out", out)


def erf(input, *, out=None):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt`` of ``input`` elementwise
    (torch.erf, torch.special.erf). Integer and bool ``input`` gives the default float
    dtype; ``out`` receives the result when given."""
    dt = input.dtype if input.dtype._category >= 2 else _float_default()
    bk = be(input)
    r = wrap(bk.special.erf(operand(input, dt, bk)), dt)
    if needs_grad(input):
        record("ErfBackward0", lambda g, x: g * (2 / math.sqrt(math.pi)) * exp(-x * x), (input,), r, (input,))
    return _out(r, out)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """``input`` with NaN, +inf and -inf replaced by finite numbers (torch.nan_to_num).

    ``nan`` replaces NaN (default 0); ``posinf`` and ``neginf`` replace the infinities
    (default: the largest and the lowest finite value of ``input``'s dtype). The result
    keeps the shape and dtype; ``out`` receives it when given. The gradient is zero where
    ``input`` was not finite."""
    r = wrap(be(input).nan_to_num(input._data, nan, posinf, neginf), input.dtype)
    if needs_grad(input):
        record("NanToNumBackward0", lambda g, x: where(isfinite(x), g, 0.0), (input,), r, (input,))
    return r


# ---- copies and in-place forms -----------------------------------------------------

def clone(input, *, memory_format=None):
    """A copy of ``input`` with its own memory; differentiable (CloneBackward0) (torch.clone).

    By default (``preserve_format``) a dense tensor keeps its strides (a channels-last
    tensor stays channels-last), as torch's; ``memory_format`` asks for a layout."""
    data = input._data
    if memory_format is not None and memory_format.name != "preserve_format":
        from .._memory_format import to_format
        arr = to_format(data, input.ndim, memory_format)
    elif type(data) is numpy.ndarray and data.ndim in (4, 5):
        arr = data.copy(order="K")
    else:
        arr = be(input).copy(data)
    r = _make(arr, input.dtype)
    if needs_grad(input):
        record("CloneBackward0", lambda g: g, (input,), r)
    return r


def _out(r: Tensor, out):
    """Write ``r`` into ``out=`` (see _helpers.write_out)."""
    if out is None:
        return r
    from ._helpers import write_out
    return write_out(r, out)


def _inplace_method(fn, name):
    def method(self, *args, **kwargs):
        return inplace(self, fn, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place {fn.__name__}."
    return method


add_ = _inplace_method(add, "add_")
sub_ = _inplace_method(sub, "sub_")
mul_ = _inplace_method(mul, "mul_")
div_ = _inplace_method(div, "div_")
pow_ = _inplace_method(pow, "pow_")
neg_ = _inplace_method(neg, "neg_")
abs_ = _inplace_method(abs, "abs_")
exp_ = _inplace_method(exp, "exp_")
log_ = _inplace_method(log, "log_")
sqrt_ = _inplace_method(sqrt, "sqrt_")
tanh_ = _inplace_method(tanh, "tanh_")
sigmoid_ = _inplace_method(sigmoid, "sigmoid_")
clamp_ = _inplace_method(clamp, "clamp_")
clip_ = clamp_
eq_ = _inplace_method(lambda a, b: eq(a, b).to(a.dtype), "eq_")


def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast) into self; differentiable with respect to both
    (CopyBackwards: self's old values get a zero gradient, ``src`` the gradient summed
    back to its shape and cast to its dtype)."""
    if not isinstance(src, Tensor):
        return inplace(self, lambda s, x: _expand_to(x, s), src)
    return inplace(self, _copy_from, src)


def _copy_from(s, x):
    from .conversion import to
    value = _expand_to(to(x.detach(), s.dtype), s)
    r = _make(value._data, s.dtype)
    if needs_grad(s, x):
        record("CopyBackwards", _copy_rule, (s, x), r, (x.device,))
    return r


def _copy_rule(g, device):
    from .conversion import to
    from .creation import zeros_like
    return zeros_like(g), (g if g.device == device else to(g, device))


def _expand_to(x, s):
    if isinstance(x, Tensor):
        if type(x._data) is not type(s._data):
            from .conversion import to
            x = to(x, s.device)
        return x.expand(s.shape) if x.shape != s.shape else x
    return full_like_value(s, x)


def full_like_value(s, value):
    from .creation import full_like
    return full_like(s, value)


def fill_(self, value):
    """Fill with ``value`` (a number or a 0-d tensor)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.ndim} dimensions.")
        return copy_(self, value.expand(self.shape))
    if not _STATE.enabled or not self._requires_grad:
        from ._helpers import check_inplace
        check_inplace(self)
        self._data[...] = value
        self._vc[0] += 1
        return self
    return inplace(self, lambda s: full_like_value(s, value))


def zero_(self):
    return fill_(self, 0)
