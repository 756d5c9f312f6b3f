"""Reductions: sum, mean, prod, max/min, arg*, var/std, logsumexp, norm, all/any, cumsum,
softmax and log_softmax.  Integer sums give int64 and float16/bfloat16 sums accumulate in
float32, as torch does (numpy would give uint64 and accumulate in the input dtype)."""

from __future__ import annotations

import builtins
import math
import warnings

import numpy

from .. import _dtype as D
from .. import return_types
from .._autocast import autocast_op
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import on_arrays, record
from ..backends import backend_of_array
from ..cpu import kernels
from ..cuda.kernels import softmax as cuda_softmax
from ._helpers import _STATE, be, needs_grad, wrap
from .shape import expand, reshape, unsqueeze


def _dims(dim, ndim: int):
    """``dim`` as a sorted tuple of non-negative dims; None means all."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None
        out = tuple(sorted({_wrap_dim(d, ndim) for d in dim}))
        if len(out) != len(dim):
            raise RuntimeError("dim appears multiple times in the list of dims")
        return out
    return (_wrap_dim(dim, ndim),)


def _axis(dims):
    return dims if dims is None else (dims if len(dims) > 1 else dims[0])


def _keep_shape(shape, dims):
    """The reduced shape with kept size-1 dims (to broadcast a gradient back)."""
    if dims is None:
        return (1,) * len(shape)
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _expand_grad(g, shape, dims, keepdim):
    if not keepdim:
        g = reshape(g, _keep_shape(shape, dims))
    return expand(g, shape)


_LOW_FLOATS = ("float16", "bfloat16")
_PLAIN_FLOATS = (D.float32, D.float64)
_ndarray = numpy.ndarray


def _np_sum(arr):
    return numpy.asarray(numpy.add.reduce(arr, axis=None))


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum of ``input``'s elements over ``dim`` (an int or a tuple; all dims when None)
    (torch.sum).

    ``keepdim`` keeps the reduced dims with size 1. bool and integer inputs give int64;
    ``dtype`` casts before summing (float16 and bfloat16 accumulate in float32). ``out`` is
    accepted but not written."""
    if dim is None and dtype is None and out is None and not keepdim and type(input._data) is _ndarray \
            and input.dtype in _PLAIN_FLOATS:  # the loss-to-scalar case, without the general machinery
        r = _make(_np_sum(input._data), input.dtype)
        if _STATE.enabled and input._requires_grad:
            record("SumBackward0", _sum_rule, (input,), r, (input._data.shape, None, False))
        return r
    dims = _dims(dim, input.ndim)
    if dtype is not None:
        dt = D.to_dtype(dtype)
    elif input.dtype._category < 2:
        dt = D.int64
    else:
        dt = input.dtype
    bk = be(input)
    x = input._data if input.dtype is not D.bool_ else bk.astype(input._data, D.int64)
    acc = bk.storage_dtype(D.float32 if dt.name in _LOW_FLOATS else dt)
    arr = bk.xp.sum(x, axis=_axis(dims), dtype=acc, keepdims=keepdim)
    r = wrap(arr, dt)
    if needs_grad(input):
        record("SumBackward1" if dims is not None else "SumBackward0", _sum_rule, (input,), r,
               (input._data.shape, dims, keepdim))
    return r


def _expand_grad_array(g, shape, dims, keepdim):
    if dims is None and not keepdim:
        # the gradient of a full reduction: a read-only zero-stride view of the scalar,
        # built directly (numpy.broadcast_to costs ten times more)
        out = numpy.ndarray(shape, g.dtype, numpy.asarray(g), 0, (0,) * len(shape))
        out.flags.writeable = False
        return out
    return numpy.broadcast_to(g if keepdim else g.reshape(_keep_shape(shape, dims)), shape)


@on_arrays(_expand_grad_array)
def _sum_rule(g, shape, dims, keepdim):
    return _expand_grad(g, shape, dims, keepdim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum of ``input`` over ``dim`` with NaN counted as 0 (torch.nansum); ``dim``,
    ``keepdim`` and ``dtype`` as in ``sum``."""
    from .elementwise import isnan, where
    return sum(where(isnan(input), 0.0, input), dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of ``input`` over ``dim`` (an int or a tuple; all dims when None) (torch.mean).

    ``keepdim`` keeps the reduced dims with size 1; ``dtype`` casts first. Floating or
    complex inputs (or ``dtype``) only: RuntimeError otherwise, as torch. ``out`` is
    accepted but not written."""
    dt = D.to_dtype(dtype) if dtype is not None else input.dtype
    if dt._category < 2:
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point "
                           f"or complex dtype. Got: {_long_name(input.dtype)}")
    dims = _dims(dim, input.ndim)
    bk = be(input)
    x = bk.astype(input._data, D.float32 if dt.name in _LOW_FLOATS else dt)
    if x.size:
        arr = bk.xp.mean(x, axis=_axis(dims), keepdims=keepdim)
    else:  # NaN, as torch, without numpy's "Mean of empty slice" warning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            arr = bk.xp.mean(x, axis=_axis(dims), keepdims=keepdim)
    r = wrap(arr, dt)
    if needs_grad(input):
        n = _count(input._data.shape, dims)
        record("MeanBackward1" if dims is not None else "MeanBackward0", _mean_rule, (input,), r,
               (input._data.shape, dims, keepdim, n))
    return r


@on_arrays(lambda g, shape, dims, keepdim, n: _expand_grad_array(g / n, shape, dims, keepdim))
def _mean_rule(g, shape, dims, keepdim, n):
    return _expand_grad(g / n, shape, dims, keepdim)


def _count(shape, dims) -> int:
    n = 1
    for i, s in enumerate(shape):
        if dims is None or i in dims:
            n *= s
    return n


def _long_name(d):
    from ._helpers import _type_name
    return _type_name(d)


@autocast_op("fp32")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product of ``input``'s elements over the int ``dim`` (all when None) (torch.prod).

    ``keepdim`` keeps the reduced dim with size 1; bool and integer inputs give int64 unless
    ``dtype`` is given. A ``dim`` that is not an int raises TypeError. The gradient is the
    product of the other elements (right where some are zero)."""
    if dim is not None and not isinstance(dim, builtins.int):
        raise TypeError("prod(): argument 'dim' must be int")
    dims = _dims(dim, input.ndim)
    dt = D.to_dtype(dtype) if dtype is not None else (D.int64 if input.dtype._category < 2 else input.dtype)
    bk = be(input)
    x = input._data if input.dtype is not D.bool_ else bk.astype(input._data, D.int64)
    arr = bk.xp.prod(x, axis=_axis(dims), dtype=bk.storage_dtype(dt), keepdims=keepdim)
    r = wrap(arr, dt)
    if needs_grad(input):
        record("ProdBackward1" if dims else "ProdBackward0", _prod_rule, (input,), r,
               (input, r, dims, keepdim))
    return r


def _prod_rule(g, x, r, dims, keepdim):
    # product of the other elements: out / x when no x is 0, else prefix * suffix products
    # (computed on arrays: that case has no second derivative)
    shape = x.shape
    g_full = _expand_grad(g, shape, dims, keepdim)
    r_full = _expand_grad(r, shape, dims, keepdim)
    xp = be(x).xp
    if not xp.any(x._data == 0):
        return g_full * r_full / x
    axis = -1 if dims is None else dims[0]
    flat = xp.reshape(x._data, (-1,)) if dims is None else xp.moveaxis(x._data, axis, -1)
    ones = xp.ones_like(flat[..., :1])
    left = xp.concat([ones, xp.cumulative_prod(flat, axis=-1)[..., :-1]], axis=-1)
    right = xp.flip(xp.concat([ones, xp.cumulative_prod(xp.flip(flat, axis=-1), axis=-1)[..., :-1]], axis=-1),
                    axis=-1)
    others = left * right
    others = xp.reshape(others, shape) if dims is None else xp.moveaxis(others, -1, axis)
    return g_full * _make(others, x.dtype)


def _extreme(input, dim, keepdim, is_max: bool, name: str):
    xp = be(input).xp
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        r = _make(xp.asarray((xp.max if is_max else xp.min)(input._data)), input.dtype)
        if needs_grad(input):
            record("MaxBackward1" if is_max else "MinBackward1", _evenly_rule, (input,), r,
                   (input, r, None, False))
        return r
    d = _wrap_dim(dim, input.ndim)
    if input._data.ndim and input._data.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    data = input._data if input._data.ndim else xp.reshape(input._data, (1,))
    idx = (xp.argmax if is_max else xp.argmin)(data, axis=d if input.ndim else 0, keepdims=True)
    vals = xp.take_along_axis(data, idx, axis=d if input.ndim else 0)
    if not keepdim or not input.ndim:
        idx, vals = xp.squeeze(idx, axis=d if input.ndim else 0), xp.squeeze(vals, axis=d if input.ndim else 0)
    values, indices = _make(xp.asarray(vals), input.dtype), _make(xp.asarray(be(input).astype(idx, D.int64)), D.int64)
    if needs_grad(input):
        record("MaxBackward0" if is_max else "MinBackward0", _indices_rule, (input,), values,
               (indices, input._data.shape, d, keepdim))
    return (return_types.max if is_max else return_types.min)(values, indices)


def _indices_rule(g, indices, shape, d, keepdim):
    from .creation import zeros
    from .indexing import scatter
    if not shape:
        return g
    if not keepdim:
        g, indices = unsqueeze(g, d), unsqueeze(indices, d)
    return scatter(zeros(shape, dtype=g.dtype, device=g.device), d, indices, g)


def _evenly_rule(g, x, r, dims, keepdim):
    """Gradient of max/amax-like reductions: shared evenly among tied extremes (torch)."""
    shape = x.shape
    mask = (x == _expand_grad(r, shape, dims, keepdim)).to(g.dtype)
    count = sum(mask, _dim_arg(dims), keepdim=True)
    return mask * _expand_grad(g, shape, dims, keepdim) / count


def _dim_arg(dims):
    return dims if dims is not None else None


def max(input, dim=None, keepdim=False, *, out=None):
    """The largest element of ``input`` (a 0-d tensor); with an int ``dim``, the named tuple
    ``(values, indices)`` of the maxima along it (indices int64, the first of ties), with
    ``keepdim`` keeping that dim with size 1; with a tensor as ``dim``, ``maximum(input,
    dim)`` (torch.max).

    A reduction over an empty tensor raises RuntimeError (IndexError along an empty dim).
    The gradient of the full reduction is shared evenly among tied maxima. ``out`` is
    accepted but not written."""
    if isinstance(dim, Tensor):
        from .elementwise import maximum
        return maximum(input, dim)
    return _extreme(input, dim, keepdim, True, "max")


def min(input, dim=None, keepdim=False, *, out=None):
    """The smallest element of ``input`` (a 0-d tensor); with an int ``dim``, the named tuple
    ``(values, indices)`` of the minima along it (indices int64, the first of ties), with
    ``keepdim`` keeping that dim with size 1; with a tensor as ``dim``, ``minimum(input,
    dim)`` (torch.min).

    A reduction over an empty tensor raises RuntimeError (IndexError along an empty dim).
    ``out`` is accepted but not written."""
    if isinstance(dim, Tensor):
        from .elementwise import minimum
        return minimum(input, dim)
    return _extreme(input, dim, keepdim, False, "min")


def _amaxmin(input, dim, keepdim, is_max):
    dims = _dims(dim if dim != () else None, input.ndim)
    xp = be(input).xp
    arr = (xp.max if is_max else xp.min)(input._data, axis=_axis(dims), keepdims=keepdim)
    r = wrap(arr, input.dtype)
    if needs_grad(input):
        record("AmaxBackward0" if is_max else "AminBackward0", _evenly_rule, (input,), r, (input, r, dims, keepdim))
    return r


def amax(input, dim=(), keepdim=False):
    """The maxima of ``input`` over ``dim`` (an int or a tuple; all dims when empty), in its
    dtype (torch.amax). ``keepdim`` keeps the reduced dims with size 1. The gradient is
    shared evenly among tied maxima. ``out`` receives the result when given."""
    return _amaxmin(input, dim, keepdim, True)


def amin(input, dim=(), keepdim=False):
    """The minima of ``input`` over ``dim`` (an int or a tuple; all dims when empty), in its
    dtype (torch.amin). ``keepdim`` keeps the reduced dims with size 1. The gradient is
    shared evenly among tied minima. ``out`` receives the result when given."""
    return _amaxmin(input, dim, keepdim, False)


def argmax(input, dim=None, keepdim=False):
    """The int64 index of the largest element of ``input`` along ``dim`` (of the flattened
    tensor when None; the first of ties) (torch.argmax). ``keepdim`` keeps the reduced
    dim(s) with size 1. A bool ``input`` raises RuntimeError."""
    return _arg(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):
    """The int64 index of the smallest element of ``input`` along ``dim`` (of the flattened
    tensor when None; the first of ties) (torch.argmin). ``keepdim`` keeps the reduced
    dim(s) with size 1. A bool ``input`` raises RuntimeError."""
    return _arg(input, dim, keepdim, False)


def _arg(input, dim, keepdim, is_max):
    if input.dtype is D.bool_:
        raise RuntimeError(f"{'argmax' if is_max else 'argmin'}(): does not support bool input")
    bk = be(input)
    xp = bk.xp
    fn = xp.argmax if is_max else xp.argmin
    if dim is None:
        arr = fn(xp.reshape(input._data, (-1,)))
        if keepdim:
            arr = xp.reshape(arr, (1,) * input.ndim)
    else:
        d = _wrap_dim(dim, input.ndim)
        arr = fn(input._data, axis=d, keepdims=keepdim) if input.ndim else fn(input._data)
    return wrap(bk.astype(xp.asarray(arr), D.int64), D.int64)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance of ``input`` over ``dim`` (an int or a tuple; all dims when None)
    (torch.var): ``sum((x - mean)**2) / (N - correction)``.

    ``correction`` defaults to 1 (Bessel's); ``unbiased=False`` means 0. ``keepdim`` keeps
    the reduced dims with size 1. ``N - correction <= 0`` gives NaN. Floating and complex
    inputs only: RuntimeError otherwise."""
    c = _correction(unbiased, correction)
    dims = _dims(dim, input.ndim)
    if input.dtype._category < 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    bk = be(input)
    xp = bk.xp
    x = bk.astype(input._data, D.float32 if input.dtype.name in _LOW_FLOATS else input.dtype)
    n = _count(input._data.shape, dims)
    arr = xp.var(x, axis=_axis(dims), keepdims=keepdim)
    arr = arr * (n / (n - c)) if n - c > 0 else xp.full_like(arr, float("nan"))
    r = wrap(arr, input.dtype)
    if needs_grad(input):
        record("VarBackward0", _var_rule, (input,), r, (input, dims, keepdim, n - c))
    return r


def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return _keep_shape(shape, dims)
    return tuple(s for i, s in enumerate(shape) if dims is not None and i not in dims)


def _var_rule(g, x, dims, keepdim, denom):
    m = mean(x, _dim_arg(dims), keepdim=True)
    return _expand_grad(g, x.shape, dims, keepdim) * (2.0 / denom) * (x - m)


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation of ``input`` over ``dim``: the square root of ``var(input, dim,
    unbiased, keepdim, correction=correction)`` (torch.std); ``dim``, ``unbiased``,
    ``keepdim`` and ``correction`` as there. The gradient is zero where the deviation is
    zero."""
    from ..autograd.grad_mode import no_grad
    from .elementwise import sqrt
    with no_grad():
        r = sqrt(var(input, dim, unbiased, keepdim, correction=correction))
    if needs_grad(input):
        dims = _dims(dim, input.ndim)
        denom = _count(input._data.shape, dims) - _correction(unbiased, correction)
        record("StdBackward0", _std_rule, (input,), r, (input, r, dims, keepdim, denom))
    return r


def _std_rule(g, x, r, dims, keepdim, denom):
    from .elementwise import where
    # zero where the deviation is zero (a constant input), as torch masks it
    return _var_rule(where(r == 0, 0.0, g / (2 * r)), x, dims, keepdim, denom)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The named tuple ``(var, mean)`` of ``input`` over ``dim`` (torch.var_mean); ``dim``,
    ``unbiased``, ``keepdim`` and ``correction`` as in ``var``."""
    return return_types.var_mean(var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The named tuple ``(std, mean)`` of ``input`` over ``dim`` (torch.std_mean); ``dim``,
    ``unbiased``, ``keepdim`` and ``correction`` as in ``var``."""
    return return_types.std_mean(std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim))


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(x)))`` of ``input`` over ``dim`` (an int or a tuple), computed stably (the
    maximum subtracted first) (torch.logsumexp, torch.special.logsumexp). ``keepdim`` keeps
    the reduced dims with size 1; integer inputs give the default float dtype. ``out``
    receives the result when given."""
    dims = _dims(dim, input.ndim)
    bk = be(input)
    xp = bk.xp
    x = input._data if input.dtype._category >= 2 else bk.astype(input._data, D.get_default_dtype())
    m = xp.max(x, axis=_axis(dims), keepdims=True) if x.size else xp.zeros(_keep_shape(x.shape, dims), dtype=x.dtype)
    m = xp.where(xp.isfinite(m), m, 0)
    arr = xp.log(xp.sum(xp.exp(x - m), axis=_axis(dims), keepdims=True)) + m
    if not keepdim:
        arr = xp.reshape(arr, _reduced_shape(x.shape, dims, False))
    r = wrap(arr, input.dtype if input.dtype._category >= 2 else D.get_default_dtype())
    if needs_grad(input):
        record("LogsumexpBackward0", _logsumexp_rule, (input,), r, (input, r, dims, keepdim))
    return r


def _logsumexp_rule(g, x, r, dims, keepdim):
    from .elementwise import exp
    return _expand_grad(g, x.shape, dims, keepdim) * exp(x - _expand_grad(r, x.shape, dims, keepdim))


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector ``p``-norm of ``input`` over ``dim`` (an int or a tuple; all elements when
    None) (torch.norm).

    ``p`` is 'fro' or None (both the 2-norm), inf, -inf, 0 (the count of nonzeros) or any
    real; 'nuc' raises NotImplementedError. ``keepdim`` keeps the reduced dims with size 1;
    ``dtype`` is accepted (the result keeps ``input``'s dtype). Integer inputs raise
    RuntimeError."""
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        raise NotImplementedError("nuclear norm is not supported yet")
    x = input
    if x.dtype._category < 2:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_long_name(x.dtype)}")
    dims = _dims(dim, x.ndim)
    bk = be(x)
    xp = bk.xp
    axis = _axis(dims)
    acc = D.float32 if x.dtype.name in _LOW_FLOATS else x.dtype
    if p == 2:
        arr = xp.sqrt(xp.sum(xp.square(bk.astype(x._data, acc)), axis=axis, keepdims=keepdim))
    else:
        a = bk.astype(xp.abs(x._data), acc)
        if p == math.inf or p == -math.inf:
            arr = (xp.max if p > 0 else xp.min)(a, axis=axis, keepdims=keepdim)
        elif p == 0:
            arr = xp.sum(bk.astype(a != 0, acc), axis=axis, keepdims=keepdim)
        elif p == 1:
            arr = xp.sum(a, axis=axis, keepdims=keepdim)
        else:
            arr = xp.pow(xp.sum(xp.pow(a, p), axis=axis, keepdims=keepdim), 1.0 / p)
    r = wrap(arr, x.dtype)
    if needs_grad(x):
        rule = _norm2_rule if p == 2 else _norm_rule
        record("LinalgVectorNormBackward0", rule, (x,), r, (x, r, dims, keepdim) + (() if p == 2 else (p,)))
    return r


def _norm_rule(g, x, r, dims, keepdim, p):
    from .elementwise import abs as _abs
    from .elementwise import sign, where
    shape = x.shape
    g = _expand_grad(g, shape, dims, keepdim)
    if p == 0:
        return None  # torch leaves the gradient undefined
    if p == 1:
        return g * sign(x)
    rr = _expand_grad(r, shape, dims, keepdim)
    a = _abs(x)
    if p == math.inf or p == -math.inf:  # shared evenly among the tied extremes
        mask = (a == rr).to(g.dtype)
        return sign(x) * mask * g / sum(mask, _dim_arg(dims), keepdim=True)
    return where(rr == 0, 0.0, g * sign(x) * (a / rr) ** (p - 1))


def _norm2_rule(g, x, r, dims, keepdim):
    from .elementwise import where
    shape = x.shape
    rr = _expand_grad(r, shape, dims, keepdim)
    return where(rr == 0, 0.0, _expand_grad(g, shape, dims, keepdim) * x / rr)


def all(input, dim=None, keepdim=False):
    """True where every element of ``input`` over ``dim`` (an int or a tuple; all when None) is
    nonzero, as a bool tensor (torch.all). ``keepdim`` keeps the reduced dims with size 1;
    ``out`` receives the result when given."""
    dims = _dims(dim, input.ndim)
    return wrap(be(input).xp.all(input._data, axis=_axis(dims), keepdims=keepdim), D.bool_)


def any(input, dim=None, keepdim=False):
    """True where some element of ``input`` over ``dim`` (an int or a tuple; all when None) is
    nonzero, as a bool tensor (torch.any). ``keepdim`` keeps the reduced dims with size 1."""
    dims = _dims(dim, input.ndim)
    return wrap(be(input).xp.any(input._data, axis=_axis(dims), keepdims=keepdim), D.bool_)


def count_nonzero(input, dim=None):
    """The int64 count of nonzero elements of ``input`` over ``dim`` (an int or a tuple; all
    when None) (torch.count_nonzero)."""
    dims = _dims(dim, input.ndim)
    return wrap(be(input).xp.count_nonzero(input._data, axis=_axis(dims)), D.int64)


def cumsum(input, dim, *, dtype=None):
    """The running sum of ``input`` along ``dim``, same shape (torch.cumsum). bool and integer
    inputs accumulate in int64 unless ``dtype`` is given. ``out`` receives the result when
    given."""
    d = _wrap_dim(dim, input.ndim)
    dt = D.to_dtype(dtype) if dtype is not None else (D.int64 if input.dtype._category < 2 else input.dtype)
    bk = be(input)
    xp = bk.xp
    x = input._data if input.ndim else xp.reshape(input._data, (1,))
    if input.dtype is D.bool_:
        x = bk.astype(x, dt)
    arr = xp.reshape(xp.cumulative_sum(x, axis=d if input.ndim else 0, dtype=bk.storage_dtype(dt)),
                     input._data.shape)
    r = wrap(arr, dt)
    if needs_grad(input):
        record("CumsumBackward0", _cumsum_rule, (input,), r, (d,))
    return r


def _cumsum_rule(g, d):
    from .shape import flip
    if g.ndim == 0:
        return g
    return flip(cumsum(flip(g, d), d), d)


def softmax(input, dim, dtype=None, _stacklevel=3):
    """``exp(x) / sum(exp(x))`` of ``input`` along ``dim``, max-subtracted for stability
    (torch.softmax, torch.nn.functional.softmax, torch.special.softmax).

    ``dtype`` casts ``input`` first; integer inputs give the default float dtype. The result
    has the shape (any) and memory layout of ``input``."""
    x = input if dtype is None else input.to(dtype)
    d = _wrap_dim(dim, x.ndim)
    bk = be(x)
    xp = bk.xp
    arr = x._data if x.dtype._category >= 2 else bk.astype(x._data, D.get_default_dtype())
    if not arr.ndim:
        e = xp.ones_like(arr)
    elif not arr.size:
        e = xp.zeros_like(arr)
    elif kernels.accepts(arr):
        e = kernels.softmax.softmax(arr, d)
    elif cuda_softmax.accepts(arr):
        e = cuda_softmax.forward(arr, d, log=False)
    else:
        e = xp.exp(arr - xp.max(arr, axis=d, keepdims=True))
        e /= xp.sum(e, axis=d, keepdims=True)
    r = wrap(e, x.dtype if x.dtype._category >= 2 else D.get_default_dtype())
    if needs_grad(x):
        record("SoftmaxBackward0", _softmax_rule, (x,), r, (r, d))
    return r


def _softmax_arrays(g, r, d):
    if r.ndim and r.size and kernels.accepts(g, r):
        return kernels.softmax.softmax_backward(g, r, d)
    if r.ndim and r.size and cuda_softmax.accepts(g, r):
        return cuda_softmax.backward(g, r, d, log=False)
    gr = g * r
    return gr - r * backend_of_array(r).xp.sum(gr, axis=d if r.ndim else None, keepdims=True)


@on_arrays(_softmax_arrays)
def _softmax_rule(g, r, d):
    gr = g * r
    return gr - r * sum(gr, d, keepdim=True)


def log_softmax(input, dim, dtype=None, _stacklevel=3):
    """``x - logsumexp(x)`` of ``input`` along ``dim`` (torch.log_softmax,
    torch.nn.functional.log_softmax, torch.special.log_softmax); ``dtype`` and the result's
    shape and layout as in ``softmax``."""
    x = input if dtype is None else input.to(dtype)
    d = _wrap_dim(dim, x.ndim)
    bk = be(x)
    xp = bk.xp
    arr = x._data if x.dtype._category >= 2 else bk.astype(x._data, D.get_default_dtype())
    if not arr.ndim or not arr.size:
        out = xp.zeros_like(arr)
    elif kernels.accepts(arr):
        out = kernels.softmax.log_softmax(arr, d)
    elif cuda_softmax.accepts(arr):
        out = cuda_softmax.forward(arr, d, log=True)
    else:
        shifted = arr - xp.max(arr, axis=d, keepdims=True)
        out = shifted - xp.log(xp.sum(xp.exp(shifted), axis=d, keepdims=True))
    r = wrap(out, x.dtype if x.dtype._category >= 2 else D.get_default_dtype())
    if needs_grad(x):
        record("LogSoftmaxBackward0", _log_softmax_rule, (x,), r, (r, d))
    return r


def _log_softmax_arrays(g, r, d):
    if r.ndim and r.size and kernels.accepts(g, r):
        return kernels.softmax.log_softmax_backward(g, r, d)
    if r.ndim and r.size and cuda_softmax.accepts(g, r):
        return cuda_softmax.backward(g, r, d, log=True)
    xp = backend_of_array(r).xp
    return g - xp.exp(r) * xp.sum(g, axis=d if r.ndim else None, keepdims=True)


@on_arrays(_log_softmax_arrays)
def _log_softmax_rule(g, r, d):
    from .elementwise import exp
    return g - exp(r) * sum(g, d, keepdim=True)


def renorm(input, p, dim, maxnorm):
    """``input`` with every slice along ``dim`` whose ``p``-norm (over the other dims)
    exceeds ``maxnorm`` scaled to norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``), the
    others unchanged (torch.renorm).  Floating inputs of 2 or more dims; RuntimeError for
    ``p <= 0``, ``maxnorm < 0``, fewer dims or an integer input, IndexError for ``dim``."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = _wrap_dim(dim, input.ndim)
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    axes = tuple(k for k in range(input.ndim) if k != d)
    n = norm(input.detach(), p, axes, keepdim=True)
    xp = be(input).xp
    factor = xp.where(n._data > maxnorm, maxnorm / (n._data + 1e-7), 1.0).astype(input._data.dtype)
    r = _make(input._data * factor, input.dtype)
    if needs_grad(input):
        record("RenormBackward0", _renorm_rule, (input,), r, (input, p, axes, maxnorm))
    return r


def _renorm_rule(g, x, p, axes, maxnorm):
    from .elementwise import where
    n = norm(x, p, axes, keepdim=True)
    inv = 1.0 / (n + 1e-7)
    factor = inv * maxnorm
    dot = sum(g * x, axes, keepdim=True)
    dn = _norm2_rule(dot, x, n, axes, True) if p == 2 else _norm_rule(dot, x, n, axes, True, p)
    return where(n > maxnorm, factor * g - factor * inv * dn, g)


def renorm_(self, p, dim, maxnorm):
    from ._helpers import inplace
    return inplace(self, renorm, p, dim, maxnorm)


def sum_to_size(self, *size):
    """``self`` summed over the dims that broadcasting ``size`` to ``self.shape`` would
    stretch or add, so that the result has ``size`` (torch.Tensor.sum_to_size); ``self``
    itself when the sizes agree.  RuntimeError when ``size`` does not broadcast to
    ``self``'s shape."""
    from ._helpers import sum_to
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s != 1 and s != shape[lead + k] for k, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    return sum_to(self, size)
