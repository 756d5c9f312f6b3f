"""Embedding lookups (torch.nn.functional.embedding, embedding_bag).

``embedding`` is one graph node: its gradient scatters the output gradient's rows back to
the looked-up rows of the weight (zero for ``padding_idx``, divided by the index's count
in the batch with ``scale_grad_by_freq``).  ``embedding_bag`` gathers the rows of every
bag through ``embedding`` and reduces them with differentiable ember ops.  Gradients are
dense: ``sparse=True`` (torch's sparse gradient layout) is refused when a gradient of
the weight would be recorded.  When no graph of the gradient is wanted, the scatter runs as
a kernel on float32/float64 gradients: numba's on numpy arrays (cpu/kernels/embedding.py,
numpy.add.at's sums bit for bit), a CUDA one on cupy arrays (cuda/kernels/embedding.py).
"""

from __future__ import annotations

import numpy

from .. import _dtype as D
from .._tensor import _make
from ..cpu import kernels
from ..cuda.kernels import embedding as cuda_embedding
from ._helpers import _STATE, be, needs_grad, record

__all__ = ["embedding", "embedding_bag"]


def _type_name(dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(dtype.name,
                                                                                                   dtype.name)


def _check_indices(indices, op):
    if indices.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got ember.{_type_name(indices.dtype)}Tensor instead (while checking "
                           f"arguments for {op})")


def _padding_index(padding_idx, num):
    """torch's normalisation of ``padding_idx``: negative counts from the end; None stays None."""
    if padding_idx is None:
        return None
    if padding_idx >= num or padding_idx < -num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num if padding_idx < 0 else padding_idx


def _refuse_sparse(sparse, weight, op):
    if sparse and needs_grad(weight):
        raise NotImplementedError(f"{op}: sparse=True asks for a sparse gradient of the weight; ember computes "
                                  "dense gradients only (use sparse=False)")


def embedding_renorm_(weight, input, max_norm, norm_type=2.0):
    """Rescale in place, outside autograd, the rows of ``weight`` ``[num, dim]`` indexed by
    ``input`` whose ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm``
    (``torch.embedding_renorm_``: scale ``max_norm / (norm + 1e-7)``).  Returns ``weight``."""
    xp = be(weight).xp
    w = weight._data
    rows = xp.unique(input._data.reshape(-1))
    if rows.size == 0:
        return weight
    sel = w[rows]
    mag = xp.abs(sel.astype(xp.float64 if w.dtype == xp.float64 else xp.float32))
    if norm_type == float("inf"):
        norms = mag.max(axis=1)
    elif norm_type == 0:
        norms = (mag != 0).sum(axis=1).astype(mag.dtype)
    else:
        norms = (mag ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    over = norms > max_norm
    if bool(over.any()):
        scale = (max_norm / (norms[over] + 1e-7)).astype(w.dtype)
        w[rows[over]] = sel[over] * scale[:, None]
        weight._vc[0] += 1
    return weight


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` ``[num_embeddings, embedding_dim]`` at the int64/int32 indices ``input``
    ``[*]``: returns ``[*, embedding_dim]`` of the weight's dtype
    (torch.nn.functional.embedding).

    ``padding_idx``: that row gets no gradient (negative counts from the end). ``max_norm``: the
    looked-up rows whose ``norm_type``-norm (default 2.0) exceeds it are first rescaled in place
    to that norm (see ``embedding_renorm_``). ``scale_grad_by_freq``: each row's gradient is
    divided by its index's count in ``input``. ``sparse``: torch's sparse gradient; only False
    (dense) is supported when the weight's gradient is wanted.

    RuntimeError for a non-integer ``input`` or a weight that is not 2-D; IndexError for an
    index out of range; AssertionError for a ``padding_idx`` out of range; NotImplementedError
    for ``sparse=True`` when the weight's gradient is wanted."""
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = weight.shape[0]
    padding_idx = _padding_index(padding_idx, num)
    _check_indices(input, "embedding")
    _refuse_sparse(sparse, weight, "embedding")
    idx = input._data
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    r = _make(weight._data[idx], weight.dtype)
    if needs_grad(weight):
        record("EmbeddingBackward0", _embedding_rule, (weight,), r,
               (be(input).copy(idx).reshape(-1), num, padding_idx, scale_grad_by_freq))
    return r


def _embedding_rule(g, flat, num, padding_idx, scale_grad_by_freq):
    if not _STATE.enabled and cuda_embedding.accepts(g._data, flat):
        return _make(cuda_embedding.backward(g._data, flat, num, padding_idx, scale_grad_by_freq), g.dtype)
    xp = be(g).xp
    dim = g.shape[-1]
    factor = None
    if scale_grad_by_freq or padding_idx is not None:
        factor = xp.ones(flat.shape, dtype=g._data.dtype)
        if scale_grad_by_freq:
            factor /= xp.bincount(flat, minlength=num)[flat].astype(factor.dtype)
        if padding_idx is not None:
            factor[flat == padding_idx] = 0
        factor = factor[:, None]
    if not _STATE.enabled:  # no graph of the gradient: scatter-add the rows on arrays
        rows = g._data.reshape(-1, dim)
        if factor is not None:
            rows = rows * factor
        out = xp.zeros((num, dim), dtype=rows.dtype)
        if kernels.accepts(out, rows):  # numpy.add.at's sums, without its cost per index
            kernels.embedding.add_rows(out, numpy.ascontiguousarray(flat, dtype=numpy.int64),
                                       numpy.ascontiguousarray(rows))
        else:
            be(g).scatter_add(out, flat, rows)
        return _make(out, g.dtype)
    from .creation import zeros
    from .indexing import index_add
    rows = g.reshape(-1, dim)
    if factor is not None:
        rows = rows * _make(factor, g.dtype)
    return index_add(zeros(num, dim, dtype=g.dtype, device=g.device), 0, _make(flat, D.int64), rows)


def _bag_layout(xp, indices, offsets, include_last_offset, length):
    """Bag number of each index position (-1 past the last bag's end) and the bag count."""
    offs = offsets._data.reshape(-1).astype(xp.int64)
    if offs.size == 0:
        raise RuntimeError("offsets has to contain at least one element")
    if int(offs[0]) != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(offs[0])}")
    if int(offs[-1]) > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but got offsets[-1] of "
                           f"{int(offs[-1])}")
    if offs.size > 1 and bool((offs[1:] < offs[:-1]).any()):
        raise RuntimeError("offsets has to be non-decreasing")
    starts = offs[:-1] if include_last_offset else offs
    bag = xp.searchsorted(starts, xp.arange(length), side="right") - 1
    if include_last_offset:
        bag[xp.arange(length) >= offs[-1]] = -1
    return bag, int(starts.size)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of rows of ``weight`` ``[num_embeddings, dim]``, without
    materialising the rows of every index (torch.nn.functional.embedding_bag).

    ``input``: ``[B, L]`` holding B bags of L indices (``offsets`` must be None), or ``[L]``
    with ``offsets`` ``[B]`` the start of each bag (``[B + 1]``, the last one the end, with
    ``include_last_offset``, as in the CSR format). ``mode``: 'sum', 'mean' (the default) or
    'max' over each bag. Returns ``[B, dim]`` of the weight's dtype; an empty bag gives zeros.
    Torch documents that last offset as the input's length; when it is smaller, indices past it
    belong to no bag here (torch's kernels disagree among themselves on that case).

    ``per_sample_weights`` (the input's shape, mode 'sum' only) scales each row; indices equal
    to ``padding_idx`` are left out (and out of the mean's count). ``max_norm``: looked-up rows
    whose ``norm_type``-norm (default 2) exceeds it are first rescaled in place to it, as
    embedding does. ``scale_grad_by_freq`` divides each row's gradient by its index's count in
    ``input``, as documented and as ``embedding`` does (torch 2.13's CPU embedding_bag kernel
    divides some rows by another index's count). ``sparse``: torch's sparse gradient; refused
    (NotImplementedError) when the weight's gradient is wanted, as gradients here are dense.

    ValueError for bad shapes or ``mode``, for mode 'max' with ``scale_grad_by_freq`` or
    ``sparse``, NotImplementedError for ``per_sample_weights`` with another mode, RuntimeError
    for bad offsets."""
    from .creation import zeros
    from .indexing import gather, index_add, index_select
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    xp = be(weight).xp
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = _make(xp.arange(0, input.numel(), max(input.shape[1], 1), dtype=xp.int64), D.int64)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    num, dim = weight.shape
    padding_idx = _padding_index(padding_idx, num)
    _check_indices(input, "embedding_bag")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    _refuse_sparse(sparse, weight, "embedding_bag")
    idx = input._data
    bag, nbags = _bag_layout(xp, input, offsets, include_last_offset, idx.size)
    keep = bag >= 0
    if padding_idx is not None:
        keep &= idx != padding_idx
    kept = xp.nonzero(keep)[0]
    kept_bag = bag[kept]
    rows = embedding(_make(idx[kept], input.dtype), weight, scale_grad_by_freq=scale_grad_by_freq)
    if per_sample_weights is not None:
        rows = rows * index_select(per_sample_weights, 0, _make(kept, D.int64)).unsqueeze(1)
    out = zeros(nbags, dim, dtype=weight.dtype, device=weight.device)
    if mode == "max":
        return _bag_max(xp, rows, kept_bag, nbags, out, gather)
    out = index_add(out, 0, _make(kept_bag, D.int64), rows)
    if mode == "mean":
        counts = xp.bincount(kept_bag, minlength=nbags).astype(weight._data.dtype)
        out = out / _make(xp.maximum(counts, 1)[:, None], weight.dtype)
    return out


def _bag_max(xp, rows, bag, nbags, zeros_out, gather):
    """Per bag and column, the row holding the maximum (the first on ties), gathered so the
    gradient reaches only that row; empty bags stay zero."""
    k, dim = rows.shape
    if k == 0:
        return zeros_out
    vals = rows._data
    best = xp.full((nbags, dim), -xp.inf, dtype=vals.dtype)
    cols = xp.broadcast_to(xp.arange(dim), (k, dim))
    bags = xp.broadcast_to(bag[:, None], (k, dim))
    xp.maximum.at(best, (bags, cols), vals)
    first = xp.full((nbags, dim), k, dtype=xp.int64)
    cand = xp.where(vals == best[bag], xp.arange(k)[:, None], k)
    xp.minimum.at(first, (bags, cols), cand)
    filled = xp.bincount(bag, minlength=nbags) > 0
    first = xp.where(filled[:, None], first, 0)
    picked = gather(rows, 0, _make(first, D.int64))
    return picked * _make(filled[:, None].astype(vals.dtype), rows.dtype)
