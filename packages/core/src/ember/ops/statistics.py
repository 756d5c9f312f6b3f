"""Order statistics, cumulative ops and counting: median, kthvalue, mode, quantile,
aminmax, nanmean, cumprod, cummax/cummin, logcumsumexp, diff, unique, bincount, histc,
searchsorted and bucketize.

Ops that select elements (median, kthvalue, mode, cummax) send the gradient to the
selected index, as torch does; quantile interpolates between sorted values with ember ops,
so its gradient follows from sort's.
"""

from __future__ import annotations

import math

from .. import _dtype as D
from .. import return_types
from .._autocast import autocast_op
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import on_arrays, record
from ._helpers import be, needs_grad, wrap
from .reduction import _evenly_rule, _indices_rule, amax, amin
from .shape import flip, narrow, reshape, unsqueeze

__all__ = [
    "aminmax", "median", "nanmedian", "kthvalue", "mode", "quantile", "nanquantile", "nanmean", "cumprod",
    "cummax", "cummin", "logcumsumexp", "diff", "unique", "unique_consecutive", "bincount", "histc",
    "searchsorted", "bucketize",
]


def _int64(xp, arr):
    return _make(xp.asarray(arr).astype("int64"), D.int64)


def aminmax(input, *, dim=None, keepdim=False):
    """The named tuple ``(min, max)`` of ``input`` over all elements, or along ``dim`` (with
    ``keepdim`` keeping that dim with size 1), in its dtype (torch.aminmax). An empty
    ``input`` without ``dim`` raises RuntimeError."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    d = () if dim is None else dim
    return return_types.aminmax(amin(input, d, keepdim), amax(input, d, keepdim))


# ---- selections: median, kthvalue, mode ---------------------------------------------

def _select_along(input, dim, keepdim, pick, node_name, result_type):
    """Values and indices chosen by ``pick(xp, sorted_values, order) -> positions`` along
    ``dim`` of a stable sort (ties keep their order)."""
    xp = be(input).xp
    if dim is None:
        flat = reshape(input, (-1,))
        vals, _ = _select_along(flat, 0, False, pick, node_name, result_type)
        return vals
    d = _wrap_dim(dim, max(input.ndim, 1))
    data = input._data if input.ndim else input._data.reshape(1)
    if data.shape[d] == 0:
        raise IndexError(f"Expected reduction dim {d} to have non-zero size.")
    order = xp.argsort(data, axis=d, stable=True)
    ordered = xp.take_along_axis(data, order, axis=d)
    pos = pick(xp, ordered, order, d)
    idx = xp.take_along_axis(order, pos, axis=d)
    vals = xp.take_along_axis(data, idx, axis=d)
    if not keepdim or not input.ndim:
        idx, vals = xp.squeeze(idx, axis=d), xp.squeeze(vals, axis=d)
    values, indices = _make(xp.asarray(vals), input.dtype), _int64(xp, idx)
    if needs_grad(input):
        record(node_name, _indices_rule, (input,), values, (indices, input._data.shape, d, keepdim and input.ndim > 0))
    return result_type(values, indices)


def _nan_last_count(xp, ordered, d):
    return (~xp.isnan(ordered)).sum(axis=d, keepdims=True) if ordered.dtype.kind == "f" else None


def median(input, dim=None, keepdim=False):
    """The lower median of ``input`` (of an even count, the smaller middle value) as a 0-d
    tensor; with ``dim``, the named tuple ``(values, indices)`` along it, ``keepdim``
    keeping that dim with size 1 (indices int64) (torch.median). NaN is the median of any
    row holding one. An empty reduced dim raises IndexError."""
    def pick(xp, ordered, order, d):
        n = ordered.shape[d]
        pos = xp.full(ordered.shape[:d] + (1,) + ordered.shape[d + 1:], (n - 1) // 2)
        if ordered.dtype.kind == "f":  # a row with NaN: its first NaN (sorted last)
            valid = _nan_last_count(xp, ordered, d)
            pos = xp.where(valid < n, valid, pos)
        return pos
    if dim is None:
        return _global(input, pick, "MedianBackward0")
    return _select_along(input, dim, keepdim, pick, "MedianBackward1", return_types.median)


def nanmedian(input, dim=None, keepdim=False):
    """The median of ``input`` ignoring NaN, over all elements or along ``dim`` with
    ``keepdim``, as ``median`` otherwise: NaN only where a row is all NaN (torch.nanmedian)."""
    def pick(xp, ordered, order, d):
        n = ordered.shape[d]
        valid = _nan_last_count(xp, ordered, d)
        if valid is None:
            return xp.full(ordered.shape[:d] + (1,) + ordered.shape[d + 1:], (n - 1) // 2)
        return xp.where(valid > 0, (valid - 1) // 2, 0)
    if dim is None:
        return _global(input, pick, "NanmedianBackward0")
    return _select_along(input, dim, keepdim, pick, "NanmedianBackward1", return_types.nanmedian)


def _global(input, pick, node_name):
    """The median of all elements; its gradient is shared evenly among the elements equal
    to it, as torch's (the forms with ``dim`` pick one index)."""
    if input.numel() == 0:
        return _make(be(input).xp.asarray(math.nan, dtype=input._data.dtype), input.dtype)
    from ..autograd.grad_mode import no_grad
    with no_grad():
        value = _select_along(reshape(input, (-1,)), 0, False, pick, node_name, return_types.median).values
    if needs_grad(input):
        record(node_name, _evenly_rule, (input,), value, (input, value, None, False))
    return value


def kthvalue(input, k, dim=-1, keepdim=False):
    """The named tuple ``(values, indices)`` of the ``k``-th smallest element (1-based) of
    ``input`` along ``dim``, ``keepdim`` keeping that dim with size 1 (indices int64)
    (torch.kthvalue). A ``k`` outside [1, size] raises RuntimeError."""
    n = input.shape[_wrap_dim(dim, max(input.ndim, 1))] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")

    def pick(xp, ordered, order, d):
        return xp.full(ordered.shape[:d] + (1,) + ordered.shape[d + 1:], k - 1)
    return _select_along(input, dim, keepdim, pick, "KthvalueBackward0", return_types.kthvalue)


def mode(input, dim=-1, keepdim=False):
    """The named tuple ``(values, indices)`` of the most frequent value of ``input`` along
    ``dim`` (the smallest among equally frequent ones) and the index of its last occurrence,
    as torch; ``keepdim`` keeps that dim with size 1 (torch.mode)."""
    return _select_along(input, dim, keepdim, _mode_position, "ModeBackward0", return_types.mode)


def _mode_position(xp, ordered, order, d):
    """The sorted position ending the longest run of equal values (the first such run:
    the smallest value); a stable sort puts the largest original index there."""
    moved = xp.moveaxis(ordered, d, -1)
    n = moved.shape[-1]
    steps = xp.arange(n)
    starts = xp.ones(moved.shape, dtype=bool)
    starts[..., 1:] = moved[..., 1:] != moved[..., :-1]
    ends = xp.ones(moved.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    run_start = xp.maximum.accumulate(xp.where(starts, steps, 0), axis=-1)
    length_at_end = xp.where(ends, steps - run_start + 1, 0)
    best = length_at_end.argmax(axis=-1)
    return xp.moveaxis(best[..., None], -1, d)


# ---- quantiles and nan-aware means --------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


@autocast_op("fp32")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles of ``input`` over all elements or along ``dim`` (torch.quantile).

    ``q`` is a float or a 1-d tensor in [0, 1]; a tensor ``q`` adds a leading dim of its
    length. Values are interpolated between the sorted ones by ``interpolation``: 'linear',
    'lower', 'higher', 'nearest' or 'midpoint', as numpy's methods of those names.
    ``keepdim`` keeps the reduced dim with size 1; a row holding NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


@autocast_op("fp32")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles of ``input`` ignoring NaN, over all elements or along ``dim``, with
    ``keepdim`` and ``interpolation`` as in ``quantile``: NaN only where a row is all NaN
    (torch.nanquantile)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    from .elementwise import where
    from .indexing import gather, sort
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    if not input.dtype.is_floating_point:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    xp = be(input).xp
    qs = q._data.astype("float64") if isinstance(q, Tensor) else xp.asarray([float(q)])
    if qs.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if xp.any((qs < 0) | (qs > 1)):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = reshape(input, (-1,)) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, max(input.ndim, 1))
    if x.ndim == 0:
        x = reshape(x, (1,))
    n = x.shape[d]
    if n == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    ordered = sort(x, d).values  # NaN sorts last
    nan = xp.isnan(ordered._data)
    valid = (n - nan.sum(axis=d, keepdims=True)) if ignore_nan else xp.full_like(nan.sum(axis=d, keepdims=True), n)
    outs = []
    for qv in qs:
        rank = qv * xp.maximum(valid - 1, 0)
        lo = xp.floor(rank).astype("int64")
        hi = xp.minimum(lo + 1, xp.maximum(valid - 1, 0))
        frac = rank - lo
        if interpolation == "lower":
            hi, frac = lo, frac * 0
        elif interpolation == "higher":
            lo, frac = xp.ceil(rank).astype("int64"), frac * 0
            hi = lo
        elif interpolation == "nearest":
            lo = xp.round(rank).astype("int64")  # half to even, as torch
            hi, frac = lo, frac * 0
        elif interpolation == "midpoint":
            hi = xp.ceil(rank).astype("int64")
            frac = xp.where(hi > lo, 0.5, 0.0)
        a = gather(ordered, d, _make(lo, D.int64))
        b = gather(ordered, d, _make(hi, D.int64))
        w = _make(xp.asarray(frac, dtype=ordered._data.dtype), ordered.dtype)
        v = a + (b - a) * w
        has_nan = nan.any(axis=d, keepdims=True) if not ignore_nan else (valid == 0)
        v = where(_make(has_nan, D.bool_), math.nan, v)
        if not keepdim:
            v = v.squeeze(d)
        elif dim is None:
            v = reshape(v, (1,) * input.ndim)
        outs.append(v)
    if isinstance(q, Tensor) and q.ndim == 1:
        from .shape import stack
        return stack(outs, 0)
    return outs[0]


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the non-NaN elements of ``input`` over ``dim`` (an int or a tuple; all when
    None), NaN where there are none (torch.nanmean); ``keepdim`` and ``dtype`` as in
    ``sum``. A non-floating ``input`` raises RuntimeError."""
    from .elementwise import isnan, where
    from .reduction import sum as _sum
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype}")
    keep = ~isnan(input)
    total = _sum(where(keep, input, 0.0), dim, keepdim, dtype=dtype)
    count = _sum(keep, dim, keepdim)
    return total / count


# ---- cumulative ops -----------------------------------------------------------------

def cumprod(input, dim, *, dtype=None):
    """The running product of ``input`` along ``dim``, same shape (torch.cumprod). bool and
    integer inputs accumulate in int64 unless ``dtype`` is given. The gradient is exact
    through zeros."""
    d = _wrap_dim(dim, max(input.ndim, 1))
    dt = D.to_dtype(dtype) if dtype is not None else (D.int64 if input.dtype._category < 2 else input.dtype)
    bk = be(input)
    x = input._data if input.ndim else input._data.reshape(1)
    arr = bk.xp.cumprod(x.astype(bk.storage_dtype(dt)), axis=d).reshape(input._data.shape)
    r = wrap(arr, dt)
    if needs_grad(input):
        record("CumprodBackward0", _cumprod_rule, (input,), r, (input, r, d))
    return r


def _cumprod_rule(g, x, r, d):
    from .reduction import cumsum
    from .reduction import sum as _sum
    if x.ndim == 0:
        return g
    if not bool(be(x).xp.any(x._data == 0)):
        return flip(cumsum(flip(g * r, [d]), d), [d]) / x
    # grad_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k, exact when some x_k is 0:
    # [..., i, j] holds x_j where i < j <= ... and 1 elsewhere; its running product along j
    # is prod_{i < k <= j} x_k, multiplied by the product before i
    from .elementwise import where
    from .shape import movedim
    xm, gm = movedim(x, d, -1), movedim(g, d, -1)
    n = xm.shape[-1]
    xp = be(x).xp
    upper = _make(xp.triu(xp.ones((n, n), dtype=bool), 1), D.bool_)
    m = where(upper, unsqueeze(xm, -2), 1.0)
    after = cumprod(m, -1)  # [..., i, j]
    before = cumprod(_shift_right(xm), -1)  # prod_{k < i}
    lower_or_diag = _make(xp.tril(xp.ones((n, n), dtype=bool)).T, D.bool_)  # j >= i
    terms = where(lower_or_diag, after * unsqueeze(gm, -2), 0.0)
    return movedim(before * _sum(terms, -1), -1, d)


def _shift_right(x):
    from .creation import ones
    from .shape import cat
    one = ones(x.shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    return cat([one, narrow(x, -1, 0, x.shape[-1] - 1)], -1)


def cummax(input, dim):
    """The named tuple ``(values, indices)`` of the running maximum of ``input`` along ``dim``
    and the int64 index where it was reached (the last index among equal values, as torch)
    (torch.cummax)."""
    return _cum_extreme(input, dim, True)


def cummin(input, dim):
    """The named tuple ``(values, indices)`` of the running minimum of ``input`` along ``dim``
    and the int64 index where it was reached (the last index among equal values)
    (torch.cummin)."""
    return _cum_extreme(input, dim, False)


def _cum_extreme(input, dim, is_max):
    xp = be(input).xp
    d = _wrap_dim(dim, max(input.ndim, 1))
    x = input._data if input.ndim else input._data.reshape(1)
    moved = xp.moveaxis(x, d, -1)
    n = moved.shape[-1]
    run = (xp.maximum if is_max else xp.minimum).accumulate(moved, axis=-1) if n else moved.copy()
    if moved.dtype.kind == "f":  # NaN propagates and its index sticks
        nan_seen = xp.logical_or.accumulate(xp.isnan(moved), axis=-1) if n else moved != moved
        run = xp.where(nan_seen, xp.nan, run)
    hit = (moved == run) | (xp.isnan(moved) if moved.dtype.kind == "f" else False)
    idx = xp.maximum.accumulate(xp.where(hit, xp.arange(n), 0), axis=-1) if n else xp.zeros(moved.shape, "int64")
    values = _make(xp.ascontiguousarray(xp.moveaxis(run, -1, d)).reshape(input._data.shape), input.dtype)
    indices = _int64(xp, xp.moveaxis(idx, -1, d).reshape(input._data.shape))
    if needs_grad(input):
        record("CummaxBackward0" if is_max else "CumminBackward0", _cum_extreme_rule, (input,), values,
               (indices, input._data.shape, d))
    return (return_types.cummax if is_max else return_types.cummin)(values, indices)


def _cum_extreme_rule(g, indices, shape, d):
    from .creation import zeros
    if not shape:
        return g
    return zeros(shape, dtype=g.dtype, device=g.device).scatter_add(d, indices, g)


def logcumsumexp(input, dim):
    """The running ``log(sum(exp(x)))`` of ``input`` along ``dim``, without overflow
    (torch.logcumsumexp). A non-floating ``input`` raises RuntimeError."""
    d = _wrap_dim(dim, max(input.ndim, 1))
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"logcumsumexp(): expected input to have floating point dtype but got {input.dtype}")
    xp = be(input).xp
    x = input._data if input.ndim else input._data.reshape(1)
    arr = xp.logaddexp.accumulate(x, axis=d) if x.shape[d] else x.copy()
    r = _make(arr.reshape(input._data.shape), input.dtype)
    if needs_grad(input):
        record("LogcumsumexpBackward0", _logcumsumexp_rule, (input,), r, (input, r, d))
    return r


def _logcumsumexp_arrays(g, x, r, d):
    # grad_i = sum_{j >= i} g_j exp(x_i - r_j), summed in log space for the positive and
    # the negative parts of g apart (the terms span many orders of magnitude)
    import numpy
    if x.ndim == 0:
        return g

    def part(gp):
        logs = numpy.flip(numpy.log(gp) - r, d)  # log(0) = -inf: a zero part adds nothing
        return numpy.exp(x + numpy.flip(numpy.logaddexp.accumulate(logs, axis=d), d))
    return part(numpy.maximum(g, 0)) - part(numpy.maximum(-g, 0))


@on_arrays(_logcumsumexp_arrays)
def _logcumsumexp_rule(g, x, r, d):
    # the same sum as a [..., i, j] matrix of exp(x_i - r_j) <= 1 (j >= i): quadratic in
    # the length of ``d``, but differentiable again, for create_graph
    from .elementwise import exp, where
    from .reduction import sum as _sum
    from .shape import movedim
    if x.ndim == 0:
        return g
    xm, rm, gm = movedim(x, d, -1), movedim(r, d, -1), movedim(g, d, -1)
    n = xm.shape[-1]
    upper = _make(be(x).xp.triu(be(x).xp.ones((n, n), dtype=bool)), D.bool_)
    m = where(upper, exp(unsqueeze(xm, -1) - unsqueeze(rm, -2)), 0.0)
    return movedim(_sum(m * unsqueeze(gm, -2), -1), -1, d)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference of ``input`` along ``dim``, after ``prepend`` and
    ``append`` (tensors) are joined on at its ends (torch.diff): the dim shrinks by ``n``.
    bool tensors give logical xor of neighbours."""
    from .shape import cat
    d = _wrap_dim(dim, input.ndim)
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, input, append) if t is not None]
        input = cat(parts, d)
    for _ in range(n):
        m = input.shape[d]
        if m == 0:
            break
        hi, lo = narrow(input, d, 1, m - 1), narrow(input, d, 0, m - 1)
        input = (hi != lo) if input.dtype is D.bool_ else hi - lo
    return input


# ---- unique and counting ------------------------------------------------------------

def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of ``input`` in ascending order, as a 1-d tensor; with ``dim``, the
    distinct slices along it (torch.unique).

    ``sorted`` is accepted; the values are always sorted (torch's CPU result is too). With
    ``return_inverse`` the int64 indices mapping each element (or slice) to its value are
    returned too, with ``return_counts`` the int64 count of each value: a tuple then."""
    xp = be(input).xp
    data = input._data
    if dim is None:
        vals, inv, counts = xp.unique(data.reshape(-1), return_inverse=True, return_counts=True)
        inv = inv.reshape(data.shape)
    else:
        d = _wrap_dim(dim, input.ndim)
        vals, inv, counts = xp.unique(data, return_inverse=True, return_counts=True, axis=d)
        inv = inv.reshape(-1)
    out = [_make(vals, input.dtype)]
    if return_inverse:
        out.append(_int64(xp, inv))
    if return_counts:
        out.append(_int64(xp, counts))
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """One of each run of equal consecutive values of ``input`` (slices along ``dim`` when
    given) (torch.unique_consecutive). ``return_inverse`` adds the int64 run index of each
    element, ``return_counts`` the int64 length of each run: a tuple then."""
    xp = be(input).xp
    if dim is None:
        flat = input._data.reshape(-1)
        change = xp.ones(flat.shape, dtype=bool)
        change[1:] = flat[1:] != flat[:-1]
        vals = flat[change]
        shape_inv = input._data.shape
    else:
        d = _wrap_dim(dim, input.ndim)
        moved = xp.moveaxis(input._data, d, 0)
        flat = moved.reshape(moved.shape[0], -1)
        change = xp.ones(flat.shape[0], dtype=bool)
        change[1:] = (flat[1:] != flat[:-1]).any(axis=1)
        vals = xp.moveaxis(moved[change], 0, d)
        shape_inv = (moved.shape[0],)
    run = xp.cumsum(change) - 1
    out = [_make(xp.ascontiguousarray(vals), input.dtype)]
    if return_inverse:
        out.append(_int64(xp, run.reshape(shape_inv)))
    if return_counts:
        out.append(_int64(xp, xp.diff(xp.append(xp.flatnonzero(change), change.shape[0]))))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(input, weights=None, minlength=0):
    """How often each non-negative integer occurs in the 1-d integer tensor ``input``, as an
    int64 tensor of length ``max(input) + 1`` (at least ``minlength``) (torch.bincount).

    With ``weights`` (of ``input``'s shape) the weights are summed instead: float32 for
    float32 weights, float64 for the others, as torch. A negative value or an ``input`` that
    is not 1-d integral raises RuntimeError."""
    if input.ndim != 1 or input.dtype._category != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    xp = be(input).xp
    if input.numel() and int(input._data.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _int64(xp, xp.bincount(input._data, minlength=minlength))
    dt = D.float32 if weights.dtype is D.float32 else D.float64
    arr = xp.bincount(input._data, weights=weights._data.astype("float64"), minlength=minlength)
    return wrap(arr, dt)


def histc(input, bins=100, min=0, max=0):
    """A histogram of the elements of ``input`` in ``bins`` equal bins between ``min`` and
    ``max`` (the data's range when they are equal); elements outside are ignored
    (torch.histc). The result is 1-d of length ``bins`` in ``input``'s dtype. A non-floating
    ``input``, or ``min > max``, raises RuntimeError."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype}'")
    xp = be(input).xp
    data = input._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and data.size:  # both 0 (or equal): the data's range
        lo, hi = float(data.min()), float(data.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    inside = data[(data >= lo) & (data <= hi)]
    counts, _ = xp.histogram(inside, bins=bins, range=(lo, hi))
    return _make(counts.astype(data.dtype), input.dtype)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value of ``input`` (a tensor or a number), the index in the last dim of
    ``sorted_sequence`` where it would be inserted to keep it sorted (torch.searchsorted).

    ``sorted_sequence`` is 1-d, or ``[*, n]`` with ``input`` ``[*, m]`` matching its leading dims.
    ``right`` (or ``side='right'``) puts the index after equal values; ``sorter`` holds the
    indices that sort an unsorted ``sorted_sequence`` along its last dim. The result is
    int64, or int32 with ``out_int32``."""
    xp = be(sorted_sequence).xp
    if side is not None:
        right = side == "right"
    seq = sorted_sequence._data
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    scalar = not isinstance(input, Tensor)
    vals = xp.asarray(input) if scalar else input._data
    how = "right" if right else "left"
    if seq.ndim == 1:
        idx = xp.searchsorted(seq, vals, side=how)
    else:
        flat_seq = seq.reshape(-1, seq.shape[-1])
        flat_vals = vals.reshape(flat_seq.shape[0], -1)
        idx = xp.stack([xp.searchsorted(s, v, side=how) for s, v in zip(flat_seq, flat_vals)]).reshape(vals.shape)
    dt = D.int32 if out_int32 else D.int64
    return _make(xp.asarray(idx).astype(dt.np), dt)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket index of each value of ``input`` among the sorted 1-d ``boundaries``: i with
    ``boundaries[i-1] < x <= boundaries[i]``, or with ``right`` ``boundaries[i-1] <= x <
    boundaries[i]`` (torch.bucketize). int64, or int32 with ``out_int32``. ``boundaries`` of
    another number of dims raises RuntimeError."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)

