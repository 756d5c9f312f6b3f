"""Winograd convolution F(2x2, 3x3) for dense 3x3, stride-1, 2-d convolutions.

Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks" (CVPR 2016): a 2x2
tile of output is ``A^T [(G g G^T) * (B^T d B)] A`` for the 4x4 input tile ``d`` under it
and the 3x3 kernel ``g``, with

    B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
    A^T = [1 1 1 0; 0 1 -1 -1]

written out in the kernels below.  Over all tiles the 16 elementwise products become 16
matrix products ``V[e] @ U[e]`` (``V`` [16, tiles, C] the transformed input, ``U`` [16, C,
K] the transformed weight): 16 multiply-adds per tile and channel pair where the
column-matrix convolution spends 36 (9 taps x 4 outputs), 2.25x fewer.  The transforms
are additions only (and halvings in ``G``), so float32 results stay within a few ulps of
the direct sum (the tests hold them to torch's at the direct path's tolerances).

The same identity gives both gradients.  The input gradient of a stride-1 convolution is
the convolution of the output gradient with the flipped, transposed kernel (padding
``2 - pad``), so it runs through the same forward.  The weight gradient is differentiated
through the identity: ``dU[e] = A dY A^T [e] @ V[e]^T`` summed over tiles, then
``dg = G^T dU G``; exact up to rounding, because the identity holds for every ``g``.

Tiles are processed a chunk of tile rows at a time: the input rows under the chunk are
copied channels last (so that the transforms are long contiguous loops over tiles and
channels together), transformed, multiplied and transformed back into the NCHW output,
all in buffers of the chunk's size that stay in a core's cache; no copy of the whole
input is made.  Threads split the chunks (and the output channels when chunks are fewer
than threads), each with one-thread BLAS (``conv._split``).
"""

from __future__ import annotations

import numpy as np

from ._runtime import PARALLEL_MIN_WORK, jit, parallel_for, threads
from .conv import _split

__all__ = ["applies", "pays", "forward", "input_grad", "weight_grad"]

# tiles per chunk: wide enough for the products, small enough that a chunk's transformed
# input and output stay in a core's cache
_CHUNK_TILES = 128

# below this many channels on either side the products thin out while the transforms' cost per
# tile stays: such layers keep the column path (the fewest measured: LeNet's and the demo's
# 32->64, 1.6-2.5x faster than columns)
MIN_CHANNELS = 16
# below this many tiles the weight's transform (16/9 of the weight, written once per call)
# costs more than the products save: ResNet-18's 7x7 layers at batch 8 (128 tiles) and
# its 14x14 ones at batch 1 (49) run slower than columns, its 28x28 ones at batch 1 (196)
# already faster
MIN_TILES = 192

# a work item (a chunk's products) is always worth a thread of its own
_WORK = PARALLEL_MIN_WORK


def applies(ndim, wshape, stride, pad, dilation, groups) -> bool:
    """Whether the case is one these kernels take: 2-d, a dense 3x3 kernel with at least
    MIN_CHANNELS input and output channels, stride 1, no dilation, padding at most 2 on
    each side (so the input gradient is a padded convolution too)."""
    return (ndim == 4 and groups == 1 and tuple(wshape[2:]) == (3, 3) and min(wshape[:2]) >= MIN_CHANNELS
            and tuple(stride) == (1, 1) and tuple(dilation) == (1, 1)
            and all(0 <= p <= 2 for side in pad for p in side))


def pays(n, oh, ow) -> bool:
    """Whether a batch of ``n`` outputs [oh, ow] has enough 2x2 tiles (MIN_TILES)."""
    return n * _tiles(oh) * _tiles(ow) >= MIN_TILES


@jit
def _channels_last(x, xs, r0, r1, th, depth, pt, pl):
    """The input rows under tile rows [r0, r1) of ``x`` [N, C, H, W], zero-padded (``pt``
    rows above, ``pl`` columns left), channels last and even and odd columns apart, into
    ``xs`` [(r1-r0)*depth, 2, Wh*C]: row ``a`` under tile row ``r0 + i`` (image n, tile row
    ty) at ``xs[i*depth + a]``, holding ``xs[.., par, j*C + c] = x[n, c, 2ty + a - pt, 2j +
    par - pl]``, zero outside ``x``.  The tile kernels then run long contiguous loops over
    tiles and channels together."""
    c_in, h, w = x.shape[1], x.shape[2], x.shape[3]
    wh = xs.shape[2] // c_in
    for i in range(r1 - r0):
        n = (r0 + i) // th
        y0 = 2 * (r0 + i - n * th) - pt
        for a in range(depth):
            y = y0 + a
            for par in range(2):
                row = xs[i * depth + a, par]
                for j in range(wh):
                    col = 2 * j + par - pl
                    dst = row[j * c_in:]
                    if y < 0 or y >= h or col < 0 or col >= w:
                        for c in range(c_in):
                            dst[c] = 0
                    else:
                        src = x[n, :, y, col]
                        for c in range(c_in):
                            dst[c] = src[c]


# Loops of one store and at most two loads, so that LLVM vectorizes them (its runtime
# checks that the arrays do not overlap stay few).

@jit
def _diff(dst, a, b, n):
    for t in range(n):
        dst[t] = a[t] - b[t]


@jit
def _sum(dst, a, b, n):
    for t in range(n):
        dst[t] = a[t] + b[t]


@jit
def _negate(dst, a, n):
    for t in range(n):
        dst[t] = -a[t]


@jit
def _input_tiles(xs, v, rows, tw, c_in, s):
    """B^T d B of the tiles of ``rows`` tile rows from ``xs`` (``_channels_last``, depth 4)
    into ``v`` [16, >= rows*tw*C]: element ``4i + j`` of tile ``t`` (counted from the
    chunk's first) and channel ``c`` at ``v[4i + j, t*C + c]``; ``s`` [4, 2, Wh*C] is
    scratch."""
    length = xs.shape[2]
    row = tw * c_in
    for r in range(rows):
        y = 4 * r
        base = r * row
        for par in range(2):  # B^T down the columns: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3
            d0, d1, d2, d3 = xs[y, par], xs[y + 1, par], xs[y + 2, par], xs[y + 3, par]
            _diff(s[0, par], d0, d2, length)
            _sum(s[1, par], d1, d2, length)
            _diff(s[2, par], d2, d1, length)
            _diff(s[3, par], d1, d3, length)
        for i in range(4):  # B along the rows: columns 2t, 2t+1, 2t+2, 2t+3 are e[t], o[t], e[t+1], o[t+1]
            e, o = s[i, 0], s[i, 1]
            e1, o1 = e[c_in:], o[c_in:]
            _diff(v[4 * i, base:], e, e1, row)
            _sum(v[4 * i + 1, base:], o, e1, row)
            _diff(v[4 * i + 2, base:], e1, o, row)
            _diff(v[4 * i + 3, base:], o, o1, row)


@jit
def _output_tiles(m, y, bias, r0, r1, th, tw, s):
    """A^T m A of the tiles in tile rows [r0, r1), ``m`` [16, >= (r1-r0)*tw*K] in
    ``_input_tiles``' order, plus ``bias`` [K], into ``y`` [N, K, Ho, Wo] (the parts of edge
    tiles outside it dropped); ``s`` [10, tw*K] is scratch."""
    k_out, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    row = tw * k_out
    pairs = wo // 2
    for r in range(r0, r1):
        n = r // th
        oy = 2 * (r - n * th)
        base = (r - r0) * row
        for j in range(4):  # A^T down the columns: rows m0 + m1 + m2 and m1 - m2 - m3
            a0, a1, a2, a3 = m[j, base:], m[4 + j, base:], m[8 + j, base:], m[12 + j, base:]
            top, bottom = s[j], s[4 + j]
            _sum(top, a0, a1, row)
            _sum(top, top, a2, row)
            _diff(bottom, a1, a2, row)
            _diff(bottom, bottom, a3, row)
        even, odd = s[8], s[9]
        for half in range(min(2, ho - oy)):  # A along the rows: columns 2t and 2t+1
            s0, s1, s2, s3 = s[4 * half], s[4 * half + 1], s[4 * half + 2], s[4 * half + 3]
            _sum(even, s0, s1, row)
            _sum(even, even, s2, row)
            _diff(odd, s1, s2, row)
            _diff(odd, odd, s3, row)
            dst = y[n, :, oy + half]
            for t in range(pairs):  # channels first again (stores to K planes, loads in order)
                e = even[t * k_out:]
                o = odd[t * k_out:]
                for k in range(k_out):
                    dst[k, 2 * t] = e[k] + bias[k]
                    dst[k, 2 * t + 1] = o[k] + bias[k]
            if wo > 2 * pairs:
                e = even[pairs * k_out:]
                for k in range(k_out):
                    dst[k, 2 * pairs] = e[k] + bias[k]


@jit
def _grad_tiles(gs, d, rows, tw, k_out, s):
    """A dY A^T of the output-gradient tiles of ``rows`` tile rows from ``gs``
    (``_channels_last``, depth 2, no padding) into ``d`` [16, >= rows*tw*K] in
    ``_input_tiles``' order; ``s`` [2, tw*K] is scratch."""
    row = tw * k_out
    e, o = s[0], s[1]
    for r in range(rows):
        base = r * row
        e0, o0, e1, o1 = gs[2 * r, 0], gs[2 * r, 1], gs[2 * r + 1, 0], gs[2 * r + 1, 1]
        # A down the columns: rows y0, y0 + y1, y0 - y1, -y1; then along the rows
        for i in range(4):
            if i == 0:
                for t in range(row):
                    e[t] = e0[t]
                    o[t] = o0[t]
            elif i == 1:
                _sum(e, e0, e1, row)
                _sum(o, o0, o1, row)
            elif i == 2:
                _diff(e, e0, e1, row)
                _diff(o, o0, o1, row)
            else:
                _negate(e, e1, row)
                _negate(o, o1, row)
            for t in range(row):
                d[4 * i, base + t] = e[t]
            _sum(d[4 * i + 1, base:], e, o, row)
            _diff(d[4 * i + 2, base:], e, o, row)
            _negate(d[4 * i + 3, base:], o, row)


def _tiles(size):
    return -(-size // 2)


class _Layout:
    """Tile rows of a batch (``th`` per image, ``tw`` tiles each) and their chunks, ``per``
    tile rows to a chunk, and the output-channel parts each chunk is split into when the
    chunks are fewer than the threads."""

    def __init__(self, n, oh, ow, k_out):
        self.th, self.tw = _tiles(oh), _tiles(ow)
        self.rows = n * self.th
        self.per = max(1, min(self.rows, round(_CHUNK_TILES / self.tw)))
        self.per = min(self.per, max(1, -(-self.rows // threads())))  # a chunk for every thread if the batch allows
        self.chunks = -(-self.rows // self.per)
        self.kparts = max(1, min(-(-threads() // self.chunks), k_out // MIN_CHANNELS))

    def items(self):
        return self.chunks * self.kparts

    def item(self, it, k_out):
        """(first tile row, end tile row, first channel, end channel) of work item ``it``."""
        ci, kp = divmod(it, self.kparts)
        r0 = ci * self.per
        return r0, min(self.rows, r0 + self.per), k_out * kp // self.kparts, k_out * (kp + 1) // self.kparts


@jit
def _weight_tiles_kernel(start, stop, w, u):
    """U = G g G^T for input channels [start, stop) of ``w`` [K, C, 3, 3] into ``u`` [16,
    C, K], sixteen output channels at a time (each of the 16 rows of ``u`` then gets whole
    cache lines, not one value per pass)."""
    k_out = w.shape[0]
    half = w.dtype.type(0.5)
    t = np.empty((4, 3), dtype=w.dtype)
    block = np.empty((16, 16), dtype=w.dtype)
    for c in range(start, stop):
        for k0 in range(0, k_out, 16):
            kb = min(16, k_out - k0)
            for kk in range(kb):
                g = w[k0 + kk, c]
                for b in range(3):  # G g: rows g0, (g0 + g1 + g2)/2, (g0 - g1 + g2)/2, g2
                    t[0, b] = g[0, b]
                    t[1, b] = half * (g[0, b] + g[1, b] + g[2, b])
                    t[2, b] = half * (g[0, b] - g[1, b] + g[2, b])
                    t[3, b] = g[2, b]
                for i in range(4):  # (G g) G^T: the same along the columns
                    block[4 * i, kk] = t[i, 0]
                    block[4 * i + 1, kk] = half * (t[i, 0] + t[i, 1] + t[i, 2])
                    block[4 * i + 2, kk] = half * (t[i, 0] - t[i, 1] + t[i, 2])
                    block[4 * i + 3, kk] = t[i, 2]
            for e in range(16):
                for kk in range(kb):
                    u[e, c, k0 + kk] = block[e, kk]


@jit
def _weight_grad_kernel(start, stop, du, dw):
    """dg = G^T dU G for the (c, k) pairs [start, stop) of ``du`` [16, C, K] into ``dw``
    [K, C, 3, 3]."""
    k_out = du.shape[2]
    half = du.dtype.type(0.5)
    t = np.empty((3, 4), dtype=du.dtype)
    for p in range(start, stop):
        c = p // k_out
        k = p - c * k_out
        for j in range(4):  # G^T X: rows X0 + (X1 + X2)/2, (X1 - X2)/2, (X1 + X2)/2 + X3
            x0, x1, x2, x3 = du[j, c, k], du[4 + j, c, k], du[8 + j, c, k], du[12 + j, c, k]
            t[0, j] = x0 + half * (x1 + x2)
            t[1, j] = half * (x1 - x2)
            t[2, j] = half * (x1 + x2) + x3
        g = dw[k, c]
        for a in range(3):  # (G^T X) G: the same along the columns
            g[a, 0] = t[a, 0] + half * (t[a, 1] + t[a, 2])
            g[a, 1] = half * (t[a, 1] - t[a, 2])
            g[a, 2] = half * (t[a, 1] + t[a, 2]) + t[a, 3]


def _weight_tiles(w):
    """U = G g G^T of ``w`` [K, C, 3, 3] as [16, C, K]."""
    k_out, c_in = w.shape[:2]
    u = np.empty((16, c_in, k_out), dtype=w.dtype)
    parallel_for(_weight_tiles_kernel, c_in, w, u, work_per_item=32 * k_out)
    return u


def _fwd_worker(start, stop, x, ut, y, bias, lay, pt, pl):
    c_in, k_out = ut.shape[1], ut.shape[2]
    cap = lay.per * lay.tw
    kk = -(-k_out // lay.kparts)
    xs = np.empty((4 * lay.per, 2, (lay.tw + 1) * c_in), dtype=y.dtype)
    v = np.empty((16, cap * c_in), dtype=y.dtype)
    m = np.empty((16, cap * kk), dtype=y.dtype)
    s_in = np.empty((4, 2, xs.shape[2]), dtype=y.dtype)
    s_out = np.empty((10, lay.tw * kk), dtype=y.dtype)
    done = -1
    for it in range(start, stop):
        r0, r1, k0, k1 = lay.item(it, k_out)
        q = (r1 - r0) * lay.tw
        if r0 != done:  # a chunk's channel parts share its transformed input
            _channels_last(x, xs, r0, r1, lay.th, 4, pt, pl)
            _input_tiles(xs, v, r1 - r0, lay.tw, c_in, s_in)
            done = r0
        mk = m[:, :q * (k1 - k0)]
        np.matmul(v[:, :q * c_in].reshape(16, q, c_in), ut[:, :, k0:k1], out=mk.reshape(16, q, k1 - k0))
        _output_tiles(mk, y[:, k0:k1], bias[k0:k1], r0, r1, lay.th, lay.tw, s_out)


def forward(x, w, bias, pad):
    """The convolution of ``x`` [N, C, H, W] by ``w`` [K, C, 3, 3] plus ``bias`` (None or
    [K]), ``pad`` ((top, bottom), (left, right)) zero padding; returns [N, K, Ho, Wo],
    C-contiguous."""
    n, c_in, h, w_in = x.shape
    k_out = w.shape[0]
    (pt, pb), (pl, pr) = pad
    oh, ow = h + pt + pb - 2, w_in + pl + pr - 2
    y = np.empty((n, k_out, oh, ow), dtype=x.dtype)
    if y.size == 0:
        return y
    lay = _Layout(n, oh, ow, k_out)
    b = bias if bias is not None else np.zeros(k_out, dtype=x.dtype)
    _split(_fwd_worker, lay.items(), x, _weight_tiles(w), y, b, lay, pt, pl, work_per_item=_WORK)
    return y


def input_grad(g, w, xshape, pad):
    """The gradient [N, C, H, W] of the input of :func:`forward`'s convolution from its
    output gradient ``g`` [N, K, Ho, Wo]: the convolution of ``g`` by the flipped kernel
    with its channels swapped, padded ``2 - pad``."""
    flipped = w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
    return forward(g, flipped, None, tuple((2 - lo, 2 - hi) for lo, hi in pad))


def _dw_worker(start, stop, x, g, partials, lay, pt, pl):
    c_in, k_out = x.shape[1], g.shape[1]
    cap = lay.per * lay.tw
    xs = np.empty((4 * lay.per, 2, (lay.tw + 1) * c_in), dtype=x.dtype)
    gs = np.empty((2 * lay.per, 2, lay.tw * k_out), dtype=x.dtype)
    v = np.empty((16, cap * c_in), dtype=x.dtype)
    d = np.empty((16, cap * k_out), dtype=x.dtype)
    s_in = np.empty((4, 2, xs.shape[2]), dtype=x.dtype)
    s_g = np.empty((2, lay.tw * k_out), dtype=x.dtype)
    acc = np.zeros((16, c_in, k_out), dtype=x.dtype)
    tmp = np.empty_like(acc)
    for it in range(start, stop):
        r0, r1, _, _ = lay.item(it * lay.kparts, k_out)
        q = (r1 - r0) * lay.tw
        _channels_last(x, xs, r0, r1, lay.th, 4, pt, pl)
        _input_tiles(xs, v, r1 - r0, lay.tw, c_in, s_in)
        _channels_last(g, gs, r0, r1, lay.th, 2, 0, 0)
        _grad_tiles(gs, d, r1 - r0, lay.tw, k_out, s_g)
        np.matmul(v[:, :q * c_in].reshape(16, q, c_in).transpose(0, 2, 1), d[:, :q * k_out].reshape(16, q, k_out),
                  out=tmp)
        acc += tmp
    partials[start] = acc


def weight_grad(x, g, pad):
    """The weight gradient [K, C, 3, 3] of :func:`forward`'s convolution from its input
    ``x`` [N, C, H, W] and output gradient ``g`` [N, K, Ho, Wo]."""
    n, c_in = x.shape[:2]
    k_out, oh, ow = g.shape[1:]
    if x.size == 0 or g.size == 0:
        return np.zeros((k_out, c_in, 3, 3), dtype=x.dtype)
    lay = _Layout(n, oh, ow, k_out)
    (pt, _), (pl, _) = pad
    partials = {}
    _split(_dw_worker, lay.chunks, x, g, partials, lay, pt, pl, work_per_item=_WORK)
    parts = list(partials.values())
    du = parts[0]
    for p in parts[1:]:
        du += p
    dw = np.empty((k_out, c_in, 3, 3), dtype=x.dtype)
    parallel_for(_weight_grad_kernel, c_in * k_out, du, dw, work_per_item=32)
    return dw
