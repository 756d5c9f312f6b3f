"""Max and average pooling, forward and backward, in 1, 2 and 3 dims: the CPU kernels'
functions (``ember/cpu/kernels/pool.py``: ``max_forward``, ``max_backward``,
``avg_forward``, ``avg_backward``) on cupy arrays.

Every pooling runs as 3-d pooling of planes ``[P, D, H, W]`` (``P = N * C``; 1-d and 2-d
inputs get unit leading spatial dims with kernel 1), with the geometry of ember's
``_Geom`` (ops/pool.py: kernel ``k``, stride ``s``, padding ``p``, dilation ``d``, input
``size`` and output ``out``, ceil_mode already folded into ``out``) passed as eighteen
64-bit integers (``geometry``).

- ``max_pool_forward``: one thread per output cell (grid-stride loop over ``P * out``).
  It scans its window's cells inside the input in row-major order and keeps the first
  maximum, a NaN over any number and the last NaN over earlier ones (torch's scan); a
  window holding only -inf keeps its first cell inside the input. It writes the value,
  the kernel offset of the chosen cell (row-major within the window, the numpy path's
  saved form, int16 or int64) and, when asked, the int64 index flat into the input plane
  (return_indices).
- ``max_pool_backward``: one thread per output cell adds its gradient at the input cell its
  offset names, into a zeroed gradient of the accumulation dtype (float32 for float16 and
  bfloat16, rounded once at the end); with ``atomicAdd`` when windows overlap
  (``(k - 1) * d + 1 > s`` in some dim: two cells may pick the same input), a plain add
  otherwise.
- ``avg_pool_forward``: one thread per output cell sums its window's cells inside the input
  (zero padding adds nothing) in the accumulation dtype and divides by ``div[o]``, the
  divisor per output cell (in that dtype too) (count_include_pad and divisor_override decided by the op).
- ``avg_pool_backward``: one thread per input cell gathers ``g[o] / div[o]`` over the output
  cells whose windows hold it (no atomics: deterministic).
"""

import numpy

from ._common import ACC_CTYPES, BLOCK, CTYPES, GRID_LOOP, KERNEL_PRELUDE, NULL, acc_dtype, grid, on_cupy

INDEX_TYPES = {"int16": "short", "int64": "long long"}  # the kernel offsets' dtypes (the op's rank dtype)

_GEOM = ("long long kd, long long kh, long long kw, long long sd, long long sh, long long sw, long long pd, "
         "long long ph, long long pw, long long dd, long long dh, long long dw, long long nd, long long nh, "
         "long long nw, long long od_n, long long oh_n, long long ow_n")
_GEOM_NAMES = "kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, nd, nh, nw, od_n, oh_n, ow_n"

_TEMPLATES = r"""
// output cell e of P planes of [od_n, oh_n, ow_n] as (plane, od, oh, ow)
#define SPLIT_OUT(e) \
  const long long ow = (e) % ow_n, oh = ((e) / ow_n) % oh_n, od = ((e) / (ow_n * oh_n)) % od_n, \
                  pl = (e) / (ow_n * oh_n * od_n);

template <typename T, typename I>
__device__ void max_pool_forward(const T* __restrict__ x, T* __restrict__ out, I* __restrict__ arg,
                                 long long* __restrict__ idx, long long planes, GEOM) {
  typedef typename acc<T>::type A;
  const long long in_plane = nd * nh * nw;
  GRID_LOOP(e, planes * od_n * oh_n * ow_n) {
    SPLIT_OUT(e)
    const long long d0 = od * sd - pd, h0 = oh * sh - ph, w0 = ow * sw - pw;
    const T* xp = x + pl * in_plane;
    A best = acc<T>::neg_inf();
    long long code = -1, where = 0;
    for (long long i = 0; i < kd; ++i) {
      const long long zd = d0 + i * dd;
      if (zd < 0 || zd >= nd) continue;
      for (long long j = 0; j < kh; ++j) {
        const long long zh = h0 + j * dh;
        if (zh < 0 || zh >= nh) continue;
        for (long long m = 0; m < kw; ++m) {
          const long long zw = w0 + m * dw;
          if (zw < 0 || zw >= nw) continue;
          const long long c = (i * kh + j) * kw + m, pos = (zd * nh + zh) * nw + zw;
          const A v = xp[pos];
          if (code < 0) {  // the first cell inside: kept by a window of -inf only
            code = c;
            where = pos;
          }
          if (v > best || v != v) {
            best = v;
            code = c;
            where = pos;
          }
        }
      }
    }
    out[e] = (T)best;  // one of the inputs: exact
    arg[e] = (I)code;
    if (idx != nullptr) idx[e] = where;
  }
}

template <typename T, typename I>
__device__ void max_pool_backward(const T* __restrict__ g, const I* __restrict__ arg,
                                  typename acc<T>::type* __restrict__ gx, int atomic, long long planes, GEOM) {
  typedef typename acc<T>::type A;
  const long long in_plane = nd * nh * nw;
  GRID_LOOP(e, planes * od_n * oh_n * ow_n) {
    SPLIT_OUT(e)
    const long long c = arg[e];
    if (c < 0) continue;
    const long long m = c % kw, j = (c / kw) % kh, i = c / (kw * kh);
    const long long pos = ((od * sd - pd + i * dd) * nh + (oh * sh - ph + j * dh)) * nw + (ow * sw - pw + m * dw);
    A* dst = gx + pl * in_plane + pos;
    if (atomic) atomicAdd(dst, (A)g[e]);
    else *dst += (A)g[e];
  }
}

template <typename T>
__device__ void avg_pool_forward(const T* __restrict__ x, T* __restrict__ out,
                                 const typename acc<T>::type* __restrict__ div, long long planes, GEOM) {
  typedef typename acc<T>::type A;
  const long long in_plane = nd * nh * nw, out_plane = od_n * oh_n * ow_n;
  GRID_LOOP(e, planes * out_plane) {
    SPLIT_OUT(e)
    const long long d0 = od * sd - pd, h0 = oh * sh - ph, w0 = ow * sw - pw;
    const T* xp = x + pl * in_plane;
    A sum = 0;
    for (long long i = 0; i < kd; ++i) {
      const long long zd = d0 + i;
      if (zd < 0 || zd >= nd) continue;
      for (long long j = 0; j < kh; ++j) {
        const long long zh = h0 + j;
        if (zh < 0 || zh >= nh) continue;
        for (long long m = 0; m < kw; ++m) {
          const long long zw = w0 + m;
          if (zw >= 0 && zw < nw) sum += (A)xp[(zd * nh + zh) * nw + zw];
        }
      }
    }
    out[e] = (T)(sum / div[e % out_plane]);
  }
}

// the output positions [lo, hi] along one dim whose windows [o*s - p, o*s - p + k) hold input position z
__device__ __forceinline__ void covering(long long z, long long k, long long s, long long p, long long n_out,
                                         long long& lo, long long& hi) {
  const long long first = z + p - k + 1;  // o * s >= first
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  hi = (z + p) / s;  // o * s <= z + p, with z + p >= 0
  if (hi > n_out - 1) hi = n_out - 1;
}

template <typename T>
__device__ void avg_pool_backward(const T* __restrict__ g, T* __restrict__ gx,
                                  const typename acc<T>::type* __restrict__ div, long long planes, GEOM) {
  typedef typename acc<T>::type A;
  const long long in_plane = nd * nh * nw, out_plane = od_n * oh_n * ow_n;
  GRID_LOOP(e, planes * in_plane) {
    const long long zw = e % nw, zh = (e / nw) % nh, zd = (e / (nw * nh)) % nd, pl = e / in_plane;
    long long d_lo, d_hi, h_lo, h_hi, w_lo, w_hi;
    covering(zd, kd, sd, pd, od_n, d_lo, d_hi);
    covering(zh, kh, sh, ph, oh_n, h_lo, h_hi);
    covering(zw, kw, sw, pw, ow_n, w_lo, w_hi);
    const T* gp = g + pl * out_plane;
    A sum = 0;
    for (long long od = d_lo; od <= d_hi; ++od)
      for (long long oh = h_lo; oh <= h_hi; ++oh)
        for (long long ow = w_lo; ow <= w_hi; ++ow) {
          const long long o = (od * oh_n + oh) * ow_n + ow;
          sum += (A)gp[o] / div[o];
        }
    gx[e] = (T)sum;
  }
}
""".replace("GEOM", _GEOM)

_MAX_ENTRY = r"""
extern "C" __global__ void max_pool_forward_{dtype}_{index}(const {t}* x, {t}* out, {i}* arg, long long* idx,
                                                           long long planes, {geom}) {{
  max_pool_forward<{t}, {i}>(x, out, arg, idx, planes, {names});
}}
extern "C" __global__ void max_pool_backward_{dtype}_{index}(const {t}* g, const {i}* arg, {a}* gx, int atomic,
                                                            long long planes, {geom}) {{
  max_pool_backward<{t}, {i}>(g, arg, gx, atomic, planes, {names});
}}
"""

_AVG_ENTRY = r"""
extern "C" __global__ void avg_pool_forward_{dtype}(const {t}* x, {t}* out, const {a}* div, long long planes,
                                                   {geom}) {{
  avg_pool_forward<{t}>(x, out, div, planes, {names});
}}
extern "C" __global__ void avg_pool_backward_{dtype}(const {t}* g, {t}* gx, const {a}* div, long long planes,
                                                    {geom}) {{
  avg_pool_backward<{t}>(g, gx, div, planes, {names});
}}
"""

NAMES = tuple(f"max_pool_{direction}_{dtype}_{index}" for direction in ("forward", "backward") for dtype in CTYPES
              for index in INDEX_TYPES) + tuple(f"avg_pool_{direction}_{dtype}" for direction in ("forward", "backward")
                                                for dtype in CTYPES)


def _source():
    parts = [KERNEL_PRELUDE, GRID_LOOP, _TEMPLATES]
    for dtype, t in CTYPES.items():
        a = ACC_CTYPES[dtype]
        for index, i in INDEX_TYPES.items():
            parts.append(_MAX_ENTRY.format(dtype=dtype, t=t, a=a, index=index, i=i, geom=_GEOM, names=_GEOM_NAMES))
        parts.append(_AVG_ENTRY.format(dtype=dtype, t=t, a=a, geom=_GEOM, names=_GEOM_NAMES))
    return "".join(parts)


SOURCE = _source()


def accepts(*arrays) -> bool:
    """Whether the kernels take these arrays: cupy arrays of one kernel dtype."""
    return on_cupy(*arrays)


def geometry(geo) -> tuple:
    """The 18 geometry arguments of a pooling ``geo`` (ops/pool.py's ``_Geom``, 1 to 3 dims):
    kernel, stride, padding, dilation, input size and output size, each as 3 int64 with
    unit (zero for padding) leading dims."""
    lead = 3 - geo.nd
    one, zero = (1,) * lead, (0,) * lead
    values = (one + tuple(geo.k), one + tuple(geo.s), zero + tuple(geo.p), one + tuple(geo.d), one + tuple(geo.size),
              one + tuple(geo.out))
    return tuple(numpy.int64(v) for group in values for v in group)


def overlapping(geo) -> bool:
    """Whether two windows of ``geo`` may share an input cell: ``(k - 1) * d + 1 > s`` in some dim."""
    return any((k - 1) * d + 1 > s for k, s, d in zip(geo.k, geo.s, geo.d))


def _planes(a, spatial):
    import cupy
    n, c = a.shape[:2]
    return cupy.ascontiguousarray(a), n * c, (n, c) + tuple(spatial)


def _divisor(div, geo, dtype):
    """``div`` as a contiguous ``out``-shaped array of ``dtype``'s accumulation dtype."""
    import cupy
    return cupy.ascontiguousarray(cupy.broadcast_to(cupy.asarray(div, acc_dtype(dtype)), tuple(geo.out)))


def max_forward(x, geo, arg_dtype, want_idx: bool):
    """``(values, offsets, indices)`` of max pooling ``x`` ``[N, C, *size]`` by ``geo``: values
    ``[N, C, *out]`` in ``x``'s dtype, the chosen kernel offset per cell in ``arg_dtype``
    (int16 or int64), and (``want_idx``) the int64 flat index into the input plane, else None."""
    import cupy

    from . import function
    x, planes, shape = _planes(x, geo.out)
    arg_dtype = numpy.dtype(arg_dtype)
    vals = cupy.empty(shape, x.dtype)
    arg = cupy.empty(shape, arg_dtype)
    idx = cupy.empty(shape, numpy.int64) if want_idx else None
    if vals.size:
        function("pool", f"max_pool_forward_{x.dtype.name}_{arg_dtype.name}")(
            grid(vals.size), (BLOCK,), (x, vals, arg, NULL if idx is None else idx, numpy.int64(planes),
                                        *geometry(geo)))
    return vals, arg, idx


def max_backward(g, arg, geo):
    """The input gradient ``[N, C, *size]`` of max pooling: each cell of ``g`` ``[N, C, *out]``
    added at the input cell its window's maximum came from (``arg``, the kernel offsets)."""
    import cupy

    from . import function
    g, planes, shape = _planes(g, geo.size)
    arg = cupy.ascontiguousarray(arg)
    if arg.dtype.name not in INDEX_TYPES:
        arg = arg.astype(numpy.int64)
    gx = cupy.zeros(shape, acc_dtype(g.dtype))
    if g.size:
        function("pool", f"max_pool_backward_{g.dtype.name}_{arg.dtype.name}")(
            grid(g.size), (BLOCK,), (g, arg, gx, numpy.int32(overlapping(geo)), numpy.int64(planes), *geometry(geo)))
    return gx.astype(g.dtype, copy=False)


def avg_forward(x, geo, div):
    """Average pooling ``[N, C, *size]`` to ``[N, C, *out]``: each window's sum over its cells
    inside the input divided by ``div`` (a number or an array broadcasting to ``out``)."""
    import cupy

    from . import function
    x, planes, shape = _planes(x, geo.out)
    out = cupy.empty(shape, x.dtype)
    if out.size:
        function("pool", f"avg_pool_forward_{x.dtype.name}")(
            grid(out.size), (BLOCK,), (x, out, _divisor(div, geo, x.dtype), numpy.int64(planes), *geometry(geo)))
    return out


def avg_backward(g, geo, div):
    """The input gradient of ``avg_forward``: ``g / div`` spread over each window's cells
    inside the input."""
    import cupy

    from . import function
    g, planes, shape = _planes(g, geo.size)
    gx = cupy.empty(shape, g.dtype)
    if gx.size:
        function("pool", f"avg_pool_backward_{g.dtype.name}")(
            grid(gx.size), (BLOCK,), (g, gx, _divisor(div, geo, g.dtype), numpy.int64(planes), *geometry(geo)))
    return gx
