"""cross_entropy over class indices on ``[N, C]`` logits, fused: forward and backward each
one launch, the log-softmax never written out; and nll_loss's gradient scatter.

Definitions (torch.nn.functional.cross_entropy with class indices, label smoothing
``eps`` and class weights ``w``; ``lse_i = log(sum_j exp(x_ij))``, ``t = target_i``):

    nll_i    = w_t * (lse_i - x_it)
    smooth_i = sum_j w_j * (lse_i - x_ij)          (w_j = 1 without weights)
    loss_i   = (1 - eps) * nll_i + eps / C * smooth_i,   0 where t == ignore_index

'sum' adds the ``loss_i``; 'mean' divides that sum by the sum of ``w_t`` over the counted
rows (torch divides both of its terms by that same total). The gradient, with
``W = sum_j w_j``, ``p_ij = exp(x_ij - lse_i)`` and ``s_i`` the row's share of the output
gradient (``g_i``, ``g`` or ``g / total``):

    dx_ij = s_i * (p_ij * ((1 - eps) * w_t + eps * W / C) - (1 - eps) * w_t * [j == t] - eps * w_j / C)

(the derivative of the three lines above; without smoothing and weights it is torch's
``softmax - onehot``, the composition of NllLossBackward0 and LogSoftmaxBackward0 in
derivatives.yaml), and 0 on ignored rows.

``cross_entropy_forward``: grid ``(N,)``, one block per row, three sweeps of the row
(maximum; exponential sum with the smoothing sum; nothing more), accumulating float64 in
float64 and the other dtypes in float32. It writes ``loss_i``, ``lse_i`` and ``w_t`` (0
where ignored, for the 'mean' total) per row in that accumulation dtype, and the first row whose target lies outside
``[0, C)`` (and is not ignored) into a flag through ``atomicMin``; the launcher reads the
flag and raises torch's IndexError. ``cross_entropy_backward``: a grid-stride loop over the
``N * C`` elements. ``nll_grad``: the ``[N, C, *d]`` array that is ``coef`` at the target
class and 0 elsewhere (the gradient of nll_loss), a grid-stride loop over its elements.
"""

import numpy

from ._common import ACC_CTYPES, BLOCK, CTYPES, GRID_LOOP, KERNEL_PRELUDE, acc_dtype, grid, is_cupy, on_cupy, pointer

_TEMPLATES = r"""
template <typename T>
__device__ void ce_forward(const T* __restrict__ x, const long long* __restrict__ target, const T* __restrict__ weight,
                           typename acc<T>::type* __restrict__ loss, typename acc<T>::type* __restrict__ lse_out,
                           typename acc<T>::type* __restrict__ wt_out, unsigned long long* __restrict__ bad,
                           long long cols, long long ignore_index, double smoothing) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const long long row = blockIdx.x;
  const T* xr = x + row * cols;
  A m = acc<T>::neg_inf();
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = nan_max(m, (A)xr[j]);
  m = block_reduce<A, true>(m, shared, acc<T>::neg_inf());
  A s = 0, sw = 0, wsum = 0;  // sum exp(x - m); sum w_j (m - x_j) and sum w_j for the smoothing term
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    const A v = xr[j];
    s += exp(v - m);
    if (smoothing != 0) {
      const A w = weight != nullptr ? (A)weight[j] : A(1);
      sw += w * (m - v);
      wsum += w;
    }
  }
  s = block_reduce<A, false>(s, shared, A(0));
  if (smoothing != 0) {
    sw = block_reduce<A, false>(sw, shared, A(0));
    wsum = block_reduce<A, false>(wsum, shared, A(0));
  }
  if (threadIdx.x != 0) return;
  const A log_s = log(s), lse = m + log_s;
  const long long t = target[row];
  A w_t = 0, out = 0;
  if (t != ignore_index) {
    if (t < 0 || t >= cols) {
      atomicMin(bad, (unsigned long long)row);
    } else {
      w_t = weight != nullptr ? (A)weight[t] : A(1);
      const A eps = (A)smoothing;
      out = (A(1) - eps) * w_t * (lse - (A)xr[t]);
      // sum_j w_j (lse - x_j) = sum_j w_j (m - x_j) + log(s) * sum_j w_j: every term of the first sum >= 0
      if (smoothing != 0) out += eps / (A)cols * (sw + log_s * wsum);
    }
  }
  loss[row] = out;
  lse_out[row] = lse;
  wt_out[row] = w_t;
}

template <typename T>
__device__ void ce_backward(const T* __restrict__ x, const typename acc<T>::type* __restrict__ lse,
                            const long long* __restrict__ target, const T* __restrict__ weight,
                            const typename acc<T>::type* __restrict__ wsum, const T* __restrict__ g, long long g_stride,
                            const typename acc<T>::type* __restrict__ total, T* __restrict__ dx, long long rows,
                            long long cols, long long ignore_index, double smoothing) {
  typedef typename acc<T>::type A;
  const A eps = (A)smoothing, one = 1;
  GRID_LOOP(k, rows * cols) {
    const long long i = k / cols, j = k - i * cols;
    const long long t = target[i];
    if (t == ignore_index || t < 0 || t >= cols) {
      dx[k] = T(0);
      continue;
    }
    A share = (A)g[i * g_stride];
    if (total != nullptr) share /= *total;
    const A w_t = weight != nullptr ? (A)weight[t] : one;
    const A w_sum = weight != nullptr ? *wsum : (A)cols;
    const A p = exp((A)x[k] - lse[i]);
    A d = p * ((one - eps) * w_t + eps * w_sum / (A)cols);
    if (j == t) d -= (one - eps) * w_t;
    if (smoothing != 0) d -= eps * (weight != nullptr ? (A)weight[j] : one) / (A)cols;
    dx[k] = (T)(d * share);
  }
}

// out[n, c, r] = coef[n, r] where target[n, r] == c, else 0 (target outside [0, C): no class)
template <typename T>
__device__ void nll_grad(const long long* __restrict__ target, const T* __restrict__ coef, T* __restrict__ out,
                         long long rows, long long cols, long long inner) {
  GRID_LOOP(k, rows * cols * inner) {
    const long long r = k % inner, c = (k / inner) % cols, n = k / (inner * cols);
    out[k] = target[n * inner + r] == c ? coef[n * inner + r] : T(0);
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void cross_entropy_forward_{dtype}(const {t}* x, const long long* target, const {t}* weight,
                                                        {a}* loss, {a}* lse, {a}* wt, unsigned long long* bad,
                                                        long long cols, long long ignore_index, double smoothing) {{
  ce_forward<{t}>(x, target, weight, loss, lse, wt, bad, cols, ignore_index, smoothing);
}}
extern "C" __global__ void cross_entropy_backward_{dtype}(const {t}* x, const {a}* lse, const long long* target,
                                                         const {t}* weight, const {a}* wsum, const {t}* g,
                                                         long long g_stride, const {a}* total, {t}* dx, long long rows,
                                                         long long cols, long long ignore_index, double smoothing) {{
  ce_backward<{t}>(x, lse, target, weight, wsum, g, g_stride, total, dx, rows, cols, ignore_index, smoothing);
}}
extern "C" __global__ void nll_grad_{dtype}(const long long* target, const {t}* coef, {t}* out, long long rows,
                                           long long cols, long long inner) {{
  nll_grad<{t}>(target, coef, out, rows, cols, inner);
}}
"""

NAMES = tuple(f"{op}_{dtype}" for op in ("cross_entropy_forward", "cross_entropy_backward", "nll_grad")
              for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + GRID_LOOP + _TEMPLATES + "".join(_ENTRY.format(dtype=dtype, t=t, a=ACC_CTYPES[dtype])
                                                           for dtype, t in CTYPES.items())


def accepts(x, target, weight=None) -> bool:
    """Whether the fused cross entropy takes these arrays: cupy logits of a kernel dtype (the
    weight, when given, of the same dtype) and cupy integer targets."""
    return on_cupy(x, weight) and is_cupy(target) and target.dtype.kind in "iu"


def _block(cols: int) -> int:
    return min(1024, max(32, -(-cols // 32) * 32))


def _targets(target):
    import cupy
    return cupy.ascontiguousarray(target).astype(numpy.int64, copy=False)


def cross_entropy_forward(x, target, weight, ignore_index: int, smoothing: float):
    """``(loss, lse, wt)`` per row of ``x`` ``[N, C]`` (C >= 1) at the class indices ``target``
    ``[N]``: the unreduced loss, the row's log-sum-exp and the weight its target counts
    with (0 where ignored), each ``[N]`` in the accumulation dtype (``_common.ACC_DTYPES``).
    ``weight``: ``[C]`` or None.
    Raises torch's IndexError for a target outside ``[0, C)`` that is not ``ignore_index``
    (reading the flag waits for the kernel)."""
    import cupy

    from . import function
    x = cupy.ascontiguousarray(x)
    t = _targets(target)
    w = None if weight is None else cupy.ascontiguousarray(weight)
    rows, cols = x.shape
    loss, lse, wt = (cupy.empty(rows, acc_dtype(x.dtype)) for _ in range(3))
    if rows:
        bad = cupy.full(1, rows, numpy.uint64)
        function("loss", f"cross_entropy_forward_{x.dtype.name}")(
            (rows,), (_block(cols),), (x, t, pointer(w), loss, lse, wt, bad, numpy.int64(cols),
                                       numpy.int64(ignore_index), numpy.float64(smoothing)))
        first = int(bad.get()[0])
        if first < rows:
            raise IndexError(f"Target {int(t[first])} is out of bounds.")
    return loss, lse, wt


def cross_entropy_backward(g, x, lse, target, weight, total, ignore_index: int, smoothing: float):
    """The gradient ``[N, C]`` of cross entropy with respect to ``x``: ``g`` is the output's
    gradient (``[N]`` for reduction 'none', 0-d otherwise), ``lse`` the forward's per-row
    log-sum-exp, ``total`` the 'mean' denominator (a 0-d array) or None."""
    import cupy

    from . import function
    x = cupy.ascontiguousarray(x)
    rows, cols = x.shape
    dtype = x.dtype
    g = cupy.ascontiguousarray(g.reshape(-1)).astype(dtype, copy=False)  # one entry: the same for every row
    w = None if weight is None else cupy.ascontiguousarray(weight)
    acc = acc_dtype(dtype)
    wsum = None if w is None else w.sum(dtype=acc).reshape(1)
    total = None if total is None else cupy.ascontiguousarray(total).astype(acc, copy=False).reshape(1)
    dx = cupy.empty_like(x)
    if dx.size:
        function("loss", f"cross_entropy_backward_{dtype.name}")(
            grid(dx.size), (BLOCK,), (x, cupy.ascontiguousarray(lse), _targets(target), pointer(w), pointer(wsum), g,
                                      numpy.int64(0 if g.size == 1 else 1), pointer(total), dx, numpy.int64(rows),
                                      numpy.int64(cols), numpy.int64(ignore_index), numpy.float64(smoothing)))
    return dx


def nll_grad(target, coef, n_classes: int):
    """nll_loss's gradient: ``[N, C, *d]``, ``coef[i, *j]`` at class ``target[i, *j]`` and 0
    elsewhere, for ``target`` and ``coef`` of shape ``[N, *d]`` (the signature of the CPU
    kernel's ``nll_grad``, in ``coef``'s dtype)."""
    import cupy

    from . import function
    n, spatial = target.shape[0], tuple(target.shape[1:])
    inner = 1
    for s in spatial:
        inner *= s
    coef = cupy.ascontiguousarray(coef)
    out = cupy.empty((n, n_classes) + spatial, coef.dtype)
    if out.size:
        function("loss", f"nll_grad_{coef.dtype.name}")(
            grid(out.size), (BLOCK,), (_targets(target), coef, out, numpy.int64(n), numpy.int64(n_classes),
                                       numpy.int64(inner)))
    return out
