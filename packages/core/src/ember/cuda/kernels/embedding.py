"""embedding's backward (EmbeddingBackward0; torch's ``embedding_dense_backward``): the
output gradient's rows added into a zeroed ``[num_embeddings, D]`` weight gradient at
their indices.

``embedding_backward``: a grid-stride loop over the ``M * D`` elements of the gradient
rows ``g`` ``[M, D]``; element ``(m, d)`` adds ``g[m, d]`` (times ``factor[m]``, the
``1 / count`` of ``scale_grad_by_freq``, when given) into ``out[index[m], d]`` with
``atomicAdd`` (float64 ``atomicAdd`` exists from compute capability 6.0 on), and skips the
rows whose index is ``padding_idx`` (torch's: that row gets no gradient, not even a NaN).
The sums are in the accumulation dtype (float32 for float16 and bfloat16, whose result is
rounded once at the end, as torch's) and their order follows the scheduler, so the last
bits of a row looked up many times may differ from run to run.
"""

import numpy

from ._common import ACC_CTYPES, BLOCK, CTYPES, GRID_LOOP, KERNEL_PRELUDE, acc_dtype, grid, is_cupy, on_cupy, pointer

_TEMPLATE = r"""
template <typename T, typename A>
__device__ void embedding_backward(const T* __restrict__ g, const long long* __restrict__ index,
                                   const A* __restrict__ factor, A* __restrict__ out, long long rows,
                                   long long dim, long long padding_idx) {
  GRID_LOOP(k, rows * dim) {
    const long long m = k / dim, d = k - m * dim;
    const long long row = index[m];
    if (row == padding_idx) continue;
    const A v = factor != nullptr ? (A)g[k] * factor[m] : (A)g[k];
    atomicAdd(out + row * dim + d, v);
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void embedding_backward_{dtype}(const {t}* g, const long long* index, const {a}* factor,
                                                     {a}* out, long long rows, long long dim, long long padding_idx) {{
  embedding_backward<{t}, {a}>(g, index, factor, out, rows, dim, padding_idx);
}}
"""

NAMES = tuple(f"embedding_backward_{dtype}" for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + GRID_LOOP + _TEMPLATE + "".join(_ENTRY.format(dtype=dtype, t=t, a=ACC_CTYPES[dtype])
                                                          for dtype, t in CTYPES.items())


def accepts(g, index) -> bool:
    """Whether the kernel takes this gradient (a cupy array of a kernel dtype) and these
    indices (a cupy integer array)."""
    return on_cupy(g) and is_cupy(index) and index.dtype.kind in "iu"


def backward(g, index, num: int, padding_idx, scale_grad_by_freq: bool):
    """The weight gradient ``[num, D]`` from the output gradient ``g`` ``[*, D]`` and the
    flat indices ``index`` ``[M]`` (``M`` rows of ``g``); ``padding_idx``: a row index that
    gets nothing, or None; ``scale_grad_by_freq``: each row divided by its index's count."""
    import cupy

    from . import function
    dim = g.shape[-1]
    rows = cupy.ascontiguousarray(g).reshape(-1, dim)
    flat = cupy.ascontiguousarray(index).reshape(-1).astype(numpy.int64, copy=False)
    acc = acc_dtype(rows.dtype)
    out = cupy.zeros((num, dim), acc)
    factor = None
    if scale_grad_by_freq:
        counts = cupy.bincount(flat, minlength=num)[flat]
        factor = (1 / counts.astype(acc)).astype(acc, copy=False)
    if rows.size:
        function("embedding", f"embedding_backward_{rows.dtype.name}")(
            grid(rows.size), (BLOCK,), (rows, flat, pointer(factor), out, numpy.int64(rows.shape[0]),
                                        numpy.int64(dim), numpy.int64(-1 if padding_idx is None else padding_idx)))
    return out.astype(rows.dtype, copy=False)
