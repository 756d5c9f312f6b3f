"""2-d convolution on cupy arrays (conv1d runs as conv2d of height 1): the forward, input
gradient and weight gradient of ``ops/conv.py``'s array kernels (``_conv_fwd``,
``_conv_dx``, ``_conv_dw``) for float32, float64, float16 and bfloat16, as cupy has no
cuDNN to call (the half types' products are cupy.matmul's, on cuBLAS's half-precision
GEMMs; the kernels around them sum in float32).

Shapes: input ``x`` ``[N, C, H, W]``, weight ``w`` ``[O, C/G, kh, kw]`` (``G`` groups,
``og = O / G`` output channels per group), output ``[N, O, OH, OW]`` with
``OH = (H + ph_lo + ph_hi - dh * (kh - 1) - 1) // sh + 1`` (likewise OW). Output cell
``(oy, ox)`` meets input cell ``(oy * sh - ph + i * dh, ox * sw - pw + j * dw)`` through
tap ``(i, j)`` (``ph``, ``pw`` the padding before; cells outside the input are zeros).

Dense path (any groups), images in chunks of at most ``CHUNK_BYTES`` of columns:

- ``im2col``: the column matrix ``cols`` ``[C * kh * kw, n * OH * OW]`` of ``n`` images,
  row ``(c, i, j)`` c-major, column ``(image, oy, ox)`` image-major (the layout of the
  numpy path's ``_cols``), so group ``g`` owns the rows ``[g, g + 1) * (C/G) * kh * kw``.
  One thread per element of ``cols`` (grid-stride loop).
- forward: ``out_g = w_g [og, C/G*kh*kw] @ cols_g`` for all groups as one batched
  ``cupy.matmul`` (cuBLAS), then ``[O, n, OH*OW]`` to ``[n, O, OH, OW]`` and the bias.
- input gradient: ``dcols_g = w_g^T @ g_g`` (``g_g`` ``[og, n * OH * OW]``), then
  ``col2im``: one thread per input element gathers the ``dcols`` entries of the taps and
  output cells that met it (``(y + ph - i * dh) / sh`` a whole number in ``[0, OH)``, as
  for x), so no two threads write one cell and no atomics are needed.
- weight gradient: ``dw_g = sum over chunks of g_g @ cols_g^T``, with the forward's
  columns when it kept them (one chunk of at most ``KEEP_BYTES``), else rebuilt.

Depthwise path (``G == C > 1``, ``C/G == 1``, ``O = C * mult``; output channel ``o``
reads input channel ``o / mult``), direct loops over the taps, accumulating in the
accumulation dtype (float64 for float64, float32 otherwise) and rounding once:

- ``depthwise_forward``: one thread per output element, ``sum_ij x * w[o, 0, i, j]`` plus
  the bias.
- ``depthwise_input_grad``: one thread per input element gathers ``g * w`` over its
  channel's ``mult`` output channels and the taps and cells that met it (no atomics).
- ``depthwise_weight_grad``: one block (``REDUCE_BLOCK`` threads) per filter tap
  ``(o, i, j)``, reducing ``g[n, o, oy, ox] * x[n, o / mult, y, x]`` over ``n, oy, ox``
  with the prelude's block reduction.

Element-wise kernels run ``grid(total)`` blocks of ``BLOCK`` threads (``_common``). The
geometry goes in as twelve 64-bit integers: ``kh, kw, sh, sw, ph, pw, dh, dw, H, W, OH,
OW`` (``geometry``).
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

_GEOM = ("long long kh, long long kw, long long sh, long long sw, long long ph, long long pw, long long dh, "
         "long long dw, long long H, long long W, long long OH, long long OW")
_GEOM_NAMES = "kh, kw, sh, sw, ph, pw, dh, dw, H, W, OH, OW"

_TEMPLATES = r"""
// cols[(c * kh + i) * kw + j][(n * OH + oy) * OW + ox] = x[n, c, oy * sh - ph + i * dh, ox * sw - pw + j * dw]
template <typename T>
__device__ void im2col(const T* __restrict__ x, T* __restrict__ cols, long long images, long long channels, GEOM) {
  const long long width = images * OH * OW;  // columns
  GRID_LOOP(e, channels * kh * kw * width) {
    const long long row = e / width, col = e - row * width;
    const long long j = row % kw, i = (row / kw) % kh, c = row / (kw * kh);
    const long long ox = col % OW, oy = (col / OW) % OH, n = col / (OW * OH);
    const long long y = oy * sh - ph + i * dh, xx = ox * sw - pw + j * dw;
    cols[e] = (y >= 0 && y < H && xx >= 0 && xx < W) ? x[((n * channels + c) * H + y) * W + xx] : T(0);
  }
}

// the output positions along one dim that met input position z through tap t: o with
// o * s - p + t * d == z and 0 <= o < n_out; returns -1 where there is none
__device__ __forceinline__ long long met_by(long long z, long long t, long long s, long long p, long long d,
                                            long long n_out) {
  const long long a = z + p - t * d;
  if (a < 0 || a % s != 0) return -1;
  const long long o = a / s;
  return o < n_out ? o : -1;
}

// dx[n, c, y, x] = sum over taps (i, j) of dcols[(c, i, j)][(n, oy, ox)] for the output cell that met it
template <typename T>
__device__ void col2im(const T* __restrict__ dcols, T* __restrict__ dx, long long images, long long channels, GEOM) {
  typedef typename acc<T>::type A;
  const long long width = images * OH * OW;
  GRID_LOOP(e, images * channels * H * W) {
    const long long xx = e % W, y = (e / W) % H, c = (e / (W * H)) % channels, n = e / (W * H * channels);
    A sum = 0;
    for (long long i = 0; i < kh; ++i) {
      const long long oy = met_by(y, i, sh, ph, dh, OH);
      if (oy < 0) continue;
      for (long long j = 0; j < kw; ++j) {
        const long long ox = met_by(xx, j, sw, pw, dw, OW);
        if (ox < 0) continue;
        sum += (A)dcols[((c * kh + i) * kw + j) * width + (n * OH + oy) * OW + ox];
      }
    }
    dx[e] = (T)sum;
  }
}

template <typename T>
__device__ void depthwise_forward(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                                  T* __restrict__ out, long long images, long long channels, long long mult, GEOM) {
  typedef typename acc<T>::type A;
  const long long outs = channels * mult;
  GRID_LOOP(e, images * outs * OH * OW) {
    const long long ox = e % OW, oy = (e / OW) % OH, o = (e / (OW * OH)) % outs, n = e / (OW * OH * outs);
    const T* xp = x + (n * channels + o / mult) * H * W;
    const T* wp = w + o * kh * kw;
    A sum = bias != nullptr ? (A)bias[o] : A(0);
    for (long long i = 0; i < kh; ++i) {
      const long long y = oy * sh - ph + i * dh;
      if (y < 0 || y >= H) continue;
      for (long long j = 0; j < kw; ++j) {
        const long long xx = ox * sw - pw + j * dw;
        if (xx >= 0 && xx < W) sum += (A)xp[y * W + xx] * (A)wp[i * kw + j];
      }
    }
    out[e] = (T)sum;
  }
}

template <typename T>
__device__ void depthwise_input_grad(const T* __restrict__ g, const T* __restrict__ w, T* __restrict__ dx,
                                     long long images, long long channels, long long mult, GEOM) {
  typedef typename acc<T>::type A;
  const long long outs = channels * mult;
  GRID_LOOP(e, images * channels * H * W) {
    const long long xx = e % W, y = (e / W) % H, c = (e / (W * H)) % channels, n = e / (W * H * channels);
    A sum = 0;
    for (long long m = 0; m < mult; ++m) {
      const long long o = c * mult + m;
      const T* gp = g + (n * outs + o) * OH * OW;
      const T* wp = w + o * kh * kw;
      for (long long i = 0; i < kh; ++i) {
        const long long oy = met_by(y, i, sh, ph, dh, OH);
        if (oy < 0) continue;
        for (long long j = 0; j < kw; ++j) {
          const long long ox = met_by(xx, j, sw, pw, dw, OW);
          if (ox >= 0) sum += (A)gp[oy * OW + ox] * (A)wp[i * kw + j];
        }
      }
    }
    dx[e] = (T)sum;
  }
}

// one block per filter tap (o, i, j) = blockIdx.x: gw[o, 0, i, j] = sum over n, oy, ox of g * x
template <typename T>
__device__ void depthwise_weight_grad(const T* __restrict__ x, const T* __restrict__ g, T* __restrict__ gw,
                                      long long images, long long channels, long long mult, GEOM) {
  typedef typename acc<T>::type A;
  __shared__ A shared[32];
  const long long tap = blockIdx.x, j = tap % kw, i = (tap / kw) % kh, o = tap / (kw * kh);
  const long long outs = channels * mult, plane = OH * OW;
  A sum = 0;
  for (long long e = threadIdx.x; e < images * plane; e += blockDim.x) {
    const long long n = e / plane, ox = e % OW, oy = (e % plane) / OW;
    const long long y = oy * sh - ph + i * dh, xx = ox * sw - pw + j * dw;
    if (y >= 0 && y < H && xx >= 0 && xx < W)
      sum += (A)g[(n * outs + o) * plane + oy * OW + ox] * (A)x[((n * channels + o / mult) * H + y) * W + xx];
  }
  sum = block_reduce<A, false>(sum, shared, A(0));
  if (threadIdx.x == 0) gw[tap] = (T)sum;
}
""".replace("GEOM", _GEOM)

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
    """A 2-d convolution's geometry: kernel, stride, padding before, dilation, input and
    output sizes (the padding after only shows in the output size)."""
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int
    H: int
    W: int
    OH: int
    OW: int

    def args(self) -> tuple:
        """The twelve ``long long`` kernel arguments, in the order of the C signatures."""
        return tuple(numpy.int64(v) for v in self)


def out_size(size: int, k: int, stride: int, lo: int, hi: int, dilation: int) -> int:
    """Output length of one dim: ``(size + lo + hi - dilation * (k - 1) - 1) // stride + 1``."""
    return (size + lo + hi - dilation * (k - 1) - 1) // stride + 1


def geometry(xshape, wshape, stride, pad, dilation, osize=None) -> Geometry:
    """The 2-d geometry of a convolution over 1 or 2 spatial dims (a 1-d one gets height 1
    with kernel 1, stride 1, no padding). ``pad``: one ``(before, after)`` pair per spatial
    dim. ``osize``: the output's spatial size where known (the output gradient's), else
    computed."""
    nd = len(xshape) - 2
    lead = 2 - nd
    k = (1,) * lead + tuple(wshape[2:])
    s = (1,) * lead + tuple(stride)
    p = ((0, 0),) * lead + tuple(tuple(pp) for pp in pad)
    d = (1,) * lead + tuple(dilation)
    size = (1,) * lead + tuple(xshape[2:])
    if osize is None:
        osize = tuple(out_size(n, kk, ss, lo, hi, dd) for n, kk, ss, (lo, hi), dd in zip(size, k, s, p, d))
    else:
        osize = (1,) * lead + tuple(osize)
    return Geometry(k[0], k[1], s[0], s[1], p[0][0], p[1][0], d[0], d[1], size[0], size[1], osize[0], osize[1])


def chunks(n: int, bytes_per_image: int, limit: int | None = None) -> list:
    """``[(first, stop), ...]`` covering images ``0 .. n - 1`` with at most ``limit`` bytes of
    columns each (``CHUNK_BYTES`` when None; at least one image per chunk); empty for
    ``n == 0``."""
    step = max(1, (CHUNK_BYTES if limit is None else limit) // max(1, bytes_per_image))
    return [(b, min(n, b + step)) for b in range(0, n, step)]


def applies(ndim: int) -> bool:
    """Whether these kernels serve convolutions of ``ndim``-dim arrays: 1 or 2 spatial dims."""
    return ndim in (3, 4)


def accepts(*arrays) -> bool:
    """Whether the kernels take these arrays (None skipped): cupy arrays of one kernel dtype."""
    return on_cupy(*arrays)


def depthwise(xshape, wshape, groups: int) -> bool:
    """Whether the direct depthwise kernels run: one input channel per group, more than one
    group (``groups == C``, ``O`` a multiple of ``C``)."""
    return groups > 1 and wshape[1] == 1 and xshape[1] == groups


class Columns:
    """The column matrix ``[C * kh * kw, N * OH * OW]`` a forward kept for its weight
    gradient, with the geometry it was built for."""

    __slots__ = ("cols", "geo")

    def __init__(self, cols, geo):
        self.cols, self.geo = cols, geo


# ---- launchers ---------------------------------------------------------------------------

def _as_4d(a):
    """``a`` C-contiguous with a unit height inserted when it has one spatial dim."""
    import cupy
    a = cupy.ascontiguousarray(a)
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if a.ndim == 3 else a


def _im2col(x4, geo, lo, hi):
    """The columns of images ``lo .. hi - 1`` of ``x4`` ``[N, C, H, W]``."""
    import cupy

    from . import function
    c = x4.shape[1]
    cols = cupy.empty((c * geo.kh * geo.kw, (hi - lo) * geo.OH * geo.OW), x4.dtype)
    if cols.size:
        function("conv", f"im2col_{x4.dtype.name}")(grid(cols.size), (BLOCK,), (
            x4[lo:hi], cols, numpy.int64(hi - lo), numpy.int64(c), *geo.args()))
    return cols


def _col_bytes(c, geo, itemsize):
    return c * geo.kh * geo.kw * geo.OH * geo.OW * itemsize


def forward(x, w, bias, stride, pad, dilation, groups: int, keep: bool = False):
    """``(out, kept)``: the convolution of ``x`` ``[N, C, (H,) W]`` by ``w`` ``[O, C/groups,
    (kh,) kw]`` plus ``bias`` ``[O]`` (or None), ``[N, O, (OH,) OW]``, and the columns as
    ``Columns`` when ``keep`` and they fit ``KEEP_BYTES`` in one chunk (else None).
    ``pad``: one ``(before, after)`` pair per spatial dim."""
    import cupy

    from . import function
    geo = geometry(x.shape, w.shape, stride, pad, dilation)
    oshape = (x.shape[0], w.shape[0]) + ((geo.OH,) if x.ndim == 4 else ()) + (geo.OW,)
    x4, w4 = _as_4d(x), _as_4d(w)
    bias = None if bias is None else cupy.ascontiguousarray(bias)
    n, c = x4.shape[:2]
    o = w4.shape[0]
    if depthwise(x4.shape, w4.shape, groups):
        out = cupy.empty((n, o, geo.OH, geo.OW), x4.dtype)
        if out.size:
            function("conv", f"depthwise_forward_{x4.dtype.name}")(grid(out.size), (BLOCK,), (
                x4, w4, pointer(bias), out, numpy.int64(n), numpy.int64(c), numpy.int64(o // c), *geo.args()))
        return out.reshape(oshape), None
    og, plane = o // groups, geo.OH * geo.OW
    wm = w4.reshape(groups, og, -1)  # [G, og, C/G * kh * kw]
    out = cupy.empty((n, o, geo.OH, geo.OW), x4.dtype)
    per_image = _col_bytes(c, geo, x4.itemsize)
    parts = chunks(n, per_image)
    kept = None
    for lo, hi in parts:
        cols = _im2col(x4, geo, lo, hi)
        res = cupy.matmul(wm, cols.reshape(groups, -1, (hi - lo) * plane))  # [G, og, n * OH * OW]
        out[lo:hi] = res.reshape(o, hi - lo, geo.OH, geo.OW).transpose(1, 0, 2, 3)
        if keep and len(parts) == 1 and cols.nbytes <= KEEP_BYTES:
            kept = Columns(cols, geo)
    if bias is not None:
        out += bias.reshape(o, 1, 1)
    return out.reshape(oshape), kept


def input_grad(g, w, xshape, stride, pad, dilation, groups: int):
    """The gradient ``[N, C, (H,) W]`` of the convolution with respect to its input of shape
    ``xshape``, from the output gradient ``g`` ``[N, O, (OH,) OW]`` (also the transposed
    convolution of ``g``)."""
    import cupy

    from . import function
    xshape = tuple(xshape)
    geo = geometry(xshape, w.shape, stride, pad, dilation, g.shape[2:])
    g4, w4 = _as_4d(g), _as_4d(w)
    n, c = xshape[:2]
    o = w4.shape[0]
    dx = cupy.empty((n, c, geo.H, geo.W), g4.dtype)
    if depthwise(xshape, w4.shape, groups):
        if dx.size:
            function("conv", f"depthwise_input_grad_{g4.dtype.name}")(grid(dx.size), (BLOCK,), (
                g4, w4, dx, numpy.int64(n), numpy.int64(c), numpy.int64(o // c), *geo.args()))
        return dx.reshape(xshape)
    og, plane = o // groups, geo.OH * geo.OW
    wt = w4.reshape(groups, og, -1).transpose(0, 2, 1)  # [G, C/G * kh * kw, og]
    for lo, hi in chunks(n, _col_bytes(c, geo, g4.itemsize)):
        gm = cupy.ascontiguousarray(g4[lo:hi].transpose(1, 0, 2, 3)).reshape(groups, og, (hi - lo) * plane)
        dcols = cupy.ascontiguousarray(cupy.matmul(wt, gm)).reshape(-1, (hi - lo) * plane)
        part = dx[lo:hi]
        if part.size:
            function("conv", f"col2im_{g4.dtype.name}")(grid(part.size), (BLOCK,), (
                dcols, part, numpy.int64(hi - lo), numpy.int64(c), *geo.args()))
    return dx.reshape(xshape)


def weight_grad(x, g, wshape, stride, pad, dilation, groups: int, kept=None):
    """The gradient ``wshape`` ``[O, C/groups, (kh,) kw]`` of the convolution with respect to
    its weight, from the input ``x`` and the output gradient ``g``; ``kept``: the forward's
    ``Columns`` or None (the columns are then rebuilt, a chunk at a time)."""
    import cupy

    from . import function
    wshape = tuple(wshape)
    geo = geometry(x.shape, wshape, stride, pad, dilation, g.shape[2:])
    x4, g4 = _as_4d(x), _as_4d(g)
    n, c = x4.shape[:2]
    o = wshape[0]
    if depthwise(x4.shape, wshape, groups):
        dw = cupy.empty(wshape, x4.dtype)
        if dw.size:
            function("conv", f"depthwise_weight_grad_{x4.dtype.name}")((dw.size,), (REDUCE_BLOCK,), (
                x4, g4, dw, numpy.int64(n), numpy.int64(c), numpy.int64(o // c), *geo.args()))
        return dw
    og, plane = o // groups, geo.OH * geo.OW
    dw = cupy.zeros((groups, og, c // groups * geo.kh * geo.kw), acc_dtype(x4.dtype))  # chunks' sum
    use_kept = kept is not None and kept.geo == geo and kept.cols.shape[1] == n * plane
    for lo, hi in ((0, n),) if use_kept else chunks(n, _col_bytes(c, geo, x4.itemsize)):
        cols = kept.cols if use_kept else _im2col(x4, geo, lo, hi)
        gm = cupy.ascontiguousarray(g4[lo:hi].transpose(1, 0, 2, 3)).reshape(groups, og, (hi - lo) * plane)
        dw += cupy.matmul(gm, cols.reshape(groups, -1, (hi - lo) * plane).transpose(0, 2, 1))
    return dw.astype(x4.dtype, copy=False).reshape(wshape)
