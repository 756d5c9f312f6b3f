"""Fused optimizer updates: one launch updates every parameter of a group (the
multi-tensor form of torch's fused optimizers), each block one chunk of one tensor.

``adam`` is one Adam/AdamW step in torch's order of operations, the same as the CPU
kernel (``ember/cpu/kernels/optim.py``): weight decay, ``exp_avg.lerp_(g, 1 - beta1)``
(lerp's two forms by the weight), ``exp_avg_sq * beta2 + (1 - beta2) * g * g``, the
amsgrad maximum (NaN propagating), ``denom = sqrt(v) / bc2 + eps`` and
``param + (-step_size * exp_avg) / denom``; scalars are rounded to the arrays' dtype.
Launch: grid ``(total chunks,)``, block 256; a table of device pointers per tensor
``[param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq]``, their sizes, the first chunk of
each tensor (``n + 1`` entries, the last the total) and per tensor ``(bc2, -step_size)``
in float64, since tensors of one group may be at different steps.
"""

import math

import numpy

from ._common import CTYPES

CHUNK = 4096  # elements per block

_TEMPLATE = r"""
#define CHUNK 4096

template <typename T>
__device__ void adam_multi(const long long* __restrict__ pointers, const long long* __restrict__ numels,
                           const long long* __restrict__ chunk_starts, const double* __restrict__ per_tensor,
                           int n, int amsgrad, T decay, int l2, T wd, T w, T beta2, T c2, T eps) {
  const long long block = blockIdx.x;
  int lo = 0, hi = n - 1;  // the tensor whose chunks hold this block: the last start <= block
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (chunk_starts[mid] <= block) lo = mid; else hi = mid - 1;
  }
  const int t = lo;
  T* p = (T*)pointers[5 * t];
  const T* g = (const T*)pointers[5 * t + 1];
  T* m = (T*)pointers[5 * t + 2];
  T* v = (T*)pointers[5 * t + 3];
  T* vmax = (T*)pointers[5 * t + 4];
  const T bc2 = (T)per_tensor[2 * t], neg_step = (T)per_tensor[2 * t + 1];
  const long long begin = (block - chunk_starts[t]) * CHUNK;
  const long long end = min(numels[t], begin + CHUNK);
  const bool lerp_low = fabs((double)w) < 0.5;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const T pi = p[i] * decay;  // 1 unless decoupled: exact
    const T gi = l2 ? g[i] + wd * pi : g[i];
    T mi = m[i];
    const T d = gi - mi;
    mi = lerp_low ? mi + w * d : gi - d * (T(1) - w);
    const T vi = v[i] * beta2 + c2 * gi * gi;
    T h = vi;
    if (amsgrad) {
      const T old = vmax[i];
      h = old != old ? old : (old > vi ? old : vi);
      vmax[i] = h;
    }
    m[i] = mi;
    v[i] = vi;
    p[i] = pi + neg_step * mi / (sqrt(h) / bc2 + eps);
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void adam_{dtype}(const long long* pointers, const long long* numels,
                                        const long long* chunk_starts, const double* per_tensor, int n,
                                        int amsgrad, {t} decay, int l2, {t} wd, {t} w, {t} beta2, {t} c2, {t} eps) {{
  adam_multi<{t}>(pointers, numels, chunk_starts, per_tensor, n, amsgrad, decay, l2, wd, w, beta2, c2, eps);
}}
"""

NAMES = tuple(f"adam_{dtype}" for dtype in CTYPES)
SOURCE = _TEMPLATE + "".join(_ENTRY.format(dtype=dtype, t=t) for dtype, t in CTYPES.items())


def accepts(*arrays) -> bool:
    """Whether ``adam`` serves these arrays: C-contiguous cupy arrays of one kernel dtype."""
    return all(type(a).__module__.startswith("cupy") and a.dtype.name in CTYPES and a.flags.c_contiguous
               for a in arrays)


def adam(items, *, lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled_weight_decay) -> None:
    """One Adam/AdamW step, in place, for every ``(param, grad, exp_avg, exp_avg_sq,
    max_exp_avg_sq or None, step)`` of ``items`` (cupy arrays, each tuple of one dtype and
    shape, ``grad`` already negated for maximize, ``step`` >= 1): one launch per dtype."""
    import cupy

    from . import function
    by_dtype: dict = {}
    for item in items:
        by_dtype.setdefault(item[0].dtype, []).append(item)
    for dtype, group in by_dtype.items():
        group = [it for it in group if it[0].size]
        if not group:
            continue
        t = dtype.type
        pointers = numpy.array([[a.data.ptr for a in (p, g, m, v, vmax if amsgrad else v)]
                                for p, g, m, v, vmax, _ in group], numpy.int64)
        numels = numpy.array([it[0].size for it in group], numpy.int64)
        starts = numpy.concatenate([[0], numpy.cumsum(-(-numels // CHUNK))]).astype(numpy.int64)
        per_tensor = numpy.array([[math.sqrt(1 - beta2 ** step), -lr / (1 - beta1 ** step)]
                                  for *_, step in group], numpy.float64)
        decay = 1 - lr * weight_decay if (weight_decay != 0 and decoupled_weight_decay) else 1.0
        l2 = weight_decay != 0 and not decoupled_weight_decay
        kernel = function("optim", f"adam_{dtype.name}")
        kernel((int(starts[-1]),), (256,),
               (cupy.asarray(pointers), cupy.asarray(numels), cupy.asarray(starts), cupy.asarray(per_tensor),
                numpy.int32(len(group)), numpy.int32(amsgrad), t(decay), numpy.int32(l2), t(weight_decay),
                t(1 - beta1), t(beta2), t(1 - beta2), t(eps)))
