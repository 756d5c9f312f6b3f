"""softmax and log_softmax over the last dimension of a C-contiguous [rows, cols] array,
forward and backward, one block per row (accumulating float64 inputs in float64 and the
others in float32, as torch's CUDA kernels do).

Forward: ``y = exp(x - max) / sum(exp(x - max))`` (log form: ``x - max - log(sum)``).
Backward, from the forward's output ``y`` and the gradient ``g``:
softmax ``dx = y * (g - sum(g * y))``; log_softmax ``dx = g - exp(y) * sum(g)``
(torch's ``_softmax_backward_data`` / ``_log_softmax_backward_data``).
Launch: grid ``(rows,)``, block a multiple of 32 up to 1024, arguments
``(x_or_y, g, out, cols)`` with ``cols`` a 64-bit integer.
"""

import numpy

from ._common import CTYPES, KERNEL_PRELUDE

_TEMPLATES = r"""
template <typename T, bool LOG>
__device__ void softmax_forward(const T* __restrict__ x, T* __restrict__ y, long long cols) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const T* row = x + (long long)blockIdx.x * cols;
  T* out = y + (long long)blockIdx.x * cols;
  A m = acc<T>::neg_inf();
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = nan_max(m, (A)row[j]);
  m = block_reduce<A, true>(m, shared, acc<T>::neg_inf());
  A s = 0;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += exp((A)row[j] - m);
  s = block_reduce<A, false>(s, shared, A(0));
  if (LOG) {
    const A shift = m + log(s);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) out[j] = (T)((A)row[j] - shift);
  } else {
    const A inv = A(1) / s;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) out[j] = (T)(exp((A)row[j] - m) * inv);
  }
}

template <typename T, bool LOG>
__device__ void softmax_backward(const T* __restrict__ y, const T* __restrict__ g, T* __restrict__ dx,
                                 long long cols) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const long long base = (long long)blockIdx.x * cols;
  A s = 0;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x)
    s += LOG ? (A)g[base + j] : (A)g[base + j] * (A)y[base + j];
  s = block_reduce<A, false>(s, shared, A(0));
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    const A yj = y[base + j], gj = g[base + j];
    dx[base + j] = (T)(LOG ? gj - exp(yj) * s : yj * (gj - s));
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void {op}_forward_{dtype}(const {t}* x, {t}* y, long long cols) {{
  softmax_forward<{t}, {log}>(x, y, cols);
}}
extern "C" __global__ void {op}_backward_{dtype}(const {t}* y, const {t}* g, {t}* dx, long long cols) {{
  softmax_backward<{t}, {log}>(y, g, dx, cols);
}}
"""

NAMES = tuple(f"{op}_{direction}_{dtype}" for op in ("softmax", "log_softmax")
              for direction in ("forward", "backward") for dtype in CTYPES)

SOURCE = KERNEL_PRELUDE + _TEMPLATES + "".join(
    _ENTRY.format(op=op, dtype=dtype, t=t, log="true" if op == "log_softmax" else "false")
    for op in ("softmax", "log_softmax") for dtype, t in CTYPES.items())


def accepts(*arrays) -> bool:
    """Whether these kernels serve these arrays: cupy arrays of a dtype they are built for."""
    return all(type(a).__module__.startswith("cupy") and a.dtype.name in CTYPES for a in arrays)


def _block(cols: int) -> int:
    return min(1024, max(32, -(-cols // 32) * 32))  # one thread per element up to 1024


def _rows_last(arr, dim: int):
    """``arr`` as a C-contiguous [rows, cols] array with ``dim`` last (a copy only when needed)."""
    import cupy
    moved = cupy.ascontiguousarray(cupy.moveaxis(arr, dim, -1))
    return moved, moved.shape


def _unrows(out, shape, dim: int):
    import cupy
    return cupy.moveaxis(out.reshape(shape), -1, dim)


def forward(arr, dim: int, log: bool):
    """softmax (``log``: log_softmax) of a non-empty cupy array along ``dim``."""
    import cupy

    from . import function
    x, shape = _rows_last(arr, dim)
    cols = shape[-1]
    out = cupy.empty_like(x)
    op = "log_softmax" if log else "softmax"
    function("softmax", f"{op}_forward_{x.dtype.name}")((x.size // cols,), (_block(cols),),
                                                        (x, out, numpy.int64(cols)))
    return _unrows(out, shape, dim)


def backward(g, r, dim: int, log: bool):
    """The input gradient of softmax (``log``: log_softmax) from its output ``r`` and the
    output's gradient ``g`` (cupy arrays of one shape), along ``dim``."""
    import cupy

    from . import function
    y, shape = _rows_last(r, dim)
    grad, _ = _rows_last(g, dim)
    cols = shape[-1]
    dx = cupy.empty_like(y)
    op = "log_softmax" if log else "softmax"
    function("softmax", f"{op}_backward_{y.dtype.name}")((y.size // cols,), (_block(cols),),
                                                         (y, grad, dx, numpy.int64(cols)))
    return _unrows(dx, shape, dim)
