"""Softmax and log_softmax along one dim, their backwards, and nll_loss's gradient.

An array is seen as ``[outer, C, inner]`` in its own memory order (``C`` the reduced dim):
with ``inner == 1`` (the last dim, the common case) a row of ``C`` values stays in L1
while it is read three times (max, exp-sum, normalize); otherwise the ``inner`` columns
are reduced together, with running maxima and sums per column, each pass reading the
``[C, inner]`` block in memory order.  Work is split over rows (or blocks) with ``parallel_for``.

Formulas: ``y = exp(x - m) / sum(exp(x - m))``, ``log y = (x - m) - log(sum(exp(x - m)))``
with ``m`` the max; backwards ``gx = y * (g - sum(g * y))`` and
``gx = g - exp(y) * sum(g)`` (torch's ``derivatives.yaml``).  Sums of float32 rows are
reassociated (vector partial sums), which keeps them within a few ulp of a float64 sum.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

from . import _math as M
from ._runtime import dense_order, jit, parallel_for, threads

__all__ = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "nll_grad", "attention_probs",
           "attention_grad"]

_FM = {"reassoc", "contract", "nsz"}


def _block(outer, n, inner):
    """Columns of ``inner`` reduced together: enough that each pass streams through
    memory (at least 512: narrower blocks jump between pages at every one of the ``n``
    steps, which measured slow), few enough that the block's ``n`` runs stay in L2
    between the passes (about 64K values), and split so that every thread gets work when
    ``outer`` alone cannot feed them."""
    bs = max(512, (1 << 16) // n)
    parts = -(-threads() // outer)
    if parts > 1:
        bs = min(bs, -(-inner // parts))
    return min(inner, (bs + 15) // 16 * 16)


# ---- last dim: one row at a time ---------------------------------------------------

@register_jitable
def _row_max(xr):
    # eight running maxima: LLVM does not vectorize a floating max reduction without
    # no-NaN function attributes, and one chain waits on each compare.  A NaN is skipped
    # here and reaches the output through exp.
    n = xr.shape[0]
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = xr[0]
    k = n - n % 8
    for c in range(0, k, 8):
        v0, v1, v2, v3 = xr[c], xr[c + 1], xr[c + 2], xr[c + 3]
        v4, v5, v6, v7 = xr[c + 4], xr[c + 5], xr[c + 6], xr[c + 7]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
    for c in range(k, n):
        v = xr[c]
        m0 = v if v > m0 else m0
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@jit(fastmath=_FM)
def _forward_rows(start, stop, x, y, dead_zero):
    n = x.shape[1]
    for i in range(start, stop):
        xr = x[i]
        yr = y[i]
        m = _row_max(xr)
        if dead_zero and m == -np.inf:  # every entry -inf: exp gives 0s, the sum is set to 1
            m = xr.dtype.type(0)
        s = xr.dtype.type(0)
        for c in range(n):
            e = M.exp(xr[c] - m)
            yr[c] = e
            s += e
        if dead_zero and s == 0:
            s = xr.dtype.type(1)
        inv = xr.dtype.type(1) / s
        for c in range(n):
            yr[c] *= inv


@jit(fastmath=_FM)
def _attention_rows(start, stop, x, scale, queries, causal):
    # row i is query i % queries; causal: keys 0..query (torch's top-left aligned tril);
    # the columns past them are written as zeros, never read
    n = x.shape[1]
    zero = x.dtype.type(0)
    for i in range(start, stop):
        xr = x[i]
        k = min(n, i % queries + 1) if causal else n
        xv = xr[:k]
        for c in range(k):
            xv[c] *= scale
        m = _row_max(xv)
        if m == -np.inf:  # every key's score -inf: zeros, as the masked path gives
            m = zero
        s = zero
        for c in range(k):
            e = M.exp(xv[c] - m)
            xv[c] = e
            s += e
        inv = x.dtype.type(1) / (x.dtype.type(1) if s == 0 else s)
        for c in range(k):
            xv[c] *= inv
        for c in range(k, n):
            xr[c] = zero


@jit(fastmath=_FM)
def _attention_grad_rows(start, stop, g, y, scale, queries, causal):
    # softmax's backward times the scale, in place on g; causal as in _attention_rows: the
    # columns past each query's keys are written as zeros, never read
    n = y.shape[1]
    zero = y.dtype.type(0)
    for i in range(start, stop):
        gr = g[i]
        yr = y[i]
        k = min(n, i % queries + 1) if causal else n
        s = zero
        for c in range(k):
            s += gr[c] * yr[c]
        for c in range(k):
            gr[c] = scale * (yr[c] * (gr[c] - s))
        for c in range(k, n):
            gr[c] = zero


@jit(fastmath=_FM)
def _log_forward_rows(start, stop, x, y):
    # rows in L1-sized chunks: the logs of a chunk's sums are taken in one vector loop
    # (a scalar log per row costs as much as the rest of a short row)
    n = x.shape[1]
    chunk = max(1, 2048 // n)
    m = np.empty(chunk, x.dtype)
    s = np.empty(chunk, x.dtype)
    for r0 in range(start, stop, chunk):
        r1 = min(r0 + chunk, stop)
        for i in range(r0, r1):
            xr = x[i]
            mi = _row_max(xr)
            si = xr.dtype.type(0)
            for c in range(n):
                si += M.exp(xr[c] - mi)
            m[i - r0] = mi
            s[i - r0] = si
        for k in range(r1 - r0):
            s[k] = M.log(s[k])
        for i in range(r0, r1):
            xr = x[i]
            yr = y[i]
            mi = m[i - r0]
            ls = s[i - r0]
            for c in range(n):
                yr[c] = (xr[c] - mi) - ls


@jit(fastmath=_FM)
def _backward_rows(start, stop, g, y, gx, log):
    n = y.shape[1]
    for i in range(start, stop):
        gr = g[i]
        yr = y[i]
        out = gx[i]
        s = yr.dtype.type(0)
        if log:
            for c in range(n):
                s += gr[c]
            for c in range(n):
                out[c] = gr[c] - M.exp(yr[c]) * s
        else:
            for c in range(n):
                s += gr[c] * yr[c]
            for c in range(n):
                out[c] = yr[c] * (gr[c] - s)


# ---- other dims: blocks of columns of [outer, C, inner] ----------------------------

# Each pass takes a block's run of one class as a 1-d contiguous slice, so that the element
# loops index from 0 (an offset index keeps a negative-index check that stops vectorizing).

@jit(fastmath=_FM)
def _forward_blocks(start, stop, x, y, log, bs, dead_zero):
    n, inner = x.shape[1], x.shape[2]
    nb = (inner + bs - 1) // bs
    m = np.empty(bs, x.dtype)
    s = np.empty(bs, x.dtype)
    for k in range(start, stop):
        o = k // nb
        j0 = (k % nb) * bs
        w = min(bs, inner - j0)
        xr = x[o, 0, j0:j0 + w]
        for j in range(w):
            m[j] = xr[j]
            s[j] = 0
        for c in range(1, n):
            xr = x[o, c, j0:j0 + w]
            for j in range(w):
                v = xr[j]
                m[j] = v if v > m[j] else m[j]
        if dead_zero:
            for j in range(w):
                m[j] = 0 if m[j] == -np.inf else m[j]
        if log:
            for c in range(n):
                xr = x[o, c, j0:j0 + w]
                for j in range(w):
                    s[j] += M.exp(xr[j] - m[j])
            for j in range(w):
                s[j] = M.log(s[j])
            for c in range(n):
                xr = x[o, c, j0:j0 + w]
                yr = y[o, c, j0:j0 + w]
                for j in range(w):
                    yr[j] = (xr[j] - m[j]) - s[j]
        else:
            for c in range(n):
                xr = x[o, c, j0:j0 + w]
                yr = y[o, c, j0:j0 + w]
                for j in range(w):
                    e = M.exp(xr[j] - m[j])
                    yr[j] = e
                    s[j] += e
            for j in range(w):
                s[j] = x.dtype.type(1) / (1 if dead_zero and s[j] == 0 else s[j])
            for c in range(n):
                yr = y[o, c, j0:j0 + w]
                for j in range(w):
                    yr[j] *= s[j]


@jit(fastmath=_FM)
def _backward_blocks(start, stop, g, y, gx, log, bs):
    n, inner = y.shape[1], y.shape[2]
    nb = (inner + bs - 1) // bs
    s = np.empty(bs, y.dtype)
    for k in range(start, stop):
        o = k // nb
        j0 = (k % nb) * bs
        w = min(bs, inner - j0)
        for j in range(w):
            s[j] = 0
        if log:
            for c in range(n):
                gr = g[o, c, j0:j0 + w]
                for j in range(w):
                    s[j] += gr[j]
            for c in range(n):
                gr = g[o, c, j0:j0 + w]
                yr = y[o, c, j0:j0 + w]
                outr = gx[o, c, j0:j0 + w]
                for j in range(w):
                    outr[j] = gr[j] - M.exp(yr[j]) * s[j]
        else:
            for c in range(n):
                gr = g[o, c, j0:j0 + w]
                yr = y[o, c, j0:j0 + w]
                for j in range(w):
                    s[j] += gr[j] * yr[j]
            for c in range(n):
                gr = g[o, c, j0:j0 + w]
                yr = y[o, c, j0:j0 + w]
                outr = gx[o, c, j0:j0 + w]
                for j in range(w):
                    outr[j] = yr[j] * (gr[j] - s[j])


# ---- nll_loss's gradient: zero rows with one coefficient each ----------------------

@jit
def _nll_grad_rows(start, stop, t, coef, out):
    n = out.shape[1]
    for i in range(start, stop):
        r = out[i]
        for c in range(n):
            r[c] = 0
        k = t[i]
        if 0 <= k < n:
            r[k] = coef[i]


@jit
def _nll_grad_blocks(start, stop, t, coef, out):
    # out [N, C, inner]: coef[i, j] where t[i, j] == c, else 0 (one select per element)
    n, inner = out.shape[1], out.shape[2]
    for i in range(start, stop):
        ti = t[i]
        ci = coef[i]
        oi = out[i]
        for c in range(n):
            row = oi[c]
            for j in range(inner):
                row[j] = ci[j] if ti[j] == c else 0


# ---- entry points ------------------------------------------------------------------

def _dense(a):
    """``a`` (or a C-contiguous copy when it is not a dense block) and its memory order."""
    order = dense_order(a)
    if order is None:
        a = np.ascontiguousarray(a)
        order = tuple(range(a.ndim))
    return a, order


def _blocks(a, order, d):
    """``a`` in memory order ``order`` as a C-contiguous ``[outer, C, inner]`` array (a
    view when ``a`` is dense in that order, else a copy)."""
    t = np.ascontiguousarray(a.transpose(order))
    pos = order.index(d)
    shape = t.shape
    return t.reshape(math.prod(shape[:pos]), shape[pos], math.prod(shape[pos + 1:]))


def _like(a, order):
    """A new array of ``a``'s shape, dtype and memory order ``order``, and that order (C
    order where numpy's layout-keeping allocation ranks equal strides otherwise).  The
    result is given back itself, not a view: an array that owns its memory can become
    ``.grad`` without a copy."""
    out = np.empty_like(a)
    if out.transpose(order).flags.c_contiguous:
        return out, order
    return np.empty(a.shape, a.dtype), tuple(range(a.ndim))


def _forward(x, d, log, dead_zero=False):
    x, order = _dense(x)
    y, order = _like(x, order)
    x3, y3 = _blocks(x, order, d), _blocks(y, order, d)
    outer, n, inner = x3.shape
    if inner == 1 and log:
        parallel_for(_log_forward_rows, outer, x3.reshape(outer, n), y3.reshape(outer, n), work_per_item=n)
    elif inner == 1:
        parallel_for(_forward_rows, outer, x3.reshape(outer, n), y3.reshape(outer, n), dead_zero, work_per_item=n)
    else:
        bs = _block(outer, n, inner)
        items = outer * ((inner + bs - 1) // bs)
        parallel_for(_forward_blocks, items, x3, y3, log, bs, dead_zero, work_per_item=n * bs)
    return y


def _backward(g, y, d, log):
    y, order = _dense(y)
    gx, order = _like(y, order)
    y3, g3, gx3 = _blocks(y, order, d), _blocks(g, order, d), _blocks(gx, order, d)
    outer, n, inner = y3.shape
    if inner == 1:
        parallel_for(_backward_rows, outer, g3.reshape(outer, n), y3.reshape(outer, n), gx3.reshape(outer, n),
                     log, work_per_item=n)
    else:
        bs = _block(outer, n, inner)
        items = outer * ((inner + bs - 1) // bs)
        parallel_for(_backward_blocks, items, g3, y3, gx3, log, bs, work_per_item=n * bs)
    return gx


def softmax(x, d, dead_zero=False):
    """softmax of the float32/float64 array ``x`` (at least 1-d, not empty) along ``d``,
    in ``x``'s dtype and memory layout; with ``dead_zero`` a slice whose entries are all
    -inf gives zeros instead of NaN (attention's fully masked rows)."""
    return _forward(x, d, False, dead_zero)


def attention_probs(scores, scale, causal):
    """Attention's probabilities from its raw scores ``q @ k^T``, in place: ``scores``
    (``[..., L, S]``, C-contiguous float32/float64) becomes ``softmax(scores * scale)``
    over its last dim, with ``causal`` the keys past each query (``j > i``) masked (zero,
    never read). The scale is rounded to the scores' dtype first, as numpy's
    ``scores *= scale`` does; a row whose scores are all -inf gives zeros. Returns
    ``scores``."""
    L, S = scores.shape[-2], scores.shape[-1]
    rows = scores.reshape(-1, S)
    parallel_for(_attention_rows, rows.shape[0], rows, scores.dtype.type(scale), L, bool(causal),
                 work_per_item=4 * S)
    return scores


def attention_grad(dp, probs, scale, causal):
    """The gradient of attention's raw scores ``q @ k^T`` from that of its probabilities,
    in place: ``dp`` (``[..., L, S]``, C-contiguous, the layout of ``probs``) becomes
    ``scale * probs * (dp - sum(dp * probs))`` over its last dim, with ``causal`` the keys
    past each query zero without being read (so ``dp`` need not be written there).
    Returns ``dp``."""
    L, S = probs.shape[-2], probs.shape[-1]
    parallel_for(_attention_grad_rows, math.prod(probs.shape[:-1]), dp.reshape(-1, S), probs.reshape(-1, S),
                 probs.dtype.type(scale), L, bool(causal), work_per_item=3 * S)
    return dp


def log_softmax(x, d):
    """log_softmax of ``x`` along ``d`` (as ``softmax``)."""
    return _forward(x, d, True)


def softmax_backward(g, y, d):
    """``y * (g - sum(g * y, d))`` for softmax's output ``y``, in ``y``'s layout."""
    return _backward(g, y, d, False)


def log_softmax_backward(g, y, d):
    """``g - exp(y) * sum(g, d)`` for log_softmax's output ``y``, in ``y``'s layout."""
    return _backward(g, y, d, True)


def nll_grad(target, coef, n_classes, dtype):
    """nll_loss's gradient: the ``[N, C, *d]`` array that is ``coef[i, *j]`` at class
    ``target[i, *j]`` and 0 elsewhere, for ``target`` and ``coef`` of shape ``[N, *d]``
    (entries of ``target`` outside ``[0, C)``, the ignored ones, match no class)."""
    n = target.shape[0]
    spatial = target.shape[1:]
    inner = math.prod(spatial)
    out = np.empty((n, n_classes) + spatial, dtype)
    t = np.ascontiguousarray(target, np.int64).reshape(n, inner)
    coef = np.ascontiguousarray(coef, dtype).reshape(n, inner)
    if not spatial:
        parallel_for(_nll_grad_rows, n, t.reshape(n), coef.reshape(n), out, work_per_item=max(n_classes, 1))
    else:
        parallel_for(_nll_grad_blocks, n, t, coef, out.reshape(n, n_classes, inner),
                     work_per_item=max(n_classes * inner, 1))
    return out
