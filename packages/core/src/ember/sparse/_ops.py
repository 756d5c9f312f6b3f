"""Operations on sparse COO tensors, each written with ordinary ember ops on the indices
and values (so gradients reach the values and the dense operands through those ops)."""

from __future__ import annotations

import numbers

from .._tensor import Tensor, _wrap_dim
from ._coo import SparseTensor, linear_index, make, unravel

__all__ = ["mm", "matmul", "sum", "addmm", "softmax", "add", "mul", "div", "neg", "t", "to", "clone"]


def _unsupported(op: str, detail: str):
    raise NotImplementedError(f"Could not run '{op}' with arguments from the 'SparseCPU' backend: {detail} is not "
                              "implemented for tensors of layout ember.sparse_coo. Call .to_dense() first.")


def _scalar_name(dtype) -> str:
    # torch's ScalarType names, as its errors print them
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
             "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
    return names.get(dtype.name, dtype.name)


def mm(mat1, mat2) -> Tensor:
    """``mat1 @ mat2`` with ``mat1`` sparse ``[n, m]`` (2 sparse dims) and ``mat2`` dense
    ``[m, p]``: a dense ``[n, p]`` (torch.sparse.mm). Gradients flow to ``mat1``'s values
    (a sparse gradient with ``mat1``'s pattern) and to ``mat2``. ``mat1`` dense and
    ``mat2`` sparse gives the dense product as well."""
    s1, s2 = isinstance(mat1, SparseTensor), isinstance(mat2, SparseTensor)
    if s1 and s2:
        _unsupported("mm", "the product of two sparse tensors")
    if not s1:
        if not s2:
            return mat1.mm(mat2)
        if mat1.ndim == 1:
            return mm(t(mat2), mat1)
        return mm(t(mat2), mat1.t()).t()
    if mat1.ndim != 2 or mat1.sparse_dim() != 2:
        raise RuntimeError(f"mm: expected a 2-D sparse matrix with 2 sparse dims, but got size {list(mat1.shape)} "
                           f"with {mat1.sparse_dim()} sparse dims")
    if mat2.ndim not in (1, 2):
        raise RuntimeError(f"mm: expected mat2 to be a matrix, got {mat2.ndim}-D tensor")
    if mat2.shape[0] != mat1.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, got {mat2.shape[0]}")
    if mat2.dtype is not mat1.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(mat1.dtype)} but found {_scalar_name(mat2.dtype)}")
    from ..ops import index_add, zeros
    vector = mat2.ndim == 1
    dense = mat2.unsqueeze(1) if vector else mat2
    rows, cols = mat1._ind[0], mat1._ind[1]
    contrib = mat1._val.unsqueeze(1) * dense.index_select(0, cols)
    out = index_add(zeros((mat1.shape[0], dense.shape[1]), dtype=contrib.dtype, device=contrib.device), 0, rows,
                    contrib)
    return out.squeeze(1) if vector else out


def matmul(input, other) -> Tensor:
    """``input`` times ``other`` (``input @ other``) when one of them is sparse (2-d sparse times a 1-d or 2-d dense),
    as ``ember.mm``/``matmul``/``@`` compute it. As in torch, a sparse leaf that requires
    grad gets a strided gradient here (``torch.sparse.mm`` gives a sparse one): the product
    then also runs densely through the tensor's ``dense_leaf``."""
    s1, s2 = isinstance(input, SparseTensor), isinstance(other, SparseTensor)
    s = input if s1 else other
    shadow = None if s1 == s2 else s.dense_leaf()
    if shadow is None:
        return mm(input, other)
    plain = make(s._ind, s._val.detach(), s.shape, s._coal)
    if s is input:
        return mm(plain, other) + shadow.matmul(other)
    return mm(input, plain) + input.matmul(shadow)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)``, ``mat1`` sparse ``[n, m]``, ``mat2`` dense
    ``[m, p]``, ``mat`` dense broadcasting to ``[n, p]`` (torch.sparse.addmm).

    ``beta`` and ``alpha`` are numbers; a sparse ``mat`` is made dense first."""
    if isinstance(mat, SparseTensor):
        mat = mat.to_dense()
    prod = mm(mat1, mat2)
    prod = prod if alpha == 1 else prod * alpha
    return prod + (mat if beta == 1 else mat * beta)


def sum(input, dim=None, dtype=None):  # noqa: A001  (torch.sparse.sum)
    """The sum of ``input``'s elements (torch.sparse.sum): a dense 0-d tensor for
    ``dim=None``; over ``dim`` (an int or a tuple), a dense tensor when every sparse dim is
    summed, else a coalesced sparse tensor of the remaining dims.

    ``dtype`` casts the values before summing."""
    if not isinstance(input, SparseTensor):
        return input.sum() if dim is None else input.sum(dim, dtype=dtype)
    vals = input._val if dtype is None else input._val.to(dtype)
    if dim is None:
        return vals.sum()
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    dims = sorted({_wrap_dim(d, input.ndim) for d in dims})
    sd = input.sparse_dim()
    dense_red = [d - sd + 1 for d in dims if d >= sd]
    if dense_red:
        vals = vals.sum(dense_red)
    kept = [d for d in range(sd) if d not in dims]
    if not kept:
        return vals.sum(0)
    size = [input.shape[d] for d in kept] + [input.shape[d] for d in range(sd, input.ndim) if d not in dims]
    from ..ops import tensor
    ind = input._ind.index_select(0, tensor(kept, device=input.device))
    return make(ind, vals, size, False).coalesce()


def softmax(input, dim, *, dtype=None) -> Tensor:
    """Softmax over ``dim`` of the specified elements only (unspecified ones count as
    -inf, as torch.sparse.softmax does); sparse, with ``input``'s coalesced pattern.
    Only for ``dim`` a sparse dim and no dense dims.

    ``dtype`` casts the values first."""
    if not isinstance(input, SparseTensor):
        return input.softmax(dim, dtype=dtype)
    if input.dense_dim():
        _unsupported("softmax", "softmax of a hybrid (dense dims) tensor")
    s = input.coalesce()
    d = _wrap_dim(dim, s.ndim)
    vals = s._val if dtype is None else s._val.to(dtype)
    from ..ops import index_add, scatter_reduce, zeros
    others = [k for k in range(s.ndim) if k != d]
    key = linear_index(s._ind[others], [s.shape[k] for k in others]) if others else zeros(s._nnz(), dtype=s._ind.dtype)
    n = 1
    for k in others:
        n *= s.shape[k]
    peak = scatter_reduce(zeros(n, dtype=vals.dtype), 0, key, vals.detach(), "amax", include_self=False)
    e = (vals - peak.index_select(0, key)).exp()
    total = index_add(zeros(n, dtype=vals.dtype), 0, key, e)
    return make(s._ind, e / total.index_select(0, key), s.shape, True)


def add(input, other, *, alpha=1):
    """``input + alpha * other`` for two sparse tensors of one size: the entries of both
    (coalesced when both are)."""
    if not isinstance(other, SparseTensor):
        if isinstance(input, SparseTensor) and isinstance(other, Tensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        _unsupported("add", "adding a number to a sparse tensor")
    if tuple(input.shape) != tuple(other.shape):
        raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {list(input.shape)} != "
                           f"{list(other.shape)}")
    if input.sparse_dim() != other.sparse_dim():
        _unsupported("add", "adding sparse tensors of different sparse dims")
    ov = other._val if alpha == 1 else other._val * alpha
    dt = input._val.dtype if ov.dtype is input._val.dtype else (input._val[:0] + ov[:0]).dtype
    pa, pb, lin = _merge(linear_index(input._ind, input.shape[:input.sparse_dim()]).tolist(),
                         linear_index(other._ind, other.shape[:other.sparse_dim()]).tolist())
    from ..ops import index_add, tensor, zeros
    dev = input.device
    vals = zeros((len(lin),) + tuple(input._val.shape[1:]), dtype=dt, device=dev)
    vals = index_add(vals, 0, tensor(pa, dtype=input._ind.dtype, device=dev), input._val.to(dt))
    vals = index_add(vals, 0, tensor(pb, dtype=input._ind.dtype, device=dev), ov.to(dt))
    ind = unravel(tensor(lin, dtype=input._ind.dtype, device=dev), input.shape[:input.sparse_dim()])
    return make(ind, vals, input.shape, input._coal and other._coal)


def _merge(a: list, b: list):
    """torch's walk over two index lists: the smaller linear index first, equal ones made one
    entry (so two coalesced operands give a coalesced sum, and two uncoalesced ones keep
    their order). The output position of each entry of ``a`` and ``b``, and the output's
    linear indices."""
    pa, pb, out = [], [], []
    i = j = 0
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and a[i] < b[j]):
            pa.append(len(out))
            out.append(a[i])
            i += 1
        elif i == len(a) or b[j] < a[i]:
            pb.append(len(out))
            out.append(b[j])
            j += 1
        else:
            pa.append(len(out))
            pb.append(len(out))
            out.append(a[i])
            i, j = i + 1, j + 1
    return pa, pb, out


def mul(input, other):
    """``input * other`` for a sparse tensor and a number, a 0-d tensor, or a dense tensor
    of the same size (then sparse, with the sparse operand's pattern)."""
    if isinstance(input, SparseTensor) and isinstance(other, SparseTensor):
        _unsupported("mul", "the product of two sparse tensors")
    s, k = (input, other) if isinstance(input, SparseTensor) else (other, input)
    if isinstance(k, Tensor) and k.ndim != 0:
        if tuple(k.shape) != tuple(s.shape):
            _unsupported("mul", f"multiplying a sparse tensor of size {list(s.shape)} by a dense tensor of size "
                                f"{list(k.shape)} (broadcasting)")
        picked = k[tuple(s._ind[d] for d in range(s.sparse_dim()))]
        return make(s._ind, s._val * picked, s.shape, s._coal)
    return _follow(make(s._ind, s._val * k, s.shape, s._coal), s, lambda d: d * k)


def div(input, other):
    """``input / other`` for a sparse tensor and a number (or 0-d dense tensor)."""
    if isinstance(other, SparseTensor) or (isinstance(other, Tensor) and other.ndim != 0):
        _unsupported("div", "dividing by a sparse or non-0-d tensor")
    return _follow(make(input._ind, input._val / other, input.shape, input._coal), input, lambda d: d / other)


def to(input, *args, **kwargs):
    """``input`` with its values converted as ``Tensor.to`` converts (dtype, device); the
    indices follow the values' device."""
    vals = input._val.to(*args, **kwargs)
    if vals is input._val:
        return input
    ind = input._ind if vals.device == input._ind.device else input._ind.to(vals.device)
    return make(ind, vals, input.shape, input._coal)


def clone(input, *, memory_format=None):
    return make(input._ind.clone(), input._val.clone(), input.shape, input._coal)


def neg(input):
    return _follow(make(input._ind, -input._val, input.shape, input._coal), input, lambda d: -d)


def t(input):
    """The transpose of a sparse tensor with at most 2 sparse and no dense dims."""
    if input.sparse_dim() > 2 or input.dense_dim():
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                           f"{input.sparse_dim()} sparse and {input.dense_dim()} dense dimensions")
    if input.ndim < 2:
        return input
    vals = input._val.view(input._val.shape) if input.requires_grad else input._val  # a non-leaf, as torch's
    return _follow(make(input._ind.flip(0), vals, tuple(reversed(input.shape)), False), input, lambda d: d.t())


def _follow(out, source, fn):
    """``out`` (made from ``source`` by an op whose dense form is ``fn``) keeps the link to
    ``source``'s dense gradient (see ``SparseTensor.dense_leaf``)."""
    shadow = source.dense_leaf()
    if shadow is not None:
        out._shadow = fn(shadow)
    return out


def _sum_method(self, dim=None, keepdim=False, dtype=None):
    if keepdim:
        _unsupported("sum", "sum with keepdim=True")
    return sum(self, dim, dtype)


def _cast(dtype_name: str):
    def cast(self, memory_format=None):
        from .. import _dtype
        return to(self, getattr(_dtype, dtype_name))
    return cast


def _install() -> None:
    # the sparse tensor's methods and operators: this module's ops
    S = SparseTensor
    S.t = t
    S.to, S.clone = to, clone
    for name, dtype in (("float", "float32"), ("double", "float64"), ("half", "float16"), ("bfloat16", "bfloat16"),
                        ("long", "int64"), ("int", "int32"), ("bool", "bool_")):
        setattr(S, name, _cast(dtype))
    S.neg = S.__neg__ = neg
    S.add = S.__add__ = add
    S.mul = S.__mul__ = S.__rmul__ = mul
    S.div = S.__truediv__ = div
    S.mm = S.matmul = S.__matmul__ = matmul
    S.__rmatmul__ = lambda self, other: matmul(other, self)
    S.sum = _sum_method
    S.softmax = lambda self, dim, dtype=None: softmax(self, dim, dtype=dtype)


_install()
