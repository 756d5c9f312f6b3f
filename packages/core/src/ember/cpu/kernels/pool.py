"""Pooling kernels: max and average pooling, forward and backward, in 1, 2 and 3 dims.

Every pooling runs as 3-d pooling of planes ``[P, D, H, W]`` (``P = N * C``; 1-d and 2-d
inputs get unit leading spatial dims with kernel 1).  A thread takes whole planes.  For
one output row the kernel offsets are the outer loops and the output cells the inner one,
each offset visiting the cells whose window position at that offset lies inside the
input: no padded copy, and the inner loop is a plain strided sweep.  Visiting the offsets
in row-major order per cell is the scan order of torch's CPU kernels, so the chosen
maximum is torch's: the first maximum, a NaN over any number, the last NaN over earlier
ones, and a window holding only -inf keeps its first cell inside the input.

The geometry is ember's ``_Geom`` (ops/pool.py): ``k``, ``s``, ``p``, ``d``, ``size``,
``out`` tuples of ``nd`` entries.  The argmax is saved as the kernel offset within the
window (row-major, the numpy path's form), so both paths share the gradient rules.
"""

from __future__ import annotations

import numpy as np

from ._runtime import jit, parallel_for

__all__ = ["max_forward", "max_backward", "avg_forward", "avg_backward", "spatial_mean"]


def _geom3(geo):
    """kernel, stride, padding, dilation, input and output sizes, each as 3 ints."""
    lead = 3 - geo.nd
    one, zero = (1,) * lead, (0,) * lead
    return (np.array(one + tuple(geo.k), np.int64), np.array(one + tuple(geo.s), np.int64),
            np.array(zero + tuple(geo.p), np.int64), np.array(one + tuple(geo.d), np.int64),
            one + tuple(geo.size), one + tuple(geo.out))


@jit
def _span(o_count, start0, stride, off, size):
    # the output cells [lo, hi) whose window position start0 + o * stride + off is in [0, size)
    first = -(start0 + off)  # o * stride >= first
    lo = 0 if first <= 0 else (first + stride - 1) // stride
    last = size - 1 - start0 - off  # o * stride <= last
    hi = -1 if last < 0 else last // stride
    hi = min(hi + 1, o_count)
    return lo, max(lo, hi)


@jit
def _first_valid(start, dil, size):
    # the first kernel offset whose position start + i * dil is inside [0, size)
    return 0 if start >= 0 else (-start + dil - 1) // dil


def _deltas(k, d, size):
    """The flat offset within an input plane of each kernel offset (row-major), relative to
    the window's first cell."""
    i, j, m = np.meshgrid(*(np.arange(v) for v in k), indexing="ij")
    return np.ascontiguousarray(((i * d[0] * size[1] + j * d[1]) * size[2] + m * d[2]).reshape(-1))


@jit
def _max_fwd(start, stop, x, out, arg, idx, k, s, p, d, delta, want_idx):
    _, n_d, n_h, n_w = x.shape
    _, o_d, o_h, o_w = out.shape
    kd, kh, kw = k[0], k[1], k[2]
    kk = kd * kh * kw
    neg = -np.inf
    for pl in range(start, stop):
        xf = x[pl].reshape(n_d * n_h * n_w)
        for od in range(o_d):
            d0 = od * s[0] - p[0]
            d_in = d0 >= 0 and d0 + (kd - 1) * d[0] < n_d
            for oh in range(o_h):
                h0 = oh * s[1] - p[1]
                h_in = h0 >= 0 and h0 + (kh - 1) * d[1] < n_h
                ob = out[pl, od, oh]
                oa = arg[pl, od, oh]
                oi = idx[pl, od, oh] if want_idx else idx[0, 0, 0]
                for ow in range(o_w):
                    w0 = ow * s[2] - p[2]
                    base = (d0 * n_h + h0) * n_w + w0
                    best = neg
                    code = 0
                    if d_in and h_in and w0 >= 0 and w0 + (kw - 1) * d[2] < n_w:
                        # the maximum first (one dependency chain), then its first offset
                        for c in range(kk):
                            v = xf[base + delta[c]]
                            best = v if (v > best) | (v != v) else best
                        if best == best:
                            for c in range(kk - 1, -1, -1):
                                code = c if xf[base + delta[c]] == best else code
                        else:  # a NaN: the last one, as torch's scan keeps
                            for c in range(kk):
                                v = xf[base + delta[c]]
                                code = c if v != v else code
                    else:  # a window over the border: only its cells inside the input
                        code = -1
                        for i in range(kd):
                            zd = d0 + i * d[0]
                            if zd < 0 or zd >= n_d:
                                continue
                            for j in range(kh):
                                zh = h0 + j * d[1]
                                if zh < 0 or zh >= n_h:
                                    continue
                                for m in range(kw):
                                    zw = w0 + m * d[2]
                                    if zw < 0 or zw >= n_w:
                                        continue
                                    c = (i * kh + j) * kw + m
                                    if code < 0:
                                        code = c
                                    v = xf[base + delta[c]]
                                    if v > best or v != v:
                                        best = v
                                        code = c
                    ob[ow] = best
                    oa[ow] = code
                    if want_idx:
                        oi[ow] = base + delta[code]


def max_forward(x, geo, arg_dtype, want_idx):
    """``(values, offsets, indices)`` of max pooling ``x`` ``[N, C, *size]`` by ``geo``:
    values ``[N, C, *out]`` in ``x``'s dtype, the chosen kernel offset per cell in
    ``arg_dtype``, and (``want_idx``) the int64 flat index into the input plane, else None."""
    k, s, p, d, size, out = _geom3(geo)
    n, c = x.shape[:2]
    planes = n * c
    x4 = np.ascontiguousarray(x).reshape((planes,) + size)
    vals = np.empty((planes,) + out, x.dtype)
    arg = np.empty((planes,) + out, arg_dtype)
    idx = np.empty((planes,) + out if want_idx else (1, 1, 1, 1), np.int64)
    if planes and vals.size:
        work = vals[0].size * int(k.prod())
        parallel_for(_max_fwd, planes, x4, vals, arg, idx, k, s, p, d, _deltas(k, d, size), bool(want_idx),
                     work_per_item=work)
    shape = (n, c) + tuple(geo.out)
    return vals.reshape(shape), arg.reshape(shape), (idx.reshape(shape) if want_idx else None)


@jit
def _max_bwd(start, stop, g, arg, gx, s, p, delta):
    _, n_d, n_h, n_w = gx.shape
    _, o_d, o_h, o_w = g.shape
    size = n_d * n_h * n_w
    for pl in range(start, stop):
        plane = gx[pl].reshape(size)
        for a in range(size):
            plane[a] = 0.0
        for od in range(o_d):
            d0 = od * s[0] - p[0]
            for oh in range(o_h):
                row = (d0 * n_h + oh * s[1] - p[1]) * n_w - p[2]
                gr = g[pl, od, oh]
                ar = arg[pl, od, oh]
                for ow in range(o_w):
                    plane[row + ow * s[2] + delta[ar[ow]]] += gr[ow]


def max_backward(g, arg, geo):
    """The input gradient ``[N, C, *size]`` of max pooling: each cell of ``g``
    ``[N, C, *out]`` added at the input cell its window's maximum came from (``arg``, the
    kernel offsets of :func:`max_forward`)."""
    k, s, p, d, size, out = _geom3(geo)
    n, c = g.shape[:2]
    planes = n * c
    g4 = np.ascontiguousarray(g).reshape((planes,) + out)
    a4 = np.ascontiguousarray(arg).reshape((planes,) + out)
    gx = np.empty((planes,) + size, g.dtype)
    if planes:
        parallel_for(_max_bwd, planes, g4, a4, gx, s, p, _deltas(k, d, size), work_per_item=gx[0].size + g4[0].size)
    return gx.reshape((n, c) + tuple(geo.size))


@jit(fastmath={"contract"})
def _avg_fwd(start, stop, x, out, div, k, s, p):
    _, n_d, n_h, n_w = x.shape
    _, o_d, o_h, o_w = out.shape
    for pl in range(start, stop):
        for od in range(o_d):
            d0 = od * s[0] - p[0]
            for oh in range(o_h):
                h0 = oh * s[1] - p[1]
                ob = out[pl, od, oh]
                for ow in range(o_w):
                    ob[ow] = 0.0
                for i in range(k[0]):
                    zd = d0 + i
                    if zd < 0 or zd >= n_d:
                        continue
                    for j in range(k[1]):
                        zh = h0 + j
                        if zh < 0 or zh >= n_h:
                            continue
                        row = x[pl, zd, zh]
                        for m in range(k[2]):
                            off = m - p[2]
                            lo, hi = _span(o_w, 0, s[2], off, n_w)
                            for ow in range(lo, hi):
                                ob[ow] += row[ow * s[2] + off]
                dv = div[od, oh]
                for ow in range(o_w):
                    ob[ow] = ob[ow] / dv[ow]


def _divisor(div, geo, dtype):
    out3 = (1,) * (3 - geo.nd) + tuple(geo.out)
    return np.ascontiguousarray(np.broadcast_to(np.asarray(div, dtype), tuple(geo.out)).reshape(out3))


def avg_forward(x, geo, div):
    """Average pooling ``[N, C, *size]`` to ``[N, C, *out]``: each window's sum over the
    cells inside the input (zero padding adds nothing) divided by ``div`` (a number or an
    array broadcasting to ``out``), in ``x``'s dtype."""
    k, s, p, _, size, out = _geom3(geo)
    n, c = x.shape[:2]
    planes = n * c
    x4 = np.ascontiguousarray(x).reshape((planes,) + size)
    vals = np.empty((planes,) + out, x.dtype)
    if planes and vals.size:
        parallel_for(_avg_fwd, planes, x4, vals, _divisor(div, geo, x.dtype), k, s, p,
                     work_per_item=vals[0].size * int(k.prod()))
    return vals.reshape((n, c) + tuple(geo.out))


@jit(fastmath={"contract"})
def _avg_bwd(start, stop, g, gx, div, k, s, p):
    _, n_d, n_h, n_w = gx.shape
    _, o_d, o_h, o_w = g.shape
    for pl in range(start, stop):
        plane = gx[pl]
        for a in range(n_d):
            for b in range(n_h):
                for w in range(n_w):
                    plane[a, b, w] = 0.0
        for od in range(o_d):
            d0 = od * s[0] - p[0]
            for oh in range(o_h):
                h0 = oh * s[1] - p[1]
                gr = g[pl, od, oh]
                dv = div[od, oh]
                for i in range(k[0]):
                    zd = d0 + i
                    if zd < 0 or zd >= n_d:
                        continue
                    for j in range(k[1]):
                        zh = h0 + j
                        if zh < 0 or zh >= n_h:
                            continue
                        row = plane[zd, zh]
                        for m in range(k[2]):
                            off = m - p[2]
                            lo, hi = _span(o_w, 0, s[2], off, n_w)
                            for ow in range(lo, hi):
                                row[ow * s[2] + off] += gr[ow] / dv[ow]


def avg_backward(g, geo, div):
    """The input gradient of :func:`avg_forward`: ``g / div`` spread over each window's
    cells inside the input."""
    k, s, p, _, size, out = _geom3(geo)
    n, c = g.shape[:2]
    planes = n * c
    g4 = np.ascontiguousarray(g).reshape((planes,) + out)
    gx = np.empty((planes,) + size, g.dtype)
    if planes:
        parallel_for(_avg_bwd, planes, g4, gx, _divisor(div, geo, g.dtype), k, s, p,
                     work_per_item=gx[0].size + g4[0].size * int(k.prod()))
    return gx.reshape((n, c) + tuple(geo.size))


@jit(fastmath={"reassoc", "contract", "nsz"})
def _row_mean(start, stop, x, out):
    k = x.shape[1]
    for r in range(start, stop):
        row = x[r]
        acc = x.dtype.type(0.0)
        for j in range(k):
            acc += row[j]
        out[r] = acc / x.dtype.type(k)


@jit(fastmath={"reassoc", "contract", "nsz"})
def _column_mean(start, stop, x, out):
    # x [N, S, C] (channels last): out[n, c] = mean over s
    _, s, c = x.shape
    for n in range(start, stop):
        o = out[n]
        for j in range(c):
            o[j] = 0.0
        for i in range(s):
            row = x[n, i]
            for j in range(c):
                o[j] += row[j]
        for j in range(c):
            o[j] = o[j] / x.dtype.type(s)


def spatial_mean(x, nd):
    """The mean over the last ``nd`` dims of ``x``, kept as size-1 dims (global average
    pooling), for a contiguous or channels-last ``x``; None for other layouts."""
    spatial = int(np.prod(x.shape[x.ndim - nd:]))
    keep = x.shape[:x.ndim - nd] + (1,) * nd
    if x.flags.c_contiguous:
        rows = x.reshape(-1, spatial)
        out = np.empty(rows.shape[0], x.dtype)
        if rows.size:
            parallel_for(_row_mean, rows.shape[0], rows, out, work_per_item=spatial)
        return out.reshape(keep)
    order = tuple(sorted(range(x.ndim), key=lambda a: (-x.strides[a], a)))
    if x.ndim != nd + 2 or order != (0,) + tuple(range(2, x.ndim)) + (1,):
        return None
    t = x.transpose(order)
    if not t.flags.c_contiguous:
        return None
    n, c = x.shape[:2]
    out = np.empty((n, c), x.dtype)
    if t.size:
        parallel_for(_column_mean, n, t.reshape(n, spatial, c), out, work_per_item=spatial * c)
    return out.reshape(keep)
