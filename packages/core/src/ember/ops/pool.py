"""Pooling (torch.nn.functional.max_pool2d, avg_pool2d, adaptive_avg_pool2d).

Windows are strided views of the (padded) input, ``[N, C, OH, OW, kH, kW]``; a pool is
one reduction over the last two axes, and its gradient is spread back with one loop over
the kH*kW kernel offsets (never over pixels).  Each pool and its backward are a pair of
ops whose rules are each other, so double backward works.
"""

from __future__ import annotations

from .. import _dtype as D
from .._tensor import _make
from ._helpers import be, needs_grad, record, wrap

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "max_pool1d", "avg_pool1d"]


def _pair(v):
    if isinstance(v, (tuple, list)):
        return (int(v[0]), int(v[0])) if len(v) == 1 else (int(v[0]), int(v[1]))
    return (int(v), int(v))


def _out_len(size, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    num = size + 2 * p - eff
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


class _Geom:
    """Shapes of one 2-d pooling: kernel, stride, padding, dilation, output size and the
    extra right/bottom padding ceil_mode needs."""

    __slots__ = ("k", "s", "p", "d", "oh", "ow", "h", "w", "eh", "ew")

    def __init__(self, h, w, k, s, p, d, ceil_mode):
        self.k, self.s, self.p, self.d, self.h, self.w = k, s, p, d, h, w
        self.oh = _out_len(h, k[0], s[0], p[0], d[0], ceil_mode)
        self.ow = _out_len(w, k[1], s[1], p[1], d[1], ceil_mode)
        # extra padding so that every window lies inside the array
        self.eh = max(0, (self.oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (h + 2 * p[0]))
        self.ew = max(0, (self.ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - (w + 2 * p[1]))

    def pad(self, xp, x, value):
        p, eh, ew = self.p, self.eh, self.ew
        if not (p[0] or p[1] or eh or ew):
            return x
        return xp.pad(x, ((0, 0), (0, 0), (p[0], p[0] + eh), (p[1], p[1] + ew)), constant_values=value)

    def windows(self, xp, xpad):
        n, c = xpad.shape[:2]
        s0, s1, s2, s3 = xpad.strides
        return xp.lib.stride_tricks.as_strided(
            xpad, (n, c, self.oh, self.ow, self.k[0], self.k[1]),
            (s0, s1, s2 * self.s[0], s3 * self.s[1], s2 * self.d[0], s3 * self.d[1]))

    def offset(self, i, j):
        """The slice of the padded input that kernel offset (i, j) sees, one cell per output."""
        k0, k1 = i * self.d[0], j * self.d[1]
        return (slice(None), slice(None), slice(k0, k0 + self.s[0] * (self.oh - 1) + 1, self.s[0]),
                slice(k1, k1 + self.s[1] * (self.ow - 1) + 1, self.s[1]))

    def padded_zeros(self, xp, n, c, dtype):
        return xp.zeros((n, c, self.h + 2 * self.p[0] + self.eh, self.w + 2 * self.p[1] + self.ew), dtype=dtype)

    def crop(self, xp, dx):
        p = self.p
        if p[0] or p[1] or self.eh or self.ew:
            dx = xp.ascontiguousarray(dx[:, :, p[0]:p[0] + self.h, p[1]:p[1] + self.w])
        return dx

    def scatter(self, xp, dwin, n, c, dtype):
        """Add window gradients ``[N, C, OH, OW, kH, kW]`` back onto the input ``[N, C, H, W]``."""
        p = self.p
        hp, wp = self.h + 2 * p[0] + self.eh, self.w + 2 * p[1] + self.ew
        k, s, d, oh, ow = self.k, self.s, self.d, self.oh, self.ow
        if k == s and d == (1, 1) and hp == oh * k[0] and wp == ow * k[1]:
            dx = xp.ascontiguousarray(dwin.transpose(0, 1, 2, 4, 3, 5)).reshape(n, c, hp, wp)
        else:
            dx = xp.zeros((n, c, hp, wp), dtype=dtype)
            for i in range(k[0]):
                for j in range(k[1]):
                    dx[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                       j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]] += dwin[:, :, :, :, i, j]
        if p[0] or p[1] or self.eh or self.ew:
            dx = xp.ascontiguousarray(dx[:, :, p[0]:p[0] + self.h, p[1]:p[1] + self.w])
        return dx


def _args(input, kernel_size, stride, padding, dilation, name):
    k = _pair(kernel_size)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else _pair(stride)
    p, d = _pair(padding), _pair(dilation)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{name}: Expected 3D or 4D (batch mode) tensor for input, but got: {list(input.shape)}")
    if min(k) <= 0:
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got kH: {k[0]} kW: {k[1]}")
    if min(s) <= 0:
        raise RuntimeError(f"{name}: stride must be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if min(d) <= 0:
        raise RuntimeError(f"{name}: dilation must be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}")
    if p[0] * 2 > d[0] * (k[0] - 1) + 1 or p[1] * 2 > d[1] * (k[1] - 1) + 1 or min(p) < 0:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p[0]}, "
                           f"kernel_size={k[0]} and dilation={d[0]}")
    return k, s, p, d


def _check_out(x, g):
    if g.oh < 1 or g.ow < 1:
        raise RuntimeError(f"Given input size: ({x.shape[1]}x{g.h}x{g.w}). Calculated output size: "
                           f"({x.shape[1]}x{g.oh}x{g.ow}). Output size is too small")


# ---- max pool ----------------------------------------------------------------------

def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-d max pooling: input ``[N, C, H, W]`` (or ``[C, H, W]``) to ``[N, C, H_out, W_out]``
    with ``H_out = (H + 2*padding - dilation*(kernel-1) - 1) / stride + 1`` rounded down (up
    with ``ceil_mode``).  With ``return_indices`` also the int64 flat index (into ``H*W``) of
    each maximum.  The gradient goes to the first maximum of each window, as in torch."""
    k, s, p, d = _args(input, kernel_size, stride, padding, dilation, "max_pool2d")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    n, c, h, w = x.shape
    geo = _Geom(h, w, k, s, p, d, ceil_mode)
    _check_out(x, geo)
    xp = be(x).xp
    arr = x._data
    low = -xp.inf if x.dtype.is_floating_point else xp.iinfo(arr.dtype).min
    vals, arg = _max_windows(xp, geo, geo.pad(xp, arr, low), x.dtype.is_floating_point)
    r = _make(vals, x.dtype)
    if needs_grad(x):
        record("MaxPool2DWithIndicesBackward0", _max_rule, (x,), r,
               (_make(arg, D.from_numpy_dtype(arg.dtype)), geo, x.dtype))
    out = r.squeeze(0) if unbatched else r
    if not return_indices:
        return out
    arg = arg.astype(xp.int64)
    ki, kj = arg // k[1], arg % k[1]
    rows = xp.arange(geo.oh).reshape(-1, 1) * s[0] - p[0] + ki * d[0]
    cols = xp.arange(geo.ow) * s[1] - p[1] + kj * d[1]
    idx = _make((rows * w + cols).astype(xp.int64), D.int64)
    return out, (idx.squeeze(0) if unbatched else idx)


def _max_windows(xp, geo, xpad, floating):
    """Maximum of each window and the kernel offset of its first maximum (int16)."""
    kh, kw = geo.k
    kk = kh * kw
    n, c = xpad.shape[:2]
    # one copy of the windows, offsets first: every later pass is over contiguous rows
    xw = xp.ascontiguousarray(geo.windows(xp, xpad).transpose(4, 5, 0, 1, 2, 3)).reshape(kk, -1)
    best = xw.max(0)
    rank = xp.arange(kk - 1, -1, -1, dtype=xp.int16).reshape(kk, 1)
    arg = (kk - 1) - ((xw == best) * rank).max(0)
    if floating:
        nan = xp.isnan(best)
        if nan.any():  # a NaN is its window's maximum; the first one wins, as in torch
            arg = xp.where(nan, (kk - 1) - (xp.isnan(xw) * rank).max(0), arg)
    shape = (n, c, geo.oh, geo.ow)
    return best.reshape(shape), arg.astype(xp.int16).reshape(shape)


def _tiles(geo):
    """True when the windows tile the padded input exactly (kernel == stride, no dilation)."""
    return (geo.k == geo.s and geo.d == (1, 1) and geo.h + 2 * geo.p[0] + geo.eh == geo.oh * geo.k[0]
            and geo.w + 2 * geo.p[1] + geo.ew == geo.ow * geo.k[1])


def _max_rule(g, arg, geo, dtype):
    return _max_unpool(g, arg, geo)


def _max_unpool(g, arg, geo):
    """Send each ``g`` ``[N, C, OH, OW]`` cell to the input cell its window's maximum came from."""
    xp = be(g).xp
    n, c = g.shape[0], g.shape[1]
    ga, a = g._data, arg._data
    kh, kw = geo.k
    if geo.k == geo.s and geo.d == (1, 1):
        # windows tile the input: write each kernel offset's share into a strided view
        tiles = xp.empty((n, c, geo.oh, kh, geo.ow, kw), dtype=ga.dtype)
        for i in range(kh):
            for j in range(kw):
                xp.multiply(ga, a == i * kw + j, out=tiles[:, :, :, i, :, j])
        dx = tiles.reshape(n, c, geo.oh * kh, geo.ow * kw)
        if not _tiles(geo):
            full = geo.padded_zeros(xp, n, c, ga.dtype)
            full[:, :, :geo.oh * kh, :geo.ow * kw] = dx
            dx = full
    else:
        dx = geo.padded_zeros(xp, n, c, ga.dtype)
        zero = ga.dtype.type(0)
        for k in range(kh * kw):
            dx[geo.offset(k // kw, k % kw)] += xp.where(a == k, ga, zero)
    r = _make(geo.crop(xp, dx), g.dtype)
    if needs_grad(g):
        record("MaxPool2DWithIndicesBackwardBackward0", _max_gather_rule, (g,), r, (arg, geo))
    return r


def _max_gather_rule(gg, arg, geo):
    xp = be(gg).xp
    gpad = geo.pad(xp, gg._data, 0)
    a = arg._data
    out = xp.zeros(a.shape, dtype=gg._data.dtype)
    for k in range(geo.k[0] * geo.k[1]):
        sel = a == k
        out[sel] = gpad[geo.offset(k // geo.k[1], k % geo.k[1])][sel]
    r = _make(out, gg.dtype)
    if needs_grad(gg):
        record("MaxPool2DGatherBackward0", lambda g2, a_, geo_: _max_unpool(g2, a_, geo_), (gg,), r, (arg, geo))
    return r


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-d max pooling over ``[N, C, L]`` (or ``[C, L]``), through max_pool2d on a height-1 image."""
    one = lambda v, dflt: (dflt, v[0] if isinstance(v, (tuple, list)) else v)  # noqa: E731
    st = None if stride is None or stride == [] else one(stride, 1)
    out = max_pool2d(input.unsqueeze(-2), one(kernel_size, 1), st, one(padding, 0), one(dilation, 1),
                     ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


# ---- average pool ------------------------------------------------------------------

def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-d average pooling: input ``[N, C, H, W]`` (or ``[C, H, W]``) to ``[N, C, H_out, W_out]``.
    Zero padding counts in the divisor when ``count_include_pad``; windows that ceil_mode lets
    run past the padded input divide by the part inside it; ``divisor_override`` replaces
    the divisor (torch.nn.functional.avg_pool2d)."""
    k, s, p, d = _args(input, kernel_size, stride, padding, 1, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    n, c, h, w = x.shape
    geo = _Geom(h, w, k, s, p, d, ceil_mode)
    _check_out(x, geo)
    xp = be(x).xp
    if divisor_override is not None:
        div = float(divisor_override)
    else:
        # count the cells of each window that lie in the input (or its zero padding)
        hh = xp.arange(geo.oh) * s[0] - p[0]
        ww = xp.arange(geo.ow) * s[1] - p[1]
        lo_h, lo_w = (0, 0) if not count_include_pad else (-p[0], -p[1])
        hi_h, hi_w = (h, w) if not count_include_pad else (h + p[0], w + p[1])
        ch = xp.minimum(hh + k[0], hi_h) - xp.maximum(hh, lo_h)
        cw = xp.minimum(ww + k[1], hi_w) - xp.maximum(ww, lo_w)
        div = (ch.reshape(-1, 1) * cw).astype(x._data.dtype)
    r = _avg_pool(x, geo, div)
    return r.squeeze(0) if unbatched else r


def _avg_pool(x, geo, div):
    xp = be(x).xp
    win = geo.windows(xp, geo.pad(xp, x._data, 0))
    arr = win.sum(axis=(4, 5), dtype=x._data.dtype) / div
    r = _make(xp.ascontiguousarray(arr.astype(x._data.dtype, copy=False)), x.dtype)
    if needs_grad(x):
        record("AvgPool2DBackward0", lambda g, geo_, div_: _avg_unpool(g, geo_, div_), (x,), r, (geo, div))
    return r


def _avg_unpool(g, geo, div):
    xp = be(g).xp
    n, c = g.shape[0], g.shape[1]
    gd = (g._data / div).astype(g._data.dtype, copy=False)
    dwin = xp.broadcast_to(gd[..., None, None], gd.shape + tuple(geo.k))
    r = _make(geo.scatter(xp, dwin, n, c, g._data.dtype), g.dtype)
    if needs_grad(g):
        record("AvgPool2DBackwardBackward0", lambda gg, geo_, div_: _avg_pool(gg, geo_, div_), (g,), r, (geo, div))
    return r


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-d average pooling over ``[N, C, L]`` (or ``[C, L]``)."""
    one = lambda v, dflt: (dflt, v[0] if isinstance(v, (tuple, list)) else v)  # noqa: E731
    st = None if stride is None or stride == [] else one(stride, 1)
    return avg_pool2d(input.unsqueeze(-2), one(kernel_size, 1), st, one(padding, 0), ceil_mode,
                      count_include_pad).squeeze(-2)


# ---- adaptive average pool ---------------------------------------------------------

def _pool_matrix(xp, n_in, n_out, dtype):
    """[n_out, n_in] averaging matrix: row i averages cells floor(i*n/o) .. ceil((i+1)*n/o)."""
    m = xp.zeros((n_out, n_in), dtype=dtype)
    for i in range(n_out):
        a = (i * n_in) // n_out
        b = -(-((i + 1) * n_in) // n_out)
        m[i, a:b] = 1.0 / (b - a)
    return m


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed ``output_size`` (an int, a pair, None keeps that size):
    ``[N, C, H, W]`` (or ``[C, H, W]``) to ``[N, C, oH, oW]``; output cell i covers input
    cells floor(i*H/oH) to ceil((i+1)*H/oH), as torch.nn.functional.adaptive_avg_pool2d."""
    if input.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(input.shape)}")
    h, w = input.shape[-2], input.shape[-1]
    if isinstance(output_size, (tuple, list)):
        oh, ow = output_size
    else:
        oh = ow = output_size
    oh = h if oh is None else int(oh)
    ow = w if ow is None else int(ow)
    if h == 0 or w == 0:
        raise RuntimeError("adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(input.shape)} with dimension "
                           f"{input.ndim - 2 if h == 0 else input.ndim - 1} being empty")
    if oh == 1 and ow == 1:
        from .reduction import mean
        return mean(input, (-2, -1), keepdim=True)
    if h % oh == 0 and w % ow == 0:
        kh, kw = h // oh, w // ow
        return avg_pool2d(input, (kh, kw), (kh, kw))
    xp = be(input).xp
    ph = wrap(_pool_matrix(xp, h, oh, input._data.dtype), input.dtype)
    pw = wrap(_pool_matrix(xp, w, ow, input._data.dtype).T.copy(), input.dtype)
    from .linalg import matmul
    return matmul(matmul(ph, input), pw)



