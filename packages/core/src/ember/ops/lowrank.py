"""Low-rank and partial decompositions: svd_lowrank, pca_lowrank (randomized range
finder, Halko, Martinsson & Tropp, "Finding structure with randomness", 2011, algorithms
4.4 and 5.1) and lobpcg's result (the k largest or smallest eigenpairs of a symmetric
matrix, or of the pencil (A, B)).

All are written with ember ops (qr, svd, eigh, cholesky), so they are differentiable
where those are.  lobpcg computes the eigenpairs LOBPCG converges to with a dense
symmetric eigensolver instead of iterating: its values equal torch's up to rounding and
the eigenvectors' signs, and the iteration's own controls (X's values, iK, niter, tol,
method, tracker, ortho_*) do not change them.
"""

from __future__ import annotations

from .. import _dtype as D
from ..autograd.graph import record
from ._helpers import needs_grad
from .linalg import matmul

__all__ = ["svd_lowrank", "pca_lowrank", "lobpcg"]


def _mH(x):
    from .complex_ops import conj
    return conj(x.transpose(-2, -1))


def _range_basis(A, q, niter, generator=None):
    """An orthonormal basis ``[*, m, q]`` of (nearly) A's range: a Gaussian sketch refined by
    ``niter`` power iterations, each followed by a QR step (algorithm 4.4)."""
    from .creation import randn
    from .decompositions import qr
    R = randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = qr(matmul(A, R)).Q
    for _ in range(niter):
        Q = qr(matmul(_mH(A), Q)).Q
        Q = qr(matmul(A, Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U ``[*, m, q]``, S ``[*, q]``, V ``[*, n, q]``): an approximate rank-q SVD of A - M (M
    broadcast to A; default none), A ~ U diag(S) V^H; exact when q >= rank(A).  q is at
    most min(m, n).  Source: torch.svd_lowrank.

    ``A`` is ``[*, m, n]``; ``q`` (6 by default) the rank sought; ``niter`` (2) the number of
    subspace iterations, which sharpen the approximation; ``M`` the matrix subtracted first.
    The range finder starts from a random Gaussian matrix, so results vary with the seed."""
    from .decompositions import svd
    if M is not None:
        A = A - M
    m, n = A.shape[-2:]
    q = min(6 if q is None else q, m, n)
    niter = 2 if niter is None else niter
    if m < n:  # the range finder works on the taller side
        V, S, U = svd_lowrank(_mH(A), q, niter)
        return U, S, V
    Q = _range_basis(A, q, niter)
    Ub, S, Vh = svd(matmul(_mH(Q), A), full_matrices=False)
    return matmul(Q, Ub), S, _mH(Vh)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V) of svd_lowrank on A with its column means removed (``center``): the
    principal directions are V's columns, S**2 / (m - 1) their variances.  q defaults to
    min(6, m, n); ValueError outside [0, min(m, n)].  Source: torch.pca_lowrank.

    ``A`` is ``[*, m, n]`` (rows the samples); ``niter`` as in ``svd_lowrank``.

    ``q`` is the rank sought."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (isinstance(niter, int) and niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if center:
        A = A - A.mean(-2, keepdim=True)
    return svd_lowrank(A, q, niter)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """(E ``[*, k]``, X ``[*, m, k]``): the k largest (smallest when ``largest=False``) eigenvalues
    of the symmetric A ``[*, m, m]``, in that order, and their eigenvectors; with B, those of
    the generalized problem A x = lambda B x (B symmetric positive definite, X then
    B-orthonormal).  k defaults to X's column count, else 1; ValueError, as torch, when
    m < 3 n (n, the basis size, defaults to k).  Source: torch.lobpcg.

    ember computes the pairs exactly through ``eigh`` (of ``L^-1 A L^-T`` for ``B = L L^T``)
    rather than by torch's iteration, so they do not depend on the starting ``X`` (only its
    column count is read), and ``iK``, ``niter``, ``tol``, ``method``, ``tracker``,
    ``ortho_iparams``, ``ortho_fparams`` and ``ortho_bparams`` are accepted and unused.
    ``A`` and ``B`` must be float32 or float64 of one square shape (AssertionError or
    ValueError otherwise). A gradient through B raises ValueError, as torch's.

    ``k`` is the number of pairs returned; ``n`` the basis size (only checked against m)."""
    from .decompositions import cholesky, eigh
    from .factorizations import solve_tri
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise AssertionError(f"A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise AssertionError(f"A and B must have the same shapes, got {tuple(A.shape)} and {tuple(B.shape)}")
    if A.dtype not in (D.float32, D.float64):
        raise ValueError(f"lobpcg expects a float32 or float64 A, got {A.dtype}")
    m = A.shape[-1]
    k = (X.shape[-1] if X is not None else 1) if k is None else k
    n = (X.shape[-1] if X is not None else k) if n is None else n
    if m < 3 * n:
        raise ValueError(f"LPBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    largest = True if largest is None else largest
    if B is None:
        w, V = eigh(A)
    else:  # A x = lambda B x with B = L L^T: the symmetric C = L^-1 A L^-T, x = L^-T y
        from ..autograd import grad_mode
        with grad_mode.no_grad():  # torch has no derivative here
            Lb = cholesky(B)
            C = solve_tri(Lb, _mH(solve_tri(Lb, A, False)), False)
            w, Y = eigh(0.5 * (C + _mH(C)))
            V = solve_tri(_mH(Lb), Y, True)
    if largest:
        from .shape import flip
        E, X = flip(w.narrow(-1, m - k, k), (-1,)), flip(V.narrow(-1, m - k, k), (-1,))
    else:
        E, X = w.narrow(-1, 0, k), V.narrow(-1, 0, k)
    if B is not None and needs_grad(A, B):
        record("LOBPCGAutogradFunctionBackward", _no_generalized_rule, (A, B), (E, X))
    return E, X


def _no_generalized_rule(grads):
    raise ValueError("lobpcg.backward does not support backward with B != I yet.")
