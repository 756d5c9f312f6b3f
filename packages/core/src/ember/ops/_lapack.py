"""The LAPACK routines numpy.linalg does not expose (getrf, getrs, getri, potrf, potrs,
sytrf, sytrs, geqrf, trtrs, expm), run batch by batch through scipy.linalg on the host.

These factorizations have no array-API or cupy form with LAPACK's outputs (pivots, info,
packed reflectors), so every backend hands its arrays to the host and takes the results
back; the arrays here are therefore host (numpy) arrays by design.  Each wrapper takes
``[*, m, n]`` arrays and loops over the leading dims.
"""

from __future__ import annotations

import numpy
import scipy.linalg
from scipy.linalg import lapack

from .. import _dtype as D
from .._tensor import _make
from ._helpers import _type_name, be


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a factorization or solve failed on its input (a
    singular or not positive-definite matrix); a RuntimeError, as torch's."""


FLOATING = (D.float32, D.float64, D.complex64, D.complex128)


def check_input(A, name: str, square: bool = True, kernel: str | None = None) -> None:
    """torch's checks of a matrix argument: at least 2 dims, square where asked, a
    float or complex dtype (``kernel`` names torch's CPU kernel in the dtype error)."""
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if A.dtype not in FLOATING:
        if kernel is not None:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_type_name(A.dtype)}\'')
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_type_name(A.dtype)}")


def check_same_dtype(A, B, name: str, a: str = "A", b: str = "B") -> None:
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected {a} and {b} to have the same dtype, but found {a} of type "
                           f"{_type_name(A.dtype)} and {b} of type {_type_name(B.dtype)} instead")


def host(t):
    """The host (numpy) array of tensor ``t``."""
    return be(t).to_host(t._data)


def back(like, arr, dtype=None):
    """Host array ``arr`` as a tensor on ``like``'s device (``dtype`` defaults to ``like``'s)."""
    dtype = dtype or like.dtype
    arr = numpy.asarray(arr, dtype=dtype.np, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    return _make(be(like).asarray(arr), dtype)


def batches(shape):
    """The indices of the leading (batch) dims of an array of ``shape``."""
    return numpy.ndindex(*shape[:-2])


def _funcs(names, arr):
    return lapack.get_lapack_funcs(names, (arr,))


def getrf(a):
    """(LU, 1-based pivots as int32, info) of each matrix of ``a``: A = P L U."""
    m, n = a.shape[-2:]
    k = min(m, n)
    lu = numpy.empty_like(a)
    piv = numpy.empty(a.shape[:-2] + (k,), dtype=numpy.int32)
    info = numpy.zeros(a.shape[:-2], dtype=numpy.int32)
    if a.size == 0:
        piv[...] = numpy.arange(1, k + 1, dtype=numpy.int32)
        return lu, piv, info
    (fn,) = _funcs(("getrf",), a)
    for i in batches(a.shape):
        lu[i], p, info[i] = fn(a[i])
        piv[i] = p + 1  # scipy's pivots are 0-based
    return lu, piv, info


def getrs(lu, piv, b, trans=0):
    """X with op(A) X = B from A's getrf factors (``trans`` 0: A, 1: A^T, 2: A^H);
    ``lu``, ``piv`` and ``b`` share their batch dims."""
    x = numpy.empty(b.shape, dtype=numpy.result_type(lu, b))
    if b.size == 0:
        return x
    (fn,) = _funcs(("getrs",), lu)
    for i in batches(b.shape):
        x[i], _ = fn(lu[i], piv[i] - 1, b[i], trans=trans)
    return x


def getri(lu, piv):
    """The inverse of each matrix from its getrf factors (LAPACK's values where U is
    singular, as torch's)."""
    out = numpy.empty_like(lu)
    if lu.size == 0:
        return out
    (fn,) = _funcs(("getri",), lu)
    for i in batches(lu.shape):
        out[i], _ = fn(lu[i], piv[i] - 1)
    return out


def potrf(a, lower=True):
    """(factor, info) of each Hermitian matrix: the Cholesky factor of its lower (upper)
    triangle, the other triangle zeroed; info > 0 is the order of the first leading minor
    that is not positive definite (the factor is then LAPACK's partial one)."""
    c = numpy.zeros_like(a)
    info = numpy.zeros(a.shape[:-2], dtype=numpy.int32)
    if a.size == 0:
        return c, info
    (fn,) = _funcs(("potrf",), a)
    for i in batches(a.shape):
        c[i], info[i] = fn(a[i], lower=lower, clean=True)
    tri = numpy.tril if lower else numpy.triu
    return tri(c), info


def potrs(c, b, lower=True):
    """X with (C C^H) X = B (lower) or (C^H C) X = B (upper) for Cholesky factors C."""
    x = numpy.empty(b.shape, dtype=numpy.result_type(c, b))
    if b.size == 0:
        return x
    (fn,) = _funcs(("potrs",), c)
    for i in batches(b.shape):
        x[i], _ = fn(c[i], b[i], lower=lower)
    return x


def sytrf(a, hermitian=False):
    """(LD, pivots as LAPACK gives them, info): the Bunch-Kaufman factorization of the
    lower triangle of each symmetric (Hermitian) matrix; the strict upper triangle zeroed."""
    ld = numpy.zeros_like(a)
    piv = numpy.empty(a.shape[:-1], dtype=numpy.int32)
    info = numpy.zeros(a.shape[:-2], dtype=numpy.int32)
    if a.size == 0:
        return ld, piv, info
    name = "hetrf" if hermitian and a.dtype.kind == "c" else "sytrf"
    (fn,) = _funcs((name,), a)
    for i in batches(a.shape):
        ld[i], piv[i], info[i] = fn(a[i], lower=1)
    return numpy.tril(ld), piv, info


def sytrs(ld, piv, b, hermitian=False):
    """X with A X = B from the sytrf factors of A's lower triangle."""
    x = numpy.empty(b.shape, dtype=numpy.result_type(ld, b))
    if b.size == 0:
        return x
    name = "hetrs" if hermitian and ld.dtype.kind == "c" else "sytrs"
    (fn,) = _funcs((name,), ld)
    for i in batches(b.shape):
        x[i], _ = fn(ld[i], piv[i], b[i], lower=1)
    return x


def trtrs(t, b, upper, trans=0, unit=False):
    """X with op(T) X = B for triangular T (only its ``upper`` or lower triangle read)."""
    x = numpy.empty(b.shape, dtype=numpy.result_type(t, b))
    if b.size == 0:
        return x
    for i in batches(b.shape):
        x[i] = scipy.linalg.solve_triangular(t[i], b[i], trans=trans, lower=not upper, unit_diagonal=unit,
                                             check_finite=False)
    return x


def geqrf(a):
    """(packed QR, tau) of each matrix: R in the upper triangle, the Householder
    vectors below it (LAPACK's geqrf)."""
    m, n = a.shape[-2:]
    qr = numpy.empty_like(a)
    tau = numpy.zeros(a.shape[:-2] + (min(m, n),), dtype=a.dtype)
    if a.size == 0:
        return qr, tau
    (fn,) = _funcs(("geqrf",), a)
    for i in batches(a.shape):
        qr[i], tau[i], _, _ = fn(a[i])
    return qr, tau


def expm(a):
    """The matrix exponential of each matrix (scipy's scaling and squaring)."""
    if a.size == 0:
        return a.copy()
    return scipy.linalg.expm(a)
