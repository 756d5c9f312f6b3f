"""ember.sparse: sparse COO tensors and the ops on them (torch.sparse).

``ember.sparse_coo_tensor(indices, values, size)`` or ``dense.to_sparse()`` make one;
``ember.sparse.mm``/``addmm``/``sum``/``softmax`` and ``ember.mm``/``matmul``/``@`` with a
sparse operand compute with it, differentiably in the values and the dense operands.
"""

from ._construct import sparse_coo_tensor, sparse_mask, to_sparse
from ._coo import SparseTensor
from ._ops import addmm, matmul, mm, softmax, sum  # noqa: A004

__all__ = ["SparseTensor", "addmm", "matmul", "mm", "softmax", "sparse_coo_tensor", "sparse_mask", "sum", "to_sparse"]
