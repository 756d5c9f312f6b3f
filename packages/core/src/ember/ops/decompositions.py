"""Matrix functions and decompositions (torch.linalg): inverse, determinants, solving,
Cholesky, QR, symmetric eigendecomposition, SVD, and what is built on them.

Inputs are ``[*, m, n]`` batches of float32/float64 matrices; the array module's linalg
(numpy.linalg, cupy.linalg) computes the values.  The gradient rules are ember ops, so
they differentiate again; their formulas are the standard ones of matrix calculus
(M. Giles, "An extended collection of matrix derivative results for forward and reverse
mode algorithmic differentiation", 2008; torch's ``FunctionsManual.cpp`` for the
conventions): det's and inv's assume an invertible matrix, eigh's and svd's distinct
eigen/singular values, as torch documents for its own gradients.
"""

from __future__ import annotations

from .. import _dtype as D
from .. import return_types
from .._autocast import autocast_op
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import record
from ._helpers import be, needs_grad
from .linalg import matmul

__all__ = ["inv", "det", "slogdet", "logdet", "solve", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals",
           "pinv", "matrix_rank", "matrix_power", "lstsq", "solve_triangular", "multi_dot", "vector_norm",
           "matrix_norm", "norm", "vecdot"]


def _check_matrix(A: Tensor, name: str, square: bool = True) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"linalg.{name}: Expected a floating point tensor as input. Got {A.dtype}")


def _mT(x):
    return x.transpose(-2, -1)


def _linalg(A):
    return be(A).linalg


# ---- inverse, determinants, solving ------------------------------------------------

@autocast_op("fp32")
def inv(A, *, out=None):
    """The inverse of each square matrix of ``A`` ``[*, n, n]``, same shape and dtype
    (torch.linalg.inv, torch.inverse).

    Raises RuntimeError for a singular matrix or an input that is not a batch of square
    matrices. ``out`` is accepted but not written."""
    _check_matrix(A, "inv")
    try:
        arr = _linalg(A).inv(A._data)
    except Exception as e:  # numpy.linalg.LinAlgError
        raise RuntimeError(f"linalg.inv: The diagonal element of the LU factorization is zero, the inversion "
                           f"could not be completed because the input matrix is singular. ({e})") from None
    r = _make(arr, A.dtype)
    if needs_grad(A):
        record("LinalgInvExBackward0", _inv_rule, (A,), r, (r,))
    return r


def _inv_rule(g, ainv):
    t = _mT(ainv)
    return -matmul(matmul(t, g), t)


def det(A):
    """The determinant of each square matrix of ``A`` ``[*, n, n]``: a tensor of shape ``[*]`` in its
    dtype (torch.linalg.det, torch.det). RuntimeError for an input that is not a batch of
    square matrices."""
    _check_matrix(A, "det")
    r = _make(be(A).xp.asarray(_linalg(A).det(A._data)), A.dtype)
    if needs_grad(A):
        record("LinalgDetBackward0", _det_rule, (A,), r, (A, r))
    return r


def _det_rule(g, A, d):
    return (g * d).unsqueeze(-1).unsqueeze(-1) * _mT(inv(A))


def slogdet(A):
    """The named tuple ``(sign, logabsdet)`` of each square matrix of ``A`` ``[*, n, n]``: the sign
    (or, complex, the phase) of the determinant and ``log|det|``, both of shape ``[*]``
    (torch.linalg.slogdet, torch.slogdet). A singular matrix gives sign 0 and -inf. The
    gradient flows through ``logabsdet`` only."""
    _check_matrix(A, "slogdet")
    sign, logabs = _linalg(A).slogdet(A._data)
    xp = be(A).xp
    s, la = _make(xp.asarray(sign, dtype=A._data.dtype), A.dtype), _make(xp.asarray(logabs, dtype=A._data.dtype),
                                                                       A.dtype)
    if needs_grad(A):  # the sign is piecewise constant: only log|det| passes a gradient on
        record("LinalgSlogdetBackward0", _slogdet_rule, (A,), (s, la), (A,))
    return return_types.slogdet(s, la)


def _slogdet_rule(grads, A):
    g = grads[1]
    if g is None:
        return None
    return g.unsqueeze(-1).unsqueeze(-1) * _mT(inv(A))


def logdet(A):
    """``log(det(A))`` of each square matrix of ``A`` ``[*, n, n]``, shape ``[*]``: NaN for a negative
    determinant, -inf for a singular matrix (torch.logdet)."""
    import math

    from .elementwise import where
    sign, logabs = slogdet(A)
    return where(sign < 0, math.nan, where(sign == 0, -math.inf, logabs))


@autocast_op("fp32")
def solve(A, B, *, left=True, out=None):
    """The solution X of ``A @ X = B`` (``X @ A = B`` when not ``left``) (torch.linalg.solve).

    ``A`` is ``[*, n, n]`` and invertible; ``B`` is ``[*, n, k]``, or ``[*, n]`` (a batch of vectors,
    then X is ``[*, n]``); batch dims broadcast. Computed as ``inv(A) @ B``: a singular ``A``
    raises RuntimeError. ``out`` is accepted but not written."""
    _check_matrix(A, "solve")
    if not left:
        return _mT(solve(_mT(A), _mT(B)))
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    Bm = B.unsqueeze(-1) if vector else B
    X = matmul(inv(A), Bm)
    return X.squeeze(-1) if vector else X


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution X of ``A @ X = B`` (``X @ A = B`` when not ``left``) for triangular ``A``
    (torch.linalg.solve_triangular).

    ``A`` is ``[*, n, n]`` (or ``[*, k, k]`` when not ``left``), ``B`` ``[*, n, k]``: batch dims
    broadcast, complex matrices too. Only the triangle that ``upper`` names is read (its
    diagonal taken as ones when ``unitriangular``). LAPACK's trtrs (see ``factorizations``).
    A ``B`` of fewer than 2 dims raises RuntimeError; ``out`` receives the result when
    given."""
    from .factorizations import _write, solve_tri
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    return _write(solve_tri(A, B, upper, left, unitriangular), out, "linalg.solve_triangular")


@autocast_op("fp32")
def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A @ X = B`` through the pseudo-inverse
    (torch.linalg.lstsq).

    ``A`` is ``[*, m, n]``, ``B`` ``[*, m, k]`` (or ``[*, m]``). Returns the named tuple ``(solution,
    residuals, rank, singular_values)``: the solution ``[*, n, k]``, and empty tensors for the
    other three. ``rcond`` and ``driver`` are accepted and unused (the cutoff is
    ``pinv``'s)."""
    X = matmul(pinv(A), B if B.ndim == A.ndim else B.unsqueeze(-1))
    if B.ndim != A.ndim:
        X = X.squeeze(-1)
    empty = _make(be(A).xp.zeros((0,), dtype=A._data.dtype), A.dtype)
    return return_types.lstsq(X, empty, _make(be(A).xp.zeros((0,), dtype="int64"), D.int64), empty)


# ---- Cholesky, QR ---------------------------------------------------------------------

@autocast_op("fp32")
def cholesky(A, *, upper=False, out=None):
    """The lower triangular L with ``A = L @ L^H`` for each Hermitian positive-definite matrix
    of ``A`` ``[*, n, n]``, or its conjugate transpose U when ``upper`` (torch.linalg.cholesky).
    RuntimeError when a matrix is not positive definite. ``out`` is accepted but not
    written."""
    _check_matrix(A, "cholesky")
    try:
        arr = _linalg(A).cholesky(A._data)
    except Exception:
        raise RuntimeError("linalg.cholesky: The factorization could not be completed because the input is not "
                           "positive-definite.") from None
    L = _make(arr, A.dtype)
    if needs_grad(A):
        record("LinalgCholeskyExBackward0", _cholesky_rule, (A,), L, (L,))
    return _mT(L) if upper else L


def _cholesky_rule(gL, L):
    # gA = L^-T Phi(L^T gL) L^-1, symmetrized; Phi keeps the lower triangle, halving the diagonal
    from .creation import eye
    from .layout import tril
    n = L.shape[-1]
    P = tril(matmul(_mT(L), gL))
    P = P - 0.5 * P * eye(n, dtype=L.dtype)
    Linv = inv(L)
    gA = matmul(matmul(_mT(Linv), P), Linv)
    return 0.5 * (gA + _mT(gA))


@autocast_op("fp32")
def qr(A, mode="reduced"):
    """The QR decomposition ``A = Q @ R`` of each matrix of ``A`` ``[*, m, n]``: Q with orthonormal
    columns, R upper triangular (torch.linalg.qr).

    ``mode`` 'reduced' gives Q ``[*, m, k]`` and R ``[*, k, n]`` (k = min(m, n)), 'complete' Q ``[*,
    m, m]`` and R ``[*, m, n]``, 'r' R alone with an empty Q; another mode raises RuntimeError.
    Returns the named tuple ``(Q, R)``. The gradient needs m >= n and mode 'reduced'
    (NotImplementedError otherwise)."""
    _check_matrix(A, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
                           "'r', or 'complete'")
    q, r = _linalg(A).qr(A._data, mode="complete" if mode == "complete" else "reduced")
    Q, R = _make(q, A.dtype), _make(r, A.dtype)
    if mode == "r":
        Q = _make(be(A).xp.zeros((0,), dtype=A._data.dtype), A.dtype)
    if needs_grad(A):
        if mode != "reduced" or A.shape[-2] < A.shape[-1]:
            raise NotImplementedError("The derivative of linalg.qr is only implemented for mode='reduced' and "
                                      "m >= n")
        record("LinalgQrBackward0", _qr_rule, (A,), (Q, R), (Q, R))
    return return_types.qr(Q, R)


def _qr_rule(grads, Q, R):
    # Walter & Lehmann; for m >= n: gA = (gQ + Q copyltu(M)) R^-T with M = R gR^T - gQ^T Q
    from .creation import zeros_like
    from .layout import tril
    gQ, gR = grads
    gQ = gQ if gQ is not None else zeros_like(Q)
    gR = gR if gR is not None else zeros_like(R)
    M = matmul(R, _mT(gR)) - matmul(_mT(gQ), Q)
    low = tril(M, -1)
    copyltu = low + _mT(low) + (M - tril(M, -1) - _mT(tril(_mT(M), -1)))
    b = gQ + matmul(Q, copyltu)
    return _mT(solve_triangular(R, _mT(b), upper=True))


# ---- symmetric eigendecomposition, SVD ----------------------------------------------

@autocast_op("fp32")
def eigh(A, UPLO="L"):
    """The eigenvalues (ascending, real) and orthonormal eigenvectors of each Hermitian matrix
    of ``A`` ``[*, n, n]``, read from its lower (``UPLO='L'``) or upper (``'U'``) triangle
    (torch.linalg.eigh). Returns the named tuple ``(eigenvalues [*, n], eigenvectors [*, n,
    n])``, the eigenvectors as columns."""
    _check_matrix(A, "eigh")
    w, v = _linalg(A).eigh(A._data, UPLO=UPLO)
    L, V = _make(w, A.dtype), _make(v, A.dtype)
    if needs_grad(A):
        record("LinalgEighBackward0", _eigh_rule, (A,), (L, V), (L, V))
    return return_types.eigh(L, V)


def _eigh_rule(grads, w, V):
    from .elementwise import where
    gw, gV = grads
    inner = 0
    if gV is not None:
        diff = w.unsqueeze(-2) - w.unsqueeze(-1)  # [i, j] = w_j - w_i
        F = where(diff == 0, 0.0, 1.0 / where(diff == 0, 1.0, diff))
        inner = F * matmul(_mT(V), gV)
    if gw is not None:
        from .layout import diag_embed
        inner = inner + diag_embed(gw)
    gA = matmul(matmul(V, inner), _mT(V))
    return 0.5 * (gA + _mT(gA))


@autocast_op("fp32")
def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of each Hermitian matrix of ``A`` ``[*, n, n]``, as a ``[*, n]``
    tensor, read from the triangle ``UPLO`` names ('L' or 'U') (torch.linalg.eigvalsh)."""
    return eigh(A, UPLO).eigenvalues


@autocast_op("fp32")
def svd(A, full_matrices=True, *, driver=None):
    """The singular value decomposition ``A = U @ diag(S) @ Vh`` of each matrix of ``A`` ``[*, m,
    n]``, singular values descending (torch.linalg.svd).

    With ``full_matrices`` U is ``[*, m, m]`` and Vh ``[*, n, n]``; without, ``[*, m, k]`` and ``[*, k, n]``
    (k = min(m, n)); S is ``[*, k]``. Returns the named tuple ``(U, S, Vh)``. ``driver`` is
    accepted and unused. The gradient needs ``full_matrices=False`` (or a square ``A``), as
    torch's: NotImplementedError otherwise."""
    _check_matrix(A, "svd", square=False)
    u, s, vh = _linalg(A).svd(A._data, full_matrices=full_matrices)
    U, S, Vh = _make(u, A.dtype), _make(s, A.dtype), _make(vh, A.dtype)
    if needs_grad(A):
        if full_matrices and A.shape[-1] != A.shape[-2]:
            raise NotImplementedError("torch.linalg.svd: The derivative is not implemented when "
                                      "full_matrices=True and the input is not square; use full_matrices=False")
        record("LinalgSvdBackward0", _svd_rule, (A,), (U, S, Vh), (U, S, Vh))
    return return_types.svd(U, S, Vh)


def _svd_rule(grads, U, S, Vh):
    # reduced SVD (Townsend 2016): gA = U [ (F o (U^T gU - gU^T U)) S + S (F o (V^T gV - gV^T V))
    # + diag(gS) ] V^T + the parts of gU and gV outside the spans of U and V
    from .elementwise import where
    from .layout import diag_embed
    gU, gS, gVh = grads
    V = _mT(Vh)
    m, n = U.shape[-2], V.shape[-2]
    k = S.shape[-1]
    S2 = S * S
    diff = S2.unsqueeze(-2) - S2.unsqueeze(-1)  # [i, j] = s_j^2 - s_i^2
    F = where(diff == 0, 0.0, 1.0 / where(diff == 0, 1.0, diff))
    Smat = diag_embed(S)
    inner = diag_embed(gS) if gS is not None else 0
    Ut, Vt = _mT(U), _mT(V)
    if gU is not None:
        J = F * (matmul(Ut, gU) - matmul(_mT(gU), U))
        inner = inner + matmul(J, Smat)
    if gVh is not None:
        gV = _mT(gVh)
        K = F * (matmul(Vt, gV) - matmul(_mT(gV), V))
        inner = inner + matmul(Smat, K)
    gA = matmul(matmul(U, inner), Vt)
    Sinv = diag_embed(where(S == 0, 0.0, 1.0 / where(S == 0, 1.0, S)))
    if gU is not None and m > k:
        from .creation import eye
        proj = eye(m, dtype=U.dtype) - matmul(U, Ut)
        gA = gA + matmul(matmul(matmul(proj, gU), Sinv), Vt)
    if gVh is not None and n > k:
        from .creation import eye
        proj = eye(n, dtype=V.dtype) - matmul(V, Vt)
        gA = gA + matmul(matmul(U, Sinv), _mT(matmul(proj, _mT(gVh))))
    return gA


@autocast_op("fp32")
def svdvals(A):
    """The singular values of each matrix of ``A`` ``[*, m, n]``, descending, as a ``[*, min(m, n)]``
    tensor (torch.linalg.svdvals)."""
    return svd(A, full_matrices=False).S


@autocast_op("fp32")
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse ``[*, n, m]`` of each matrix of ``A`` ``[*, m, n]``, through
    the SVD (torch.linalg.pinv, torch.pinverse).

    Singular values at or below ``max(atol, rtol * largest)`` count as zero; ``rtol``
    defaults to ``eps * max(m, n)`` when ``atol`` is not given, else to 0. ``hermitian`` is
    accepted (the SVD is used either way)."""
    from .elementwise import where
    U, S, Vh = svd(A, full_matrices=False)
    eps = 1.1920929e-07 if A.dtype is D.float32 else 2.220446049250313e-16
    tol_r = rtol if rtol is not None else (eps * max(A.shape[-2:]) if atol is None else 0.0)
    top = S.amax(-1, keepdim=True) if S.numel() else S
    cutoff = top * tol_r
    if atol is not None:
        from .elementwise import maximum
        cutoff = maximum(cutoff, _make(be(A).xp.asarray(atol, dtype=A._data.dtype), A.dtype))
    keep = S > cutoff
    Sinv = where(keep, 1.0 / where(keep, S, 1.0), 0.0)
    return matmul(_mT(Vh) * Sinv.unsqueeze(-2), _mT(U))


@autocast_op("fp32")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The numerical rank (int64, shape ``[*]``) of each matrix of ``A`` ``[*, m, n]``: how many
    singular values exceed ``max(atol, rtol * largest)`` (torch.linalg.matrix_rank).
    ``atol`` and ``rtol`` default as in ``pinv``; ``hermitian`` is accepted (the SVD is used
    either way)."""
    from .reduction import sum as _sum
    S = svdvals(A.detach())
    eps = 1.1920929e-07 if A.dtype is D.float32 else 2.220446049250313e-16
    tol_r = rtol if rtol is not None else (eps * max(A.shape[-2:]) if atol is None else 0.0)
    cutoff = S.amax(-1, keepdim=True) * tol_r
    if atol is not None:
        from .elementwise import maximum
        cutoff = maximum(cutoff, _make(be(A).xp.asarray(atol, dtype=A._data.dtype), A.dtype))
    return _sum(S > cutoff, -1)


def matrix_power(A, n):
    """Each square matrix of ``A`` ``[*, n, n]`` multiplied by itself ``n`` times, by repeated
    squaring (torch.linalg.matrix_power, torch.matrix_power): the inverse's power for a
    negative ``n``, the identity for 0. ``out`` receives the result when given."""
    _check_matrix(A, "matrix_power")
    if n < 0:
        return matrix_power(inv(A), -n)
    from .creation import eye
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is None:  # the identity, still attached to A's graph (a zero gradient), as torch's
        out = A.clone()
        out.copy_(eye(A.shape[-1], dtype=A.dtype).expand(*A.shape))
        return out
    return result


def multi_dot(tensors, *, out=None):
    """The product of the chain of matrices ``tensors``, left to right
    (torch.linalg.multi_dot): the first may be a vector [n] and the last a vector [m], which
    are dropped from the result's shape. Fewer than 2 tensors raise RuntimeError; ``out`` is
    accepted but not written."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    result = ts[0]
    for t in ts[1:]:
        result = matmul(result, t)
    return result


# ---- norms --------------------------------------------------------------------------

def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of the elements of ``x`` over ``dim`` (an int or a tuple; all when
    None) (torch.linalg.vector_norm).

    ``ord`` is any real, inf, -inf, or 0 (the count of nonzeros); ``keepdim`` keeps the
    reduced dims with size 1; ``dtype`` casts ``x`` first. Integer inputs raise
    RuntimeError."""
    from .reduction import norm as _norm
    if dtype is not None:
        x = x.to(dtype)
    return _norm(x, ord, dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm of ``A`` over the two dims ``dim`` (torch.linalg.matrix_norm).

    ``ord`` is 'fro', 'nuc', 2 / -2 (the largest / smallest singular value), 1 / -1 (the
    largest / smallest absolute column sum) or inf / -inf (row sums); another raises
    RuntimeError, as does an ``A`` of fewer than 2 dims. ``keepdim`` keeps the reduced dims
    with size 1; ``dtype`` casts ``A`` first."""
    import math

    from .elementwise import abs as _abs
    from .reduction import amax, amin
    from .reduction import sum as _sum
    from .shape import movedim
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (_wrap_dim(d, A.ndim) for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    M = movedim(A, (d0, d1), (-2, -1))
    if ord in ("nuc", 2, -2):
        S = svdvals(M)
        r = _sum(S, -1) if ord == "nuc" else (amax(S, -1) if ord == 2 else amin(S, -1))
    elif ord in (1, -1, math.inf, -math.inf):
        sums = _sum(_abs(M), -2 if ord in (1, -1) else -1)
        r = amax(sums, -1) if ord > 0 else amin(sums, -1)
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm of ``A`` (``dim`` an int, or a 1-d input) or a matrix norm (``dim`` a
    pair, or a 2-d input with ``ord`` given); with neither ``dim`` nor ``ord``, the 2-norm
    of all elements (torch.linalg.norm). ``ord``, ``keepdim`` and ``dtype`` as in
    ``vector_norm`` and ``matrix_norm``. RuntimeError for an ``ord`` without ``dim`` on an
    input that is not 1-d or 2-d."""
    if dim is None and ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if dim is None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.ndim}D.")
    if isinstance(dim, int) or (dim is None and A.ndim == 1):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None:
        dim = (-2, -1)
    if len(dim) == 1:
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)


@autocast_op("lower")
def vecdot(x, y, *, dim=-1):
    """The dot product of ``x`` and ``y`` (broadcast) along ``dim``."""
    from .reduction import sum as _sum
    return _sum(x * y, dim)
