"""Householder reflectors: geqrf (LAPACK's packed QR), orgqr (torch.linalg's
householder_product) and ormqr (a product with Q).

geqrf's values come from LAPACK; it has no derivative (as torch).  orgqr and ormqr apply
the reflectors H_i = I - tau_i v_i v_i^H one by one with ember ops (v_i the i-th column
below the diagonal of A, with a unit on it), so their gradients with respect to A, tau
and the other matrix follow from those ops, and differentiate again (Golub & Van Loan,
"Matrix Computations", 5.1).
"""

from __future__ import annotations

from .. import return_types
from ..autograd.graph import record
from . import _lapack
from ._helpers import needs_grad
from ._lapack import back, check_input, check_same_dtype, host
from .factorizations import _mH, _write
from .linalg import matmul

__all__ = ["geqrf", "orgqr", "ormqr"]


def geqrf(input, *, out=None):
    """(a, tau): LAPACK's QR factorization of each ``[*, m, n]`` matrix, R in a's upper
    triangle, the Householder vectors below it and their scales in tau ``[*, min(m, n)]``.
    Q is ``orgqr(a, tau)``.  No derivative (NotImplementedError in backward, as torch).
    Source: torch.geqrf.

    ``input`` is the matrix (or batch) factored; ``out`` (a pair of tensors) receives the
    result when given."""
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    check_input(input, "torch.geqrf", square=False, kernel="geqrf_cpu")
    qr, tau = _lapack.geqrf(host(input))
    a, t = back(input, qr), back(input, tau)
    if needs_grad(input):
        record("GeqrfBackward0", _geqrf_rule, (input,), (a, t))
    return _write(return_types.geqrf(a, t), out, "geqrf")


def _geqrf_rule(grads):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


def _reflectors(A, k):
    """The k Householder vectors ``[*, m, k]``: A's columns below the diagonal, a one on it."""
    from .creation import eye
    from .layout import tril
    m = A.shape[-2]
    return tril(A, -1).narrow(-1, 0, k) + eye(m, k, dtype=A.dtype, device=A.device)


def _apply(V, tau, C, left, adjoint):
    """H_1 ... H_k applied to C (its adjoint when ``adjoint``), from the left or right."""
    from .complex_ops import conj
    k = tau.shape[-1]
    scales = conj(tau) if adjoint else tau
    order = range(k) if left == adjoint else range(k - 1, -1, -1)
    for i in order:
        v = V.narrow(-1, i, 1)  # [*, m, 1]
        t = scales.narrow(-1, i, 1).unsqueeze(-1)  # [*, 1, 1]
        C = C - t * matmul(v, matmul(_mH(v), C)) if left else C - t * matmul(matmul(C, v), _mH(v))
    return C


def orgqr(input, tau, *, out=None):
    """The first n columns of Q = H_1 ... H_k for ``input`` ``[*, m, n]`` (m >= n) holding
    the Householder vectors below its diagonal and ``tau`` ``[*, k]`` (k <= n) their scales,
    as geqrf gives them.  Source: torch.linalg.householder_product (torch.orgqr).

    ``out`` receives the result when given."""
    from .creation import eye
    name = "torch.linalg.householder_product"
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {input.ndim}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    m, n = input.shape[-2:]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    check_input(input, name, square=False)
    check_same_dtype(input, tau, name, "input", "tau")
    Q = eye(m, n, dtype=input.dtype, device=input.device).expand(*input.shape)
    return _write(_apply(_reflectors(input, tau.shape[-1]), tau, Q, True, False), out, "orgqr")


def ormqr(input, input2, input3, left=True, transpose=False, *, out=None):
    """Q @ C (C @ Q when not ``left``; Q^H in place of Q when ``transpose``) for the
    m x m Q of geqrf's output (``input`` ``[*, m, n]``, ``input2`` = tau ``[*, k]``) and
    ``input3`` = C, without forming Q.  Source: torch.ormqr.

    ``out`` receives the result when given."""
    A, tau, C = input, input2, input3
    if A.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if C.ndim != A.ndim:
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {C.ndim} and input.ndim is equal to {A.ndim}")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.ndim} and input.ndim is equal to {A.ndim}")
    for what, t in (("tau", tau.shape[:-1]), ("other", C.shape[:-2])):
        if tuple(t) != tuple(A.shape[:-2]):
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of {what} to be equal to input.shape[:-2], "
                               f"but got {list(t)}")
    m = A.shape[-2]
    side = -2 if left else -1
    if C.shape[side] != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if tau.shape[-1] != min(m, A.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    check_input(A, "torch.ormqr", square=False)
    check_same_dtype(A, C, "torch.ormqr", "input", "other")
    return _write(_apply(_reflectors(A, tau.shape[-1]), tau, C, left, transpose), out, "ormqr")
