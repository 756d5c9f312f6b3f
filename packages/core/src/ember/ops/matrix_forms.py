"""torch's top-level convenience forms of matrix functions: adjoint, chain_matmul,
frobenius_norm and nuclear_norm, each written with the ops it stands for (so their
gradients are those ops')."""

from __future__ import annotations

import warnings

from .._tensor import _wrap_dim
from ._helpers import _type_name
from .factorizations import _write

__all__ = ["adjoint", "chain_matmul", "frobenius_norm", "nuclear_norm"]


def adjoint(input):
    """The conjugate transpose of the last two dims of ``input`` (``[*, m, n]`` -> ``[*, n, m]``); a
    view for real tensors (torch.adjoint). RuntimeError for fewer than 2 dims."""
    from .complex_ops import conj
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return conj(input.transpose(-2, -1))


_warned = []


def chain_matmul(*matrices, out=None):
    """The product of 2-d matrices, left to right (deprecated in torch for
    linalg.multi_dot; warns once, as torch).  Source: torch.chain_matmul.

    The ``matrices`` are passed as separate arguments; ``out`` receives the result when
    given. RuntimeError for no matrices, one that is not 2-d, or sizes that do not chain."""
    from .decompositions import multi_dot
    if not _warned:
        _warned.append(True)
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
                      "Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
                      "than multiple parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if t.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t.ndim}, expected 2 instead.")
    for i in range(len(matrices) - 1):
        a, b = matrices[i], matrices[i + 1]
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(a.shape)} and "
                               f"{list(b.shape)} cannot be multiplied")
    result = matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices)
    return _write(result, out, "chain_matmul")


def _check_norm_dtype(input):
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_type_name(input.dtype)} instead.")


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """The 2-norm of the elements of a floating or complex ``input`` over ``dim`` (one or two
    dims), ``keepdim`` keeping them with size 1 (torch.frobenius_norm). More than 2 dims or
    an integer dtype raise RuntimeError. ``out`` receives the result when given."""
    from .decompositions import vector_norm
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    _check_norm_dtype(input)
    return _write(vector_norm(input, 2, dims, keepdim), out, "frobenius_norm")


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of the singular values of the matrices of ``input`` in the two dims ``dim`` (the
    last two when None), ``keepdim`` keeping them with size 1 (torch.nuclear_norm); torch's
    overload ``nuclear_norm(input, keepdim)`` also holds. An integer dtype, or fewer than 2
    dims, raise RuntimeError. ``out`` receives the result when given."""
    from .decompositions import matrix_norm
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    _check_norm_dtype(input)
    if dim is None:
        if input.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        dim = (-2, -1)
    dims = tuple(_wrap_dim(d, input.ndim) for d in dim)
    return _write(matrix_norm(input, "nuc", dims, keepdim), out, "nuclear_norm")
