"""Convolution in 1, 2 and 3 spatial dims on cupy arrays, each run as 3-d with unit leading
dims (kernel 1, stride 1, no padding): the forward, input gradient and weight gradient of
``ops/conv.py``'s array kernels (``_conv_fwd``, ``_conv_dx``, ``_conv_dw``) for float32,
float64, float16 and bfloat16, as cupy has no cuDNN to call (the half types' products are
cupy.matmul's, on cuBLAS's half-precision GEMMs; the kernels around them sum in float32).

Shapes: input ``x`` ``[N, C, D, H, W]``, weight ``w`` ``[O, C/G, kd, kh, kw]`` (``G``
groups, ``og = O / G`` output channels per group), output ``[N, O, OD, OH, OW]`` with
``OD = (D + pd_lo + pd_hi - dd * (kd - 1) - 1) // sd + 1`` (likewise OH, OW). Output cell
``(oz, oy, ox)`` meets input cell ``(oz * sd - pd + i * dd, oy * sh - ph + j * dh,
ox * sw - pw + l * dw)`` through tap ``(i, j, l)`` (``pd``, ``ph``, ``pw`` the padding
before; cells outside the input are zeros).

Dense path (any groups), images in chunks of at most ``CHUNK_BYTES`` of columns:

- ``im2col``: the column matrix ``cols`` ``[C * kd * kh * kw, n * OD * OH * OW]`` of ``n``
  images, row ``(c, i, j, l)`` c-major, column ``(image, oz, oy, ox)`` image-major (the
  layout of the numpy path's ``_cols``), so group ``g`` owns the rows
  ``[g, g + 1) * (C/G) * kd * kh * kw``. One thread per element of ``cols`` (grid-stride loop).
- forward: ``out_g = w_g [og, C/G * taps] @ cols_g`` for all groups as one batched
  ``cupy.matmul`` (cuBLAS), then ``[O, n, *out]`` to ``[n, O, *out]`` and the bias.
- input gradient: ``dcols_g = w_g^T @ g_g`` (``g_g`` ``[og, n * prod(out)]``), then
  ``col2im``: one thread per input element gathers the ``dcols`` entries of the taps and
  output cells that met it (``(y + ph - j * dh) / sh`` a whole number in ``[0, OH)``, as
  for the other dims), so no two threads write one cell and no atomics are needed.
- weight gradient: ``dw_g = sum over chunks of g_g @ cols_g^T``, with the forward's
  columns when it kept them (one chunk of at most ``KEEP_BYTES``), else rebuilt.

Depthwise path (``G == C > 1``, ``C/G == 1``, ``O = C * mult``; output channel ``o``
reads input channel ``o / mult``), direct loops over the taps, accumulating in the
accumulation dtype (float64 for float64, float32 otherwise) and rounding once:

- ``depthwise_forward``: one thread per output element, ``sum_ijl x * w[o, 0, i, j, l]``
  plus the bias.
- ``depthwise_input_grad``: one thread per input element gathers ``g * w`` over its
  channel's ``mult`` output channels and the taps and cells that met it (no atomics).
- ``depthwise_weight_grad``: one block (``REDUCE_BLOCK`` threads) per filter tap
  ``(o, i, j, l)``, reducing ``g[n, o, oz, oy, ox] * x[n, o / mult, z, y, x]`` over ``n``
  and the output cells with the prelude's block reduction.

Element-wise kernels run ``grid(total)`` blocks of ``BLOCK`` threads (``_common``). The
geometry goes in as eighteen 64-bit integers: ``kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh,
dw, D, H, W, OD, OH, OW`` (``geometry``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy

from ._common import BLOCK, CTYPES, GRID_LOOP, KERNEL_PRELUDE, acc_dtype, grid, on_cupy, pointer

__all__ = ["Columns", "Geometry", "accepts", "applies", "depthwise", "forward", "geometry", "input_grad",
           "weight_grad"]

CHUNK_BYTES = 256 << 20  # the most column memory one chunk of images takes
KEEP_BYTES = 64 << 20  # columns up to this size are kept from the forward for the weight gradient
REDUCE_BLOCK = 256  # threads per filter tap in depthwise_weight_grad

_GEOM_NAMES = "kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, D, H, W, OD, OH, OW"
_GEOM = ", ".join(f"long long {name}" for name in _GEOM_NAMES.split(", "))

_TEMPLATES = r"""
// (z, y, x) of the input cell output cell (oz, oy, ox) meets through tap (i, j, l)
#define TAP_CELL \
  const long long z = oz * sd - pd + i * dd, y = oy * sh - ph + j * dh, xx = ox * sw - pw + l * dw;
#define INSIDE (z >= 0 && z < D && y >= 0 && y < H && xx >= 0 && xx < W)

// cols[((c * kd + i) * kh + j) * kw + l][((n * OD + oz) * OH + oy) * OW + ox] = x[n, c, z, y, xx] (TAP_CELL)
template <typename T>
__device__ void im2col(const T* __restrict__ x, T* __restrict__ cols, long long images, long long channels, GEOM) {
  const long long width = images * OD * OH * OW;  // columns
  GRID_LOOP(e, channels * kd * kh * kw * width) {
    const long long row = e / width, col = e - row * width;
    const long long l = row % kw, j = (row / kw) % kh, i = (row / (kw * kh)) % kd, c = row / (kw * kh * kd);
    const long long ox = col % OW, oy = (col / OW) % OH, oz = (col / (OW * OH)) % OD, n = col / (OW * OH * OD);
    TAP_CELL
    cols[e] = INSIDE ? x[(((n * channels + c) * D + z) * H + y) * W + xx] : T(0);
  }
}

// the output positions along one dim that met input position q through tap t: o with
// o * s - p + t * d == q and 0 <= o < n_out; returns -1 where there is none
__device__ __forceinline__ long long met_by(long long q, long long t, long long s, long long p, long long d,
                                            long long n_out) {
  const long long a = q + p - t * d;
  if (a < 0 || a % s != 0) return -1;
  const long long o = a / s;
  return o < n_out ? o : -1;
}

// visit(i, j, l, oz, oy, ox) for every tap (i, j, l) through which an output cell (oz, oy, ox)
// met input cell (z, y, xx)
template <typename F>
__device__ __forceinline__ void for_each_meeting(long long z, long long y, long long xx, GEOM, F visit) {
  for (long long i = 0; i < kd; ++i) {
    const long long oz = met_by(z, i, sd, pd, dd, OD);
    if (oz < 0) continue;
    for (long long j = 0; j < kh; ++j) {
      const long long oy = met_by(y, j, sh, ph, dh, OH);
      if (oy < 0) continue;
      for (long long l = 0; l < kw; ++l) {
        const long long ox = met_by(xx, l, sw, pw, dw, OW);
        if (ox >= 0) visit(i, j, l, oz, oy, ox);
      }
    }
  }
}

// one thread per input element (n, c, z, y, xx), split from its flat index e
#define SPLIT_INPUT(e) \
  const long long xx = (e) % W, y = ((e) / W) % H, z = ((e) / (W * H)) % D, c = ((e) / (W * H * D)) % channels, \
                  n = (e) / (W * H * D * channels);

// dx[n, c, z, y, xx] = sum over taps (i, j, l) of dcols[(c, i, j, l)][(n, oz, oy, ox)] for the output cell that met it
template <typename T>
__device__ void col2im(const T* __restrict__ dcols, T* __restrict__ dx, long long images, long long channels, GEOM) {
  typedef typename acc<T>::type A;
  const long long width = images * OD * OH * OW;
  GRID_LOOP(e, images * channels * D * H * W) {
    SPLIT_INPUT(e)
    A sum = 0;
    for_each_meeting(z, y, xx, GEOM_NAMES, [&](long long i, long long j, long long l, long long oz, long long oy,
                                               long long ox) {
      sum += (A)dcols[(((c * kd + i) * kh + j) * kw + l) * width + ((n * OD + oz) * OH + oy) * OW + ox];
    });
    dx[e] = (T)sum;
  }
}

template <typename T>
__device__ void depthwise_forward(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                  T* __restrict__ out, long long images, long long channels, long long mult, GEOM) {
  typedef typename acc<T>::type A;
  const long long outs = channels * mult;
  GRID_LOOP(e, images * outs * OD * OH * OW) {
    const long long ox = e % OW, oy = (e / OW) % OH, oz = (e / (OW * OH)) % OD, o = (e / (OW * OH * OD)) % outs,
                    n = e / (OW * OH * OD * outs);
    const T* xp = x + (n * channels + o / mult) * D * H * W;
    const T* wp = w + o * kd * kh * kw;
    A sum = bias != nullptr ? (A)bias[o] : A(0);
    for (long long i = 0; i < kd; ++i)
      for (long long j = 0; j < kh; ++j)
        for (long long l = 0; l < kw; ++l) {
          TAP_CELL
          if (INSIDE) sum += (A)xp[(z * H + y) * W + xx] * (A)wp[(i * kh + j) * kw + l];
        }
    out[e] = (T)sum;
  }
}

template <typename T>
__device__ void depthwise_input_grad(const T* __restrict__ g, const T* __restrict__ w, T* __restrict__ dx,
                                     long long images, long long channels, long long mult, GEOM) {
  typedef typename acc<T>::type A;
  const long long outs = channels * mult;
  GRID_LOOP(e, images * channels * D * H * W) {
    SPLIT_INPUT(e)
    A sum = 0;
    for (long long m = 0; m < mult; ++m) {
      const long long o = c * mult + m;
      const T* gp = g + (n * outs + o) * OD * OH * OW;
      const T* wp = w + o * kd * kh * kw;
      for_each_meeting(z, y, xx, GEOM_NAMES, [&](long long i, long long j, long long l, long long oz, long long oy,
                                                 long long ox) {
        sum += (A)gp[(oz * OH + oy) * OW + ox] * (A)wp[(i * kh + j) * kw + l];
      });
    }
    dx[e] = (T)sum;
  }
}

// one block per filter tap (o, i, j, l) = blockIdx.x: gw[o, 0, i, j, l] = sum over n and the output cells of g * x
template <typename T>
__device__ void depthwise_weight_grad(const T* __restrict__ x, const T* __restrict__ g, T* __restrict__ gw,
                                      long long images, long long channels, long long mult, GEOM) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const long long tap = blockIdx.x, l = tap % kw, j = (tap / kw) % kh, i = (tap / (kw * kh)) % kd,
                  o = tap / (kw * kh * kd);
  const long long outs = channels * mult, plane = OD * OH * OW;
  A sum = 0;
  for (long long e = threadIdx.x; e < images * plane; e += blockDim.x) {
    const long long n = e / plane, r = e % plane, ox = r % OW, oy = (r / OW) % OH, oz = r / (OW * OH);
    TAP_CELL
    if (INSIDE) sum += (A)g[(n * outs + o) * plane + r] * (A)x[(((n * channels + o / mult) * D + z) * H + y) * W + xx];
  }
  sum = block_reduce<A, false>(sum, shared, A(0));
  if (threadIdx.x == 0) gw[tap] = (T)sum;
}
""".replace("GEOM_NAMES", _GEOM_NAMES).replace("GEOM", _GEOM)

_ENTRY = r"""
extern "C" __global__ void im2col_{dtype}(const {t}* x, {t}* cols, long long images, long long channels, {geom}) {{
  im2col<{t}>(x, cols, images, channels, {names});
}}
extern "C" __global__ void col2im_{dtype}(const {t}* dcols, {t}* dx, long long images, long long channels, {geom}) {{
  col2im<{t}>(dcols, dx, images, channels, {names});
}}
extern "C" __global__ void depthwise_forward_{dtype}(const {t}* x, const {t}* w, const {t}* bias, {t}* out,
                                                    long long images, long long channels, long long mult, {geom}) {{
  depthwise_forward<{t}>(x, w, bias, out, images, channels, mult, {names});
}}
extern "C" __global__ void depthwise_input_grad_{dtype}(const {t}* g, const {t}* w, {t}* dx, long long images,
                                                       long long channels, long long mult, {geom}) {{
  depthwise_input_grad<{t}>(g, w, dx, images, channels, mult, {names});
}}
extern "C" __global__ void depthwise_weight_grad_{dtype}(const {t}* x, const {t}* g, {t}* gw, long long images,
                                                        long long channels, long long mult, {geom}) {{
  depthwise_weight_grad<{t}>(x, g, gw, images, channels, mult, {names});
}}
"""

_KERNELS = ("im2col", "col2im", "depthwise_forward", "depthwise_input_grad", "depthwise_weight_grad")
NAMES = tuple(f"{kernel}_{dtype}" for kernel in _KERNELS for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + GRID_LOOP + _TEMPLATES + "".join(
    _ENTRY.format(dtype=dtype, t=t, geom=_GEOM, names=_GEOM_NAMES) for dtype, t in CTYPES.items())


# ---- the Python side: geometry, chunks, guards ---------------------------------------

class Geometry(NamedTuple):
    """A 3-d convolution's geometry: kernel, stride, padding before, dilation, input and
    output sizes (the padding after only shows in the output size)."""
    kd: int
    kh: int
    kw: int
    sd: int
    sh: int
    sw: int
    pd: int
    ph: int
    pw: int
    dd: int
    dh: int
    dw: int
    D: int
    H: int
    W: int
    OD: int
    OH: int
    OW: int

    def args(self) -> tuple:
        """The eighteen ``long long`` kernel arguments, in the order of the C signatures."""
        return tuple(numpy.int64(v) for v in self)

    @property
    def out(self) -> tuple:
        """The output's size ``(OD, OH, OW)``."""
        return self.OD, self.OH, self.OW


def out_size(size: int, k: int, stride: int, lo: int, hi: int, dilation: int) -> int:
    """Output length of one dim: ``(size + lo + hi - dilation * (k - 1) - 1) // stride + 1``."""
    return (size + lo + hi - dilation * (k - 1) - 1) // stride + 1


def geometry(xshape, wshape, stride, pad, dilation, osize=None) -> Geometry:
    """The 3-d geometry of a convolution over 1 to 3 spatial dims (the missing leading dims
    get size 1, kernel 1, stride 1, no padding). ``pad``: one ``(before, after)`` pair per
    spatial dim. ``osize``: the output's spatial size where known (the output gradient's),
    else computed."""
    lead = 5 - len(xshape)
    k = (1,) * lead + tuple(wshape[2:])
    s = (1,) * lead + tuple(stride)
    p = ((0, 0),) * lead + tuple(tuple(pp) for pp in pad)
    d = (1,) * lead + tuple(dilation)
    size = (1,) * lead + tuple(xshape[2:])
    if osize is None:
        osize = tuple(out_size(n, kk, ss, lo, hi, dd) for n, kk, ss, (lo, hi), dd in zip(size, k, s, p, d))
    else:
        osize = (1,) * lead + tuple(osize)
    return Geometry(*k, *s, *(lo for lo, _ in p), *d, *size, *osize)


def chunks(n: int, bytes_per_image: int, limit: int | None = None) -> list:
    """``[(first, stop), ...]`` covering images ``0 .. n - 1`` with at most ``limit`` bytes of
    columns each (``CHUNK_BYTES`` when None; at least one image per chunk); empty for
    ``n == 0``."""
    step = max(1, (CHUNK_BYTES if limit is None else limit) // max(1, bytes_per_image))
    return [(b, min(n, b + step)) for b in range(0, n, step)]


def applies(ndim: int) -> bool:
    """Whether these kernels serve convolutions of ``ndim``-dim arrays: 1 to 3 spatial dims."""
    return ndim in (3, 4, 5)


def accepts(*arrays) -> bool:
    """Whether the kernels take these arrays (None skipped): cupy arrays of one kernel dtype."""
    return on_cupy(*arrays)


def depthwise(xshape, wshape, groups: int) -> bool:
    """Whether the direct depthwise kernels run: one input channel per group, more than one
    group (``groups == C``, ``O`` a multiple of ``C``)."""
    return groups > 1 and wshape[1] == 1 and xshape[1] == groups


class Columns:
    """The column matrix ``[C * kd * kh * kw, N * OD * OH * OW]`` a forward kept for its weight
    gradient, with the geometry it was built for."""

    __slots__ = ("cols", "geo")

    def __init__(self, cols, geo):
        self.cols, self.geo = cols, geo


# ---- launchers ---------------------------------------------------------------------------

def _as_5d(a):
    """``a`` C-contiguous with unit leading spatial dims up to three."""
    import cupy
    a = cupy.ascontiguousarray(a)
    return a.reshape(a.shape[:2] + (1,) * (5 - a.ndim) + a.shape[2:])


def _taps(geo) -> int:
    return geo.kd * geo.kh * geo.kw


def _plane(geo) -> int:
    return geo.OD * geo.OH * geo.OW


def _im2col(x5, geo, lo, hi):
    """The columns of images ``lo .. hi - 1`` of ``x5`` ``[N, C, D, H, W]``."""
    import cupy

    from . import function
    c = x5.shape[1]
    cols = cupy.empty((c * _taps(geo), (hi - lo) * _plane(geo)), x5.dtype)
    if cols.size:
        function("conv", f"im2col_{x5.dtype.name}")(grid(cols.size), (BLOCK,), (
            x5[lo:hi], cols, numpy.int64(hi - lo), numpy.int64(c), *geo.args()))
    return cols


def _col_bytes(c, geo, itemsize):
    return c * _taps(geo) * _plane(geo) * itemsize


def forward(x, w, bias, stride, pad, dilation, groups: int, keep: bool = False):
    """``(out, kept)``: the convolution of ``x`` ``[N, C, *size]`` (1 to 3 spatial dims) by
    ``w`` ``[O, C/groups, *k]`` plus ``bias`` ``[O]`` (or None), ``[N, O, *out]``, and the
    columns as ``Columns`` when ``keep`` and they fit ``KEEP_BYTES`` in one chunk (else
    None). ``pad``: one ``(before, after)`` pair per spatial dim."""
    import cupy

    from . import function
    geo = geometry(x.shape, w.shape, stride, pad, dilation)
    oshape = (x.shape[0], w.shape[0]) + geo.out[5 - x.ndim:]
    x5, w5 = _as_5d(x), _as_5d(w)
    bias = None if bias is None else cupy.ascontiguousarray(bias)
    n, c = x5.shape[:2]
    o = w5.shape[0]
    if depthwise(x5.shape, w5.shape, groups):
        out = cupy.empty((n, o) + geo.out, x5.dtype)
        if out.size:
            function("conv", f"depthwise_forward_{x5.dtype.name}")(grid(out.size), (BLOCK,), (
                x5, w5, pointer(bias), out, numpy.int64(n), numpy.int64(c), numpy.int64(o // c), *geo.args()))
        return out.reshape(oshape), None
    og, plane = o // groups, _plane(geo)
    wm = w5.reshape(groups, og, -1)  # [G, og, C/G * taps]
    out = cupy.empty((n, o) + geo.out, x5.dtype)
    parts = chunks(n, _col_bytes(c, geo, x5.itemsize))
    kept = None
    for lo, hi in parts:
        cols = _im2col(x5, geo, lo, hi)
        res = cupy.matmul(wm, cols.reshape(groups, -1, (hi - lo) * plane))  # [G, og, n * prod(out)]
        out[lo:hi] = res.reshape((o, hi - lo) + geo.out).transpose(1, 0, 2, 3, 4)
        if keep and len(parts) == 1 and cols.nbytes <= KEEP_BYTES:
            kept = Columns(cols, geo)
    if bias is not None:
        out += bias.reshape(o, 1, 1, 1)
    return out.reshape(oshape), kept


def input_grad(g, w, xshape, stride, pad, dilation, groups: int):
    """The gradient ``[N, C, *size]`` of the convolution with respect to its input of shape
    ``xshape``, from the output gradient ``g`` ``[N, O, *out]`` (also the transposed
    convolution of ``g``)."""
    import cupy

    from . import function
    xshape = tuple(xshape)
    geo = geometry(xshape, w.shape, stride, pad, dilation, g.shape[2:])
    g5, w5 = _as_5d(g), _as_5d(w)
    n, c = xshape[:2]
    o = w5.shape[0]
    dx = cupy.empty((n, c, geo.D, geo.H, geo.W), g5.dtype)
    if depthwise(xshape, w5.shape, groups):
        if dx.size:
            function("conv", f"depthwise_input_grad_{g5.dtype.name}")(grid(dx.size), (BLOCK,), (
                g5, w5, dx, numpy.int64(n), numpy.int64(c), numpy.int64(o // c), *geo.args()))
        return dx.reshape(xshape)
    og, plane = o // groups, _plane(geo)
    wt = w5.reshape(groups, og, -1).transpose(0, 2, 1)  # [G, C/G * taps, og]
    for lo, hi in chunks(n, _col_bytes(c, geo, g5.itemsize)):
        gm = cupy.ascontiguousarray(g5[lo:hi].transpose(1, 0, 2, 3, 4)).reshape(groups, og, (hi - lo) * plane)
        dcols = cupy.ascontiguousarray(cupy.matmul(wt, gm)).reshape(-1, (hi - lo) * plane)
        part = dx[lo:hi]
        if part.size:
            function("conv", f"col2im_{g5.dtype.name}")(grid(part.size), (BLOCK,), (
                dcols, part, numpy.int64(hi - lo), numpy.int64(c), *geo.args()))
    return dx.reshape(xshape)


def weight_grad(x, g, wshape, stride, pad, dilation, groups: int, kept=None):
    """The gradient ``wshape`` ``[O, C/groups, *k]`` of the convolution with respect to its
    weight, from the input ``x`` and the output gradient ``g``; ``kept``: the forward's
    ``Columns`` or None (the columns are then rebuilt, a chunk at a time)."""
    import cupy

    from . import function
    wshape = tuple(wshape)
    geo = geometry(x.shape, wshape, stride, pad, dilation, g.shape[2:])
    x5, g5 = _as_5d(x), _as_5d(g)
    n, c = x5.shape[:2]
    o = wshape[0]
    if depthwise(x5.shape, wshape, groups):
        dw = cupy.empty(wshape, x5.dtype)
        if dw.size:
            function("conv", f"depthwise_weight_grad_{x5.dtype.name}")((dw.size,), (REDUCE_BLOCK,), (
                x5, g5, dw, numpy.int64(n), numpy.int64(c), numpy.int64(o // c), *geo.args()))
        return dw
    og, plane = o // groups, _plane(geo)
    dw = cupy.zeros((groups, og, c // groups * _taps(geo)), acc_dtype(x5.dtype))  # chunks' sum
    use_kept = kept is not None and kept.geo == geo and kept.cols.shape[1] == n * plane
    for lo, hi in ((0, n),) if use_kept else chunks(n, _col_bytes(c, geo, x5.itemsize)):
        cols = kept.cols if use_kept else _im2col(x5, geo, lo, hi)
        gm = cupy.ascontiguousarray(g5[lo:hi].transpose(1, 0, 2, 3, 4)).reshape(groups, og, (hi - lo) * plane)
        dw += cupy.matmul(gm, cols.reshape(groups, -1, (hi - lo) * plane).transpose(0, 2, 1))
    return dw.astype(x5.dtype, copy=False).reshape(wshape)
