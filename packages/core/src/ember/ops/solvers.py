"""torch's top-level factorization functions (their torch.linalg forms live in
``factorizations``): lu, lu_unpack, lu_solve, cholesky_solve, cholesky_inverse,
triangular_solve, and symeig and eig, which torch 2 removed (they raise its error).

Matrices are ``[*, m, n]`` float32/float64/complex batches, batch dims broadcast between
operands; values come from LAPACK (``_lapack``).  The gradient rules are ember ops:
for cholesky_solve (A = L L^H, X = A^-1 B) gB = cholesky_solve(gX), gL = -(gB X^H +
X gB^H) L; for cholesky_inverse gL = (gA + gA^H) L with gA = -A^-1 g A^-1; for
triangular_solve gb = op(T)^-H gX and gT = -gb X^H kept to T's triangle (torch's
derivatives.yaml states the same rules).
"""

from __future__ import annotations

import warnings

from .. import _dtype as D
from .. import return_types
from .._tensor import _make
from ..autograd.graph import record
from . import _lapack
from ._helpers import be, needs_grad
from ._lapack import back, check_input, host
from .factorizations import _broadcast_batch, _mH, _write, lu_factor_ex, permutation_from_pivots, unpack_lu
from .factorizations import lu_solve as _linalg_lu_solve
from .linalg import matmul

__all__ = ["lu", "lu_unpack", "lu_solve", "cholesky_solve", "cholesky_inverse", "triangular_solve", "symeig", "eig"]


_lu_warned = []


def lu(A, pivot=True, get_infos=False, out=None):
    """(A_LU, pivots), with info as a third result when ``get_infos``: the packed LU
    factorization of each matrix (as linalg.lu_factor_ex).  Source: torch.lu.

    ``A`` is ``[*, m, n]``; ``pivot=False`` raises RuntimeError on the CPU, as torch; ``out``
    receives the result when given. Deprecated, as in torch (a UserWarning, once)."""
    if not _lu_warned:
        _lu_warned.append(True)
        warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and "
                      "will be removed in a future PyTorch release.", UserWarning, stacklevel=2)
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    result = return_types._lu_with_info(LU, piv, info) if get_infos else (LU, piv)
    return _write(result, out, "lu")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from lu_factor's packed ``LU_data`` ``[*, m, n]`` and int32 ``LU_pivots``
    ``[*, k]``: P ``[*, m, m]``, L ``[*, m, k]`` unit lower, U ``[*, k, n]`` upper; the parts not asked
    for come back empty.  Differentiable in ``LU_data``.  Source: torch.lu_unpack.

    ``unpack_data`` and ``unpack_pivots`` choose which parts are computed; ``out`` (a tuple
    of three tensors) receives the result when given."""
    if LU_data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    if LU_pivots.dtype is not D.int32:
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype, "
                           f"the output of torch.linalg.lu_factor; got {LU_pivots.dtype}")

    def empty():
        return _make(be(LU_data).xp.zeros((0,), dtype=LU_data._data.dtype), LU_data.dtype)

    P = permutation_from_pivots(host(LU_pivots), LU_data.shape[-2], LU_data) if unpack_pivots else empty()
    if unpack_data:
        from ..autograd import grad_mode
        with grad_mode.no_grad():
            L, U = unpack_lu(LU_data)
    else:
        L, U = empty(), empty()
    if needs_grad(LU_data):  # (empty L and U too are attached to LU_data, as torch's)
        record("LuUnpackBackward0", _lu_unpack_rule, (LU_data,), (None, L, U), (tuple(LU_data.shape), unpack_data))
    return _write(return_types.lu_unpack(P, L, U), out, "lu_unpack")


def _lu_unpack_rule(grads, shape, unpacked):
    # L's strict lower part and U's upper part are LU_data's entries, padded to its shape
    from .creation import zeros
    from .layout import tril, triu
    from .shape import cat
    _, gL, gU = grads
    m, n = shape[-2:]
    ref = gL if gL is not None else gU
    g = zeros(shape, dtype=ref.dtype, device=ref.device)
    if not unpacked:
        return g
    if gL is not None:
        part = tril(gL, -1)
        g = g + (cat([part, zeros(shape[:-1] + (n - m,), dtype=part.dtype, device=part.device)], -1)
                 if m < n else part)
    if gU is not None:
        part = triu(gU)
        g = g + (cat([part, zeros(shape[:-2] + (m - n, n), dtype=part.dtype, device=part.device)], -2)
                 if m > n else part)
    return g


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """X with A X = b from A's LU factorization (linalg.lu_solve with the right-hand side
    first).  Source: torch.lu_solve.

    ``b`` is ``[*, n, k]``, ``LU_data`` and ``LU_pivots`` the output of ``lu`` (or
    ``linalg.lu_factor``) for A ``[*, n, n]``; ``out`` receives the result when given."""
    return _write(_linalg_lu_solve(LU_data, LU_pivots, b), out, "lu_solve")


# ---- Cholesky -------------------------------------------------------------------------

def _check_rhs(b, A, op):
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_tn(b)} and A of type "
                           f"{_tn(A)} instead.")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           "matrices")
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {A.shape[-1]} by "
                           f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    check_input(A, op)


def _tn(t):
    from ._helpers import _type_name
    return _type_name(t.dtype)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B for A = L L^H given its Cholesky factor ``L`` (A = U^H U for an
    upper factor); B ``[*, n, k]``, batch dims broadcast.  Source: torch.cholesky_solve.

    ``B`` is the right-hand side, ``L`` the factor ``[*, n, n]``, ``upper`` whether it is upper
    triangular; ``out`` receives the result when given. RuntimeError for a ``B`` of fewer
    than 2 dims or of another dtype than ``L``."""
    if B.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} dimensions instead")
    _check_rhs(B, L, "cholesky_solve")
    c, b = _broadcast_batch(host(L), host(B))
    X = back(B, _lapack.potrs(c, b, lower=not upper))
    if needs_grad(B, L):
        record("CholeskySolveBackward0", _cholesky_solve_rule, (B, L), X, (L, X, upper))
    return _write(X, out, "cholesky_solve")


def _cholesky_solve_rule(g, L, X, upper):
    gB = cholesky_solve(g, L, upper)
    if not L._requires_grad:
        return gB, None
    S = matmul(gB, _mH(X))
    S = -(S + _mH(S))
    return gB, (matmul(L, S) if upper else matmul(S, L))


def cholesky_inverse(L, upper=False, *, out=None):
    """The inverse of A = L L^H (A = U^H U when ``upper``) from its Cholesky factor
    ``[*, n, n]``.  Source: torch.cholesky_inverse.

    ``L`` is the factor, upper triangular when ``upper``; ``out`` receives the result when
    given."""
    import numpy
    check_input(L, "cholesky_inverse")
    c = host(L)
    eye = numpy.broadcast_to(numpy.eye(c.shape[-1], dtype=c.dtype), c.shape).copy()
    R = back(L, _lapack.potrs(c, eye, lower=not upper))
    if needs_grad(L):
        record("CholeskyInverseBackward0", _cholesky_inverse_rule, (L,), R, (L, R, upper))
    return _write(R, out, "cholesky_inverse")


def _cholesky_inverse_rule(g, L, R, upper):
    gA = -matmul(matmul(R, g), R)
    S = gA + _mH(gA)
    return matmul(L, S) if upper else matmul(S, L)


# ---- triangular_solve -----------------------------------------------------------------

def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(solution, cloned_coefficient): X with op(T) X = b, T the upper (lower) triangle
    of A, op(T) = T^T when ``transpose``, T's diagonal taken as ones when
    ``unitriangular``; the second result is a copy of A.  Batch dims broadcast.
    Source: torch.triangular_solve.

    ``b`` is ``[*, n, k]`` and ``A`` ``[*, n, n]`` of ``b``'s dtype; ``upper`` picks the triangle
    read; ``out`` (a pair of tensors) receives the result when given. RuntimeError for
    mismatched shapes or dtypes."""
    if b.ndim < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {b.ndim} "
                           "dimensions instead")
    _check_rhs(b, A, "triangular_solve")
    t, bb = _broadcast_batch(host(A), host(b))
    X = back(b, _lapack.trtrs(t, bb, upper, trans=1 if transpose else 0, unit=unitriangular))
    M = back(A, t.copy())
    if needs_grad(b, A):
        record("TriangularSolveBackward0", _triangular_solve_rule, (b, A), (X, M),
               (A, X, upper, transpose, unitriangular))
    return _write(return_types.triangular_solve(X, M), out, "triangular_solve")


def _triangular_solve_rule(grads, A, X, upper, transpose, unit):
    from .complex_ops import conj
    from .layout import tril, triu
    gX, gM = grads
    gb = gA = None
    if gX is not None:
        gb = triangular_solve(gX, conj(A), upper, not transpose, unit).solution
        if A._requires_grad:
            gop = -matmul(gb, _mH(X))
            gA = gop.transpose(-2, -1) if transpose else gop
            gA = (triu if upper else tril)(gA, (1 if upper else -1) if unit else 0)
    if gM is not None and A._requires_grad:
        gA = gM if gA is None else gA + gM
    return gb, gA


# ---- removed in torch 2 -----------------------------------------------------------------

def symeig(input, eigenvectors=False, upper=True, *, out=None):
    """Removed from torch (2.x raises): use linalg.eigvalsh / linalg.eigh.

    Every call raises RuntimeError saying how to rewrite it; ``input``, ``eigenvectors``,
    ``upper`` and ``out`` are accepted for torch's signature."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. linalg.eigh and linalg.eigvalsh read "
        "the lower triangular portion by default, where symeig read the upper one.\n\n"
        "L, _ = torch.symeig(A, upper=upper) becomes L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L'), and\n"
        "L, V = torch.symeig(A, eigenvectors=True) becomes L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


def eig(input, eigenvectors=False, *, out=None):
    """Removed from torch (2.x raises): use linalg.eig / linalg.eigvals, which return
    complex tensors.

    Every call raises RuntimeError saying how to rewrite it; ``input``, ``eigenvectors`` and
    ``out`` are accepted for torch's signature."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed. torch.linalg.eig returns complex "
        "tensors (cfloat or cdouble) instead of real tensors that mimic complex ones.\n\n"
        "L, _ = torch.eig(A) becomes L_complex = torch.linalg.eigvals(A), and\n"
        "L, V = torch.eig(A, eigenvectors=True) becomes L_complex, V_complex = torch.linalg.eig(A)")
