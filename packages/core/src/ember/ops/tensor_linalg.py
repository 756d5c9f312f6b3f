"""torch.linalg functions built from the others: cond (condition numbers), tensorinv
and tensorsolve (inverse and solve of a tensor read as a matrix).  Their gradients are
those of the ops they are written with."""

from __future__ import annotations

import math

from ._lapack import check_input
from .factorizations import _write, inv_ex, solve_ex

__all__ = ["cond", "tensorinv", "tensorsolve"]

_NORMS = ("fro", "nuc", 1, -1, math.inf, -math.inf)


def cond(A, p=None, *, out=None):
    """The condition number of each matrix ``[*, m, n]`` in norm ``p``: for None, 2 and -2
    the ratio of the largest to the smallest singular value (its inverse for -2, any
    shape); for 'fro', 'nuc', 1, -1, inf and -inf, norm(A) * norm(A^-1) of a square A,
    inf where A is singular.  A real result (float32/float64).  Source: torch.linalg.cond.

    ``A`` is the input; ``out`` receives the result when given. RuntimeError for an invalid
    ``p`` or fewer than 2 dims."""
    from .decompositions import matrix_norm, svdvals
    from .elementwise import where
    if p is not None and p not in (2, -2) + _NORMS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p in (None, 2, -2):
        check_input(A, "linalg.svd", square=False)
        S = svdvals(A) if not A.dtype.is_complex else _complex_svdvals(A)
        top, low = S.narrow(-1, 0, 1).squeeze(-1), S.narrow(-1, S.shape[-1] - 1, 1).squeeze(-1)
        return _write(low / top if p == -2 else top / low, out, "linalg.cond")
    check_input(A, f"linalg.cond(ord={p})")
    Ainv, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(Ainv, p)
    return _write(where(info > 0, math.inf, r), out, "linalg.cond")


def _complex_svdvals(A):
    # the real matrix [[Re A, -Im A], [Im A, Re A]] has each singular value of A twice
    from .complex_ops import imag, real
    from .decompositions import svdvals
    from .shape import cat
    re, im = real(A), imag(A)
    S = svdvals(cat([cat([re, -im], -1), cat([im, re], -1)], -2))
    return S[..., ::2]


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def tensorinv(A, ind=2, *, out=None):
    """The tensor X with tensordot(A, X, ind) the identity: A ``[*I, *J]`` read as a
    prod(I) x prod(J) matrix (ind = len(I)), inverted, shaped ``[*J, *I]``.  RuntimeError
    (LinAlgError) for a singular one.  Source: torch.linalg.tensorinv.

    ``A`` is the input, ``ind`` (a positive int) the number of its leading dims that index
    the result's trailing ones; ``out`` receives the result when given."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    outer, inner = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if _numel(outer) != _numel(inner):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {_numel(inner)} != {_numel(outer)}")
    inv = inv_ex(A.reshape(_numel(outer), _numel(inner)), check_errors=True).inverse
    return _write(inv.reshape(*inner, *outer), out, "linalg.tensorinv")


def tensorsolve(A, B, dims=None, *, out=None):
    """The tensor X with tensordot(A, X, X.ndim) = B: A ``[*B.shape, *X.shape]`` (after
    moving ``dims`` of A to the end) read as a matrix.  RuntimeError (LinAlgError) for
    a singular one.  Source: torch.linalg.tensorsolve.

    ``A`` is the coefficient tensor, ``B`` the right-hand side; ``out`` receives the result
    when given."""
    from .shape import movedim
    if dims is not None:
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        A = movedim(A, dims, tuple(range(A.ndim - len(dims), A.ndim)))
    rest = tuple(A.shape[B.ndim:])
    if _numel(rest) != B.numel():
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {_numel(rest)} != {B.numel()}")
    try:
        X = solve_ex(A.reshape(B.numel(), _numel(rest)), B.reshape(-1), check_errors=True).result
    except RuntimeError as e:
        raise type(e)(str(e).replace("solve_ex", "solve")) from None
    return _write(X.reshape(*rest), out, "linalg.tensorsolve")
