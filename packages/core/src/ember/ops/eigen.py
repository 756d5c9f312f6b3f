"""The eigendecomposition of general square matrices (torch.linalg.eig, eigvals) and
the matrix exponential (torch.linalg.matrix_exp).

eig's values come from LAPACK's geev on the host (numpy.linalg.eig; cupy has no general
eigensolver), always complex, eigenvectors of unit norm as LAPACK normalizes them.  Its
gradient (for distinct eigenvalues) is gA = V^-H (diag(gL) + (V^H gV - V^H V
diag(Re diag(V^H gV))) / conj(E)) V^H with E_ij = L_j - L_i off the diagonal, its real
part for a real A; a loss that depends on the eigenvectors' phases raises RuntimeError
(torch's documentation of linalg.eig).  matrix_exp's gradient is the upper right block
of exp([[A^H, G], [0, A^H]]) (Najfeld & Havel 1995), itself a matrix_exp, so it
differentiates again.
"""

from __future__ import annotations

from .. import _dtype as D
from .. import return_types
from ..autograd.graph import record
from . import _lapack
from ._helpers import _type_name, needs_grad
from ._lapack import back, check_input, host
from .factorizations import _mH, _write, solve_ex
from .linalg import matmul

__all__ = ["eig", "eigvals", "matrix_exp"]


def _check_eig(A, name):
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")
    if A.dtype not in _lapack.FLOATING:
        raise RuntimeError(f"Unknown Complex ScalarType for {_type_name(A.dtype)}")


def eig(A, *, out=None):
    """(eigenvalues ``[*, n]``, eigenvectors ``[*, n, n]``) of each square matrix, complex
    (complex64 for float32/complex64 input, complex128 for double precision); column i
    of the eigenvectors, of unit norm, belongs to eigenvalue i.  Source: torch.linalg.eig.

    ``A`` is ``[*, n, n]`` of a floating or complex dtype (RuntimeError otherwise, or for a
    matrix that is not square); ``out`` (a pair of tensors) receives the result when given."""
    import numpy
    _check_eig(A, "linalg.eig")
    cdt = D.complex128 if A.dtype in (D.float64, D.complex128) else D.complex64
    a = host(A)
    if a.size:
        w, v = numpy.linalg.eig(a)
    else:
        w, v = numpy.zeros(a.shape[:-1], cdt.np), numpy.zeros(a.shape, cdt.np)
    W, V = back(A, w, cdt), back(A, v, cdt)
    if needs_grad(A):
        record("LinalgEigBackward0", _eig_rule, (A,), (W, V), (W, V, A.dtype.is_complex))
    return _write(return_types.linalg_eig(W, V), out, "linalg.eig")


def _eig_rule(grads, W, V, complex_input):
    from .complex_ops import conj, real
    from .creation import eye
    from .layout import diag_embed, diagonal
    gW, gV = grads
    n = W.shape[-1]
    Vh = _mH(V)
    inner = 0
    if gV is not None:
        VhgV = matmul(Vh, gV)
        d = diagonal(VhgV, 0, -2, -1)
        import numpy
        im = numpy.abs(host(d).imag)
        if im.size and im.max() > 1e-4 * max(1.0, float(numpy.abs(host(VhgV)).max())):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
                               "so it is ill-defined.")
        I = eye(n, dtype=W.dtype, device=W.device)
        Wc = conj(W)
        E = Wc.unsqueeze(-2) - Wc.unsqueeze(-1) + I  # [i, j] = conj(L_j - L_i); ones on the diagonal
        inner = (VhgV - matmul(Vh, V) * real(d).unsqueeze(-2)) / E * (1 - I)
    if gW is not None:
        inner = inner + diag_embed(gW)
    gA = solve_ex(Vh, matmul(inner, Vh)).result
    return gA if complex_input else real(gA)


def eigvals(A, *, out=None):
    """The eigenvalues ``[*, n]`` of each square matrix, complex, in eig's order.  Source:
    torch.linalg.eigvals.

    ``A`` is ``[*, n, n]``; ``out`` receives the result when given."""
    # the gradient needs the eigenvectors: they come from the same node
    return _write(eig(A).eigenvalues, out, "linalg.eigvals")


def matrix_exp(A):
    """exp(A) = sum_k A^k / k! of each square matrix ``[*, n, n]`` (scaling and squaring
    with Pade approximants, scipy.linalg.expm).  Source: torch.linalg.matrix_exp.

    ``A`` is the input; RuntimeError for one that is not a batch of square matrices."""
    check_input(A, "linalg.matrix_exp")
    R = back(A, _lapack.expm(host(A)))
    if needs_grad(A):
        record("LinalgMatrixExpBackward0", _matrix_exp_rule, (A,), R, (A,))
    return R


def _matrix_exp_rule(g, A):
    from .creation import zeros_like
    from .shape import cat
    n = A.shape[-1]
    Ah = _mH(A)
    big = cat([cat([Ah, g], -1), cat([zeros_like(Ah), Ah], -1)], -2)
    return matrix_exp(big).narrow(-2, 0, n).narrow(-1, n, n)
