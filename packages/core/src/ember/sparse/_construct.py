"""Making sparse COO tensors: ``sparse_coo_tensor``, ``Tensor.to_sparse`` and ``sparse_mask``
(torch's semantics and error messages)."""

from __future__ import annotations

from .. import _dtype as D
from .._layout import sparse_coo
from .._tensor import Tensor
from ._coo import SparseTensor, make

__all__ = ["sparse_coo_tensor", "to_sparse", "sparse_mask"]


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]`` (torch.sparse_coo_tensor).

    ``indices``: ``[sparse_dim, nnz]`` integers (converted to int64); ``values``:
    ``[nnz, *dense_dims]``; ``size``: ``[*sparse_sizes, *dense_dims]``, inferred when absent
    as one past the largest index of each sparse dim. Duplicate indices are allowed (their
    values add up); ``is_coalesced=True`` promises there are none and the indices are sorted.
    Gradients flow to ``values`` when it requires grad. RuntimeError, with torch's messages,
    for a wrong indices shape, an nnz mismatch, a negative index, a size of the wrong length
    or dense shape, and an index beyond ``size``: ember checks bounds always, as torch does
    with ``check_invariants=True``, since a stray index would land on another element.

    ``dtype`` casts ``values`` (inferred as ``tensor`` does for Python data); ``device``
    places the tensor; ``requires_grad`` makes the values a leaf that records gradients;
    ``pin_memory`` is accepted and has no effect."""
    from ..ops import tensor
    if not isinstance(indices, Tensor):
        indices = tensor(indices, dtype=D.int64)
    if not isinstance(values, Tensor):
        values = tensor(values, dtype=dtype)
    if isinstance(indices, SparseTensor) or isinstance(values, SparseTensor):
        raise TypeError("sparse_coo_tensor(): indices and values must be strided tensors")
    if indices.dtype is not D.int64:
        indices = indices.to(D.int64)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if device is not None:
        values, indices = values.to(device), indices.to(device)
    if indices.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    sd, nnz = indices.shape
    if values.ndim == 0 or values.shape[0] != nnz:
        got = values.shape[0] if values.ndim else 1
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, "
                           f"nnz from values: {got}")
    dense = tuple(values.shape[1:])
    if nnz:
        low, high = indices.min(1).values.tolist(), indices.max(1).values.tolist()
        for d, m in enumerate(low):
            if m < 0:
                raise RuntimeError(f"found negative index {m} for dim {d}")
    else:
        high = [-1] * sd
    if size is None:
        size = tuple(h + 1 for h in high) + dense
    else:
        size = tuple(int(s) for s in size)
        if len(size) != sd + len(dense):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {sd}, dense_dim = {len(dense)}")
        if tuple(size[sd:]) != dense:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, got {list(values.shape)}")
        for d, h in enumerate(high):
            if h >= size[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                                   f"index {h}")
    if requires_grad:
        values = values.detach().requires_grad_(True)
    elif values.requires_grad and values.grad_fn is None:
        values = values.view(values.shape)  # made from a leaf: a non-leaf, as torch's is
    return make(indices, values, size, bool(is_coalesced) or nnz <= 1)


def to_sparse(input, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> SparseTensor:
    """``input``'s nonzeros as a coalesced sparse COO tensor (torch.Tensor.to_sparse).

    ``sparse_dim`` (default: all dims) leading dims become sparse; an entry of the
    trailing dense dims is kept when any of its elements is nonzero. Gradients flow back
    to ``input`` at the kept positions.

    ``dense_dim``, when given, sets ``sparse_dim`` to ``input.ndim - dense_dim``. ``layout``
    other than None or ``ember.sparse_coo``, or a ``blocksize``, raises NotImplementedError
    (the CSR/CSC and block layouts are not implemented)."""
    if isinstance(input, SparseTensor):
        return input.to_sparse(sparse_dim, layout=layout, blocksize=blocksize, dense_dim=dense_dim)
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"to_sparse: only layout=ember.sparse_coo is implemented, got {layout}")
    nd = input.ndim
    sd = nd if sparse_dim is None else int(sparse_dim)
    if dense_dim is not None:
        sd = nd - int(dense_dim)
    if not 0 <= sd <= nd:
        raise RuntimeError(f"sparse_dim must be in [0, {nd}], but got {sd}")
    mask = input != 0
    if sd < nd:
        mask = mask.reshape(tuple(input.shape[:sd]) + (-1,)).any(-1)
    if sd == 0:
        from ..ops import zeros
        return make(zeros((0, 1), dtype=D.int64, device=input.device), input.unsqueeze(0), input.shape, True)
    idx = mask.nonzero().t()
    values = input[tuple(idx[d] for d in range(sd))]
    return make(idx.contiguous(), values, input.shape, True)


def to_sparse_coo(input) -> SparseTensor:
    return to_sparse(input)


def sparse_mask(input, mask) -> SparseTensor:
    """``input``'s elements at the positions ``mask`` (sparse) specifies, as a sparse tensor
    with ``mask``'s indices (torch.Tensor.sparse_mask); gradients flow to ``input``."""
    if not isinstance(mask, SparseTensor):
        raise RuntimeError(f"sparse_mask: expected mask to be a sparse COO tensor, but got layout {mask.layout}")
    if tuple(input.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size {list(input.shape)} but "
                           f"mask has size {list(mask.shape)}")
    if isinstance(input, SparseTensor):
        input = input.to_dense()
    ind = mask._ind
    values = input[tuple(ind[d] for d in range(ind.shape[0]))]
    return make(ind, values, mask.shape, mask._coal)
