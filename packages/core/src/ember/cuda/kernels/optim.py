"""Fused optimizer updates: one launch updates every parameter of a group (the
multi-tensor form of torch's fused optimizers), each block one chunk of one tensor.

``adam`` is one Adam/AdamW step in torch's order of operations, the same as the CPU
kernel (``ember/cpu/kernels/optim.py``): weight decay, ``exp_avg.lerp_(g, 1 - beta1)``
(lerp's two forms by the weight), ``exp_avg_sq * beta2 + (1 - beta2) * g * g``, the
amsgrad maximum (NaN propagating), ``denom = sqrt(v) / bc2 + eps`` and
``param + (-step_size * exp_avg) / denom``; the arithmetic runs in the accumulation type
(float64 for float64, float32 otherwise: torch's fused optimizers' opmath type), whose
values the scalars are rounded to, and each state is stored back in its tensor's dtype.
Launch: grid ``(total chunks,)``, block 256; a table of device pointers per tensor
``[param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq]``, their sizes, the first chunk of
each tensor (``n + 1`` entries, the last the total) and per tensor ``(bc2, -step_size)``
in float64, since tensors of one group may be at different steps. AdamW is this kernel
with decoupled weight decay (``decay = 1 - lr * weight_decay`` multiplies the parameter
first); torch.optim.AdamW is Adam with ``decoupled_weight_decay=True``, and so is ember's.

``sgd`` is one SGD step in torch.optim.SGD's order (its single-tensor path, as
``optim/sgd.py``'s ``sgd_update``): ``d = g`` (negated for maximize), ``d += wd * p``,
then with momentum ``buf = d`` on the parameter's first step, else ``buf = momentum * buf
+ (1 - dampening) * d``, and ``d = d + momentum * buf`` (nesterov) or ``d = buf``; last
``p += -lr * d``. Launch as Adam's; the pointer table holds ``[param, grad, buf]`` per
tensor (``buf`` null without momentum) and a per-tensor int flags the first step.
"""

import functools
import math

import numpy

from ._common import ACC_CTYPES, CTYPES, KERNEL_PRELUDE, acc_scalar

CHUNK = 4096  # elements per block

_TEMPLATE = r"""
#define CHUNK 4096

// the tensor whose chunks hold block `block`: the last of the n chunk starts <= block
__device__ __forceinline__ int chunk_owner(const long long* __restrict__ chunk_starts, int n, long long block) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (chunk_starts[mid] <= block) lo = mid; else hi = mid - 1;
  }
  return lo;
}

template <typename T, typename A>
__device__ void adam_multi(const long long* __restrict__ pointers, const long long* __restrict__ numels,
                           const long long* __restrict__ chunk_starts, const double* __restrict__ per_tensor,
                           int n, int amsgrad, A decay, int l2, A wd, A w, A beta2, A c2, A eps) {
  const long long block = blockIdx.x;
  const int t = chunk_owner(chunk_starts, n, block);
  T* p = (T*)pointers[5 * t];
  const T* g = (const T*)pointers[5 * t + 1];
  T* m = (T*)pointers[5 * t + 2];
  T* v = (T*)pointers[5 * t + 3];
  T* vmax = (T*)pointers[5 * t + 4];
  const A bc2 = (A)per_tensor[2 * t], neg_step = (A)per_tensor[2 * t + 1];
  const long long begin = (block - chunk_starts[t]) * CHUNK;
  const long long end = min(numels[t], begin + CHUNK);
  const bool lerp_low = fabs((double)w) < 0.5;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const A pi = (A)p[i] * decay;  // 1 unless decoupled: exact
    const A gi = l2 ? (A)g[i] + wd * pi : (A)g[i];
    A mi = m[i];
    const A d = gi - mi;
    mi = lerp_low ? mi + w * d : gi - d * (A(1) - w);
    const A vi = (A)v[i] * beta2 + c2 * gi * gi;
    A h = vi;
    if (amsgrad) {
      const A old = vmax[i];
      h = old != old ? old : (old > vi ? old : vi);
      vmax[i] = (T)h;
    }
    m[i] = (T)mi;
    v[i] = (T)vi;
    p[i] = (T)(pi + neg_step * mi / (sqrt(h) / bc2 + eps));
  }
}

template <typename T, typename A>
__device__ void sgd_multi(const long long* __restrict__ pointers, const long long* __restrict__ numels,
                          const long long* __restrict__ chunk_starts, const int* __restrict__ first, int n,
                          A neg_lr, A momentum, A keep, A wd, int nesterov, int maximize) {
  const long long block = blockIdx.x;
  const int t = chunk_owner(chunk_starts, n, block);
  T* p = (T*)pointers[3 * t];
  const T* g = (const T*)pointers[3 * t + 1];
  T* buf = (T*)pointers[3 * t + 2];  // null without momentum
  const bool start = first[t] != 0;
  const long long begin = (block - chunk_starts[t]) * CHUNK;
  const long long end = min(numels[t], begin + CHUNK);
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const A pi = p[i];
    A d = maximize ? -(A)g[i] : (A)g[i];
    if (wd != A(0)) d = d + wd * pi;
    if (buf != nullptr) {
      const A b = start ? d : momentum * (A)buf[i] + keep * d;
      buf[i] = (T)b;
      d = nesterov ? d + momentum * b : b;
    }
    p[i] = (T)(pi + neg_lr * d);
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void adam_{dtype}(const long long* pointers, const long long* numels,
                                        const long long* chunk_starts, const double* per_tensor, int n,
                                        int amsgrad, {a} decay, int l2, {a} wd, {a} w, {a} beta2, {a} c2, {a} eps) {{
  adam_multi<{t}, {a}>(pointers, numels, chunk_starts, per_tensor, n, amsgrad, decay, l2, wd, w, beta2, c2, eps);
}}
"""

_SGD_ENTRY = r"""
extern "C" __global__ void sgd_{dtype}(const long long* pointers, const long long* numels,
                                       const long long* chunk_starts, const int* first, int n, {a} neg_lr,
                                       {a} momentum, {a} keep, {a} wd, int nesterov, int maximize) {{
  sgd_multi<{t}, {a}>(pointers, numels, chunk_starts, first, n, neg_lr, momentum, keep, wd, nesterov, maximize);
}}
"""

NAMES = tuple(f"{op}_{dtype}" for op in ("adam", "sgd") for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + _TEMPLATE + "".join(entry.format(dtype=dtype, t=t, a=ACC_CTYPES[dtype])
                                              for entry in (_ENTRY, _SGD_ENTRY) for dtype, t in CTYPES.items())


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
        t = functools.partial(acc_scalar, dtype)  # scalars in the accumulation type
        pointers = numpy.array([[a.data.ptr for a in (p, g, m, v, vmax if amsgrad else v)]
                                for p, g, m, v, vmax, _ in group], numpy.int64)
        numels, starts = chunk_table([it[0].size for it in group])
        per_tensor = numpy.array([[math.sqrt(1 - beta2 ** step), -lr / (1 - beta1 ** step)]
                                  for *_, step in group], numpy.float64)
        decay = 1 - lr * weight_decay if (weight_decay != 0 and decoupled_weight_decay) else 1.0
        l2 = weight_decay != 0 and not decoupled_weight_decay
        kernel = function("optim", f"adam_{dtype.name}")
        kernel((int(starts[-1]),), (256,),
               (cupy.asarray(pointers), cupy.asarray(numels), cupy.asarray(starts), cupy.asarray(per_tensor),
                numpy.int32(len(group)), numpy.int32(amsgrad), t(decay), numpy.int32(l2), t(weight_decay),
                t(1 - beta1), t(beta2), t(1 - beta2), t(eps)))


def chunk_table(sizes):
    """``(numels, starts)`` of tensors of ``sizes`` elements (each > 0): int64 arrays, the
    first chunk of each tensor and, last, the total number of chunks (the grid)."""
    numels = numpy.array(sizes, numpy.int64)
    starts = numpy.concatenate([[0], numpy.cumsum(-(-numels // CHUNK))]).astype(numpy.int64)
    return numels, starts


def sgd(items, *, lr, momentum, dampening, weight_decay, nesterov, maximize) -> None:
    """One SGD step, in place, for every ``(param, grad, momentum_buffer or None, first)`` of
    ``items`` (cupy arrays, each tuple of one dtype and shape; ``first``: the buffer is
    filled rather than updated, the parameter's first step with momentum): one launch per
    dtype. With ``momentum == 0`` the buffers are None and unused."""
    import cupy

    from . import function
    by_dtype: dict = {}
    for item in items:
        by_dtype.setdefault(item[0].dtype, []).append(item)
    for dtype, group in by_dtype.items():
        group = [it for it in group if it[0].size]
        if not group:
            continue
        t = functools.partial(acc_scalar, dtype)  # scalars in the accumulation type
        pointers = numpy.array([[p.data.ptr, g.data.ptr, 0 if buf is None else buf.data.ptr]
                                for p, g, buf, _ in group], numpy.int64)
        numels, starts = chunk_table([it[0].size for it in group])
        first = numpy.array([bool(f) for *_, f in group], numpy.int32)
        function("optim", f"sgd_{dtype.name}")(
            (int(starts[-1]),), (256,),
            (cupy.asarray(pointers), cupy.asarray(numels), cupy.asarray(starts), cupy.asarray(first),
             numpy.int32(len(group)), t(-lr), t(momentum), t(1 - dampening), t(weight_decay), numpy.int32(nesterov),
             numpy.int32(maximize)))
