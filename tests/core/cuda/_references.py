"""float64 numpy references of what the CUDA kernels compute, written from the published
definitions (not from the kernels): Philox4x32-10 and the dropout counter scheme, cross
entropy with weights, ignore_index and label smoothing, and scaled dot-product attention
with its gradients and their rounding-error bounds. ``test_cuda_references.py`` checks them
on the CPU (Philox against the Random123 known answers, cross entropy and attention
against torch); the GPU tests compare the kernels with them."""

import numpy as np

# Philox4x32 constants (Salmon et al., SC'11, and Random123's philox.h): the two multipliers
# and the Weyl key increments
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LOW = np.uint64(0xFFFFFFFF)


def philox4x32_10(counters, key):
    """Philox4x32 with 10 rounds of each row of ``counters`` ``[n, 4]`` (uint32) under ``key``
    (two uint32): ``[n, 4]`` uint32. Per round, with ``hi:lo = M * c`` (32x32 -> 64 bits):
    ``(c0, c1, c2, c3) <- (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0))``,
    the key bumped by the Weyl constants before every round but the first."""
    c = np.asarray(counters, np.uint64).reshape(-1, 4).copy()
    k0, k1 = int(key[0]), int(key[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = _M0 * c[:, 0], _M1 * c[:, 2]
        c = np.stack([(p1 >> np.uint64(32)) ^ c[:, 1] ^ np.uint64(k0), p1 & _LOW,
                      (p0 >> np.uint64(32)) ^ c[:, 3] ^ np.uint64(k1), p0 & _LOW], axis=1)
    return c.astype(np.uint32)


def philox_words(n_groups, seed, offset):
    """The words of groups ``0 .. n_groups - 1`` of the stream ``(seed, offset)``: counter
    ``offset + group`` (64 bits, low word first, then two zero words), key the seed's low
    and high words. ``[n_groups, 4]`` uint32."""
    c = (np.uint64(offset) + np.arange(n_groups, dtype=np.uint64))  # wraps modulo 2**64
    counters = np.zeros((n_groups, 4), np.uint64)
    counters[:, 0], counters[:, 1] = c & _LOW, c >> np.uint64(32)
    return philox4x32_10(counters, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))


def philox_uniform(n, seed, offset):
    """The float32 uniforms in [0, 1) of elements ``0 .. n - 1``: element ``i`` is word
    ``i % 4`` of group ``i // 4``, as ``(word >> 8) * 2**-24``."""
    words = philox_words(-(-n // 4), seed, offset).reshape(-1)[:n]
    return ((words >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)).astype(np.float32)


def dropout_keep(n, p, seed, offset):
    """The kept elements of a dropout of ``n`` elements with probability ``p``: ``u >= p`` in float32."""
    return philox_uniform(n, seed, offset) >= np.float32(p)


def _log_softmax(x):
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


def cross_entropy_rows(x, t, w, ignore_index, eps):
    """``(loss, lse, wt)`` per row of ``x`` ``[N, C]`` in float64: torch's
    ``(1 - eps) * nll + eps / C * smooth`` (0 on ignored rows), the log-sum-exp, and the
    weight of the row's target (0 when ignored)."""
    x = np.asarray(x, np.float64)
    n, c = x.shape
    w = np.ones(c) if w is None else np.asarray(w, np.float64)
    lsm = _log_softmax(x)
    counted = t != ignore_index
    safe = np.where(counted, t, 0)
    wt = np.where(counted, w[safe], 0.0)
    nll = -wt * lsm[np.arange(n), safe]
    smooth = np.where(counted, -(lsm * w).sum(1), 0.0)
    lse = x.max(1) + np.log(np.exp(x - x.max(1, keepdims=True)).sum(1))
    return (1 - eps) * nll + eps / c * smooth, lse, wt


def cross_entropy(x, t, w, ignore_index, eps, reduction):
    """torch.nn.functional.cross_entropy with class indices, in float64."""
    loss, _, wt = cross_entropy_rows(x, t, w, ignore_index, eps)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return loss.sum() / wt.sum()


def cross_entropy_grad(x, t, w, ignore_index, eps, reduction, g):
    """The gradient of ``cross_entropy`` with respect to ``x`` for the output gradient ``g``
    (``[N]`` for 'none', a number otherwise), differentiated term by term: the nll term
    gives ``(1 - eps) * w_t * (p - onehot)``, the smoothing term ``eps / C * (W * p - w)``."""
    x = np.asarray(x, np.float64)
    n, c = x.shape
    w = np.ones(c) if w is None else np.asarray(w, np.float64)
    p = np.exp(_log_softmax(x))
    counted = t != ignore_index
    safe = np.where(counted, t, 0)
    wt = np.where(counted, w[safe], 0.0)[:, None]
    onehot = np.eye(c)[safe]
    d = (1 - eps) * wt * (p - onehot) + np.where(counted[:, None], eps / c * (w.sum() * p - w), 0.0)
    if reduction == "none":
        share = np.asarray(g, np.float64).reshape(n, 1)
    elif reduction == "sum":
        share = float(g)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            share = float(g) / wt.sum()
    with np.errstate(invalid="ignore"):  # every row ignored: NaN shares, never used
        return np.where(counted[:, None], d * share, 0.0)


def _t(a):
    return np.swapaxes(a, -1, -2)


def attention(q, k, v, mask, causal, scale, g):
    """``(results, bounds)`` of scaled dot-product attention in float64 for query ``[..., L,
    E]``, key ``[..., S, E]``, value ``[..., S, Ev]``, ``mask`` (None, bool: True takes part,
    or float: added) broadcasting to ``[..., L, S]``, ``causal`` (top-left aligned) and the
    output gradient ``g``. ``results``: ``out``, ``dq``, ``dk``, ``dv`` and ``ds`` (the score
    gradient, a float mask's gradient before summing over its broadcast dims), in the
    broadcast shapes; a row with every key masked gives zeros. ``bounds``: for each result,
    per element, the first-order bound of the error of computing it in a floating type of
    unit roundoff u, in units of u (multiply by u):

    - a score is a sum of E products plus the mask: error <= (E + 2) sabs, with
      ``sabs = |q| |k|^T scale + |mask|``;
    - a probability ``p = exp(s - lse)`` has relative error <= ``f = 2 (E + 2) max_j sabs
      + |lse| + 2 S + 8`` (two scores' errors, the sum over S keys in ``lse``, exp and log);
    - ``out = P v``: ``(f + S) P|v|``;
    - ``dS = P (dP - D)`` with ``dP = g v^T`` (Ev terms) and ``D = rowsum(g out)``:
      ``P M F`` with ``M = |g||v|^T + rowsum(|g| (|out| + P|v|))`` (which bounds
      ``|dP - D|`` and the terms' sizes) and ``F = f + S + Ev + 2``;
    - ``dq = scale dS k``: ``scale (P M (F + S)) |k|``; ``dk = scale dS^T q``:
      ``scale (P M (F + L))^T |q|``; ``dv = P^T g``: ``(P (f + L))^T |g|``.

    Masked entries have P = 0 and a bound of 0: the kernels must give exact zeros there."""
    q, k, v, g = (np.asarray(a, np.float64) for a in (q, k, v, g))
    L, E = q.shape[-2:]
    S, Ev = v.shape[-2:]
    s = q @ _t(k) * scale
    sabs = np.abs(q) @ _t(np.abs(k)) * scale
    allowed = np.ones((L, S), bool)
    if causal:
        allowed = np.tril(allowed)
    if mask is not None and np.asarray(mask).dtype == np.bool_:
        allowed = allowed & mask
    elif mask is not None:
        mask = np.asarray(mask, np.float64)
        allowed = allowed & (mask != -np.inf)
        finite = np.where(allowed, mask, 0.0)
        s = s + finite
        sabs = sabs + np.abs(finite)
    allowed = np.broadcast_to(allowed, s.shape)
    s = np.where(allowed, s, -np.inf)
    dead = ~allowed.any(-1, keepdims=True)
    m = np.where(dead, 0.0, s.max(-1, keepdims=True, initial=-np.inf))
    e = np.where(allowed, np.exp(s - m), 0.0)
    total = e.sum(-1, keepdims=True)
    p = e / np.where(dead, 1.0, total)
    lse = np.where(dead, 0.0, m + np.log(np.where(dead, 1.0, total)))
    out = p @ v
    dp = g @ _t(v)
    ds = p * (dp - (g * out).sum(-1, keepdims=True))
    results = {"out": out, "dq": ds @ k * scale, "dk": _t(ds) @ q * scale, "dv": _t(p) @ g, "ds": ds}
    f = 2 * (E + 2) * np.where(allowed, sabs, 0.0).max(-1, keepdims=True, initial=0.0) + np.abs(lse) + 2 * S + 8
    pv = p @ np.abs(v)
    big_m = np.abs(g) @ _t(np.abs(v)) + (np.abs(g) * (np.abs(out) + pv)).sum(-1, keepdims=True)
    pm = p * big_m
    big_f = f + S + Ev + 2
    bounds = {"out": (f + S) * pv, "ds": pm * big_f, "dq": scale * (pm * (big_f + S)) @ np.abs(k),
              "dk": scale * _t(pm * (big_f + L)) @ np.abs(q), "dv": _t(p * (f + L)) @ np.abs(g)}
    return results, bounds
