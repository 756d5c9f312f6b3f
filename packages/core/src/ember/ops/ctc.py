"""Connectionist temporal classification loss (torch.nn.functional.ctc_loss; Graves et al.,
"Connectionist Temporal Classification", ICML 2006).

Each target ``l`` of length L is extended with blanks to ``l'`` of length 2L+1 (blank,
l1, blank, l2, ..., blank).  The forward variables ``alpha[t, s]`` (log probability of
the prefixes of ``l'`` ending in position s at time t) and the backward variables
``beta[t, s]`` are computed in log space, vectorized over the batch and the positions of
``l'``; only time is looped over.  The loss is ``-log p(l | x)``; its gradient with
respect to ``log_probs[t, c]`` is, as torch computes it,
``exp(log_probs[t, c]) - exp(logsumexp_{s: l'_s = c}(alpha + beta)[t, s] + nll - log_probs[t, c])``:
the second term is the exact derivative and the first is the softmax term torch adds,
which assumes ``log_probs`` come from log_softmax (through log_softmax both give the same
gradient of the logits).
"""

from __future__ import annotations

from .._autocast import autocast_op
from .._tensor import Tensor, _make
from ._helpers import be, needs_grad, record
from .loss import _check_reduction, _ignore_fp, _long

__all__ = ["ctc_loss"]


def _lengths(lengths, n, name, xp):
    """Lengths given as a tensor or a sequence of ints, as an int64 array ``[N]``."""
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype.is_complex:
            raise RuntimeError(f"{name} must be integral")
        arr = xp.asarray(lengths._data, dtype=xp.int64).reshape(-1)
    else:
        if isinstance(lengths, int):
            lengths = (lengths,)
        arr = xp.asarray(list(lengths), dtype=xp.int64).reshape(-1)
    if arr.shape[0] != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return arr


def _padded_targets(xp, targets, target_lengths, n):
    """Targets as a padded ``[N, max(target_lengths)]`` array (a concatenated 1-D input
    is cut at the cumulative lengths)."""
    t = targets._data
    lmax = int(target_lengths.max()) if n else 0
    if targets.ndim == 1:
        total = int(target_lengths.sum())
        if t.shape[0] < total:
            raise RuntimeError(f"Expected tensor to have size at least {total} at dimension 0, but got size "
                               f"{t.shape[0]} for argument #2 'targets' (while checking arguments for ctc_loss)")
        starts = xp.cumsum(target_lengths) - target_lengths
        idx = starts[:, None] + xp.arange(lmax)[None, :]
        inside = xp.arange(lmax)[None, :] < target_lengths[:, None]
        return xp.where(inside, t[xp.where(inside, idx, 0)] if t.shape[0] else 0, 0)
    if t.shape[1] < lmax:
        raise RuntimeError(f"Expected tensor to have size at least {lmax} at dimension 1, but got size "
                           f"{t.shape[1]} for argument #2 'targets' (while checking arguments for ctc_loss)")
    return t[:, :lmax]


def _logsumexp3(xp, a, b, c):
    m = xp.maximum(xp.maximum(a, b), c)
    m_safe = xp.where(xp.isfinite(m), m, 0)
    return xp.log(xp.exp(a - m_safe) + xp.exp(b - m_safe) + xp.exp(c - m_safe)) + m_safe


def _shift(xp, arr, k, fill):
    """``arr`` moved k positions along the last axis (right for k > 0, left for k < 0)."""
    out = xp.full(arr.shape, fill, dtype=arr.dtype)
    if k > 0:
        out[..., k:] = arr[..., :-k]
    else:
        out[..., :k] = arr[..., -k:]
    return out


@autocast_op("fp32")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss (torch.nn.functional.ctc_loss; Graves et al.,
    ICML 2006): the negative log likelihood of each target over all its alignments to the input
    frames.

    ``log_probs``: ``[T, N, C]`` (or ``[T, C]`` for one sequence), float32/float64
    log-probabilities, e.g. from log_softmax. ``targets``: padded ``[N, S]`` or the N targets
    concatenated in 1-D, integer class indices, ``blank`` excluded. ``input_lengths``,
    ``target_lengths``: ``[N]`` tensors or tuples of ints. ``blank``: the blank class index
    (default 0). ``reduction``: 'none' gives the per-sequence losses ``[N]``, 'mean' the mean of
    the losses each divided by its target length (at least 1), 'sum' their sum.
    ``zero_infinity``: turn infinite losses (impossible alignments) and their gradients to zero.
    The gradient is torch's (see the module docstring) and, as in torch, not itself
    differentiable.

    RuntimeError for bad shapes, lengths or blank; ValueError for a bad reduction."""
    _check_reduction(reduction)
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, but got {log_probs.ndim}-D")
    if not log_probs.dtype.is_floating_point:
        raise RuntimeError(f"\"ctc_loss_cpu\" not implemented for '{_long(log_probs.dtype)}'")
    if targets.dtype.is_floating_point or targets.dtype.is_complex:
        raise RuntimeError(f"ctc_loss: expected targets to be an integer tensor, but got {_long(targets.dtype)}")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if unbatched and targets.ndim == 1:
        targets = targets.unsqueeze(0)
    n_time, n, n_classes = lp.shape
    if not 0 <= blank < n_classes:
        raise RuntimeError("blank must be in label range")
    xp = be(lp).xp
    il = _lengths(input_lengths, n, "input_lengths", xp)
    tl = _lengths(target_lengths, n, "target_lengths", xp)
    if n and int(il.max()) > n_time:
        raise RuntimeError(f"Expected input_lengths to have value at most {n_time}, but got value {int(il.max())} "
                           "(while checking arguments for ctc_loss)")
    if n and (int(il.min()) < 0 or int(tl.min()) < 0):
        raise RuntimeError("ctc_loss: input_lengths and target_lengths must be non-negative")
    tgt = xp.asarray(_padded_targets(xp, targets, tl, n), dtype=xp.int64)
    nll, grad = _ctc_arrays(xp, lp._data, tgt, il, tl, blank, zero_infinity)
    r = _make(nll, lp.dtype)
    if needs_grad(lp):
        record("CtcLossBackward0", _ctc_rule, (lp,), r, (_make(grad, lp.dtype),))
    if reduction == "mean":
        divisor = _make(xp.maximum(tl, 1).astype(nll.dtype), lp.dtype)
        return (r / divisor).mean()
    if reduction == "sum":
        return r.sum()
    return r.reshape(()) if unbatched else r


def _ctc_rule(g, grad):
    return g.reshape(1, -1, 1) * grad


def _ctc_arrays(xp, lp, tgt, il, tl, blank, zero_infinity):
    """The losses ``[N]`` and their gradient ``[T, N, C]`` with respect to ``lp``."""
    n_time, n, n_classes = lp.shape
    dtype = lp.dtype
    neg_inf = dtype.type(-xp.inf)
    n_ext = 2 * tgt.shape[1] + 1
    ext = xp.full((n, n_ext), blank, dtype=xp.int64)
    ext[:, 1::2] = xp.clip(tgt, 0, n_classes - 1)
    pos = xp.arange(n_ext)[None, :]
    # a label may be reached from two positions back unless it is blank or repeats
    skip = (pos >= 2) & (ext != blank) & (ext != _shift(xp, ext, 2, -1))
    inside = pos < (2 * tl + 1)[:, None]
    emit = lp[:, xp.arange(n)[:, None], ext]                       # [T, N, S']
    emit = xp.where(inside[None], emit, neg_inf)
    last = xp.maximum(il - 1, 0)
    rows = xp.arange(n)
    with _ignore_fp(xp):
        alpha = xp.full((n_time, n, n_ext), neg_inf, dtype=dtype)
        if n_time:
            alpha[0, :, 0] = emit[0, :, 0]
            if n_ext > 1:
                alpha[0, :, 1] = emit[0, :, 1]
        for t in range(1, n_time):
            prev = alpha[t - 1]
            two_back = xp.where(skip, _shift(xp, prev, 2, neg_inf), neg_inf)
            alpha[t] = _logsumexp3(xp, prev, _shift(xp, prev, 1, neg_inf), two_back) + emit[t]
        end = alpha[last, rows]                                   # [N, S']
        a_blank = end[rows, 2 * tl]
        a_label = xp.where(tl > 0, end[rows, xp.maximum(2 * tl - 1, 0)], neg_inf)
        nll = -xp.logaddexp(a_blank, a_label)
        nll = xp.where(il == 0, xp.where(tl == 0, 0, xp.inf), nll).astype(dtype)

        skip_next = _shift(xp, skip, -2, False)                   # position s + 2 may be skipped to
        final = (pos == (2 * tl)[:, None]) | ((pos == (2 * tl - 1)[:, None]) & (tl > 0)[:, None])
        beta = xp.full((n_time, n, n_ext), neg_inf, dtype=dtype)
        for t in range(n_time - 1, -1, -1):
            if t < n_time - 1:
                nxt = beta[t + 1]
                two_on = xp.where(skip_next, _shift(xp, nxt, -2, neg_inf), neg_inf)
                rec = _logsumexp3(xp, nxt, _shift(xp, nxt, -1, neg_inf), two_on) + emit[t]
            else:
                rec = xp.full((n, n_ext), neg_inf, dtype=dtype)
            start = xp.where(final, emit[t], neg_inf)
            beta[t] = xp.where((t == il - 1)[:, None], start, xp.where((t < il - 1)[:, None], rec, neg_inf))

        # occupation of each class: logsumexp of alpha + beta over the positions holding it
        ab = alpha + beta
        peak = ab.max(axis=2, keepdims=True)
        peak = xp.where(xp.isfinite(peak), peak, 0)
        onehot = (ext[:, :, None] == xp.arange(n_classes)[None, None, :]).astype(dtype)   # [N, S', C]
        occ = xp.matmul(xp.exp(ab - peak).transpose(1, 0, 2), onehot).transpose(1, 0, 2)  # [T, N, C]
        log_occ = xp.log(occ) + peak
        grad = xp.exp(lp) - xp.exp(log_occ + nll[None, :, None] - lp)
    in_time = xp.arange(n_time)[:, None] < il[None, :]
    keep = in_time
    if zero_infinity:
        finite = xp.isfinite(nll)
        keep = keep & finite[None, :]
        nll = xp.where(finite, nll, 0).astype(dtype)
    grad = xp.where(keep[:, :, None], grad, 0).astype(dtype)
    return nll, grad
