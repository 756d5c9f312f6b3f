"""Pooling in 1, 2 and 3 dimensions (torch.nn.functional max_pool*d, avg_pool*d,
adaptive_avg_pool*d, adaptive_max_pool*d, max_unpool*d, lp_pool*d).

Windows are strided views of the (padded) input, ``[N, C, *out, *kernel]``; a pool is one
reduction over the kernel axes, and its gradient is spread back with one loop over the
kernel offsets (never over cells).  Each pool and its backward are a pair of ops whose
rules are each other, so double backward works.  Window and output sizes follow torch's
docs: ``out = (L + 2*padding - dilation*(kernel-1) - 1) / stride + 1``, rounded down, or up
with ``ceil_mode`` as long as the last window starts inside the input or the left padding.

numpy float32/float64 arrays take the compiled kernels (cpu/kernels/pool.py) for max and
average pooling and their backwards, and for global average pooling; cupy float32/float64
arrays take the CUDA kernels (cuda/kernels/pool.py) for max and average pooling and their
backwards. All save the same argmax form (the kernel offset in the window), so the rules
are shared.
"""

from __future__ import annotations

import itertools
import math

from .. import _dtype as D
from .._autocast import autocast_op
from .._memory_format import keep_format
from .._tensor import _make
from ..backends import NUMPY, backend_of_array
from ..cpu import kernels
from ..cuda.kernels import pool as cuda_pool
from ._helpers import _ndarray, be, needs_grad, record, wrap

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _xp(arr):
    """The array module of a raw array (rules' array forms get arrays, not tensors)."""
    return NUMPY.xp if type(arr) is _ndarray else backend_of_array(arr).xp


def _ntuple(v, n, what, name):
    """``v`` (an int or a sequence of 1 or ``n`` ints) as ``n`` ints."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]),) * n
        if len(v) != n:
            raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of {n} ints, "
                               f"but got {tuple(v)}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _out_len(size, k, s, p, d, ceil_mode):
    num = size + 2 * p - (d * (k - 1) + 1)
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside input or left padding
        out -= 1
    return out


class _Geom:
    """Shapes of one N-d pooling: kernel, stride, padding, dilation (tuples of ``nd``), the
    input's spatial size, the output size and the extra right padding ceil_mode needs."""

    __slots__ = ("k", "s", "p", "d", "size", "out", "extra", "nd", "padded", "offsets", "tiles")

    def __init__(self, size, k, s, p, d, ceil_mode):
        self.nd = len(size)
        self.k, self.s, self.p, self.d, self.size = k, s, p, d, tuple(size)
        self.out = tuple(_out_len(*a, ceil_mode) for a in zip(size, k, s, p, d))
        # extra right padding so that every window lies inside the array
        self.extra = tuple(max(0, (o - 1) * s_ + d_ * (k_ - 1) + 1 - (n + 2 * p_))
                           for o, n, k_, s_, p_, d_ in zip(self.out, size, k, s, p, d))
        self.padded = tuple(n + 2 * p_ + e for n, p_, e in zip(size, p, self.extra))
        self.offsets = list(itertools.product(*(range(k_) for k_ in k)))  # row-major, as the kernel axes
        # kernel == stride, no dilation, windows covering the padded input exactly
        self.tiles = k == s and all(d_ == 1 for d_ in d) and all(
            n == o * k_ for n, o, k_ in zip(self.padded, self.out, k))

    @property
    def bordered(self) -> bool:
        return any(self.p) or any(self.extra)

    def pad(self, xp, x, value):
        if not self.bordered:
            return x
        widths = ((0, 0), (0, 0)) + tuple((p_, p_ + e) for p_, e in zip(self.p, self.extra))
        return xp.pad(x, widths, constant_values=value)

    def windows(self, xp, xpad):
        """``[N, C, *out, *kernel]`` strided view of the padded input."""
        st = xpad.strides
        strides = st[:2] + tuple(t * s_ for t, s_ in zip(st[2:], self.s)) + tuple(
            t * d_ for t, d_ in zip(st[2:], self.d))
        return xp.lib.stride_tricks.as_strided(xpad, xpad.shape[:2] + self.out + self.k, strides)

    def offset(self, kidx):
        """The slice of the padded input that kernel offset ``kidx`` sees, one cell per output."""
        return (slice(None), slice(None)) + tuple(
            slice(i * d_, i * d_ + s_ * (o - 1) + 1, s_) for i, d_, s_, o in zip(kidx, self.d, self.s, self.out))

    def crop(self, xp, dx):
        if not self.bordered:
            return dx
        return xp.ascontiguousarray(dx[(slice(None), slice(None)) + tuple(
            slice(p_, p_ + n) for p_, n in zip(self.p, self.size))])

    def tile_view(self, xp, n, c, dtype):
        """An empty array covering the first ``out*kernel`` cells of the padded input and its
        ``[N, C, o1, k1, o2, k2, ...]`` view (windows side by side)."""
        inter = tuple(v for pair in zip(self.out, self.k) for v in pair)
        dx = xp.empty((n, c) + tuple(o * k_ for o, k_ in zip(self.out, self.k)), dtype=dtype)
        return dx, dx.reshape((n, c) + inter)  # the array owns its memory: the gradient can be kept as is

    def tile_slot(self, kidx):
        """Index of kernel offset ``kidx`` in the tile array of ``tile_view``."""
        return (slice(None), slice(None)) + tuple(v for i in kidx for v in (slice(None), i))

    def embed(self, xp, dx, n, c):
        """``dx`` (covering the first ``out*kernel`` cells) inside zeros of the padded shape."""
        if dx.shape[2:] == self.padded:
            return dx
        full = xp.zeros((n, c) + self.padded, dtype=dx.dtype)
        full[(slice(None), slice(None)) + tuple(slice(0, m) for m in dx.shape[2:])] = dx
        return full

    def scatter(self, xp, dwin, dtype):
        """Add window gradients ``[N, C, *out, *kernel]`` back onto the input ``[N, C, *size]``."""
        n, c = dwin.shape[:2]
        nd = self.nd
        if self.k == self.s and all(d_ == 1 for d_ in self.d):
            order = (0, 1) + tuple(a for i in range(nd) for a in (2 + i, 2 + nd + i))
            inter_shape = (n, c) + tuple(o * k_ for o, k_ in zip(self.out, self.k))
            dx = self.embed(xp, xp.ascontiguousarray(dwin.transpose(order)).reshape(inter_shape), n, c)
        else:
            dx = xp.zeros((n, c) + self.padded, dtype=dtype)
            lead = (slice(None),) * (2 + nd)
            for kidx in self.offsets:
                dx[self.offset(kidx)] += dwin[lead + kidx]
        return self.crop(xp, dx)


def _args(input, nd, kernel_size, stride, padding, dilation, name):
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    empty_stride = stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
    s = k if empty_stride else _ntuple(stride, nd, "stride", name)
    p, d = _ntuple(padding, nd, "padding", name), _ntuple(dilation, nd, "dilation", name)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, "
                           f"but got: {list(input.shape)}")
    if input.dtype is D.bool_:
        raise RuntimeError(f"\"{name}\" not implemented for 'Bool'")
    if min(k) <= 0:
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got {k}")
    if min(s) <= 0:
        raise RuntimeError(f"{name}: stride must be greater than zero, but got {s}")
    if min(d) <= 0:
        raise RuntimeError(f"{name}: dilation must be greater than zero, but got {d}")
    for p_, k_, d_ in zip(p, k, d):
        if p_ < 0 or p_ * 2 > k_:  # torch bounds it by the kernel, dilated or not
            if d_ == 1:
                raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p_}, "
                                   f"kernel_size={k_} and dilation={d_}")
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got pad={p}, "
                               f"kernel_size={k}")
    return k, s, p, d


def _batched(input, nd):
    unbatched = input.ndim == nd + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _check_out(x, geo):
    if min(geo.out) < 1 or min(x.shape[1:], default=1) < 1:
        size = "x".join(str(v) for v in (x.shape[1],) + geo.size)
        got = "x".join(str(v) for v in (x.shape[1],) + geo.out)
        raise RuntimeError(f"Given input size: ({size}). Calculated output size: ({got}). Output size is too small")


def _rank_dtype(xp, kk):
    return xp.int16 if kk < 2 ** 15 else xp.int64


def _first_max(xp, xw, floating):
    """Maximum over axis 0 of ``[K, M]`` windows and the offset of its first maximum; a NaN
    is its window's maximum and, as torch's CPU kernels scan, the last NaN wins."""
    kk = xw.shape[0]
    best = xw.max(0)
    rank = xp.arange(kk - 1, -1, -1, dtype=_rank_dtype(xp, kk)).reshape(kk, 1)
    arg = (kk - 1) - ((xw == best) * rank).max(0)
    if floating:
        nan = xp.isnan(best)
        if nan.any():
            up = xp.arange(kk, dtype=rank.dtype).reshape(kk, 1)
            arg = xp.where(nan, (xp.isnan(xw) * up).max(0), arg)
    return best, arg.astype(rank.dtype, copy=False)


# ---- max pool ----------------------------------------------------------------------

def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode, return_indices, name):
    k, s, p, d = _args(input, nd, kernel_size, stride, padding, dilation, name)
    x, unbatched = _batched(input, nd)
    geo = _Geom(x.shape[2:], k, s, p, d, ceil_mode)
    _check_out(x, geo)
    xp = be(x).xp
    arr = x._data
    if kernels.accepts(arr):
        best, arg, idx = kernels.pool.max_forward(arr, geo, _rank_dtype(xp, math.prod(k)), return_indices)
        return _max_result(x, best, arg, idx, geo, unbatched, return_indices)
    if cuda_pool.accepts(arr):
        best, arg, idx = cuda_pool.max_forward(arr, geo, _rank_dtype(xp, math.prod(k)), return_indices)
        return _max_result(x, best, arg, idx, geo, unbatched, return_indices)
    floating = x.dtype.is_floating_point
    low = -xp.inf if floating else xp.iinfo(arr.dtype).min
    xpad = geo.pad(xp, arr, low)
    n, c = arr.shape[:2]
    # one copy of the windows, offsets first: every later pass is over contiguous rows
    order = tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2 + nd))
    xw = xp.ascontiguousarray(geo.windows(xp, xpad).transpose(order)).reshape(len(geo.offsets), -1)
    best, arg = _first_max(xp, xw, floating)
    shape = (n, c) + geo.out
    best, arg = best.reshape(shape), arg.reshape(shape)
    if geo.bordered and (best == low).any():
        # a window holding only the lowest value: torch keeps its first cell inside the input
        arg = xp.where(best == low, _first_inside(xp, geo), arg).astype(arg.dtype, copy=False)
    return _max_result(x, best, arg, _flat_indices(xp, arg, geo) if return_indices else None, geo, unbatched,
                       return_indices)


def _max_result(x, best, arg, idx, geo, unbatched, return_indices):
    """The output tensor (and indices) of a max pool, its node recorded."""
    r = _make(best, x.dtype)
    if needs_grad(x):
        record(f"MaxPool{max(geo.nd, 2)}DWithIndicesBackward0", _max_rule, (x,), r, (arg, geo))
    out = r.squeeze(0) if unbatched else r
    if not return_indices:
        return out
    idx = _make(idx, D.int64)
    return out, (idx.squeeze(0) if unbatched else idx)


def _first_inside(xp, geo):
    """``[*out]`` kernel offset (flat) of the first window cell inside the input."""
    flat = 0
    for i in range(geo.nd):
        start = xp.arange(geo.out[i]) * geo.s[i] - geo.p[i]
        ki = xp.maximum(0, -(start // geo.d[i]))  # ceil(-start / d) for negative starts
        shape = [1] * geo.nd
        shape[i] = -1
        flat = flat * geo.k[i] + ki.reshape(shape)
    return flat


def _flat_indices(xp, arg, geo):
    """int64 index into the flattened input plane of each window's chosen kernel offset."""
    a = arg.astype(xp.int64)
    idx, plane = 0, 1
    for i in reversed(range(geo.nd)):
        ki, a = a % geo.k[i], a // geo.k[i]
        shape = [1] * geo.nd
        shape[i] = -1
        pos = (xp.arange(geo.out[i], dtype=xp.int64) * geo.s[i] - geo.p[i]).reshape(shape) + ki * geo.d[i]
        idx = idx + pos * plane
        plane *= geo.size[i]
    return xp.ascontiguousarray(idx)


def _max_unpool_array(xp, ga, a, geo):
    """Send each gradient cell ``[N, C, *out]`` to the input cell its window's maximum came from."""
    if kernels.accepts(ga):
        return kernels.pool.max_backward(ga, a, geo)
    if cuda_pool.accepts(ga):
        return cuda_pool.max_backward(ga, a, geo)
    n, c = ga.shape[:2]
    if geo.k == geo.s and all(d_ == 1 for d_ in geo.d):
        # windows do not overlap: write each kernel offset's share into a strided view
        dx, tiles = geo.tile_view(xp, n, c, ga.dtype)
        finite = bool(xp.isfinite(ga).all()) if ga.dtype.kind in "fc" else True
        zero = ga.dtype.type(0)
        for j, kidx in enumerate(geo.offsets):
            if finite:
                xp.multiply(ga, a == j, out=tiles[geo.tile_slot(kidx)])
            else:  # inf * 0 would leave NaN where no gradient goes
                tiles[geo.tile_slot(kidx)] = xp.where(a == j, ga, zero)
        dx = geo.embed(xp, dx, n, c)
    else:
        dx = xp.zeros((n, c) + geo.padded, dtype=ga.dtype)
        zero = ga.dtype.type(0)
        for j, kidx in enumerate(geo.offsets):
            dx[geo.offset(kidx)] += xp.where(a == j, ga, zero)
    return geo.crop(xp, dx)


def _max_gather_array(xp, gg, a, geo):
    """The gradient cell each window's maximum came from, ``[N, C, *out]``."""
    win = geo.windows(xp, geo.pad(xp, gg, 0))
    flat = win.reshape(win.shape[:2 + geo.nd] + (-1,))
    return xp.take_along_axis(flat, a[..., None].astype(xp.int64), axis=-1)[..., 0]


def _max_rule(g, arg, geo):
    r = _make(_max_unpool_array(be(g).xp, g._data, arg, geo), g.dtype)
    if needs_grad(g):
        record(f"MaxPool{max(geo.nd, 2)}DWithIndicesBackwardBackward0", _max_gather_rule, (g,), r, (arg, geo))
    return r


def _max_gather_rule(gg, arg, geo):
    r = _make(_max_gather_array(be(gg).xp, gg._data, arg, geo), gg.dtype)
    if needs_grad(gg):
        record(f"MaxPool{max(geo.nd, 2)}DGatherBackward0", _max_rule, (gg,), r, (arg, geo))
    return r


_max_rule.on_arrays = lambda g, arg, geo: _max_unpool_array(_xp(g), g, arg, geo)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-d max pooling: the maximum of each window (torch.nn.functional.max_pool1d).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``), any dtype but bool; the output is ``[N,
    C, L_out]`` of its dtype, each size ``floor((size + 2*padding - dilation*(kernel_size - 1) -
    1) / stride) + 1`` (ceil with ``ceil_mode``). ``kernel_size``: the window, an int (or a
    1-tuple). ``stride``: the step, an int an int (or a 1-tuple); None (or empty) means
    ``kernel_size``. ``padding``: implicit ``-inf`` cells on each side, at most half the kernel.
    ``dilation``: the spacing of the window's cells. ``ceil_mode``: round the output size up; a
    window must still start inside the input or its left padding. ``return_indices``: also
    return the int64 index of each maximum, flat into ``L`` of its plane, as max_unpool1d takes;
    the result is then ``(values, indices)``.

    The gradient goes to the first maximum of each window; a NaN is the maximum. RuntimeError
    for an input of other dims, non-positive kernel, stride or dilation, too much padding or an
    empty output."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-d max pooling: the maximum of each window (torch.nn.functional.max_pool2d).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), any dtype but bool; the output is
    ``[N, C, H_out, W_out]`` of its dtype, each size ``floor((size + 2*padding -
    dilation*(kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``). ``kernel_size``:
    the window, an int or a pair. ``stride``: the step, an int an int or a pair; None (or empty)
    means ``kernel_size``. ``padding``: implicit ``-inf`` cells on each side, at most half the
    kernel. ``dilation``: the spacing of the window's cells. ``ceil_mode``: round the output
    size up; a window must still start inside the input or its left padding. ``return_indices``:
    also return the int64 index of each maximum, flat into ``H*W`` of its plane, as max_unpool2d
    takes; the result is then ``(values, indices)``.

    The gradient goes to the first maximum of each window; a NaN is the maximum. RuntimeError
    for an input of other dims, non-positive kernel, stride or dilation, too much padding or an
    empty output."""
    out = _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool2d")
    return keep_format(input, out)


@autocast_op("fp32")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-d max pooling: the maximum of each window (torch.nn.functional.max_pool3d).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``), any dtype but bool (float32
    under autocast); the output is ``[N, C, D_out, H_out, W_out]`` of its dtype, each size
    ``floor((size + 2*padding - dilation*(kernel_size - 1) - 1) / stride) + 1`` (ceil with
    ``ceil_mode``). ``kernel_size``: the window, an int or a triple. ``stride``: the step, an
    int an int or a triple; None (or empty) means ``kernel_size``. ``padding``: implicit
    ``-inf`` cells on each side, at most half the kernel. ``dilation``: the spacing of the
    window's cells. ``ceil_mode``: round the output size up; a window must still start inside
    the input or its left padding. ``return_indices``: also return the int64 index of each
    maximum, flat into ``D*H*W`` of its plane, as max_unpool3d takes; the result is then
    ``(values, indices)``.

    The gradient goes to the first maximum of each window; a NaN is the maximum. RuntimeError
    for an input of other dims, non-positive kernel, stride or dilation, too much padding or an
    empty output."""
    out = _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool3d")
    return keep_format(input, out)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool1d that always returns the indices too
    (torch.nn.functional.max_pool1d_with_indices).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``), any dtype but bool; the output is ``[N,
    C, L_out]`` of its dtype, each size ``floor((size + 2*padding - dilation*(kernel_size - 1) -
    1) / stride) + 1`` (ceil with ``ceil_mode``). ``kernel_size``: the window, an int (or a
    1-tuple). ``stride``: the step, an int an int (or a 1-tuple); None (or empty) means
    ``kernel_size``. ``padding``: implicit ``-inf`` cells on each side, at most half the kernel.
    ``dilation``: the spacing of the window's cells. ``ceil_mode``: round the output size up; a
    window must still start inside the input or its left padding. Returns ``(values, indices)``;
    ``return_indices`` is accepted and ignored (always True).

    The gradient goes to the first maximum of each window; a NaN is the maximum. RuntimeError
    for an input of other dims, non-positive kernel, stride or dilation, too much padding or an
    empty output."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool2d that always returns the indices too
    (torch.nn.functional.max_pool2d_with_indices).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), any dtype but bool; the output is
    ``[N, C, H_out, W_out]`` of its dtype, each size ``floor((size + 2*padding -
    dilation*(kernel_size - 1) - 1) / stride) + 1`` (ceil with ``ceil_mode``). ``kernel_size``:
    the window, an int or a pair. ``stride``: the step, an int an int or a pair; None (or empty)
    means ``kernel_size``. ``padding``: implicit ``-inf`` cells on each side, at most half the
    kernel. ``dilation``: the spacing of the window's cells. ``ceil_mode``: round the output
    size up; a window must still start inside the input or its left padding. Returns ``(values,
    indices)``; ``return_indices`` is accepted and ignored (always True).

    The gradient goes to the first maximum of each window; a NaN is the maximum. RuntimeError
    for an input of other dims, non-positive kernel, stride or dilation, too much padding or an
    empty output."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@autocast_op("fp32")
def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """max_pool3d that always returns the indices too
    (torch.nn.functional.max_pool3d_with_indices).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``), any dtype but bool (float32
    under autocast); the output is ``[N, C, D_out, H_out, W_out]`` of its dtype, each size
    ``floor((size + 2*padding - dilation*(kernel_size - 1) - 1) / stride) + 1`` (ceil with
    ``ceil_mode``). ``kernel_size``: the window, an int or a triple. ``stride``: the step, an
    int an int or a triple; None (or empty) means ``kernel_size``. ``padding``: implicit
    ``-inf`` cells on each side, at most half the kernel. ``dilation``: the spacing of the
    window's cells. ``ceil_mode``: round the output size up; a window must still start inside
    the input or its left padding. Returns ``(values, indices)``; ``return_indices`` is accepted
    and ignored (always True).

    The gradient goes to the first maximum of each window; a NaN is the maximum. RuntimeError
    for an input of other dims, non-positive kernel, stride or dilation, too much padding or an
    empty output."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- average pool ------------------------------------------------------------------

def _avg_pool(input, nd, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, name):
    k, s, p, d = _args(input, nd, kernel_size, stride, padding, 1, name)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    x, unbatched = _batched(input, nd)
    geo = _Geom(x.shape[2:], k, s, p, d, ceil_mode)
    _check_out(x, geo)
    xp = be(x).xp
    if divisor_override is not None:
        div = float(divisor_override)
    else:
        # cells of each window inside the input (with its zero padding when counted);
        # cells ceil_mode adds past the padding never count
        div = 1
        for i in range(nd):
            start = xp.arange(geo.out[i]) * s[i] - p[i]
            lo, hi = (-p[i], geo.size[i] + p[i]) if count_include_pad else (0, geo.size[i])
            cnt = xp.minimum(start + k[i], hi) - xp.maximum(start, lo)
            shape = [1] * nd
            shape[i] = -1
            div = div * cnt.reshape(shape)
        # counts in the type the sums divide in: float32 for the half types (bfloat16 would
        # round a count above 256)
        div = div.astype(xp.float32 if x.dtype in (D.float16, D.bfloat16) else x._data.dtype)
    r = _avg_forward(x, geo, div)
    return r.squeeze(0) if unbatched else r


def _avg_array(xp, a, geo, div):
    if kernels.accepts(a):
        return kernels.pool.avg_forward(a, geo, div)
    if cuda_pool.accepts(a):
        return cuda_pool.avg_forward(a, geo, div)
    win = geo.windows(xp, geo.pad(xp, a, 0))
    out = win.sum(axis=tuple(range(2 + geo.nd, 2 + 2 * geo.nd)), dtype=a.dtype) / div
    return xp.ascontiguousarray(out.astype(a.dtype, copy=False))


def _avg_scatter_array(xp, ga, geo, div):
    if kernels.accepts(ga):
        return kernels.pool.avg_backward(ga, geo, div)
    if cuda_pool.accepts(ga):
        return cuda_pool.avg_backward(ga, geo, div)
    gd = (ga / div).astype(ga.dtype, copy=False)
    dwin = xp.broadcast_to(gd.reshape(gd.shape + (1,) * geo.nd), gd.shape + geo.k)
    return geo.scatter(xp, dwin, ga.dtype)


def _avg_forward(x, geo, div):
    r = _make(_avg_array(be(x).xp, x._data, geo, div), x.dtype)
    if needs_grad(x):
        record(f"AvgPool{max(geo.nd, 2)}DBackward0", _avg_rule, (x,), r, (geo, div))
    return r


def _avg_rule(g, geo, div):
    r = _make(_avg_scatter_array(be(g).xp, g._data, geo, div), g.dtype)
    if needs_grad(g):
        record(f"AvgPool{max(geo.nd, 2)}DBackwardBackward0", lambda gg, geo_, div_: _avg_forward(gg, geo_, div_),
               (g,), r, (geo, div))
    return r


_avg_rule.on_arrays = lambda g, geo, div: _avg_scatter_array(_xp(g), g, geo, div)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-d average pooling: the mean of each window (torch.nn.functional.avg_pool1d).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``); the output is ``[N, C, L_out]`` of its
    dtype, sizes as max_pool1d's without dilation. ``kernel_size``: the window, an int (or a
    1-tuple). ``stride``: an int (or a 1-tuple); None means ``kernel_size``. ``padding``:
    implicit zeros on each side, at most half the kernel. ``ceil_mode``: round the output size
    up; cells it adds past the padding never count in the divisor. ``count_include_pad``: count
    the zero padding in each divisor (default True).

    Integer inputs give integer means rounded toward zero. RuntimeError for an input of other
    dims, non-positive sizes, too much padding or an empty output."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-d average pooling: the mean of each window (torch.nn.functional.avg_pool2d).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``); the output is ``[N, C, H_out,
    W_out]`` of its dtype, sizes as max_pool2d's without dilation. ``kernel_size``: the window,
    an int or a pair. ``stride``: an int or a pair; None means ``kernel_size``. ``padding``:
    implicit zeros on each side, at most half the kernel. ``ceil_mode``: round the output size
    up; cells it adds past the padding never count in the divisor. ``count_include_pad``: count
    the zero padding in each divisor (default True). ``divisor_override``: when given (non-zero;
    RuntimeError for 0), every window's sum is divided by it instead.

    Integer inputs give integer means rounded toward zero. RuntimeError for an input of other
    dims, non-positive sizes, too much padding or an empty output."""
    out = _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
        "avg_pool2d")
    return keep_format(input, out)


@autocast_op("fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-d average pooling: the mean of each window (torch.nn.functional.avg_pool3d).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``) (float32 under autocast); the
    output is ``[N, C, D_out, H_out, W_out]`` of its dtype, sizes as max_pool3d's without
    dilation. ``kernel_size``: the window, an int or a triple. ``stride``: an int or a triple;
    None means ``kernel_size``. ``padding``: implicit zeros on each side, at most half the
    kernel. ``ceil_mode``: round the output size up; cells it adds past the padding never count
    in the divisor. ``count_include_pad``: count the zero padding in each divisor (default
    True). ``divisor_override``: when given (non-zero; RuntimeError for 0), every window's sum
    is divided by it instead.

    Integer inputs give integer means rounded toward zero. RuntimeError for an input of other
    dims, non-positive sizes, too much padding or an empty output."""
    out = _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
        "avg_pool3d")
    return keep_format(input, out)


# ---- adaptive pools ----------------------------------------------------------------

def _adaptive_sizes(input, output_size, nd, name):
    """The output's spatial size (None keeps the input's) after torch's checks."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(input.shape)}")
    sizes = tuple(input.shape[-nd:])
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise RuntimeError(f"{name}(): output_size must have {nd} elements, but got {len(output_size)}")
        out = tuple(n if o is None else int(o) for o, n in zip(output_size, sizes))
    else:
        out = sizes if output_size is None else (int(output_size),) * nd
    for dim in range(1 if input.ndim == nd + 2 else 0, input.ndim):
        if input.shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                               f"but input has sizes {list(input.shape)} with dimension {dim} being empty")
    if min(out) < 0:
        raise RuntimeError(f"{name}(): output_size must be non-negative, but got {list(out)}")
    return sizes, out


def _bounds(xp, n_in, n_out):
    """torch's adaptive window of each output cell: [floor(i*L/out), ceil((i+1)*L/out))."""
    i = xp.arange(n_out)
    return (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)


def _pool_matrix(xp, n_in, n_out, dtype):
    """``[n_out, n_in]`` averaging matrix of the adaptive windows."""
    lo, hi = _bounds(xp, n_in, n_out)
    cols = xp.arange(n_in)
    inside = (cols >= lo.reshape(-1, 1)) & (cols < hi.reshape(-1, 1))
    return (inside / (hi - lo).reshape(-1, 1)).astype(dtype)


def _adaptive_avg(input, output_size, nd, name):
    sizes, out = _adaptive_sizes(input, output_size, nd, name)
    dims = tuple(range(-nd, 0))
    if all(o == 1 for o in out):
        if kernels.accepts(input._data):
            r = _global_mean_kernel(input, nd)
            if r is not None:
                return r
        from .reduction import mean
        return mean(input, dims, keepdim=True)
    if all(o > 0 and n % o == 0 for n, o in zip(sizes, out)):
        k = tuple(n // o for n, o in zip(sizes, out))
        return _avg_pool(input, nd, k, k, 0, False, True, None, name)
    from .linalg import matmul
    xp = be(input).xp
    x = input
    for i, (n, o) in enumerate(zip(sizes, out)):
        if n == o:
            continue
        pt = wrap(xp.ascontiguousarray(_pool_matrix(xp, n, o, input._data.dtype).T), input.dtype)
        axis = input.ndim - nd + i
        x = matmul(x.movedim(axis, -1), pt).movedim(-1, axis)
    return x.contiguous()


def _global_mean_kernel(input, nd):
    """``mean(input, last nd dims, keepdim=True)`` by the compiled kernel, recorded as that
    mean (torch pools to one cell with a mean as well); None for layouts it does not take."""
    from .reduction import _mean_rule
    vals = kernels.pool.spatial_mean(input._data, nd)
    if vals is None:
        return None
    r = _make(vals, input.dtype)
    if needs_grad(input):
        shape = input._data.shape
        record("MeanBackward1", _mean_rule, (input,), r,
               (shape, tuple(range(input.ndim - nd, input.ndim)), True, math.prod(shape[input.ndim - nd:])))
    return r


def adaptive_avg_pool1d(input, output_size):
    """Adaptive 1-d average pooling to a fixed output size
    (torch.nn.functional.adaptive_avg_pool1d).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``); the output is ``[N, C, *output_size]``
    of its dtype. ``output_size``: an int. Along each axis output cell ``i`` covers input cells
    ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and
    ``out`` the output size.

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Adaptive 2-d average pooling to a fixed output size
    (torch.nn.functional.adaptive_avg_pool2d).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``); the output is ``[N, C,
    *output_size]`` of its dtype. ``output_size``: an int or 2 entries, None keeping that input
    size. Along each axis output cell ``i`` covers input cells ``floor(i * L / out)`` to
    ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and ``out`` the output size.

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return keep_format(input, _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d"))


@autocast_op("fp32")
def adaptive_avg_pool3d(input, output_size):
    """Adaptive 3-d average pooling to a fixed output size
    (torch.nn.functional.adaptive_avg_pool3d).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``) (float32 under autocast); the
    output is ``[N, C, *output_size]`` of its dtype. ``output_size``: an int or 3 entries, None
    keeping that input size. Along each axis output cell ``i`` covers input cells ``floor(i * L
    / out)`` to ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and ``out`` the
    output size.

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return keep_format(input, _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d"))


def _adaptive_max(input, output_size, nd, return_indices, name):
    sizes, out = _adaptive_sizes(input, output_size, nd, name)
    if input.dtype is D.bool_:
        raise RuntimeError(f"\"{name}\" not implemented for 'Bool'")
    x, unbatched = _batched(input, nd)
    xp = be(x).xp
    n, c = x.shape[:2]
    # flat input index of every (output cell, window offset), windows of one axis padded to
    # the longest by repeating their last cell (a repeat never changes the first maximum)
    table, plane = xp.zeros((1,) * (2 * nd), dtype=xp.int64), 1
    for i in reversed(range(nd)):
        lo, hi = _bounds(xp, sizes[i], out[i])
        width = int((hi - lo).max()) if out[i] else 1
        pos = xp.minimum(lo.reshape(-1, 1) + xp.arange(width), hi.reshape(-1, 1) - 1)
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = out[i], width
        table = table + pos.reshape(shape) * plane
        plane *= sizes[i]
    cells = math.prod(out)
    kk = math.prod(table.shape[nd:])
    cols = xp.ascontiguousarray(table.reshape(cells, kk).T)  # [K, cells]
    flat = x._data.reshape(n * c, math.prod(sizes))
    xw = xp.ascontiguousarray(flat[:, cols].transpose(1, 0, 2)).reshape(kk, n * c * cells)
    best, arg = _first_max(xp, xw, x.dtype.is_floating_point)
    idx = cols[arg.reshape(n * c, cells), xp.arange(cells)]
    shape = (n, c) + out
    r = _make(xp.ascontiguousarray(best.reshape(shape)), x.dtype)
    ind = _make(xp.ascontiguousarray(idx.reshape(shape).astype(xp.int64)), D.int64)
    if needs_grad(x):
        record(f"AdaptiveMaxPool{max(nd, 2)}DBackward0", _index_scatter_rule, (x,), r, (ind, x.shape))
    if unbatched:
        r, ind = r.squeeze(0), ind.squeeze(0)
    return (r, ind) if return_indices else r


def _index_scatter_rule(g, ind, shape):
    """Gradient of a pick by flat plane index: ``g`` added at the picked cells (ember ops,
    so it has its own gradient, a gather)."""
    from .indexing import scatter_add
    n, c = shape[:2]
    z = g.new_zeros((n, c, math.prod(shape[2:])))
    return scatter_add(z, 2, ind.reshape(n, c, -1), g.reshape(n, c, -1)).reshape(shape)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive 1-d max pooling to a fixed output size (torch.nn.functional.adaptive_max_pool1d).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``); the output is ``[N, C, *output_size]``
    of its dtype. ``output_size``: an int. Along each axis output cell ``i`` covers input cells
    ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and
    ``out`` the output size. ``return_indices``: also return the int64 index of each (first)
    maximum, flat into ``L`` of its plane; the result is then ``(values, indices)``. A NaN is
    the maximum.

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return _adaptive_max(input, output_size, 1, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive 2-d max pooling to a fixed output size (torch.nn.functional.adaptive_max_pool2d).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``); the output is ``[N, C,
    *output_size]`` of its dtype. ``output_size``: an int or 2 entries, None keeping that input
    size. Along each axis output cell ``i`` covers input cells ``floor(i * L / out)`` to
    ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and ``out`` the output size.
    ``return_indices``: also return the int64 index of each (first) maximum, flat into ``H*W``
    of its plane; the result is then ``(values, indices)``. A NaN is the maximum.

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return _adaptive_max(input, output_size, 2, return_indices, "adaptive_max_pool2d")


@autocast_op("fp32")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive 3-d max pooling to a fixed output size (torch.nn.functional.adaptive_max_pool3d).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``) (float32 under autocast); the
    output is ``[N, C, *output_size]`` of its dtype. ``output_size``: an int or 3 entries, None
    keeping that input size. Along each axis output cell ``i`` covers input cells ``floor(i * L
    / out)`` to ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and ``out`` the
    output size. ``return_indices``: also return the int64 index of each (first) maximum, flat
    into ``D*H*W`` of its plane; the result is then ``(values, indices)``. A NaN is the maximum.

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return _adaptive_max(input, output_size, 3, return_indices, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool1d that always returns the indices too
    (torch.nn.functional.adaptive_max_pool1d_with_indices).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``); the output is ``[N, C, *output_size]``
    of its dtype. ``output_size``: an int. Along each axis output cell ``i`` covers input cells
    ``floor(i * L / out)`` to ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and
    ``out`` the output size. Returns ``(values, indices)``; ``return_indices`` is accepted and
    ignored (always True).

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool2d that always returns the indices too
    (torch.nn.functional.adaptive_max_pool2d_with_indices).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``); the output is ``[N, C,
    *output_size]`` of its dtype. ``output_size``: an int or 2 entries, None keeping that input
    size. Along each axis output cell ``i`` covers input cells ``floor(i * L / out)`` to
    ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and ``out`` the output size.
    Returns ``(values, indices)``; ``return_indices`` is accepted and ignored (always True).

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return adaptive_max_pool2d(input, output_size, True)


@autocast_op("fp32")
def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """adaptive_max_pool3d that always returns the indices too
    (torch.nn.functional.adaptive_max_pool3d_with_indices).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``) (float32 under autocast); the
    output is ``[N, C, *output_size]`` of its dtype. ``output_size``: an int or 3 entries, None
    keeping that input size. Along each axis output cell ``i`` covers input cells ``floor(i * L
    / out)`` to ``ceil((i + 1) * L / out)`` (exclusive), ``L`` the input size and ``out`` the
    output size. Returns ``(values, indices)``; ``return_indices`` is accepted and ignored
    (always True).

    RuntimeError for an input of other dims, an ``output_size`` of another length or negative,
    or an input empty in a non-batch dim."""
    return adaptive_max_pool3d(input, output_size, True)


# ---- max unpool --------------------------------------------------------------------

def _unpool_size(input, k, s, p, output_size, nd):
    """torch's unpooled size: ``(L - 1)*stride - 2*padding + kernel``, or ``output_size``
    (``nd`` or ``nd + 2`` entries) within one stride of it; ValueError otherwise."""
    default = [(input.shape[-nd + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd)]
    if output_size is None:
        return tuple(default)
    out = list(output_size)
    if len(out) == nd + 2:
        out = out[2:]
    if len(out) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, "
                         f"but it has a length of '{len(out)}'")
    for i in range(nd):
        lo, hi = default[i] - s[i], default[i] + s[i]
        if not lo < out[i] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between {lo} and {hi})')
    return tuple(int(o) for o in out)


def _max_unpool(input, indices, nd, kernel_size, stride, padding, output_size, name):
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    s = k if stride is None else _ntuple(stride, nd, "stride", name)
    p = _ntuple(padding, nd, "padding", name)
    out = _unpool_size(input, k, s, p, output_size, nd)
    rank = max(nd, 2)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{rank}d should be a {rank + 1}d or {rank + 2}d Tensor, "
                           f"but got a tensor with {input.ndim + (rank - nd)} dimensions.")
    if indices.dtype is not D.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_long_name(indices.dtype)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    x, unbatched = _batched(input, nd)
    ind = indices.unsqueeze(0) if unbatched else indices
    n, c = x.shape[:2]
    plane = math.prod(out)
    a = ind._data
    if a.size and (int(a.min()) < 0 or int(a.max()) >= plane):
        bad = int(a.max()) if int(a.max()) >= plane else int(a.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(str(o) for o in out)})")
    from .indexing import scatter
    r = scatter(x.new_zeros((n, c, plane)), 2, ind.reshape(n, c, -1), x.reshape(n, c, -1)).reshape((n, c) + out)
    return r.squeeze(0) if unbatched else r


def _long_name(dtype):
    from ._helpers import _type_name
    return _type_name(dtype)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool1d (torch.nn.functional.max_unpool1d): each value of ``input`` is
    placed at its index in a zero tensor, the other cells stay 0.

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``), as max_pool1d returned it. ``indices``:
    int64 of the input's shape, flat into ``L`` of the output plane, as max_pool1d returns them
    with ``return_indices``. ``kernel_size``, ``stride`` (None means ``kernel_size``) and
    ``padding``: the pooling's, an int (or a 1-tuple) each. ``output_size``: the output's
    spatial size (1 or 3 entries), needed when several input sizes pool to the same size; it
    must lie within one ``stride`` of the default ``(size - 1)*stride - 2*padding +
    kernel_size``. Returns ``[N, C, L_out]``.

    RuntimeError for an input of other dims, ``indices`` of another dtype or shape, or an index
    outside the output; ValueError for a bad ``output_size``."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size, "max_unpool1d")


@autocast_op("fp32")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool2d (torch.nn.functional.max_unpool2d): each value of ``input`` is
    placed at its index in a zero tensor, the other cells stay 0.

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), as max_pool2d returned it.
    ``indices``: int64 of the input's shape, flat into ``H*W`` of the output plane, as
    max_pool2d returns them with ``return_indices``. ``kernel_size``, ``stride`` (None means
    ``kernel_size``) and ``padding``: the pooling's, an int or a pair each. ``output_size``: the
    output's spatial size (2 or 4 entries), needed when several input sizes pool to the same
    size; it must lie within one ``stride`` of the default ``(size - 1)*stride - 2*padding +
    kernel_size``. Returns ``[N, C, H_out, W_out]``.

    RuntimeError for an input of other dims, ``indices`` of another dtype or shape, or an index
    outside the output; ValueError for a bad ``output_size``."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size, "max_unpool2d")


@autocast_op("fp32")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool3d (torch.nn.functional.max_unpool3d): each value of ``input`` is
    placed at its index in a zero tensor, the other cells stay 0.

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``), as max_pool3d returned it
    (float32 under autocast). ``indices``: int64 of the input's shape, flat into ``D*H*W`` of
    the output plane, as max_pool3d returns them with ``return_indices``. ``kernel_size``,
    ``stride`` (None means ``kernel_size``) and ``padding``: the pooling's, an int or a triple
    each. ``output_size``: the output's spatial size (3 or 5 entries), needed when several input
    sizes pool to the same size; it must lie within one ``stride`` of the default ``(size -
    1)*stride - 2*padding + kernel_size``. Returns ``[N, C, D_out, H_out, W_out]``.

    RuntimeError for an input of other dims, ``indices`` of another dtype or shape, or an index
    outside the output; ValueError for a bad ``output_size``."""
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size, "max_unpool3d")


# ---- power-average pool ------------------------------------------------------------

def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd, name):
    from .elementwise import relu, sign
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    max_pool = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = _avg_pool(input.pow(norm_type), nd, kernel_size, stride, 0, ceil_mode, True, None, name)
    return (sign(out) * relu(out.abs())).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """1-d power-average pooling ``(sum over the window of x**p) ** (1/p)``, ``p = norm_type``
    (torch.nn.functional.lp_pool1d).

    ``input``: ``[N, C, L]`` (or unbatched ``[C, L]``), float; the output is ``[N, C, L_out]``.
    ``norm_type``: the power ``p``; ``inf`` is max pooling of ``|x|`` and ``-inf`` min pooling
    of it; ``p = 1`` is sum pooling. ``kernel_size``: the window, an int (or a 1-tuple).
    ``stride``: an int (or a 1-tuple); None means ``kernel_size``. ``ceil_mode``: round the
    output size up; a window cut by the input's end is scaled as torch does (its mean times the
    full kernel size). No padding. Errors as avg_pool1d's."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-d power-average pooling ``(sum over the window of x**p) ** (1/p)``, ``p = norm_type``
    (torch.nn.functional.lp_pool2d).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), float; the output is ``[N, C,
    H_out, W_out]``. ``norm_type``: the power ``p``; ``inf`` is max pooling of ``|x|`` and
    ``-inf`` min pooling of it; ``p = 1`` is sum pooling. ``kernel_size``: the window, an int or
    a pair. ``stride``: an int or a pair; None means ``kernel_size``. ``ceil_mode``: round the
    output size up; a window cut by the input's end is scaled as torch does (its mean times the
    full kernel size). No padding. Errors as avg_pool2d's."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-d power-average pooling ``(sum over the window of x**p) ** (1/p)``, ``p = norm_type``
    (torch.nn.functional.lp_pool3d).

    ``input``: ``[N, C, D, H, W]`` (or unbatched ``[C, D, H, W]``), float; the output is ``[N,
    C, D_out, H_out, W_out]``. ``norm_type``: the power ``p``; ``inf`` is max pooling of ``|x|``
    and ``-inf`` min pooling of it; ``p = 1`` is sum pooling. ``kernel_size``: the window, an
    int or a triple. ``stride``: an int or a triple; None means ``kernel_size``. ``ceil_mode``:
    round the output size up; a window cut by the input's end is scaled as torch does (its mean
    times the full kernel size). No padding. Errors as avg_pool3d's."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")
