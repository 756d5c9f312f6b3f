"""Products built on matmul and einsum: outer, inner, vdot, tensordot, kron, cross, cdist
and the fused multiply-adds of BLAS (addmm, addmv, addr, addbmm, baddbmm).

Each is written with differentiable ember ops, so gradients (and double backward) follow
from matmul's and einsum's rules; ``beta * input + alpha * (...)`` skips ``input`` when
``beta`` is 0 (NaN in it does not propagate, as torch documents).
"""

from __future__ import annotations

from .._autocast import autocast_op
from .._tensor import _wrap_dim
from .linalg import einsum, matmul
from .shape import permute, reshape

__all__ = ["outer", "ger", "inner", "vdot", "tensordot", "kron", "cross", "cdist", "addmm", "addmv", "addr",
           "addbmm", "baddbmm"]


def _check_1d(name, *tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"{name}: Expected 1-D argument self, but got {t.ndim}-D")


def outer(input, vec2):
    """The outer product of the 1-d tensors ``input`` [n] and ``vec2`` [m]: [n, m] with
    ``out[i, j] = input[i] * vec2[j]`` (torch.outer; ``ger`` is the same function). Other
    ranks raise RuntimeError. ``out`` receives the result when given."""
    _check_1d("outer", input, vec2)
    return reshape(input, (-1, 1)) * reshape(vec2, (1, -1))


ger = outer


def inner(input, other):
    """The sum of products over the last dims of ``input`` and ``other`` (a dot product for 1-d
    tensors): shape ``input.shape[:-1] + other.shape[:-1]``; a 0-d operand multiplies
    (torch.inner). Last dims of different sizes raise RuntimeError. ``out`` receives the
    result when given."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def vdot(input, other):
    """The dot product of the 1-d tensors ``input`` and ``other`` of one length, the first
    conjugated (real tensors as ``dot``), as a 0-d tensor (torch.vdot). Other ranks or
    lengths raise RuntimeError. ``out`` receives the result when given."""
    _check_1d("vdot", input, other)
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got {input.shape[0]} "
                           f"and {other.shape[0]} elements respectively")
    return matmul(input, other)


def tensordot(a, b, dims=2, out=None):
    """The contraction of the last ``dims`` dims of ``a`` with the first ``dims`` of ``b``, or
    of the dim lists ``dims = (dims_a, dims_b)``; the result has ``a``'s free dims then
    ``b``'s (torch.tensordot). Contracted dims of different sizes, or a negative ``dims``,
    raise RuntimeError. ``out`` receives the result when given."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([dims[0]] if isinstance(dims[0], int) else list(dims[0]),
                  [dims[1]] if isinstance(dims[1], int) else list(dims[1]))
    da = [_wrap_dim(d, a.ndim) for d in da]
    db = [_wrap_dim(d, b.ndim) for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim {x} "
                               f"and second has size {b.shape[y]} in dim {y}")
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    am = reshape(permute(a, free_a + da), (-1, k))
    bm = reshape(permute(b, db + free_b), (k, -1))
    r = reshape(matmul(am, bm), tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b))
    if out is not None:
        out.copy_(r)
        return out
    return r


def kron(input, other):
    """The Kronecker product: every element of ``input`` times the whole of ``other``."""
    n = max(input.ndim, other.ndim)
    a = reshape(input, (1,) * (n - input.ndim) + tuple(input.shape))
    b = reshape(other, (1,) * (n - other.ndim) + tuple(other.shape))
    # [a0, 1, a1, 1, ...] * [1, b0, 1, b1, ...] -> [a0*b0, a1*b1, ...]
    ea = reshape(a, tuple(x for s in a.shape for x in (s, 1)))
    eb = reshape(b, tuple(x for s in b.shape for x in (1, s)))
    return reshape(ea * eb, tuple(x * y for x, y in zip(a.shape, b.shape)))


def cross(input, other, dim=None):
    """The 3-d cross product of ``input`` and ``other`` (broadcast together) along ``dim`` (the
    first dim of size 3 when None, as torch.cross; ``linalg.cross`` defaults to -1). A dim
    of another size raises RuntimeError. ``out`` receives the result when given."""
    if input.shape != other.shape:
        from .layout import broadcast_tensors
        input, other = broadcast_tensors(input, other)
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = _wrap_dim(dim, input.ndim)
    if input.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {input.shape[d]} and "
                           f"{other.shape[d]}")
    from .shape import stack
    a0, a1, a2 = input.unbind(d)
    b0, b1, b2 = other.unbind(d)
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


@autocast_op("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distances between the rows of ``x1`` ``[*, P, M]`` and ``x2`` ``[*, R, M]``: a
    tensor ``[*, P, R]`` (torch.cdist). ``p`` is >= 0 or inf (0 counts differing coordinates).
    ``compute_mode`` is accepted: the distances are always computed directly, never through
    a matrix product. The gradient at zero distance is zero, as torch's."""
    from .elementwise import abs as _abs
    from .elementwise import where
    from .reduction import amax
    from .reduction import sum as _sum
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # [*, P, R, M]
    if p == float("inf"):
        return amax(_abs(diff), -1)
    if p == 0:
        return _sum((diff != 0).to(x1.dtype), -1)
    mag = _abs(diff)
    total = _sum(mag ** p, -1)
    zero = total == 0
    safe = where(zero, 1.0, total)
    return where(zero, 0.0, safe ** (1.0 / p))


def _fma(input, product, beta, alpha):
    """beta * input + alpha * product; with ``beta`` 0 the input is not read at all."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return (input if beta == 1 else input * beta) + scaled


@autocast_op("lower")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` for matrices ``mat1`` [n, m] and ``mat2`` [m,
    p]; ``input`` broadcasts to [n, p], and with ``beta`` 0 it is not read (NaN in it does
    not propagate) (torch.addmm); ``alpha`` and ``beta`` are numbers. Other ranks raise
    RuntimeError. ``out`` is accepted but not written."""
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor" if mat1.ndim != 2 else
                           f"mat2 must be a matrix, got {mat2.ndim}-D tensor")
    return _fma(input, matmul(mat1, mat2), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)`` for a matrix ``mat`` [n, m] and a vector ``vec``
    [m]; ``input`` broadcasts to [n], and with ``beta`` 0 it is not read (torch.addmv);
    ``alpha`` and ``beta`` are numbers. Other ranks raise RuntimeError. ``out`` is accepted
    but not written."""
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    return _fma(input, matmul(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` for vectors ``vec1`` [n] and ``vec2`` [m];
    ``input`` broadcasts to [n, m], and with ``beta`` 0 it is not read (torch.addr);
    ``alpha`` and ``beta`` are numbers. ``out`` is accepted but not written."""
    return _fma(input, outer(vec1, vec2), beta, alpha)


@autocast_op("lower")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b (batch1[b] @ batch2[b])`` for ``batch1`` [B, n, m] and
    ``batch2`` [B, m, p]; ``input`` broadcasts to [n, p], and with ``beta`` 0 it is not read
    (torch.addbmm); ``alpha`` and ``beta`` are numbers. Other ranks raise RuntimeError.
    ``out`` is accepted but not written."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.ndim != 3 else "batch2 must be a 3D tensor")
    return _fma(input, einsum("bij,bjk->ik", batch1, batch2), beta, alpha)


@autocast_op("lower")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (batch1 @ batch2)``, batch by batch, for ``batch1`` [B, n, m]
    and ``batch2`` [B, m, p]; ``input`` broadcasts to [B, n, p], and with ``beta`` 0 it is
    not read (torch.baddbmm); ``alpha`` and ``beta`` are numbers. Other ranks raise
    RuntimeError. ``out`` is accepted but not written."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.ndim != 3 else "batch2 must be a 3D tensor")
    return _fma(input, matmul(batch1, batch2), beta, alpha)
