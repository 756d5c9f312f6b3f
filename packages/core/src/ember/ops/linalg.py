"""Matrix products: matmul (@), mm, bmm, mv, dot, einsum."""

from __future__ import annotations

from .. import _dtype as D
from .._autocast import autocast_op
from .._blas import matmul as blas_matmul
from .._tensor import Tensor, _make
from ..autograd.graph import record
from ._helpers import be, check_same_device, needs_grad


def _check_dtypes(a, b, op):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_n(a.dtype)} != {_n(b.dtype)}")
    check_same_device(a, b, op)


def _n(d):
    return {"float32": "float", "float64": "double", "int64": "long int", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int32": "int"}.get(d.name, d.name)


@autocast_op("lower")
def matmul(input, other, *, out=None, _node=None):
    """The matrix product of ``input`` and ``other`` with torch's rules (torch.matmul,
    torch.linalg.matmul).

    Two 1-d tensors give their dot product (0-d); a 1-d operand is taken as a matrix (a row
    for ``input``, a column for ``other``) and that dim removed from the result; leading
    (batch) dims broadcast: ``[*, n, m]`` @ ``[*, m, p]`` -> ``[*, n, p]``. Both have one dtype; a
    mismatched dtype or inner size, or a 0-d operand, raises RuntimeError, a non-tensor
    TypeError. With ``out`` the result's data is placed into ``out`` (its memory replaced
    rather than written) and ``out`` returned."""
    if not isinstance(other, Tensor) or not isinstance(input, Tensor):
        raise TypeError("matmul(): argument 'other' must be Tensor")
    if input.is_sparse or other.is_sparse:
        from ..sparse import matmul as sparse_matmul
        return sparse_matmul(input, other)
    _check_dtypes(input, other, "matmul")
    if input.ndim == 0 or other.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{input.ndim}D and {other.ndim}D")
    a, b = input._data, other._data
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        if input.ndim == 1 and other.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] "
                               "to have the same number of elements, but got {a.shape[0]} and {b.shape[0]} "
                               "elements respectively")
        sa = "x".join(map(str, a.shape if a.ndim > 1 else (1,) + a.shape))
        sb = "x".join(map(str, b.shape if b.ndim > 1 else b.shape + (1,)))
        if a.ndim <= 2 and b.ndim <= 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mat(a)} and {_mat(b, True)})")
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{sa}] but got: [{sb}].")
    arr = blas_matmul(a, b)  # ember's threads split a large numpy product (see _blas)
    if arr.dtype != a.dtype:  # numpy multiplies bfloat16 matrices into float32
        arr = arr.astype(a.dtype)
    r = _make(arr, input.dtype)
    if r._data.ndim == 0 and type(r._data) is not type(a):
        r._data = be(input).xp.asarray(r._data)
    if needs_grad(input, other):
        name = _node or ("MmBackward0" if a.ndim == 2 and b.ndim == 2 else "MatmulBackward0" if a.ndim > 2 or
                         b.ndim > 2 else "DotBackward0" if a.ndim == 1 and b.ndim == 1 else "MvBackward0")
        record(name, _matmul_rule, (input, other), r, (input, other))
    if out is not None:
        out._data = r._data
        return out
    return r


def _mat(a, second=False):
    s = a.shape if a.ndim == 2 else ((1,) + a.shape if not second else a.shape + (1,))
    return f"{s[0]}x{s[1]}"


def _matmul_rule(g, a, b):
    from .shape import squeeze, unsqueeze
    if a.ndim == 1 and b.ndim == 1:
        from .elementwise import _conj
        return (g * _conj(b) if a._requires_grad else None), (g * _conj(a) if b._requires_grad else None)
    a2 = unsqueeze(a, 0) if a.ndim == 1 else a
    b2 = unsqueeze(b, -1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = unsqueeze(g2, -2)
    if b.ndim == 1:
        g2 = unsqueeze(g2, -1)
    from .elementwise import _conj  # a complex factor passes its conjugate back
    ga = matmul(g2, _conj(b2.mT)) if a._requires_grad else None
    gb = matmul(_conj(a2.mT), g2) if b._requires_grad else None
    if ga is not None and a.ndim == 1:
        ga = squeeze(ga, -2)
    if gb is not None and b.ndim == 1:
        gb = squeeze(gb, -1)
    return ga, gb


@autocast_op("lower")
def mm(input, mat2, *, out=None):
    """The matrix product of the matrices ``input`` [n, m] and ``mat2`` [m, p]: [n, p]
    (torch.mm). Operands that are not 2-d raise RuntimeError; ``out`` as in ``matmul``."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"{'self' if input.ndim != 2 else 'mat2'} must be a matrix")
    return matmul(input, mat2, out=out)


@autocast_op("lower")
def bmm(input, mat2, *, out=None):
    """The batched matrix product of ``input`` [B, n, m] and ``mat2`` [B, m, p]: [B, n, p]
    (torch.bmm); no broadcasting. Operands that are not 3-d, or of different batch sizes,
    raise RuntimeError; ``out`` as in ``matmul``."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.ndim != 3 else "batch2 must be a 3D tensor")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return matmul(input, mat2, out=out, _node="BmmBackward0")


def mv(input, vec):
    """The product of the matrix ``input`` [n, m] and the vector ``vec`` [m]: [n] (torch.mv).
    Other ranks raise RuntimeError. ``out`` receives the result when given."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError("vector + matrix @ vector expected, got "
                           f"{input.ndim}, {vec.ndim}")
    return matmul(input, vec)


def dot(input, other):
    """The dot product of the 1-d tensors ``input`` and ``other`` of one length and dtype, as a
    0-d tensor (torch.dot; no conjugation, see ``vdot``). Other ranks raise RuntimeError.
    ``out`` receives the result when given."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def einsum(equation, *operands):
    """Einstein summation of the ``operands`` as the ``equation`` says (e.g.
    ``"bij,bjk->bik"``; spaces ignored, ``...`` for broadcast dims) (torch.einsum); the
    operands may also come as one list. The result has their promoted dtype (float16 and
    bfloat16 accumulate in float32). Differentiable through each operand."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    xp = be(operands[0]).xp
    dt = operands[0].dtype
    for o in operands[1:]:
        dt = D.promote_types(dt, o.dtype)
    # half types accumulate in float32 (numpy's einsum has no bfloat16 loop)
    work = D.float32 if dt in (D.float16, D.bfloat16) else dt
    arrs = [o._data if o.dtype is work else o._data.astype(work.np) for o in operands]
    r = _make(xp.asarray(xp.einsum(eq, *arrs, optimize=len(arrs) > 2)).astype(dt.np, copy=False), dt)
    if needs_grad(*operands):
        record("EinsumBackward0", _einsum_rule, operands, r, (eq, *operands))
    return r


def _einsum_rule(g, eq, *operands):
    lhs, _, out = eq.partition("->")
    ins = lhs.split(",")
    if not _:
        letters = sorted({c for c in lhs.replace(",", "") if c.isalpha()})
        out = "".join(c for c in letters if lhs.replace(",", "").count(c) == 1)
    grads = []
    for i, (spec, x) in enumerate(zip(ins, operands)):
        if not x._requires_grad:
            grads.append(None)
            continue
        if "..." in eq:
            raise NotImplementedError("einsum gradients with '...' are not supported yet")
        others = [o for j, o in enumerate(operands) if j != i]
        other_specs = [s for j, s in enumerate(ins) if j != i]
        # letters of x that appear nowhere else are summed out in the forward: broadcast back
        present = set(out + "".join(other_specs))
        missing = [c for c in spec if c not in present]
        sub = ",".join([out] + other_specs) + "->" + "".join(c for c in spec if c in present)
        gx = einsum(sub, g, *others)
        if missing or len(set(spec)) != len(spec):  # summed-away or diagonal letters
            gx = _expand_back(gx, spec, present, x)
        grads.append(gx)
    return tuple(grads)


def _expand_back(gx, spec, present, x):
    """Broadcast the gradient over letters that the forward summed away."""
    if len(set(spec)) != len(spec):
        raise NotImplementedError("einsum gradients with a repeated index in one operand are not supported yet")
    sizes = dict(zip(spec, x.shape))
    order = "".join(c for c in spec if c in present)
    for c in spec:
        if c not in present:
            gx = gx.unsqueeze(-1).expand(*gx.shape, sizes[c])
            order += c
    return einsum(f"{order}->{spec}", gx)
