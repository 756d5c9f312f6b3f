"""The sparse COO tensor: indices ``[sparse_dim, nnz]`` (int64) of the specified elements,
their values ``[nnz, *dense_dims]`` and the full size ``[*sparse_sizes, *dense_dims]``
(torch.sparse_coo_tensor's layout).

Every operation is written with ordinary ember ops on the indices and values, so autograd
flows through the values (and any dense operand) with no gradient rule of its own. The
tensor has no array: an op that does not know the layout and reads one is stopped with
torch's NotImplementedError instead of computing on garbage.
"""

from __future__ import annotations

import sys

from .. import _dtype as D
from .._layout import sparse_coo
from .._tensor import Size, Tensor, _wrap_dim

__all__ = ["SparseTensor", "make", "linear_index"]


def _no_data(self):
    # name the op that was asked for: the outermost ember frame of the call
    frame, name = sys._getframe(1), "unknown"
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember"):
        name = frame.f_code.co_name
        frame = frame.f_back
    raise NotImplementedError(
        f"Could not run '{name}' with arguments from the 'SparseCPU' backend: it is not implemented for tensors "
        f"of layout ember.sparse_coo. Call .to_dense() first, or use the ops of ember.sparse.")


class SparseTensor(Tensor):
    """A sparse COO tensor (see the module docstring); made by ``ember.sparse_coo_tensor``
    or ``Tensor.to_sparse()``."""

    __slots__ = ("_ind", "_val", "_sz", "_coal", "_shadow")
    _data = property(_no_data)
    is_sparse = True

    # ---- metadata ------------------------------------------------------------------
    @property
    def layout(self):
        return sparse_coo

    @property
    def shape(self) -> Size:
        return self._sz

    def size(self, dim: int | None = None):
        return self._sz if dim is None else self._sz[_wrap_dim(dim, len(self._sz))]

    @property
    def ndim(self) -> int:
        return len(self._sz)

    def dim(self) -> int:
        return len(self._sz)

    ndimension = dim

    def numel(self) -> int:
        return self._sz.numel()

    nelement = numel

    def __len__(self) -> int:
        if not self._sz:
            raise TypeError("len() of a 0-d tensor")
        return self._sz[0]

    @property
    def device(self):
        return self._val.device

    @property
    def is_cuda(self) -> bool:
        return self._val.is_cuda

    @property
    def is_cpu(self) -> bool:
        return self._val.is_cpu

    def get_device(self) -> int:
        return self._val.get_device()

    def sparse_dim(self) -> int:
        return self._ind.shape[0]

    def dense_dim(self) -> int:
        return self._val.ndim - 1

    def _nnz(self) -> int:
        return self._ind.shape[1]

    def is_coalesced(self) -> bool:
        return self._coal

    def _indices(self) -> Tensor:
        return self._ind

    def _values(self) -> Tensor:
        return self._val

    def indices(self) -> Tensor:
        """The indices ``[sparse_dim, nnz]``; RuntimeError on an uncoalesced tensor."""
        if not self._coal:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._ind

    def values(self) -> Tensor:
        """The values ``[nnz, *dense_dims]``; RuntimeError on an uncoalesced tensor."""
        if not self._coal:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._val

    # ---- autograd state: the values' -------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._val.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._val.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        self._val.requires_grad = requires_grad
        return self

    @property
    def _requires_grad(self) -> bool:
        return self._val._requires_grad

    @property
    def grad_fn(self):
        return self._val.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._val.grad_fn is None

    @property
    def grad(self):
        """A sparse leaf's gradient, as torch's; sparse where only the values were used
        (``to_dense``, ``ember.sparse.mm``/``sum``): this tensor's coalesced pattern with the
        gradient of each position (duplicates share theirs); strided where ``ember.mm`` /
        ``matmul`` / ``@`` used the tensor as a whole (see ``dense_leaf``)."""
        g = self._val.grad
        dense = self._shadow.grad if self._shadow is not None and self._shadow.is_leaf else None
        if g is None:
            return dense
        if self._coal:
            sparse = make(self._ind, g, self._sz, True)
        else:
            unique, _, first, _ = _groups(self)
            sparse = make(unravel(unique, self._sz[:self.sparse_dim()]), g.index_select(0, first), self._sz, True)
        return sparse if dense is None else dense + sparse.to_dense()

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._val.grad = None
            if self._shadow is not None:
                self._shadow.grad = None
            return
        if not isinstance(value, SparseTensor) or value._sz != self._sz:
            raise RuntimeError(f"assigned grad has data of a different size or layout: expected a sparse tensor of "
                               f"size {list(self._sz)}")
        self._val.grad = value.coalesce()._val if not self._coal else value._val

    def dense_leaf(self):
        """A zero strided tensor of this size standing for the whole tensor in ops whose
        gradient torch gives dense (``ember.mm`` and ``matmul``): added into their result, it
        collects that dense gradient. Made for a leaf that requires grad; a tensor made from
        one by ``t``, ``neg``, ``mul`` or ``div`` holds the same op of its source's.
        ``None`` where no dense gradient is wanted."""
        if self._shadow is not None:
            return self._shadow
        from ..autograd.grad_mode import is_grad_enabled
        if not (self.requires_grad and self.is_leaf and is_grad_enabled()):
            return None
        from ..ops import zeros
        self._shadow = zeros(tuple(self._sz), dtype=self.dtype, device=self.device, requires_grad=True)
        return self._shadow

    def detach(self) -> "SparseTensor":
        return make(self._ind, self._val.detach(), self._sz, self._coal)

    # ---- conversions -----------------------------------------------------------------
    def coalesce(self) -> "SparseTensor":
        """Duplicates summed, indices in lexicographic (row-major) order."""
        if self._coal:
            return self
        from ..ops import index_add, zeros
        unique, group, _, order = _groups(self)
        vals = self._val.index_select(0, order)
        out = index_add(zeros((unique.shape[0],) + tuple(self._val.shape[1:]), dtype=self.dtype, device=self.device),
                        0, group, vals)
        return make(unravel(unique, self._sz[:self.sparse_dim()]), out, self._sz, True)

    def to_dense(self, dtype=None, *, masked_grad=True) -> Tensor:
        """The strided tensor of ``size()``, zeros where nothing is specified (duplicates add)."""
        from ..ops import index_add, zeros
        sd = self.sparse_dim()
        sizes, dense = tuple(self._sz[:sd]), tuple(self._sz[sd:])
        n = 1
        for s in sizes:
            n *= s
        flat = zeros((n,) + dense, dtype=self.dtype, device=self.device)
        out = index_add(flat, 0, linear_index(self._ind, sizes), self._val).reshape(tuple(self._sz))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> "SparseTensor":
        if layout not in (None, sparse_coo) or blocksize is not None:
            raise NotImplementedError(f"to_sparse: only layout=ember.sparse_coo is implemented, got {layout}")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
                               f"!=self.sparse_dim() is not supported, got {sparse_dim} and {self.sparse_dim()}")
        return self

    to_sparse_coo = to_sparse

    def __repr__(self) -> str:
        from .._dtype import get_default_dtype
        from .._tensor_str import tensor_repr

        def bare(t):  # the inner tensors print without their dtype, an empty one with its size
            if tuple(t.shape) == (0,):
                return "tensor([], size=(0,))"
            return tensor_repr(t.detach()).replace(f", dtype={t.dtype!r}", "")

        head, vhead = "tensor(indices=", "       values="
        text = (head + bare(self._ind).replace("\n", "\n" + " " * len(head)) + ",\n" + vhead
                + bare(self._val).replace("\n", "\n" + " " * len(vhead)) + ",\n"
                + f"       size={tuple(self._sz)}, nnz={self._nnz()}")
        if self.dtype not in (get_default_dtype(), D.int64, D.bool_):
            text += f", dtype={self.dtype!r}"
        if self.device.type != "cpu":
            text += f", device='{self.device}'"
        text += ", layout=ember.sparse_coo"
        if self.grad_fn is not None:
            text += f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            text += ", requires_grad=True"
        return "\n".join(line.rstrip() for line in text.split("\n")) + ")"

    def __reduce_ex__(self, protocol):
        raise NotImplementedError("sparse COO tensors cannot be pickled or saved yet: save indices() and values()")

    def __deepcopy__(self, memo):
        return make(self._ind.clone(), self._val.detach().clone().requires_grad_(self._val.requires_grad),
                    self._sz, self._coal)


def make(indices: Tensor, values: Tensor, size, coalesced: bool) -> SparseTensor:
    """A sparse tensor around ``indices`` and ``values`` (no checks)."""
    t = object.__new__(SparseTensor)
    t._ind, t._val, t._sz, t._coal = indices, values, Size(size), bool(coalesced)
    t._shadow = None
    t.dtype = values.dtype
    t._base = t._view_fn = t._acc = None
    t._output_nr = 0
    t._retains_grad = False
    t._vc = [0]
    return t


def linear_index(indices: Tensor, sizes) -> Tensor:
    """Each column of ``indices`` as one row-major offset into ``sizes``: [nnz] int64."""
    from ..ops import zeros
    lin = zeros(indices.shape[1], dtype=D.int64, device=indices.device)
    for d, s in enumerate(sizes):
        lin = lin * s + indices[d]
    return lin


def unravel(lin: Tensor, sizes) -> Tensor:
    """The inverse of ``linear_index``: [len(sizes), n] int64."""
    from ..ops import stack
    rows, rest = [], lin
    for s in reversed(tuple(sizes)):
        rows.append(rest % s)
        rest = rest // s
    if not rows:
        return lin.reshape(0, lin.shape[0])
    return stack(rows[::-1], 0)


def _groups(t: SparseTensor):
    """The distinct linear indices (sorted), each sorted entry's group, the first entry of
    each group, and the sorting permutation (positions in the original order)."""
    from ..ops import cat, ones
    lin = linear_index(t._ind, t._sz[:t.sparse_dim()])
    ordered, order = lin.sort(stable=True)
    new = ones(ordered.shape[0], dtype=D.bool_, device=lin.device)
    if ordered.shape[0] > 1:
        new = cat([new[:1], ordered[1:] != ordered[:-1]])
    return ordered[new], new.long().cumsum(0) - 1, order[new], order
