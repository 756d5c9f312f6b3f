"""layer_norm and rms_norm over the last dimension of a C-contiguous [rows, cols] array,
forward and backward (torch.nn.functional.layer_norm / rms_norm).

The same functions, arguments and results as the CPU kernels (``ember/cpu/kernels/norm.py``:
``rows_forward``, ``rows_backward``, ``rms_forward``, ``rms_backward``), on cupy arrays.
Rows: one block each, statistics accumulated in the accumulation type (float64 for
float64, float32 for the others) and returned in it, the variance biased and computed from the mean in a second
pass over the row. Forward: ``x_hat = (x - mean) * rstd`` with ``rstd = 1 / sqrt(var + eps)``
(rms: ``x * rstd``, ``rstd = 1 / sqrt(mean(x^2) + eps)``), then ``* w + b``.
Backward, ``gy = g * w``: ``gx = rstd * (gy - mean(gy) - x_hat * mean(gy * x_hat))`` (rms:
without ``mean(gy)``); the column sums ``gw = sum(g * x_hat)`` and ``gb = sum(g)`` run as a
second kernel, one thread per column.
"""

import numpy

from ._common import ACC_CTYPES, CTYPES, KERNEL_PRELUDE, acc_dtype

_TEMPLATES = r"""
template <typename T, bool RMS>
__device__ void norm_forward(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                             T* __restrict__ y, typename acc<T>::type* __restrict__ mean_out,
                             typename acc<T>::type* __restrict__ var_out, typename acc<T>::type* __restrict__ rstd_out,
                             long long cols, double eps) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const long long base = (long long)blockIdx.x * cols;
  A mean = 0;
  if (!RMS) {
    A s = 0;
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += (A)x[base + j];
    mean = block_reduce<A, false>(s, shared, A(0)) / (A)cols;
  }
  A ss = 0;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    const A d = (A)x[base + j] - mean;
    ss += d * d;
  }
  const A var = block_reduce<A, false>(ss, shared, A(0)) / (A)cols;
  const A rstd = A(1) / sqrt(var + (A)eps);
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    A v = ((A)x[base + j] - mean) * rstd;
    if (w != nullptr) v *= (A)w[j];
    if (b != nullptr) v += (A)b[j];
    y[base + j] = (T)v;
  }
  if (threadIdx.x == 0) {
    if (mean_out != nullptr) mean_out[blockIdx.x] = mean;
    if (var_out != nullptr) var_out[blockIdx.x] = var;
    rstd_out[blockIdx.x] = rstd;
  }
}

template <typename T, bool RMS>
__device__ void norm_backward_rows(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ w,
                                   const typename acc<T>::type* __restrict__ mean_in,
                                   const typename acc<T>::type* __restrict__ rstd_in, T* __restrict__ gx,
                                   long long cols) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const long long base = (long long)blockIdx.x * cols;
  const A mean = RMS ? A(0) : mean_in[blockIdx.x], rstd = rstd_in[blockIdx.x];
  A s_gy = 0, s_gyx = 0;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    const A gy = w != nullptr ? (A)g[base + j] * (A)w[j] : (A)g[base + j];
    s_gy += gy;
    s_gyx += gy * ((A)x[base + j] - mean) * rstd;
  }
  const A mean_gy = RMS ? A(0) : block_reduce<A, false>(s_gy, shared, A(0)) / (A)cols;
  const A mean_gyx = block_reduce<A, false>(s_gyx, shared, A(0)) / (A)cols;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    const A gy = w != nullptr ? (A)g[base + j] * (A)w[j] : (A)g[base + j];
    const A xhat = ((A)x[base + j] - mean) * rstd;
    gx[base + j] = (T)(rstd * (gy - mean_gy - xhat * mean_gyx));
  }
}

// one thread per column: gw = sum over rows of g * x_hat, gb = sum of g (either may be null)
template <typename T, bool RMS>
__device__ void norm_backward_columns(const T* __restrict__ g, const T* __restrict__ x,
                                      const typename acc<T>::type* __restrict__ mean_in,
                                      const typename acc<T>::type* __restrict__ rstd_in, T* __restrict__ gw,
                                      T* __restrict__ gb, long long rows, long long cols) {
  typedef typename acc<T>::type A;
  const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  A sw = 0, sb = 0;
  for (long long i = 0; i < rows; ++i) {
    const A gi = g[i * cols + j];
    const A mean = RMS ? A(0) : mean_in[i];
    sw += gi * ((A)x[i * cols + j] - mean) * rstd_in[i];
    sb += gi;
  }
  if (gw != nullptr) gw[j] = (T)sw;
  if (gb != nullptr) gb[j] = (T)sb;
}
"""

_ENTRY = r"""
extern "C" __global__ void {op}_forward_{dtype}(const {t}* x, const {t}* w, const {t}* b, {t}* y, {a}* mean,
                                               {a}* var, {a}* rstd, long long cols, double eps) {{
  norm_forward<{t}, {rms}>(x, w, b, y, mean, var, rstd, cols, eps);
}}
extern "C" __global__ void {op}_backward_rows_{dtype}(const {t}* g, const {t}* x, const {t}* w, const {a}* mean,
                                                     const {a}* rstd, {t}* gx, long long cols) {{
  norm_backward_rows<{t}, {rms}>(g, x, w, mean, rstd, gx, cols);
}}
extern "C" __global__ void {op}_backward_columns_{dtype}(const {t}* g, const {t}* x, const {a}* mean,
                                                        const {a}* rstd, {t}* gw, {t}* gb, long long rows,
                                                        long long cols) {{
  norm_backward_columns<{t}, {rms}>(g, x, mean, rstd, gw, gb, rows, cols);
}}
"""

_OPS = {"layer_norm": "false", "rms_norm": "true"}
NAMES = tuple(f"{op}_{part}_{dtype}" for op in _OPS for part in ("forward", "backward_rows", "backward_columns")
              for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + _TEMPLATES + "".join(_ENTRY.format(op=op, dtype=dtype, t=t, a=ACC_CTYPES[dtype], rms=rms)
                                               for op, rms in _OPS.items() for dtype, t in CTYPES.items())


def accepts(*arrays) -> bool:
    """Whether these kernels serve these arrays (None allowed): cupy arrays of one kernel dtype."""
    present = [a for a in arrays if a is not None]
    return bool(present) and all(type(a).__module__.startswith("cupy") and a.dtype == present[0].dtype
                                 and a.dtype.name in CTYPES for a in present)


# a null pointer argument: cupy passes None as 0xffffffff, not as NULL (cupy issue 9046)
_NULL = numpy.uint64(0)


def _arg(a):
    return _NULL if a is None else a


def _block(cols: int) -> int:
    return min(1024, max(32, -(-cols // 32) * 32))


def _contiguous(a):
    import cupy
    return None if a is None else cupy.ascontiguousarray(a)


def _forward(op, x, w, b, eps, with_stats):
    import cupy

    from . import function
    x, w, b = _contiguous(x), _contiguous(w), _contiguous(b)
    rows, cols = x.shape
    out = cupy.empty_like(x)
    stats = acc_dtype(x.dtype)
    mean = cupy.empty(rows, stats) if with_stats else None
    var = cupy.empty(rows, stats) if with_stats else None
    rstd = cupy.empty(rows, stats)
    if rows and cols:
        function("norm", f"{op}_forward_{x.dtype.name}")(
            (rows,), (_block(cols),), (x, _arg(w), _arg(b), out, _arg(mean), _arg(var), rstd, numpy.int64(cols),
                                          numpy.float64(eps)))
    return out, mean, var, rstd


def _backward(op, g, x, w, mean, rstd, need_x, need_w, need_b, gx_out):
    import cupy

    from . import function
    g, x, w = _contiguous(g).astype(x.dtype, copy=False), _contiguous(x), _contiguous(w)
    mean, rstd = _contiguous(mean), _contiguous(rstd)
    rows, cols = x.shape
    gx = (gx_out if gx_out is not None else cupy.empty_like(x)) if need_x else None
    gw = cupy.empty(cols, x.dtype) if need_w else None
    gb = cupy.empty(cols, x.dtype) if need_b else None
    dtype = x.dtype.name
    if need_x and rows and cols:
        function("norm", f"{op}_backward_rows_{dtype}")((rows,), (_block(cols),),
                                                        (g, x, _arg(w), _arg(mean), rstd, gx, numpy.int64(cols)))
    if (need_w or need_b) and cols:
        args = (g, x, _arg(mean), rstd, _arg(gw), _arg(gb), numpy.int64(rows), numpy.int64(cols))
        function("norm", f"{op}_backward_columns_{dtype}")((-(-cols // 256),), (256,), args)
    return gx, gw, gb


def rows_forward(x, w, b, eps):
    """``(out, mean, var, rstd)`` of layer norm over the rows of ``x`` ``[R, K]`` (``w``/``b``
    ``[K]`` or None); ``mean``, ``var`` (biased) and ``rstd`` ``[R]`` in the accumulation
    dtype (``_common.ACC_DTYPES``)."""
    return _forward("layer_norm", x, w, b, eps, True)


def rows_backward(g, x, w, mean, scale, rstd, need_x, need_wb, gx_out=None):
    """``(gx, gw, gb)`` of layer norm, None where not asked; ``scale`` must be ``rstd`` (the
    layer-norm case of the CPU kernel's signature). ``gx_out``: a C-contiguous ``[R, K]``
    array to write ``gx`` into."""
    if scale is not rstd:
        raise ValueError("the cuda kernels compute layer norm's gradient: scale must be rstd")
    return _backward("layer_norm", g, x, w, mean, rstd, need_x, need_wb and w is not None, need_wb, gx_out)


def rms_forward(x, w, eps):
    """``(out, rstd)`` of rms norm over the rows of ``x`` ``[R, K]`` (``w`` ``[K]`` or None)."""
    out, _, _, rstd = _forward("rms_norm", x, w, None, eps, False)
    return out, rstd


def rms_backward(g, x, w, rstd, need_x, need_w, gx_out=None):
    """``(gx, gw)`` of rms norm, None where not asked."""
    gx, gw, _ = _backward("rms_norm", g, x, w, None, rstd, need_x, need_w, False, gx_out)
    return gx, gw
