"""LU, Cholesky and LDL factorizations and the solvers built on them (torch.linalg's
lu_factor, lu_factor_ex, lu, lu_solve, solve_ex, inv_ex, cholesky_ex, ldl_factor,
ldl_factor_ex, ldl_solve) and a triangular solve that the gradient rules share.

Inputs are ``[*, m, n]`` batches of float32/float64/complex64/complex128 matrices; LAPACK
(through ``_lapack``) computes the values, so pivots and ``info`` are LAPACK's, as torch's.
The gradient rules are ember ops (they differentiate again); complex inputs follow
torch's convention (the conjugate transpose where a real rule has the transpose).  The
LU rule is the standard one for A = P L U (square, tall and wide), as in torch's
documentation of ``linalg.lu``'s derivative; the solves' rules are gB = A^-H gX,
gA = -gB X^H.
"""

from __future__ import annotations

from .. import _dtype as D
from .. import return_types
from ..autograd.graph import record
from . import _lapack
from ._helpers import needs_grad
from ._lapack import LinAlgError, back, check_input, check_same_dtype, host
from .linalg import matmul

__all__ = ["lu_factor_ex", "lu_factor", "lu", "lu_solve", "solve_ex", "inv_ex", "cholesky_ex", "ldl_factor_ex",
           "ldl_factor", "ldl_solve", "lu_grad", "permutation_from_pivots", "solve_tri", "unpack_lu"]


# ---- shared pieces --------------------------------------------------------------------

def _mH(x):
    from .complex_ops import conj
    return conj(x.transpose(-2, -1))


def _eye(m, n, like):
    from .creation import eye
    return eye(m, n, dtype=like.dtype, device=like.device)


def _batch_prefix(info, i_flat, ndim):
    return f"(Batch element {i_flat}): " if ndim > 2 else ""


def _first_failure(info):
    """(flat batch index, value) of the first positive ``info``, or None."""
    flat = info.reshape(-1)
    bad = (flat > 0).nonzero()[0]
    return None if bad.size == 0 else (int(bad[0]), int(flat[bad[0]]))


def _int32(like, arr):
    return back(like, arr, D.int32)


def permutation_from_pivots(piv, m, like):
    """The permutation matrices P (dtype and device of ``like``) of LAPACK's 1-based
    sequential row swaps ``piv`` (``[*, k]``, host int array): A = P L U."""
    import numpy
    batch = piv.shape[:-1]
    flat = numpy.broadcast_to(numpy.arange(m), (int(numpy.prod(batch, dtype=int)), m)).copy()
    p = (piv.reshape(-1, piv.shape[-1]) - 1).astype(numpy.int64)
    r = numpy.arange(flat.shape[0])
    for j in range(piv.shape[-1]):  # row j swapped with row p[j], in order
        a, b = flat[r, j].copy(), flat[r, p[:, j]].copy()
        flat[r, j], flat[r, p[:, j]] = b, a
    eye = numpy.eye(m, dtype=like.dtype.np)
    P = numpy.swapaxes(eye[flat.reshape(batch + (m,))], -1, -2)  # P^T A = A[perm]
    return back(like, P)


def _broadcast_batch(a, b):
    """Host arrays ``a`` ``[*, m, n]`` and ``b`` ``[*, p, q]`` with their batch dims broadcast."""
    import numpy
    batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (numpy.ascontiguousarray(numpy.broadcast_to(a, batch + a.shape[-2:])),
            numpy.ascontiguousarray(numpy.broadcast_to(b, batch + b.shape[-2:])))


# ---- triangular solve -----------------------------------------------------------------

def solve_tri(T, B, upper, left=True, unitriangular=False):
    """X with T X = B (X T = B when not ``left``) reading only ``T``'s upper or lower
    triangle (its diagonal taken as ones when ``unitriangular``); batch dims broadcast.
    Complex matrices are welcome; the gradient is gB = T^-H gX, gT = -gB X^H kept to
    the triangle T was read from."""
    check_same_dtype(T, B, "linalg.solve_triangular")
    t, b = host(T), host(B)
    if not left:  # X T = B  <=>  T^T X^T = B^T
        import numpy
        t, b = _broadcast_batch(t, numpy.swapaxes(b, -1, -2))
        x = numpy.swapaxes(_lapack.trtrs(t, b, upper, trans=1, unit=unitriangular), -1, -2)
    else:
        t, b = _broadcast_batch(t, b)
        x = _lapack.trtrs(t, b, upper, unit=unitriangular)
    X = back(B, x)
    if needs_grad(T, B):
        record("LinalgSolveTriangularBackward0", _solve_tri_rule, (T, B), X, (T, X, upper, left, unitriangular))
    return X


def _solve_tri_rule(g, T, X, upper, left, unit):
    from .layout import tril, triu
    gB = solve_tri(_mH(T), g, not upper, left, unit)
    gT = None
    if T._requires_grad:
        gT = -matmul(gB, _mH(X)) if left else -matmul(_mH(X), gB)
        gT = (triu if upper else tril)(gT, (1 if upper else -1) if unit else 0)
    return gT, gB


# ---- LU -------------------------------------------------------------------------------

def _lu_arrays(A, name, pivot):
    check_input(A, name, square=False, kernel="lu_cpu")
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")
    return _lapack.getrf(host(A))


def _check_lu_info(info, name, ndim):
    bad = _first_failure(info)
    if bad is not None:
        i, v = bad
        raise RuntimeError(f"{name}: {_batch_prefix(info, i, ndim)}U[{v},{v}] is zero and using it on lu_solve "
                           "would result in a division by zero. If you still want to perform the factorization, "
                           "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): the packed LU factorization of each ``[*, m, n]`` matrix
    (L's strict lower part and U in one matrix, LAPACK's 1-based int32 pivots, int32
    info > 0 where U has a zero on its diagonal).  ``check_errors`` raises RuntimeError
    for such a matrix; ``pivot=False`` is not available on the CPU (RuntimeError, as
    torch).  Source: torch.linalg.lu_factor_ex.

    ``A`` is the input ``[*, m, n]``; ``out`` (a tuple of three tensors) receives the result
    when given."""
    lu_, piv, info = _lu_arrays(A, "linalg.lu_factor", pivot)
    if check_errors:
        _check_lu_info(info, "torch.linalg.lu_factor_ex", A.ndim)
    LU, P, I = back(A, lu_), _int32(A, piv), _int32(A, info)
    if needs_grad(A):
        Pm = permutation_from_pivots(piv, A.shape[-2], A)
        record("LinalgLuFactorExBackward0", _lu_factor_rule, (A,), (LU, P, I), (LU, Pm))
    return _write(return_types.linalg_lu_factor_ex(LU, P, I), out, "linalg.lu_factor_ex")


def _write(result, out, name):
    if out is None:
        return result
    from ._helpers import write_out
    return write_out(result, out, name)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) as lu_factor_ex; RuntimeError where U has a zero on its diagonal.

    ``A`` ``[*, m, n]`` is factored with partial pivoting (``pivot=False`` raises RuntimeError
    on the CPU, as torch); ``out`` (a pair of tensors) receives the result when given
    (torch.linalg.lu_factor)."""
    lu_, piv, info = _lu_arrays(A, "linalg.lu_factor", pivot)
    _check_lu_info(info, "torch.linalg.lu_factor", A.ndim)
    LU, P = back(A, lu_), _int32(A, piv)
    if needs_grad(A):
        Pm = permutation_from_pivots(piv, A.shape[-2], A)
        record("LinalgLuFactorExBackward0", _lu_factor_rule, (A,), (LU, P), (LU, Pm))
    return _write(return_types.linalg_lu_factor(LU, P), out, "linalg.lu_factor")


def unpack_lu(LU):
    """(L, U) of a packed LU, as ember ops of it (differentiable)."""
    from .layout import tril, triu
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = tril(LU, -1).narrow(-1, 0, k) + _eye(m, k, LU)
    U = triu(LU).narrow(-2, 0, k)
    return L, U


def _lu_factor_rule(grads, LU, P):
    from .layout import tril, triu
    g = grads[0]
    if g is None:
        return None
    m, n = LU.shape[-2:]
    k = min(m, n)
    L, U = unpack_lu(LU)
    return lu_grad(tril(g, -1).narrow(-1, 0, k), triu(g).narrow(-2, 0, k), P, L, U)


def lu_grad(gL, gU, P, L, U):
    """The gradient of A = P L U from those of L ``[*, m, k]`` and U ``[*, k, n]``."""
    from .creation import zeros_like
    from .layout import tril, triu
    from .shape import cat
    m, n = L.shape[-2], U.shape[-1]
    gL = zeros_like(L) if gL is None else gL
    gU = zeros_like(U) if gU is None else gU
    if m == n:
        M = tril(matmul(_mH(L), gL), -1) + triu(matmul(gU, _mH(U)))
        gA = solve_tri(_mH(U), solve_tri(_mH(L), M, True, unitriangular=True), False, left=False)
    elif m > n:  # L = [L1; L2]: the square rule on the top block, gL2 U^-H below
        L1, L2 = L.narrow(-2, 0, n), L.narrow(-2, n, m - n)
        gL1, gL2 = gL.narrow(-2, 0, n), gL.narrow(-2, n, m - n)
        M = tril(matmul(_mH(L1), gL1), -1) + triu(matmul(gU, _mH(U)) - matmul(_mH(L2), gL2))
        top = solve_tri(_mH(L1), M, True, unitriangular=True)
        gA = solve_tri(_mH(U), cat([top, gL2], -2), False, left=False)
    else:  # U = [U1 U2]: the square rule on the left block, L^-H gU2 on the right
        U1, U2 = U.narrow(-1, 0, m), U.narrow(-1, m, n - m)
        gU1, gU2 = gU.narrow(-1, 0, m), gU.narrow(-1, m, n - m)
        M = tril(matmul(_mH(L), gL) - matmul(gU2, _mH(U2)), -1) + triu(matmul(gU1, _mH(U1)))
        left = solve_tri(_mH(U1), M, False, left=False)
        gA = solve_tri(_mH(L), cat([left, gU2], -1), True, unitriangular=True)
    return matmul(P, gA)


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U for each ``[*, m, n]`` matrix: P ``[*, m, m]`` a permutation,
    L ``[*, m, k]`` unit lower triangular, U ``[*, k, n]`` upper triangular (k = min(m, n)).
    Source: torch.linalg.lu.

    ``A`` is the input; ``pivot=False`` raises RuntimeError on the CPU, as torch; ``out`` (a
    tuple of three tensors) receives the result when given."""
    lu_, piv, _ = _lu_arrays(A, "linalg.lu_factor", pivot)
    import numpy
    m, n = A.shape[-2:]
    k = min(m, n)
    L = back(A, numpy.tril(lu_, -1)[..., :, :k] + numpy.eye(m, k, dtype=lu_.dtype))
    U = back(A, numpy.triu(lu_)[..., :k, :])
    P = permutation_from_pivots(piv, m, A)
    if needs_grad(A):
        record("LinalgLuBackward0", _lu_rule, (A,), (None, L, U), (P, L, U))
    return _write(return_types.linalg_lu(P, L, U), out, "linalg.lu")


def _lu_rule(grads, P, L, U):
    return lu_grad(grads[1], grads[2], P, L, U)


def _vector_rhs(A, B):
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (A^H X = B when ``adjoint``; X A = B when not ``left``) from A's
    lu_factor output; B is ``[*, n, k]`` with batch dims broadcast against LU's.
    Differentiable in ``LU`` and ``B``.  Source: torch.linalg.lu_solve.

    ``pivots`` are the int32 pivots of ``lu_factor``; ``out`` receives the result when
    given."""
    import numpy
    check_same_dtype(LU, B, "linalg.lu_solve", "LU", "B")
    if LU.ndim < 2 or LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2]} by {LU.shape[-1]} matrices")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq, bs = ("AX = B", f"{B.shape[-2]}x{B.shape[-1]}") if left else ("XA = B", f"{B.shape[-2]}x{B.shape[-1]}")
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {bs})")
    lu_, piv, b = host(LU), host(pivots), host(B)
    batch = numpy.broadcast_shapes(lu_.shape[:-2], b.shape[:-2], piv.shape[:-1])
    lu_ = numpy.ascontiguousarray(numpy.broadcast_to(lu_, batch + (n, n)))
    piv = numpy.ascontiguousarray(numpy.broadcast_to(piv, batch + (n,)))
    conj = LU.dtype.is_complex
    if left:
        b = numpy.ascontiguousarray(numpy.broadcast_to(b, batch + b.shape[-2:]))
        x = _lapack.getrs(lu_, piv, b, trans=(2 if conj else 1) if adjoint else 0)
    else:  # X A = B <=> A^T X^T = B^T;  X A^H = B <=> A^T X^T ... solved as conj(A^H) X^T = B^T
        bt = numpy.ascontiguousarray(numpy.broadcast_to(numpy.swapaxes(b, -1, -2), batch + (n, b.shape[-2])))
        if adjoint:
            x = numpy.swapaxes(numpy.conj(_lapack.getrs(lu_, piv, numpy.conj(bt), trans=0)), -1, -2) if conj \
                else numpy.swapaxes(_lapack.getrs(lu_, piv, bt, trans=0), -1, -2)
        else:
            x = numpy.swapaxes(_lapack.getrs(lu_, piv, bt, trans=1), -1, -2)
    X = back(B, x)
    if needs_grad(LU, B):
        Pm = permutation_from_pivots(host(pivots), n, LU)
        record("LinalgLuSolveBackward0", _lu_solve_rule, (LU, B), X, (LU, pivots, Pm, X, left, adjoint))
    return _write(X, out, "linalg.lu_solve")


def _lu_solve_rule(g, LU, pivots, P, X, left, adjoint):
    # gB through the other solve with the same factors; gA as for a plain solve, then
    # carried to the factors: A = P L U gives gLU = tril(P^T gA U^H, -1) + triu(L^H P^T gA)
    gB = lu_solve(LU, pivots, g, left=left, adjoint=not adjoint)
    if not LU._requires_grad:
        return None, gB
    if left:
        gA = -matmul(gB, _mH(X)) if not adjoint else -matmul(X, _mH(gB))
    else:
        gA = -matmul(_mH(X), gB) if not adjoint else -matmul(_mH(gB), X)
    from .layout import tril, triu
    L, U = unpack_lu(LU)
    PtgA = matmul(P.transpose(-2, -1), gA)
    return tril(matmul(PtgA, _mH(U)), -1) + triu(matmul(_mH(L), PtgA)), gB


# ---- solve, inverse, Cholesky with info -----------------------------------------------

def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info): X with A X = B (X A = B when not ``left``) through A's LU
    factorization, and int32 info > 0 for a singular A (X then holds LAPACK's inf/nan,
    as torch's).  B is ``[*, n, k]`` or a vector ``[*, n]``; batch dims broadcast.
    ``check_errors`` raises LinAlgError for a singular A.  Source: torch.linalg.solve_ex.

    ``A`` is ``[*, n, n]``, ``B`` the right-hand side; ``out`` (a pair of tensors) receives the
    result when given."""
    check_input(A, "linalg.solve")
    check_same_dtype(A, B, "linalg.solve")
    vector = _vector_rhs(A, B)
    Bm = B.unsqueeze(-1) if vector else B
    if not left and vector:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for "
                           "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    n = A.shape[-1]
    if (Bm.shape[-2] if left else Bm.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {Bm.shape[-2]}x{Bm.shape[-1]})")
    lu_, piv, info = _lapack.getrf(host(A))
    if check_errors:
        bad = _first_failure(info)
        if bad is not None:
            raise LinAlgError(f"torch.linalg.solve_ex: {_batch_prefix(info, bad[0], A.ndim)}The solver failed "
                              "because the input matrix is singular.")
    import numpy
    b = host(Bm)
    if not left:
        b = numpy.swapaxes(b, -1, -2)
    batch = numpy.broadcast_shapes(lu_.shape[:-2], b.shape[:-2])
    lu_b = numpy.ascontiguousarray(numpy.broadcast_to(lu_, batch + (n, n)))
    piv_b = numpy.ascontiguousarray(numpy.broadcast_to(piv, batch + (n,)))
    b = numpy.ascontiguousarray(numpy.broadcast_to(b, batch + b.shape[-2:]))
    x = _lapack.getrs(lu_b, piv_b, b, trans=0 if left else 1)
    X = back(A, numpy.swapaxes(x, -1, -2) if not left else (x[..., 0] if vector else x))
    I = _int32(A, info)
    if needs_grad(A, B):
        record("LinalgSolveExBackward0", _solve_rule, (A, B), (X, I), (A, X, left, vector))
    return _write(return_types.linalg_solve_ex(X, I), out, "linalg.solve_ex")


def _solve_rule(grads, A, X, left, vector):
    g = grads[0]
    if g is None:
        return None, None
    gB = solve_ex(_mH(A), g, left=left).result
    gA = None
    if A._requires_grad:
        gBm, Xm = (gB.unsqueeze(-1), X.unsqueeze(-1)) if vector else (gB, X)
        gA = -matmul(gBm, _mH(Xm)) if left else -matmul(_mH(Xm), gBm)
    return gA, gB


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info) of each square matrix through its LU factorization; int32 info > 0
    for a singular matrix (the inverse then holds LAPACK's inf/nan, as torch's).
    ``check_errors`` raises LinAlgError for one.  Source: torch.linalg.inv_ex.

    ``A`` is ``[*, n, n]``; ``out`` (a pair of tensors) receives the result when given."""
    check_input(A, "linalg.inv")
    lu_, piv, info = _lapack.getrf(host(A))
    if check_errors:
        bad = _first_failure(info)
        if bad is not None:
            raise LinAlgError(f"linalg.inv_ex: {_batch_prefix(info, bad[0], A.ndim)}The diagonal element {bad[1]} "
                              "is zero, the inversion could not be completed because the input matrix is singular.")
    R, I = back(A, _lapack.getri(lu_, piv)), _int32(A, info)
    if needs_grad(A):
        record("LinalgInvExBackward0", _inv_rule, (A,), (R, I), (R,))
    return _write(return_types.linalg_inv_ex(R, I), out, "linalg.inv_ex")


def _inv_rule(grads, R):
    g = grads[0]
    if g is None:
        return None
    Rh = _mH(R)
    return -matmul(matmul(Rh, g), Rh)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor of each Hermitian positive-definite matrix, read
    from its lower triangle (upper, giving U with A = U^H U, when ``upper``); int32
    info > 0 is the order of the first leading minor that is not positive definite (L
    then holds LAPACK's partial factor).  ``check_errors`` raises LinAlgError for such a
    matrix.  Source: torch.linalg.cholesky_ex.

    ``A`` is ``[*, n, n]``; ``out`` (a pair of tensors) receives the result when given."""
    check_input(A, "linalg.cholesky")
    c, info = _lapack.potrf(host(A), lower=not upper)
    if check_errors:
        bad = _first_failure(info)
        if bad is not None:
            raise LinAlgError(f"linalg.cholesky_ex: {_batch_prefix(info, bad[0], A.ndim)}The factorization could "
                              f"not be completed because the input is not positive-definite (the leading minor "
                              f"of order {bad[1]} is not positive-definite).")
    Lc, I = back(A, c), _int32(A, info)
    if needs_grad(A):
        record("LinalgCholeskyExBackward0", _cholesky_rule, (A,), (Lc, I), (Lc, upper))
    return _write(return_types.linalg_cholesky_ex(Lc, I), out, "linalg.cholesky_ex")


def _cholesky_rule(grads, C, upper):
    # A = L L^H: gA = L^-H Phi(L^H gL) L^-1 made Hermitian, Phi keeping the lower
    # triangle with its diagonal halved (an upper factor is L^H)
    from .layout import diag_embed, diagonal, tril
    g = grads[0]
    if g is None:
        return None
    L, gL = (_mH(C), _mH(g)) if upper else (C, g)
    M = tril(matmul(_mH(L), gL))
    M = M - 0.5 * diag_embed(diagonal(M, 0, -2, -1))
    gA = solve_tri(L, solve_tri(_mH(L), M, True), False, left=False)
    return 0.5 * (gA + _mH(gA))


# ---- LDL (Bunch-Kaufman) --------------------------------------------------------------

def _no_derivative(name):
    def rule(*_):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")
    return rule


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): the Bunch-Kaufman factorization A = P L D L^T P^T of the lower
    triangle of each symmetric (Hermitian when ``hermitian``) matrix in LAPACK's compact
    form (sytrf): L below the diagonal of LD, the 1x1 and 2x2 blocks of D on and beside
    it, int32 pivots (negative for 2x2 blocks), info > 0 where D is singular.  No
    derivative (as torch).  Source: torch.linalg.ldl_factor_ex.

    ``A`` is ``[*, n, n]``; ``check_errors`` raises LinAlgError where D is singular; ``out`` (a
    tuple of three tensors) receives the result when given."""
    check_input(A, "torch.linalg.ldl_factor_ex")
    ld, piv, info = _lapack.sytrf(host(A), hermitian)
    if check_errors:
        bad = _first_failure(info)
        if bad is not None:
            raise LinAlgError(f"torch.linalg.ldl_factor_ex: {_batch_prefix(info, bad[0], A.ndim)}The factorization "
                              f"could not be completed because D[{bad[1]},{bad[1]}] is zero.")
    LD, P, I = back(A, ld), _int32(A, piv), _int32(A, info)
    if needs_grad(A):
        record("NotImplemented", _no_derivative("linalg_ldl_factor_ex"), (A,), (LD, P, I))
    return _write(return_types.linalg_ldl_factor_ex(LD, P, I), out, "linalg.ldl_factor_ex")


def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) as ldl_factor_ex; RuntimeError where D is singular.

    ``A`` is ``[*, n, n]``, symmetric, or Hermitian when ``hermitian``
    (torch.linalg.ldl_factor); ``out`` (a pair of tensors) receives the result when given."""
    LD, P, info = ldl_factor_ex(A, hermitian=hermitian)
    bad = _first_failure(host(info))
    if bad is not None:
        raise RuntimeError(f"torch.linalg.ldl_factor: {_batch_prefix(None, bad[0], A.ndim)}The factorization could "
                           f"not be completed because D[{bad[1]},{bad[1]}] is zero.")
    return _write(return_types.linalg_ldl_factor(LD, P), out, "linalg.ldl_factor")


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from A's ldl_factor output; B is ``[*, n, k]``, batch dims broadcast.
    No derivative (as torch).  Source: torch.linalg.ldl_solve.

    ``LD`` and ``pivots`` are ``ldl_factor``'s output for A ``[*, n, n]``, ``B`` is ``[*, n, k]``;
    ``hermitian`` must match the factorization; ``out`` receives the result when given."""
    import numpy
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(B.ndim, 1)}, "
                         f"{max(B.ndim, 1) - 1}], but got -2)")
    check_same_dtype(LD, B, "torch.linalg.ldl_solve", "LD", "B")
    ld, piv, b = host(LD), host(pivots), host(B)
    n = ld.shape[-1]
    if b.shape[-2] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    batch = numpy.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = numpy.ascontiguousarray(numpy.broadcast_to(ld, batch + (n, n)))
    piv = numpy.ascontiguousarray(numpy.broadcast_to(piv, batch + (n,)))
    b = numpy.ascontiguousarray(numpy.broadcast_to(b, batch + b.shape[-2:]))
    X = back(B, _lapack.sytrs(ld, piv, b, hermitian))
    if needs_grad(LD, B):
        record("NotImplemented", _no_derivative("linalg_ldl_solve"), (LD, B), X)
    return _write(X, out, "linalg.ldl_solve")
