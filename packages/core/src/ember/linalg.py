"""ember.linalg: torch.linalg's functions (matrix products, decompositions, norms).

The computations live in ``ember.ops.decompositions`` (and ``ops.linalg`` for products);
this module is the public namespace.
"""

from .ops._dispatch import register_namespace as _register_namespace
from .ops._lapack import LinAlgError  # noqa: F401
from .ops.decompositions import (  # noqa: F401
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    lstsq,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    pinv,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
    vecdot,
    vector_norm,
)
from .ops.eigen import eig, eigvals, matrix_exp  # noqa: F401
from .ops.factorizations import (  # noqa: F401
    cholesky_ex,
    inv_ex,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    solve_ex,
)
from .ops.householder import orgqr as _orgqr
from .ops.layout import diagonal as _diagonal
from .ops.linalg import matmul  # noqa: F401
from .ops.products import cross as _cross
from .ops.tensor_linalg import cond, tensorinv, tensorsolve  # noqa: F401

__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd", "svdvals", "vecdot",
           "vector_norm", "matmul", "cross", "diagonal", "LinAlgError", "eig", "eigvals", "matrix_exp", "cholesky_ex",
           "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "solve_ex", "householder_product", "cond", "tensorinv", "tensorsolve"]


def cross(input, other, *, dim=-1):
    """The 3-d cross product of ``input`` and ``other`` (broadcast together) along ``dim``
    (default the last, unlike ember.cross) (torch.linalg.cross). A dim of another size than
    3 raises RuntimeError."""
    return _cross(input, other, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """A view of the diagonals of the matrices of ``A`` in the dims ``dim1`` and ``dim2`` (the
    last two by default), as its last dim; ``offset`` > 0 is above the main diagonal
    (torch.linalg.diagonal)."""
    return _diagonal(A, offset, dim1, dim2)


def householder_product(A, tau, *, out=None):
    """The first n columns of the product of the Householder reflectors that ``A``
    ``[*, m, n]`` (below its diagonal) and ``tau`` ``[*, k]`` describe (torch.orgqr's values).

    ``out`` receives the result when given."""
    return _orgqr(A, tau, out=out)


# the ops published here pass through the dispatch seam when a mode listens
_register_namespace(globals())
