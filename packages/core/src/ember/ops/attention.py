"""Scaled dot-product attention as one graph node (torch.nn.functional.scaled_dot_product_attention).

Forward, for query ``[..., L, E]``, key ``[..., S, E]`` and value ``[..., S, Ev]``:
``S = q @ k^T * scale + mask``, ``P = softmax(S)`` (a row whose every entry is masked gives
zeros, as torch's math kernel), ``Pd = dropout(P)``, ``out = Pd @ v``.

The gradient (softmax backward fused), with ``D`` the dropout multiplier::

    dv = Pd^T @ g           dP = (g @ v^T) * D
    dS = P * (dP - rowsum(dP * P))
    dq = dS @ k * scale     dk = dS^T @ q * scale     dmask = dS

Without ``create_graph`` it runs on arrays from the saved ``P``; with it, ``P`` is
recomputed from q and k with ember ops, so higher-order gradients are exact.

cupy inputs of the kernels' dtypes (float32, float64, float16, bfloat16), head dims up to
128 and at most two leading dims take the CUDA kernels instead (``cuda/kernels/attention.py``):
the forward tiles the scores and keeps each row's log-sum-exp rather than ``P``, and the
backward recomputes ``P`` tile by tile from it; a dropout's mask is drawn from the device
generator's Philox counters in the forward and drawn again in the backward. The numpy path
computes the whole score matrix, or under the causal mask only the part of it that each
band of query rows sees (the numba kernels write and read the rest as zeros).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as D
from .._autocast import autocast_op
from .._blas import matmul as blas_matmul
from .._tensor import _make
from ..autograd.graph import on_arrays
from ..cpu import kernels
from ..cuda.kernels import attention as cuda_attention
from ..cuda.kernels import dropout as cuda_dropout
from ._helpers import _type_name, be, needs_grad, record

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


def _dtype_word(d):
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "bool": "bool"}.get(d.name, d.name)


def _check(query, key, value, attn_mask, is_causal):
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim} instead.")
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_dtype_word(query.dtype)} key.dtype: {_dtype_word(key.dtype)} and value.dtype: "
                           f"{_dtype_word(value.dtype)} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Float but found {_type_name(query.dtype)}")
    if attn_mask is not None and attn_mask.dtype is not D.bool_ and attn_mask.dtype is not query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_dtype_word(attn_mask.dtype)} and  query.dtype: "
                           f"{_dtype_word(query.dtype)} instead.")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(f"Expected the last dimension of query and key to match, but got query {list(query.shape)}"
                           f" and key {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"Expected key and value to have the same sequence length, but got key "
                           f"{list(key.shape)} and value {list(value.shape)}")


def _repeat_heads(query, key, value):
    """Grouped-query attention: each key/value head serves ``Hq / Hkv`` consecutive query heads."""
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
    if hk != hq:
        key = key.repeat_interleave(hq // hk, -3)
    if hv != hq:
        value = value.repeat_interleave(hq // hv, -3)
    return key, value


@autocast_op("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """Attention ``softmax(query @ key^T * scale + mask) @ value``
    (torch.nn.functional.scaled_dot_product_attention; Vaswani et al., arXiv:1706.03762).

    ``query``: ``[..., L, E]``; ``key``: ``[..., S, E]``; ``value``: ``[..., S, Ev]`` (leading
    dims broadcast, e.g. ``[N, heads, L, E]``); returns ``[..., L, Ev]`` in the inputs' floating
    dtype. ``attn_mask`` broadcasts to ``[..., L, S]``: a bool mask marks with True the keys
    that take part, a float mask (the query's dtype) is added to the scores. ``is_causal``
    applies the top-left aligned lower-triangular mask ``tril(ones(L, S))``. ``scale`` defaults
    to ``1/sqrt(E)``. ``dropout_p`` drops attention probabilities (from the default generator).
    With ``enable_gqa`` key and value may have fewer heads (dim -3) than the query, a divisor of
    its count. A row whose keys are all masked gives zeros (and zero gradients).

    Raises RuntimeError for inputs under 2-D, mixed dtypes, a mask of another dtype, mismatched
    sizes, or a mask given together with ``is_causal``."""
    _check(query, key, value, attn_mask, is_causal)
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and (key.shape[-3] != query.shape[-3]
                                                             or value.shape[-3] != query.shape[-3]):
        key, value = _repeat_heads(query, key, value)
    xp = be(query).xp
    q, k, v = query._data, key._data, value._data
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    if cuda_attention.accepts(q, k, v, None if attn_mask is None else attn_mask._data):
        return _tiled(query, key, value, attn_mask, is_causal, scale, float(dropout_p))
    bands = _causal_bands(q, k, v) if is_causal and attn_mask is None else None
    if bands is not None:
        return _causal_banded(query, key, value, bands, dropout_p, scale)
    scores = blas_matmul(q, xp.swapaxes(k, -1, -2))
    if attn_mask is None and scores.size and kernels.accepts(scores) and scores.flags.c_contiguous:
        # scale, causal mask and softmax in one pass over each row, in place
        probs = kernels.softmax.attention_probs(scores, scale, is_causal)
    else:
        scores *= scores.dtype.type(scale)
        if is_causal:
            scores = xp.where(xp.tril(xp.ones((L, S), dtype=bool)), scores, -xp.inf)
        elif attn_mask is not None:
            m = attn_mask._data
            scores = xp.where(m, scores, -xp.inf) if attn_mask.dtype is D.bool_ else scores + m
        probs = _softmax_rows(xp, scores)
    # numpy multiplies bfloat16 into float32: the probabilities and the output are rounded to
    # the inputs' dtype, as torch's math path computes them in it
    probs = probs.astype(q.dtype, copy=False)
    keep = None
    if dropout_p > 0.0:  # torch's math path: a contiguous result
        keep = _dropout_multiplier(query, probs.shape, dropout_p)
        out = blas_matmul(probs * keep, v)
    else:
        out = blas_matmul(probs, v, out=_empty_heads(xp, q, q.shape[:-1] + v.shape[-1:], k, v))
    r = _make(out.astype(q.dtype, copy=False), query.dtype)
    float_mask = attn_mask if attn_mask is not None and attn_mask.dtype is not D.bool_ else None
    if needs_grad(query, key, value, float_mask):
        mask_grad = float_mask is not None and needs_grad(float_mask)
        record("ScaledDotProductAttentionBackward0", _sdpa_rule, (query, key, value, float_mask), r,
               (query, key, value, _make(probs, query.dtype), keep, scale, attn_mask, is_causal, mask_grad, xp))
    return r


# ---- causal attention in bands of query rows (numpy arrays, numba kernels) ---------------
#
# Under the causal mask, query row i sees keys 0..i, so the rows [r0, r1) of a band need the
# first min(r1, S) keys only: each product runs over its band's keys, and the scores past
# them are neither computed nor read (the kernels write zeros there). With b equal bands the
# four products of attention do (b + 1) / 2b of the full work: 3/4 at two bands, 9/16 at
# eight. A band keeps at least _BAND_ROWS rows, so that each product stays one BLAS call of
# a useful size.

_BAND_ROWS = 64
_MAX_BANDS = 8


def _causal_bands(q, k, v):
    """``[(r0, r1, keys)]``: the query row bands of causal attention on these arrays and the
    keys each sees, or None where the whole-matrix path serves (numba off, one band, other
    than numpy float32/float64, leading dims that differ)."""
    L, S = q.shape[-2], k.shape[-2]
    count = min(_MAX_BANDS, L // _BAND_ROWS, -(-S // _BAND_ROWS))
    if count < 2 or not kernels.accepts(q, k, v) or not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        return None
    edges = [L * i // count for i in range(count + 1)]
    return [(r0, r1, min(r1, S)) for r0, r1 in zip(edges, edges[1:])]


def _causal_banded(query, key, value, bands, dropout_p, scale):
    """The forward of causal attention in bands (see above); the probabilities are zero past
    each query's keys, so the backward reads them as the whole-matrix path leaves them."""
    q, k, v = query._data, key._data, value._data
    lead, L, S = q.shape[:-2], q.shape[-2], k.shape[-2]
    scores = np.empty(lead + (L, S), q.dtype)
    for r0, r1, n in bands:
        blas_matmul(q[..., r0:r1, :], np.swapaxes(k[..., :n, :], -1, -2), out=scores[..., r0:r1, :n])
    probs = kernels.softmax.attention_probs(scores, scale, True)
    keep = _dropout_multiplier(query, probs.shape, dropout_p) if dropout_p > 0.0 else None
    weights = probs if keep is None else probs * keep
    shape = lead + (L, v.shape[-1])
    out = np.empty(shape, q.dtype) if keep is not None else _empty_heads(np, q, shape)  # as torch's math path
    for r0, r1, n in bands:
        blas_matmul(weights[..., r0:r1, :n], v[..., :n, :], out=out[..., r0:r1, :])
    r = _make(out, query.dtype)
    if needs_grad(query, key, value):
        record("ScaledDotProductAttentionBackward0", _sdpa_rule, (query, key, value, None), r,
               (query, key, value, _make(probs, query.dtype), keep, scale, None, True, False, np))
    return r


def _causal_banded_grads(g, q, k, v, p, keep, scale, bands):
    """The gradients of causal attention in bands: ``dq`` and ``dp`` by query band over the
    keys it sees, ``dk`` and ``dv`` by key band over the queries that see it (rows from the
    band's first key on); keys that no query sees (``S > L``) get zeros."""
    lead, L, S = q.shape[:-2], q.shape[-2], k.shape[-2]
    weights = p if keep is None else p * keep
    dp = np.empty(lead + (L, S), q.dtype)
    gq, gk, gv = (_empty_heads(np, a, a.shape) for a in (q, k, v))
    if S > L:
        gk[..., L:, :] = 0
        gv[..., L:, :] = 0
    for r0, r1, n in bands:
        blas_matmul(g[..., r0:r1, :], np.swapaxes(v[..., :n, :], -1, -2), out=dp[..., r0:r1, :n])
        if keep is not None:
            dp[..., r0:r1, :n] *= keep[..., r0:r1, :n]
    ds = kernels.softmax.attention_grad(dp, p, scale, True)  # scaled, zero past each query's keys
    for r0, r1, n in bands:
        blas_matmul(ds[..., r0:r1, :n], k[..., :n, :], out=gq[..., r0:r1, :])
        if r0 < S:  # keys [r0, n): the queries from r0 on see them
            blas_matmul(np.swapaxes(ds[..., r0:, r0:n], -1, -2), q[..., r0:, :], out=gk[..., r0:n, :])
            blas_matmul(np.swapaxes(weights[..., r0:, r0:n], -1, -2), g[..., r0:, :], out=gv[..., r0:n, :])
    return gq, gk, gv, None


def _empty_heads(xp, like, shape, *others):
    """An empty ``[N, H, T, X]`` array of ``like``'s dtype laid out as ``like`` is: as
    ``[N, T, H, X]`` in memory when ``like`` is a 4-d view of that layout (heads split off one
    projection and transposed, as GPT's q, k and v are), else C-contiguous. torch's CPU
    attention lays out its output as the query and each gradient as its input, so that
    ``out.transpose(1, 2)`` is contiguous again. None (the product's own C-contiguous
    result) for arrays other than numpy float32/float64, and where the leading dims of
    ``like`` and ``others`` (the other inputs) differ: a broadcast product."""
    if xp is not np or like.dtype not in _PRODUCT_DTYPES or any(o.shape[:-2] != like.shape[:-2] for o in others):
        return None
    if like.ndim == 4 and len(shape) == 4 and like.shape[1] > 1 and like.shape[2] > 1 \
            and like.strides[1] < like.strides[2]:
        return np.empty((shape[0], shape[2], shape[1], shape[3]), like.dtype).swapaxes(1, 2)
    return np.empty(shape, like.dtype)


_PRODUCT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _tiled(query, key, value, attn_mask, is_causal, scale, dropout_p):
    """The forward on the CUDA kernels: the output and each row's log-sum-exp, which the
    backward recomputes the probabilities from (no score matrix is kept), and a dropout's
    ``(p, seed, offset)``, which it draws its mask from again."""
    from ..random import default_generator
    mask = None if attn_mask is None else attn_mask._data
    drop = None
    if dropout_p > 0.0:  # counter-based draws from the device generator: a restored state replays them
        shape = cuda_attention.dropout_shape(query._data, key._data, value._data, mask)
        drop = (dropout_p, *default_generator(query.device).philox_seed_offset(cuda_dropout.groups(math.prod(shape))))
    out, lse = cuda_attention.forward(query._data, key._data, value._data, mask, is_causal, scale, *(drop or ()))
    r = _make(out, query.dtype)
    float_mask = attn_mask if attn_mask is not None and attn_mask.dtype is not D.bool_ else None
    if needs_grad(query, key, value, float_mask):
        mask_grad = float_mask is not None and needs_grad(float_mask)
        record("ScaledDotProductAttentionBackward0", _tiled_rule, (query, key, value, float_mask), r,
               (query, key, value, r, lse, scale, attn_mask, is_causal, mask_grad, drop))
    return r


def _softmax_rows(xp, scores):
    """Softmax over the last dim; rows whose entries are all -inf give zeros instead of NaN,
    and so do rows with no keys at all (torch's attention answers zeros for them too)."""
    if not scores.shape[-1]:
        return scores
    if scores.ndim and scores.size and kernels.accepts(scores):
        return kernels.softmax.softmax(scores, scores.ndim - 1, dead_zero=True)
    top = scores.max(axis=-1, keepdims=True)
    dead = xp.isneginf(top)
    if dead.any():
        top = xp.where(dead, 0, top).astype(scores.dtype, copy=False)
    e = xp.exp(scores - top)
    den = e.sum(axis=-1, keepdims=True)
    if dead.any():
        den[dead] = 1
    e /= den
    return e


def _dropout_multiplier(query, shape, p):
    """0 where dropped, ``1/(1-p)`` where kept."""
    from ..random import default_generator
    xp = be(query).xp
    if p >= 1.0:
        return xp.zeros(shape, dtype=query._data.dtype)
    gen = default_generator(query.device).bit_generator
    keep = gen.random(shape, dtype=xp.float32) >= p
    return keep.astype(query._data.dtype) * query._data.dtype.type(1.0 / (1.0 - p))


def _sdpa_rule_arrays(g, q, k, v, p, keep, scale, attn_mask, is_causal, mask_grad, xp):
    bands = _causal_bands(q, k, v) if is_causal and kernels.accepts(g, p) and p.flags.c_contiguous else None
    if bands is not None:
        return _causal_banded_grads(g, q, k, v, p, keep, scale, bands)
    pd = p if keep is None else p * keep
    gv = blas_matmul(xp.swapaxes(pd, -1, -2), g, out=_empty_heads(xp, v, v.shape, q, k))
    dp = blas_matmul(g, xp.swapaxes(v, -1, -2))
    if keep is not None:
        dp *= keep
    if not mask_grad and dp.size and kernels.accepts(dp, p) and dp.flags.c_contiguous and p.flags.c_contiguous:
        ds_scaled = kernels.softmax.attention_grad(dp, p, scale, is_causal)  # dS and its scale in one pass
    else:
        if dp.size and kernels.accepts(dp, p):
            dp = kernels.softmax.softmax_backward(dp, p, p.ndim - 1)
        else:
            dp -= (dp * p).sum(axis=-1, keepdims=True)
            dp *= p
        # dp is now dS, the gradient of the (masked) scores; scaled where it lies unless it is
        # also the float mask's gradient
        ds_scaled = dp * dp.dtype.type(scale) if mask_grad else _scaled_in_place(dp, scale)
    gq = blas_matmul(ds_scaled, k, out=_empty_heads(xp, q, q.shape, k, v))
    gk = blas_matmul(xp.swapaxes(ds_scaled, -1, -2), q, out=_empty_heads(xp, k, k.shape, q, v))
    return gq, gk, gv, (dp if mask_grad else None)


def _scaled_in_place(a, scale):
    a *= a.dtype.type(scale)
    return a


@on_arrays(_sdpa_rule_arrays)
def _sdpa_rule(g, q, k, v, p, keep, scale, attn_mask, is_causal, mask_grad, xp):
    if is_causal:
        attn_mask = _make(xp.tril(xp.ones((q.shape[-2], k.shape[-2]), dtype=bool)), D.bool_)
    dead = None
    if attn_mask is not None:
        rows = p.detach().sum(-1, keepdim=True) == 0  # rows with every key masked
        if bool(rows.any()):
            dead = rows
    return _sdpa_graph(g, q, k, v, keep, scale, attn_mask, mask_grad, dead)


def _tiled_rule_arrays(g, q, k, v, out, lse, scale, attn_mask, is_causal, mask_grad, drop):
    return cuda_attention.backward(g, q, k, v, out, lse, attn_mask, is_causal, scale, mask_grad, *(drop or ()))


@on_arrays(_tiled_rule_arrays)
def _tiled_rule(g, q, k, v, out, lse, scale, attn_mask, is_causal, mask_grad, drop):
    xp = be(q).xp
    keep = None
    if drop is not None:  # the kernels' mask, drawn again from the same counters
        p, seed, offset = drop
        shape = cuda_attention.dropout_shape(q._data, k._data, v._data, None if attn_mask is None else attn_mask._data)
        keep = cuda_dropout.mask(shape, q._data.dtype, p, 0.0 if p >= 1.0 else 1.0 / (1.0 - p), seed, offset)
    if is_causal:
        attn_mask = _make(xp.tril(xp.ones((q.shape[-2], k.shape[-2]), dtype=bool)), D.bool_)
    dead = None
    if attn_mask is not None:
        rows = xp.isneginf(lse)[..., None]  # rows with every key masked
        if bool(rows.any()):
            dead = _make(rows, D.bool_)
    return _sdpa_graph(g, q, k, v, keep, scale, attn_mask, mask_grad, dead)


def _sdpa_graph(g, q, k, v, keep, scale, attn_mask, mask_grad, dead):
    """The gradients as ember ops, ``P`` recomputed from q and k (and a float mask) so that
    their graph reaches them; ``dead``: a bool ``[..., L, 1]`` of the rows with every key
    masked, or None."""
    from .elementwise import where
    from .linalg import matmul
    from .reduction import softmax
    from .reduction import sum as _sum
    s = matmul(q, k.transpose(-1, -2)) * scale
    if attn_mask is not None:
        s = where(attn_mask, s, float("-inf")) if attn_mask.dtype is D.bool_ else s + attn_mask
    alive = None
    if dead is not None:
        s = where(dead, 0.0, s)
        alive = ~dead
    p = softmax(s, -1)
    if alive is not None:
        p = p * alive
    keep_t = None if keep is None else _make(keep, q.dtype)
    pd = p if keep_t is None else p * keep_t
    gv = matmul(pd.transpose(-1, -2), g)
    dp = matmul(g, v.transpose(-1, -2))
    if keep_t is not None:
        dp = dp * keep_t
    ds = p * (dp - _sum(dp * p, -1, keepdim=True))
    gq = matmul(ds, k) * scale
    gk = matmul(ds.transpose(-1, -2), q) * scale
    return gq, gk, gv, (ds if mask_grad else None)


# ---- multi-head attention (torch.nn.functional.multi_head_attention_forward) --------------

def canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) as an additive float mask of ``target_type``
    (-inf where True, 0 elsewhere); a float mask as it is.  AssertionError for other dtypes."""
    if mask is None:
        return None
    if mask.dtype is not D.bool_ and not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                      "both instead.", stacklevel=3)
    if mask.dtype is D.bool_:  # through ops, so that graph capture records it
        from .creation import zeros_like
        from .indexing import masked_fill
        mask = masked_fill(zeros_like(mask, dtype=target_type), mask, float("-inf"))
    return mask


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """torch's checks of the input ranks; True for batched (3-D) input."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.ndim}-D tensor instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.ndim}-D and {value.ndim}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                                 f"but found {key_padding_mask.ndim}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.ndim}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query "
                         "tensor")


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention, the functional form of nn.MultiheadAttention
    (torch.nn.functional.multi_head_attention_forward; Vaswani et al., arXiv:1706.03762).

    Sequence-first shapes: ``query`` ``[L, N, E]``, ``key`` ``[S, N, kdim]``, ``value`` ``[S, N,
    vdim]`` (or unbatched ``[L, E]``, ``[S, kdim]``, ``[S, vdim]``). ``embed_dim_to_check``:
    must equal ``E``. ``num_heads``: the number of heads, a divisor of ``E``. ``in_proj_weight``
    ``[3E, E]`` and ``in_proj_bias`` ``[3E]`` (or None): the stacked q, k, v projections.
    ``use_separate_proj_weight``: take ``q_proj_weight`` ``[E, E]``, ``k_proj_weight`` ``[E,
    kdim]`` and ``v_proj_weight`` ``[E, vdim]`` instead of ``in_proj_weight`` (the biases still
    from ``in_proj_bias``). ``bias_k``, ``bias_v``: ``[1, 1, E]`` rows appended to the projected
    keys and values (both or neither). ``add_zero_attn``: append a zero key and value.
    ``static_k``, ``static_v``: ``[N*num_heads, S, E/num_heads]`` projected keys and values used
    as they are. ``dropout_p``: the dropout probability on the attention weights, applied when
    ``training``. ``out_proj_weight`` ``[E, E]`` and ``out_proj_bias`` ``[E]``: the output
    projection.

    ``key_padding_mask`` ``[N, S]`` (True or -inf = ignore that key); ``attn_mask`` ``[L, S]``
    or ``[N*num_heads, L, S]`` (bool: True = not allowed; float: added). ``is_causal``: a hint
    that ``attn_mask`` is the causal mask (RuntimeError without one); with no
    ``key_padding_mask`` and no weights asked for, the causal mask is applied directly and
    ``attn_mask`` dropped. Returns the output ``[L, N, E]`` and, when ``need_weights``, the
    attention weights ``[N, L, S]`` averaged over heads (``[N, num_heads, L, S]`` when not
    ``average_attn_weights``), else None. AssertionError or RuntimeError for inconsistent
    shapes, as torch."""
    return _multi_head_attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
                                 key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
                                 k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal,
                                 batch_first=False)


def _multi_head_attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                          bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training,
                          key_padding_mask, need_weights, attn_mask, use_separate_proj_weight, q_proj_weight,
                          k_proj_weight, v_proj_weight, static_k, static_v, average_attn_weights, is_causal,
                          batch_first):
    """multi_head_attention_forward for inputs in either layout (``batch_first``: ``[N, L, E]``).
    The projections run in the input's own layout and the heads are split by views, so
    batch-first input is never transposed."""
    from .activation import dropout as _dropout
    from .creation import zeros
    from .layout import _pad_last_dims
    from .reduction import softmax
    from .shape import cat

    is_batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        bdim = 0 if batch_first else 1
        query, key, value = query.unsqueeze(bdim), key.unsqueeze(bdim), value.unsqueeze(bdim)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    if batch_first:
        bsz, tgt_len, embed_dim = query.shape
        src_len = key.shape[1]
    else:
        tgt_len, bsz, embed_dim = query.shape
        src_len = key.shape[0]
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                      None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal hint replaces the mask
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")

    # input projections, in the input's layout: [N, T, E] (batch_first) or [T, N, E]
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        E = embed_dim
        if query is key and key is value:
            q, k, v = _linear_2d(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            bq = bkv = None
            if in_proj_bias is not None:
                bq, bkv = in_proj_bias[:E], in_proj_bias[E:]
            q = _linear_2d(query, in_proj_weight[:E], bq)
            if key is value:
                k, v = _linear_2d(key, in_proj_weight[E:], bkv).chunk(2, -1)
            else:
                bk_, bv_ = (None, None) if bkv is None else (bkv[:E], bkv[E:])
                k = _linear_2d(key, in_proj_weight[E:2 * E], bk_)
                v = _linear_2d(value, in_proj_weight[2 * E:], bv_)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q = _linear_2d(query, q_proj_weight, b_q)
        k = _linear_2d(key, k_proj_weight, b_k)
        v = _linear_2d(value, v_proj_weight, b_v)

    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {_size(attn_mask.shape)}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {_size(attn_mask.shape)}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.ndim} is not supported")

    seq_dim = 1 if batch_first else 0
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        shape = (bsz, 1, embed_dim) if batch_first else (1, bsz, embed_dim)
        k = cat([k, bias_k.reshape(1, 1, embed_dim).expand(shape)], seq_dim)
        v = cat([v, bias_v.reshape(1, 1, embed_dim).expand(shape)], seq_dim)
        if attn_mask is not None:
            attn_mask = _pad_last_dims(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _pad_last_dims(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # split heads: [N, H, T, head_dim] views
    q = _heads(q, bsz, num_heads, head_dim, batch_first)
    k = _heads(k, bsz, num_heads, head_dim, batch_first) if static_k is None else \
        _static(static_k, "static_k", bsz, num_heads, head_dim)
    v = _heads(v, bsz, num_heads, head_dim, batch_first) if static_v is None else \
        _static(static_v, "static_v", bsz, num_heads, head_dim)
    if add_zero_attn:
        k = cat([k, zeros((bsz, num_heads, 1, head_dim), dtype=k.dtype, device=k.device)], 2)
        v = cat([v, zeros((bsz, num_heads, 1, head_dim), dtype=v.dtype, device=v.device)], 2)
        if attn_mask is not None:
            attn_mask = _pad_last_dims(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = _pad_last_dims(key_padding_mask, (0, 1))
    src_len = k.shape[2]

    # one additive mask broadcasting to [N, H, L, S]
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
            attn_mask.reshape(bsz, num_heads, tgt_len, src_len)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm
    if not training:
        dropout_p = 0.0

    if need_weights:
        from .linalg import matmul
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        scores = matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)  # a fully masked row gives NaN here, as torch's
        if dropout_p > 0.0:
            weights = _dropout(weights, dropout_p)
        out = matmul(weights, v)
    else:
        weights = None
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    # merge heads back into the input's layout and project
    out = out.permute(0, 2, 1, 3) if batch_first else out.permute(2, 0, 1, 3)
    out = _linear_2d(out.reshape(out.shape[0], out.shape[1], embed_dim), out_proj_weight, out_proj_bias)
    if weights is not None and average_attn_weights:
        weights = weights.mean(1)
    if not is_batched:
        out = out.squeeze(0 if batch_first else 1)
        if weights is not None:
            weights = weights.squeeze(0)
    return out, weights


def _linear_2d(x, weight, bias):
    """``linear`` on ``[*, in]`` through one 2-D product (numpy runs a stack of small
    products, slower, when handed a 3-D operand)."""
    from .activation import linear as _linear
    if x.ndim <= 2:
        return _linear(x, weight, bias)
    lead = tuple(x.shape[:-1])
    return _linear(x.reshape(-1, x.shape[-1]), weight, bias).reshape(*lead, weight.shape[0])


def _size(shape):
    return f"torch.Size({list(shape)})"


def _heads(t, bsz, num_heads, head_dim, batch_first):
    """``[N, T, E]`` (or ``[T, N, E]``) as the view ``[N, H, T, head_dim]``."""
    if batch_first:
        return t.reshape(bsz, t.shape[1], num_heads, head_dim).permute(0, 2, 1, 3)
    return t.reshape(t.shape[0], bsz, num_heads, head_dim).permute(1, 2, 0, 3)


def _static(t, name, bsz, num_heads, head_dim):
    if t.shape[0] != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t.reshape(bsz, num_heads, t.shape[1], head_dim)
