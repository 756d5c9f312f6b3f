"""Normalisation kernels: layer norm and RMS norm over rows, batch norm over channels.

Rows (layer_norm, rms_norm, the standardisation inside group_norm): ``x`` is ``[R, K]``,
each row normalised on its own; the forward is one pass over a row (statistics, then the
output while the row sits in cache), the backward one pass that also adds each thread's
share of the weight and bias gradients into its own row of a partial-sum buffer.

Channels (batch_norm): ``x`` is ``[N, C, S]`` (contiguous) or ``[M, C]`` (channels-last,
C the fastest axis).  Statistics are one read of ``x``: the mean and squared deviations of
each cached plane (or block of rows) by two passes, merged in float64 by Chan's update,
so no sum of squares cancels; the output and the input gradient are each one pass of
``a[c] * x + b[c]`` style folded coefficients, as torch's CPU kernels.

Every function takes and returns numpy arrays of one float dtype; the caller (ops/norm.py)
has already checked shapes.
"""

from __future__ import annotations

import numpy as np

from ._runtime import jit, parallel_for, threads

__all__ = ["rows_forward", "rows_backward", "rms_forward", "rms_backward", "group_forward", "group_backward",
           "channel_stats", "channel_apply", "channel_backward"]

_REASSOC = {"reassoc", "contract", "nsz", "arcp"}


# ---- rows ------------------------------------------------------------------------------

@jit(fastmath=_REASSOC)
def _rows_fwd(start, stop, x, w, b, out, mean, var, rstd, eps):
    k = x.shape[1]
    inv_k = x.dtype.type(1.0) / x.dtype.type(k)
    for r in range(start, stop):
        row = x[r]
        s = x.dtype.type(0.0)
        for j in range(k):
            s += row[j]
        m = s * inv_k
        v = x.dtype.type(0.0)
        for j in range(k):
            d = row[j] - m
            v += d * d
        inv = x.dtype.type(1.0) / np.sqrt(v * inv_k + eps)
        o = out[r]
        for j in range(k):
            o[j] = (row[j] - m) * inv * w[j] + b[j]
        mean[r] = m
        var[r] = v * inv_k
        rstd[r] = inv


@jit(fastmath=_REASSOC)
def _rows_bwd(start, stop, g, x, w, mean, scale, rstd, gx, part_w, part_b, need_x, need_wb):
    # chunk i handles rows [rows * i // chunks, rows * (i + 1) // chunks) into part_*[i]
    k = x.shape[1]
    n_rows = x.shape[0]
    chunks = part_w.shape[0]
    inv_k = x.dtype.type(1.0) / x.dtype.type(k)
    zero = x.dtype.type(0.0)
    for i in range(start, stop):
        pw = part_w[i]
        pb = part_b[i]
        if need_wb:
            for j in range(k):
                pw[j] = 0.0
                pb[j] = 0.0
        for r in range(n_rows * i // chunks, n_rows * (i + 1) // chunks):
            gr = g[r]
            xr = x[r]
            m = mean[r]
            sc = scale[r]
            if need_wb:
                for j in range(k):
                    xh = (xr[j] - m) * sc
                    pw[j] += gr[j] * xh
                    pb[j] += gr[j]
            if need_x:
                s1 = zero
                s2 = zero
                for j in range(k):
                    gy = gr[j] * w[j]
                    s1 += gy
                    s2 += gy * ((xr[j] - m) * sc)
                s1 *= inv_k
                s2 *= inv_k
                inv = rstd[r]
                o = gx[r]
                for j in range(k):
                    o[j] = inv * (gr[j] * w[j] - s1 - ((xr[j] - m) * sc) * s2)


def _chunks(rows, k):
    return max(1, min(threads(), rows, (rows * k) // (1 << 15)))


def rows_forward(x, w, b, eps):
    """``(out, mean, var, rstd)``: ``x`` ``[R, K]`` normalised per row, ``(x - mean) * rstd * w + b``
    (``w``/``b`` ``[K]`` or None), with ``rstd = 1 / sqrt(var + eps)`` (biased variance);
    ``mean``, ``var`` and ``rstd`` are ``[R]``."""
    x = np.ascontiguousarray(x)
    rows, k = x.shape
    dt = x.dtype
    w = np.ones(k, dt) if w is None else np.ascontiguousarray(w, dt)
    b = np.zeros(k, dt) if b is None else np.ascontiguousarray(b, dt)
    out = np.empty_like(x)
    mean, var, rstd = np.empty(rows, dt), np.empty(rows, dt), np.empty(rows, dt)
    if rows and k:
        parallel_for(_rows_fwd, rows, x, w, b, out, mean, var, rstd, dt.type(eps), work_per_item=3 * k)
    return out, mean, var, rstd


def rows_backward(g, x, w, mean, scale, rstd, need_x, need_wb, gx_out=None):
    """Gradients of a row normalisation with ``x_hat = (x - mean) * scale`` per row:
    ``gx = rstd * (gy - mean(gy) - x_hat * mean(gy * x_hat))`` with ``gy = g * w``, and the
    column sums ``gw = sum(g * x_hat)``, ``gb = sum(g)`` (float64 partials per thread).
    ``g``/``x`` ``[R, K]``, ``w`` ``[K]`` or None, the rest ``[R]``; returns ``(gx, gw, gb)``,
    None where not asked.  ``gx_out``: a C-contiguous ``[R, K]`` array to write ``gx`` into
    (a view of an array in the caller's shape, which autograd can then take as ``.grad``
    without a copy, as it takes only arrays that own their memory)."""
    g, x = np.ascontiguousarray(g, x.dtype), np.ascontiguousarray(x)
    rows, k = x.shape
    dt = x.dtype
    w = np.ones(k, dt) if w is None else np.ascontiguousarray(w, dt)
    vec = [np.ascontiguousarray(np.broadcast_to(np.asarray(v, dt).reshape(-1), (rows,)))
           for v in (mean, scale, rstd)]
    gx = (np.empty_like(x) if gx_out is None else gx_out) if need_x else np.empty((1, 1), dt)
    chunks = _chunks(rows, k)
    parts = np.empty((chunks, k), dt if dt == np.float64 else np.float64) if need_wb else np.empty((chunks, 1))
    part_b = np.empty_like(parts)
    if rows and k:
        parallel_for(_rows_bwd, chunks, g, x, w, *vec, gx, parts, part_b, bool(need_x), bool(need_wb),
                     work_per_item=(rows * k * (2 * need_x + need_wb)) // chunks)
    elif need_wb:
        parts[:], part_b[:] = 0, 0
    gw = parts.sum(0).astype(dt) if need_wb else None
    gb = part_b.sum(0).astype(dt) if need_wb else None
    return (gx if need_x else None), gw, gb


@jit(fastmath=_REASSOC)
def _rms_fwd(start, stop, x, w, out, rstd, eps):
    k = x.shape[1]
    inv_k = x.dtype.type(1.0) / x.dtype.type(k)
    for r in range(start, stop):
        row = x[r]
        s = x.dtype.type(0.0)
        for j in range(k):
            s += row[j] * row[j]
        inv = x.dtype.type(1.0) / np.sqrt(s * inv_k + eps)
        o = out[r]
        for j in range(k):
            o[j] = row[j] * inv * w[j]
        rstd[r] = inv


def rms_forward(x, w, eps):
    """``(out, rstd)``: ``x * rstd * w`` per row of ``[R, K]``, ``rstd = 1/sqrt(mean(x^2) + eps)``."""
    x = np.ascontiguousarray(x)
    rows, k = x.shape
    dt = x.dtype
    w = np.ones(k, dt) if w is None else np.ascontiguousarray(w, dt)
    out, rstd = np.empty_like(x), np.empty(rows, dt)
    if rows and k:
        parallel_for(_rms_fwd, rows, x, w, out, rstd, dt.type(eps), work_per_item=2 * k)
    return out, rstd


def rms_backward(g, x, w, rstd, need_x, need_w, gx_out=None):
    """Gradients of ``x * rstd * w``: ``gx = rstd * (g*w - x_hat * mean(g*w * x_hat))`` with
    ``x_hat = x * rstd`` (the ``mean(gy)`` term of layer norm is absent: no centring), and
    ``gw = sum over rows of g * x_hat``.  ``gx_out`` as in :func:`rows_backward`."""
    g, x = np.ascontiguousarray(g, x.dtype), np.ascontiguousarray(x)
    rows, k = x.shape
    gx, gw, _ = rows_backward(g, x, w, np.zeros(1, x.dtype), rstd, rstd, False, need_w)
    if need_x:
        dt = x.dtype
        w = np.ones(k, dt) if w is None else np.ascontiguousarray(w, dt)
        gx = np.empty_like(x) if gx_out is None else gx_out
        if rows and k:
            parallel_for(_rms_bwd_x, rows, g, x, w, np.ascontiguousarray(rstd, dt).reshape(-1), gx,
                         work_per_item=2 * k)
    return gx, gw


@jit(fastmath=_REASSOC)
def _rms_bwd_x(start, stop, g, x, w, rstd, gx):
    k = x.shape[1]
    inv_k = x.dtype.type(1.0) / x.dtype.type(k)
    for r in range(start, stop):
        gr = g[r]
        xr = x[r]
        inv = rstd[r]
        s2 = x.dtype.type(0.0)
        for j in range(k):
            s2 += gr[j] * w[j] * xr[j]
        c = s2 * inv * inv_k
        o = gx[r]
        for j in range(k):
            o[j] = inv * (gr[j] * w[j] - xr[j] * inv * c)


# ---- groups (group norm) --------------------------------------------------------------------

@jit(fastmath=_REASSOC)
def _group_fwd(start, stop, x, w, b, out, mean, rstd, eps):
    # x [N * G, Cg, S]; row r is group r % G of sample r // G; w, b [G, Cg]
    groups = w.shape[0]
    cg, s = x.shape[1], x.shape[2]
    inv_n = x.dtype.type(1.0) / x.dtype.type(cg * s)
    for r in range(start, stop):
        gi = r % groups
        acc = x.dtype.type(0.0)
        for ci in range(cg):
            row = x[r, ci]
            for j in range(s):
                acc += row[j]
        m = acc * inv_n
        v = x.dtype.type(0.0)
        for ci in range(cg):
            row = x[r, ci]
            for j in range(s):
                d = row[j] - m
                v += d * d
        inv = x.dtype.type(1.0) / np.sqrt(v * inv_n + eps)
        for ci in range(cg):
            a = inv * w[gi, ci]
            c = b[gi, ci] - m * a
            row = x[r, ci]
            o = out[r, ci]
            for j in range(s):
                o[j] = row[j] * a + c
        mean[r] = m
        rstd[r] = inv


def group_forward(x, groups, w, b, eps):
    """``(out, mean, rstd)`` of group norm on ``x`` ``[N, C, *]`` (any layout; the output is
    contiguous): each of ``groups`` channel groups of a sample standardised, then
    ``* w[c] + b[c]`` (``[C]`` or None); ``mean``/``rstd`` ``[N * groups]``."""
    n, c = x.shape[:2]
    dt = x.dtype
    x3 = np.ascontiguousarray(x).reshape(n * groups, c // groups, -1)
    w = np.ones(c, dt) if w is None else np.ascontiguousarray(w, dt)
    b = np.zeros(c, dt) if b is None else np.ascontiguousarray(b, dt)
    out = np.empty_like(x3)
    mean, rstd = np.empty(n * groups, dt), np.empty(n * groups, dt)
    if x3.size:
        parallel_for(_group_fwd, n * groups, x3, w.reshape(groups, -1), b.reshape(groups, -1), out, mean, rstd,
                     dt.type(eps), work_per_item=3 * x3[0].size)
    return out.reshape(x.shape), mean, rstd


@jit(fastmath=_REASSOC)
def _group_bwd(start, stop, g, x, w, mean, rstd, gx, sw, sb, need_x):
    # per row: s1 = sum(g * w), s2 = sum(g * w * x_hat); per (row, channel) the sums of g * x_hat
    # and g into sw, sb [N * G, Cg]
    groups = w.shape[0]
    cg, s = x.shape[1], x.shape[2]
    inv_n = x.dtype.type(1.0) / x.dtype.type(cg * s)
    for r in range(start, stop):
        gi = r % groups
        m = mean[r]
        inv = rstd[r]
        s1 = x.dtype.type(0.0)
        s2 = x.dtype.type(0.0)
        for ci in range(cg):
            gr = g[r, ci]
            xr = x[r, ci]
            pg = x.dtype.type(0.0)
            px = x.dtype.type(0.0)
            for j in range(s):
                pg += gr[j]
                px += gr[j] * (xr[j] - m)
            sb[r, ci] = pg
            sw[r, ci] = px * inv
            s1 += pg * w[gi, ci]
            s2 += px * inv * w[gi, ci]
        if need_x:
            s1 *= inv_n
            s2 *= inv_n
            for ci in range(cg):
                a = inv * w[gi, ci]
                gr = g[r, ci]
                xr = x[r, ci]
                o = gx[r, ci]
                for j in range(s):
                    o[j] = a * gr[j] - inv * (s1 + (xr[j] - m) * inv * s2)


def group_backward(g, x, groups, w, mean, rstd, need_x):
    """Gradients of :func:`group_forward`: ``(gx, gw, gb)`` (``gx`` None unless ``need_x``;
    ``gw``/``gb`` ``[C]``, the sums over samples and positions of ``g * x_hat`` and ``g``).
    ``gx`` is a C-contiguous array of ``x``'s shape that owns its memory (the kernel writes
    through a grouped view of it), so autograd takes it as ``.grad`` without a copy."""
    n, c = x.shape[:2]
    dt = x.dtype
    x3 = np.ascontiguousarray(x).reshape(n * groups, c // groups, -1)
    g3 = np.ascontiguousarray(g, dt).reshape(x3.shape)
    w = np.ones(c, dt) if w is None else np.ascontiguousarray(w, dt)
    gx_full = np.empty(x.shape, dt) if need_x else None
    gx = gx_full.reshape(x3.shape) if need_x else np.empty((1, 1, 1), dt)
    sw, sb = np.empty(x3.shape[:2], dt), np.empty(x3.shape[:2], dt)
    if x3.size:
        parallel_for(_group_bwd, n * groups, g3, x3, w.reshape(groups, -1), np.ascontiguousarray(mean, dt),
                     np.ascontiguousarray(rstd, dt), gx, sw, sb, bool(need_x), work_per_item=3 * x3[0].size)
    else:
        sw[:], sb[:] = 0, 0
    gw = sw.reshape(n, c).sum(0, dtype=np.float64).astype(dt)
    gb = sb.reshape(n, c).sum(0, dtype=np.float64).astype(dt)
    return gx_full, gw, gb


# ---- channels (batch norm) ----------------------------------------------------------------

@jit
def _merge(cnt, mean, m2, j, n_b, mean_b, m2_b):
    # Chan et al.'s pairwise update of a count, mean and sum of squared deviations
    # ("Updating formulae and a pairwise algorithm for computing sample variances", 1979)
    tot = cnt + n_b
    delta = mean_b - mean[j]
    mean[j] += delta * (n_b / tot)
    m2[j] += m2_b + delta * delta * (cnt * n_b / tot)


@jit(fastmath=_REASSOC)
def _ncs_stats(start, stop, x, mean, m2):
    # per channel: each plane's mean and squared deviations (two passes over the cached plane),
    # planes merged in float64
    n, _, s = x.shape
    inv_s = x.dtype.type(1.0) / x.dtype.type(s)
    for c in range(start, stop):
        mean[c] = 0.0
        m2[c] = 0.0
        for i in range(n):
            xp = x[i, c]
            acc = x.dtype.type(0.0)
            for j in range(s):
                acc += xp[j]
            pm = acc * inv_s
            q = x.dtype.type(0.0)
            for j in range(s):
                d = xp[j] - pm
                q += d * d
            _merge(float(i * s), mean, m2, c, float(s), float(pm), float(q))


@jit(fastmath=_REASSOC)
def _mc_block_stats(x, lo, hi, bm, bq):
    c = x.shape[1]
    inv = x.dtype.type(1.0) / x.dtype.type(hi - lo)
    for j in range(c):
        bm[j] = 0.0
        bq[j] = 0.0
    for r in range(lo, hi):
        xr = x[r]
        for j in range(c):
            bm[j] += xr[j]
    for j in range(c):
        bm[j] *= inv
    for r in range(lo, hi):
        xr = x[r]
        for j in range(c):
            d = xr[j] - bm[j]
            bq[j] += d * d


@jit(fastmath=_REASSOC)
def _mc_stats(start, stop, x, mean, m2):
    # channels-last [M, C]: chunk i takes rows [M * i // chunks, M * (i + 1) // chunks) into
    # mean[i], m2[i]: blocks of 64 rows by two passes in the input dtype, merged in float64
    m, c = x.shape
    chunks = mean.shape[0]
    bm = np.empty(c, x.dtype)
    bq = np.empty(c, x.dtype)
    for i in range(start, stop):
        lo = m * i // chunks
        hi = m * (i + 1) // chunks
        for j in range(c):
            mean[i, j] = 0.0
            m2[i, j] = 0.0
        for b0 in range(lo, hi, 64):
            b1 = min(b0 + 64, hi)
            _mc_block_stats(x, b0, b1, bm, bq)
            for j in range(c):
                _merge(float(b0 - lo), mean[i], m2[i], j, float(b1 - b0), float(bm[j]), float(bq[j]))


def channel_stats(x):
    """``(mean, biased var)`` per channel, float64 ``[C]``, of ``[N, C, S]`` or ``[M, C]``."""
    if x.ndim == 3:
        c = x.shape[1]
        mean, m2 = np.empty(c), np.empty(c)
        if c:
            parallel_for(_ncs_stats, c, x, mean, m2, work_per_item=x.size // c)
        return mean, m2 / (x.size // c)
    m, c = x.shape
    chunks = _chunks(m, c)
    means, m2s = np.empty((chunks, c)), np.empty((chunks, c))
    parallel_for(_mc_stats, chunks, x, means, m2s, work_per_item=x.size // chunks)
    mean, m2, cnt = means[0], m2s[0], m // chunks
    for i in range(1, chunks):  # the chunks merged as the blocks were
        n_b = m * (i + 1) // chunks - m * i // chunks
        tot = cnt + n_b
        delta = means[i] - mean
        mean = mean + delta * (n_b / tot)
        m2 = m2 + m2s[i] + delta * delta * (cnt * n_b / tot)
        cnt = tot
    return mean, m2 / m


@jit(fastmath=_REASSOC)
def _ncs_sums(start, stop, g, x, ref, s1, s2):
    # per channel c: s1 = sum(g), s2 = sum(g * (x - ref))
    n, _, s = x.shape
    for c in range(start, stop):
        a = 0.0
        q = 0.0
        r = ref[c]
        for i in range(n):
            gp = g[i, c]
            xp = x[i, c]
            pa = x.dtype.type(0.0)
            pq = x.dtype.type(0.0)
            for j in range(s):
                pa += gp[j]
                pq += gp[j] * (xp[j] - r)
            a += pa
            q += pq
        s1[c] = a
        s2[c] = q


@jit(fastmath=_REASSOC)
def _mc_block_grads(g, x, lo, hi, ref, pa, pq):
    for j in range(x.shape[1]):
        pa[j] = 0.0
        pq[j] = 0.0
    for r in range(lo, hi):
        gr = g[r]
        xr = x[r]
        for j in range(x.shape[1]):
            pa[j] += gr[j]
            pq[j] += gr[j] * (xr[j] - ref[j])


@jit(fastmath=_REASSOC)
def _mc_sums(start, stop, g, x, ref, s1, s2):
    # channels-last [M, C]: chunk i sums rows [M * i // chunks, M * (i + 1) // chunks) into s*[i],
    # blocks of 64 rows in the input dtype, added in float64
    m, c = x.shape
    chunks = s1.shape[0]
    pa = np.empty(c, x.dtype)
    pq = np.empty(c, x.dtype)
    for i in range(start, stop):
        a = s1[i]
        q = s2[i]
        for j in range(c):
            a[j] = 0.0
            q[j] = 0.0
        hi = m * (i + 1) // chunks
        for b0 in range(m * i // chunks, hi, 64):
            _mc_block_grads(g, x, b0, min(b0 + 64, hi), ref, pa, pq)
            for j in range(c):
                a[j] += pa[j]
                q[j] += pq[j]


def _grad_sums(g, x, ref):
    """Per-channel float64 ``sum(g)`` and ``sum(g * (x - ref))`` over ``[N, C, S]`` or ``[M, C]``."""
    if x.ndim == 3:
        c = x.shape[1]
        s1, s2 = np.empty(c), np.empty(c)
        if c:
            parallel_for(_ncs_sums, c, g, x, ref, s1, s2, work_per_item=x.size // c)
        return s1, s2
    m, c = x.shape
    chunks = _chunks(m, c)
    s1, s2 = np.empty((chunks, c)), np.empty((chunks, c))
    parallel_for(_mc_sums, chunks, g, x, ref, s1, s2, work_per_item=x.size // chunks)
    return s1.sum(0), s2.sum(0)


@jit(fastmath=_REASSOC)
def _ncs_axpb(start, stop, x, g, a, b, k, out):
    # plane p = (n, c): out = a[c] * x + k[c] * g + b[c]
    c_count = x.shape[1]
    s = x.shape[2]
    for p in range(start, stop):
        n = p // c_count
        c = p % c_count
        xp = x[n, c]
        gp = g[n, c]
        op = out[n, c]
        ac, bc, kc = a[c], b[c], k[c]
        for j in range(s):
            op[j] = ac * xp[j] + kc * gp[j] + bc


@jit(fastmath=_REASSOC)
def _mc_axpb(start, stop, x, g, a, b, k, out):
    c = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        gr = g[r]
        o = out[r]
        for j in range(c):
            o[j] = a[j] * xr[j] + k[j] * gr[j] + b[j]


def _axpb(x, g, a, b, k):
    """``a[c] * x + k[c] * g + b[c]`` in one pass."""
    dt = x.dtype
    a, b, k = (np.ascontiguousarray(v, dt) for v in (a, b, k))
    out = np.empty_like(x)
    if x.ndim == 3:
        items, kern = x.shape[0] * x.shape[1], _ncs_axpb
    else:
        items, kern = x.shape[0], _mc_axpb
    if items and x.size:
        parallel_for(kern, items, x, g, a, b, k, out, work_per_item=max(1, x.size // items))
    return out


@jit(fastmath=_REASSOC)
def _ncs_ab(start, stop, x, a, b, out):
    c_count = x.shape[1]
    s = x.shape[2]
    for p in range(start, stop):
        n = p // c_count
        c = p % c_count
        xp = x[n, c]
        op = out[n, c]
        ac, bc = a[c], b[c]
        for j in range(s):
            op[j] = ac * xp[j] + bc


@jit(fastmath=_REASSOC)
def _mc_ab(start, stop, x, a, b, out):
    c = x.shape[1]
    for r in range(start, stop):
        xr = x[r]
        o = out[r]
        for j in range(c):
            o[j] = a[j] * xr[j] + b[j]


def channel_apply(x, scale, shift):
    """``x * scale[c] + shift[c]`` over ``[N, C, S]`` or ``[M, C]`` in one pass."""
    dt = x.dtype
    a, b = np.ascontiguousarray(scale, dt), np.ascontiguousarray(shift, dt)
    out = np.empty_like(x)
    if x.ndim == 3:
        items, kern = x.shape[0] * x.shape[1], _ncs_ab
    else:
        items, kern = x.shape[0], _mc_ab
    if items and x.size:
        parallel_for(kern, items, x, a, b, out, work_per_item=max(1, x.size // items))
    return out


def channel_backward(g, x, mean, rstd, w, batch_stats, need_x, need_w, need_b):
    """Batch norm gradients with ``x_hat = (x - mean) * rstd`` per channel (float64 ``[C]``
    ``mean``/``rstd``, ``w`` ``[C]`` or None): ``gb = sum(g)``, ``gw = sum(g * x_hat)``, and
    ``gx = w * rstd * (g - gb / n - x_hat * gw / n)`` with batch statistics, else
    ``g * w * rstd``; ``g``/``x`` in the same layout.  Returns ``(gx, gw, gb)``."""
    dt = x.dtype
    c = x.shape[1]
    count = x.size // max(c, 1)
    wv = np.ones(c) if w is None else w.astype(np.float64)
    gw = gb = None
    s1 = s2 = None
    if need_w or need_b or (need_x and batch_stats):
        ref = mean.astype(dt)  # the sums of g * (x - mean), with mean rounded to x's dtype
        s1, s2 = _grad_sums(g, x, ref)
        s2 = s2 + s1 * (ref.astype(np.float64) - mean)  # back to the exact mean
        gb = s1.astype(dt) if need_b else None
        gw = (s2 * rstd).astype(dt) if need_w else None
    gx = None
    if need_x:
        a = wv * rstd
        if batch_stats:
            kx = -a * rstd * rstd * s2 / count
            b0 = -a * s1 / count - kx * mean
            gx = _axpb(x, g, kx, b0, a)
        else:
            gx = channel_apply(g, a, np.zeros(c))
    return gx, gw, gb
