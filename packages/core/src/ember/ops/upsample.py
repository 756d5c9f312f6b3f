"""Resizing (torch.nn.functional.interpolate) and channel/space rearrangements
(pixel_shuffle, pixel_unshuffle, channel_shuffle).

Every resize mode is separable: each spatial axis in turn is resampled by
``out[..., i, ...] = sum_k w[i, k] * x[..., idx[i, k], ...]``, a fixed table of source
indices and weights per output cell (one tap for nearest, two for linear, four for cubic,
a window for area and antialiasing).  The tables follow torch's CPU kernels
(aten/src/ATen/native/UpSample.h and UpSampleKernel.cpp): the same source-index formulas,
computed in the same precision, so nearest picks the same cells.  The resampling is
linear, so its gradient is the same op with the transposed table (each input cell
gathers from the output cells it fed): no scatter, and double backward is the forward.
"""

from __future__ import annotations

import math

from .. import _dtype as D
from .._tensor import _make
from ..autograd.graph import on_arrays
from ..backends import backend_of_array
from ._helpers import be, needs_grad, record

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle"]

_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
# the spatial rank each interpolating mode needs, with its name in torch's messages
_LINEAR_RANK = {"linear": (1, "3D"), "bilinear": (2, "4D"), "bicubic": (2, "4D"), "trilinear": (3, "5D")}
_NODE_NAMES = {"nearest": "UpsampleNearest{d}D", "nearest-exact": "UpsampleNearestExact{d}D",
               "linear": "UpsampleLinear{d}D", "bilinear": "UpsampleBilinear{d}D", "bicubic": "UpsampleBicubic{d}D",
               "trilinear": "UpsampleTrilinear{d}D", "area": "AdaptiveAvgPool{d}D",
               "lanczos": "UpsampleLanczos{d}D"}
_CUBIC_A = -0.75      # torch's bicubic (as OpenCV)
_CUBIC_AA_A = -0.5    # torch's antialiased bicubic (as PIL)


# ---- per-axis index and weight tables --------------------------------------------------

def _scale_value(scale, n_in, n_out):
    """torch's compute_scales_value: 1/scale_factor when one was given, else in/out."""
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _area_scale(n_in, n_out, align_corners, scale):
    """torch's area_pixel_compute_scale: the source step per output cell."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return _scale_value(scale, n_in, n_out)


def _nearest_taps(xp, n_in, n_out, scale, exact, shortcuts):
    """Source index of each output cell, computed in float32 as torch does (so that cells
    on a boundary round the same way).  torch's 2-d kernel (``shortcuts``) copies when the
    size is kept and halves the index when it doubles, whatever the scale factor."""
    f32 = xp.float32
    s = xp.asarray(_scale_value(scale, n_in, n_out), dtype=f32)
    i = xp.arange(n_out, dtype=xp.int64)
    if exact:
        src = xp.floor((i.astype(f32) + f32(0.5)) * s)
    else:
        if shortcuts and n_out == n_in:
            return i
        if shortcuts and n_out == 2 * n_in:
            return i // 2
        src = xp.floor(i.astype(f32) * s)
    return xp.minimum(src.astype(xp.int64), n_in - 1)


def _source_coords(xp, n_out, scale, align_corners, cubic, dt):
    """torch's area_pixel_compute_source_index for every output cell, in dtype ``dt``."""
    i = xp.arange(n_out).astype(dt)
    s = xp.asarray(scale, dtype=dt)
    if align_corners:
        return s * i
    src = s * (i + dt(0.5)) - dt(0.5)
    return src if cubic else xp.maximum(src, dt(0))


def _split(xp, src, n_in):
    """torch's guard_index_and_lambda: the cell left of ``src`` and the fraction past it."""
    idx = xp.minimum(xp.floor(src).astype(xp.int64), n_in - 1)
    lam = xp.clip(src - idx.astype(src.dtype), 0, 1)
    return idx, lam


def _linear_taps(xp, n_in, n_out, scale, align_corners, dt):
    if n_out == n_in:  # torch copies when the size does not change, whatever the scale
        i = xp.arange(n_out, dtype=xp.int64)
        return i[:, None], xp.ones((n_out, 1), dtype=dt)
    src = _source_coords(xp, n_out, _area_scale(n_in, n_out, align_corners, scale), align_corners, False, dt)
    i0, lam = _split(xp, src, n_in)
    i1 = i0 + (i0 < n_in - 1)
    return xp.stack([i0, i1], 1), xp.stack([1 - lam, lam], 1)


def _cubic_near(t, a):
    return ((a + 2) * t - (a + 3)) * t * t + 1


def _cubic_far(t, a):
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a


def _cubic_taps(xp, n_in, n_out, scale, align_corners, dt):
    src = _source_coords(xp, n_out, _area_scale(n_in, n_out, align_corners, scale), align_corners, True, dt)
    i0, t = _split(xp, src, n_in)
    a = dt(_CUBIC_A)
    w = xp.stack([_cubic_far(t + 1, a), _cubic_near(t, a), _cubic_near(1 - t, a), _cubic_far(2 - t, a)], 1)
    idx = xp.clip(i0[:, None] + xp.arange(-1, 3), 0, n_in - 1)  # border cells repeat
    return idx, w.astype(dt)


def _triangle(x):
    x = abs(x)
    return (x < 1) * (1 - x)


def _cubic_aa_filter(x):
    x = abs(x)
    a = _CUBIC_AA_A
    return (x < 1) * _cubic_near(x, a) + ((x >= 1) & (x < 2)) * _cubic_far(x, a)


def _lanczos_filter(xp, x):
    """PIL's Lanczos-3 window: sinc(x) * sinc(x / 3) on [-3, 3)."""
    return ((x >= -3) & (x < 3)) * xp.sinc(x) * xp.sinc(x / 3)


def _antialias_taps(xp, n_in, n_out, scale, align_corners, dt, mode):
    """torch's antialiased weights (as PIL's resampling): each output cell averages the
    input under a filter (triangle, cubic with A=-0.5, or Lanczos-3) stretched by the
    downscale factor, normalized to sum to one.  An axis whose size is kept is copied, as
    torch does."""
    if n_out == n_in:
        return xp.arange(n_out, dtype=xp.int64)[:, None], xp.ones((n_out, 1), dtype=dt)
    s = _area_scale(n_in, n_out, align_corners, scale)
    half = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]
    support = half * s if s >= 1.0 else half
    inv = 1.0 / s if s >= 1.0 else 1.0
    i = xp.arange(n_out).astype(dt)
    center = dt(s) * (i + dt(0.5))
    lo = xp.maximum(xp.trunc(center - dt(support) + dt(0.5)).astype(xp.int64), 0)
    hi = xp.minimum(xp.trunc(center + dt(support) + dt(0.5)).astype(xp.int64), n_in)
    k = int((hi - lo).max()) if n_out else 1
    j = xp.arange(k)
    idx = lo[:, None] + j
    x = (idx.astype(dt) - center[:, None] + dt(0.5)) * dt(inv)
    if mode == "lanczos":
        w = _lanczos_filter(xp, x)
    else:
        w = _cubic_aa_filter(x) if mode == "bicubic" else _triangle(x)
    w = w.astype(dt) * (j < (hi - lo)[:, None])
    total = w.sum(1, keepdims=True)
    w = xp.where(total != 0, w / xp.where(total != 0, total, 1), 0).astype(dt)
    return xp.minimum(idx, n_in - 1), w


def _area_taps(xp, n_in, n_out, dt):
    """adaptive average pooling's windows: cell i averages floor(i*in/out) .. ceil((i+1)*in/out)."""
    i = xp.arange(n_out, dtype=xp.int64)
    lo = (i * n_in) // n_out
    hi = -((-(i + 1) * n_in) // n_out)
    k = int((hi - lo).max())
    j = xp.arange(k)
    inside = j < (hi - lo)[:, None]
    w = inside / (hi - lo)[:, None]
    return xp.minimum(lo[:, None] + j, n_in - 1), w.astype(dt)


# ---- applying the tables ------------------------------------------------------------------

class _Taps:
    """One axis's resampling: source index ``idx`` ``[out, K]`` and weight ``w`` (None when
    every weight is 1) of each output cell, and the transposed tables (for each input cell,
    the output cells it feeds), so that the gradient is a resampling too and needs no
    scatter."""

    __slots__ = ("idx", "w", "t_idx", "t_w")

    def __init__(self, xp, idx, w, n_in):
        if idx.ndim == 1:
            idx = idx[:, None]
        self.idx, self.w = idx, w
        n_out, k = idx.shape
        src = idx.reshape(-1)
        dst = xp.repeat(xp.arange(n_out, dtype=xp.int64), k)
        wt = xp.ones(src.shape, dtype=xp.float64) if w is None else w.reshape(-1)
        keep = wt != 0
        src, dst, wt = src[keep], dst[keep], wt[keep]
        order = xp.argsort(src, kind="stable")
        src, dst, wt = src[order], dst[order], wt[order]
        counts = xp.bincount(src, minlength=n_in)
        fan = max(int(counts.max()) if src.size else 1, 1)
        starts = xp.cumsum(counts) - counts
        slot = xp.arange(src.size) - starts[src]
        self.t_idx = xp.zeros((n_in, fan), dtype=xp.int64)
        self.t_idx[src, slot] = dst
        self.t_w = xp.zeros((n_in, fan), dtype=wt.dtype)
        self.t_w[src, slot] = wt

    def transposed(self):
        t = object.__new__(_Taps)
        t.idx, t.w, t.t_idx, t.t_w = self.t_idx, self.t_w, self.idx, self.w
        if t.t_w is None:  # a selection's transpose has weights 0/1
            t.t_w = (t.t_idx == t.t_idx) * 1.0
        return t


def _apply_taps(xp, arr, axis, idx, w):
    """``sum_k w[:, k] * arr.take(idx[:, k], axis)``, computed in ``arr``'s dtype."""
    if w is None and idx.shape[1] == 1:
        return xp.take(arr, idx[:, 0], axis=axis)
    tail = (1,) * (arr.ndim - axis - 1)
    out = None
    for k in range(idx.shape[1]):
        part = xp.take(arr, idx[:, k], axis=axis)
        if w is not None:
            part *= w[:, k].astype(arr.dtype).reshape((-1,) + tail)
        if out is None:
            out = part
        else:
            out += part
    return out


def _resample_axis(x, axis, taps, name):
    """``x`` resampled along ``axis`` by ``taps``; the gradient resamples by the transposed taps."""
    xp = be(x).xp
    r = _make(_apply_taps(xp, x._data, axis, taps.idx, taps.w), x.dtype)
    if needs_grad(x):
        record(name, _resample_rule, (x,), r, (axis, taps, name))
    return r


@on_arrays(lambda g, axis, taps, name: _apply_taps(backend_of_array(g).xp, g, axis, taps.t_idx, taps.t_w))
def _resample_rule(g, axis, taps, name):
    return _resample_axis(g, axis, taps.transposed(), name)


def _resize(x, out_size, scales, mode, align_corners, antialias):
    xp = be(x).xp
    dt = xp.float64 if x.dtype is D.float64 else xp.float32  # torch's opmath type
    name = _NODE_NAMES[mode].format(d=len(out_size)) + ("Aa" if antialias else "") + "Backward0"
    source = x
    for a, (n_out, scale) in enumerate(zip(out_size, scales)):
        axis = a + 2
        n_in = x.shape[axis]
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_taps(xp, n_in, n_out, scale, mode == "nearest-exact", len(out_size) == 2)
            if not (n_in == n_out and bool((idx == xp.arange(n_out)).all())):
                x = _resample_axis(x, axis, _Taps(xp, idx, None, n_in), name)
            continue
        if mode == "area":
            idx, w = _area_taps(xp, n_in, n_out, dt)
        elif antialias:
            idx, w = _antialias_taps(xp, n_in, n_out, scale, align_corners, dt, mode)
        elif mode == "bicubic":
            idx, w = _cubic_taps(xp, n_in, n_out, scale, align_corners, dt)
        else:
            idx, w = _linear_taps(xp, n_in, n_out, scale, align_corners, dt)
        x = _resample_axis(x, axis, _Taps(xp, idx, w, n_in), name)
    if x is source:  # every axis kept: still a new tensor, as torch returns
        from .elementwise import clone
        x = clone(x)
    return x


# ---- interpolate ---------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) or (hasattr(v, "__index__") and not isinstance(v, float))


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims of ``input`` ``[N, C, L]``, ``[N, C, H, W]`` or
    ``[N, C, D, H, W]`` to ``size`` or by ``scale_factor`` (torch.nn.functional.interpolate).

    ``mode``: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' and 'bicubic' (4-D,
    cubic convolution with A=-0.75 and border cells repeated), 'trilinear' (5-D), 'area'
    (adaptive average pooling) and 'lanczos' (4-D, Lanczos-3, antialias=True only).
    ``align_corners`` maps the corner cells' centres onto each other (interpolating modes
    only).  With a ``scale_factor`` the output size is
    ``floor(in * scale_factor)`` and, unless ``recompute_scale_factor`` is True, the
    source coordinate of output cell i uses ``1 / scale_factor`` (not in/out), as torch.
    ``antialias=True`` (bilinear and bicubic, 4-D) low-pass filters when downsampling,
    with PIL's filters (bicubic then uses A=-0.5).  Nearest modes take floating point and
    uint8, the others floating point; the result keeps ``input``'s dtype.

    Raises ValueError (both or neither of size and scale_factor, wrong number of sizes,
    align_corners with a non-interpolating mode, antialias outside bilinear/bicubic 4-D),
    TypeError (non-integer size), NotImplementedError (mode and rank that do not fit, or
    a dtype the mode does not take) and RuntimeError (an output size below 1).

    Where torch's CPU kernels disagree with themselves, ember keeps forward and gradient
    consistent: with a size kept under a scale factor other than 1, torch's plain bicubic
    interpolates forward but copies the gradient, its antialiased modes copy forward but
    interpolate the gradient, and its 1-d/3-d nearest backward takes the 2-d kernel's
    kept/doubled-size shortcuts that its forward does not; ember's gradient is the
    derivative of the forward (which matches torch's).  torch's antialiased forward with
    an output width of 1 repeats the first output row; ember resamples each axis.
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please provide "
                    "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            if not all(_is_int(v) for v in size):
                raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                                f"Tuple[int, int, int], but got size with types {[type(v) for v in size]}")
            out_size = [int(v) for v in size]
        else:
            out_size = [int(size)] * dim
        scales = [None] * max(dim, 0)
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but got input "
                    f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                    f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * max(dim, 0)
        out_size = None
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and out_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor and out_size is None:
        out_size = [int(math.floor(input.shape[i + 2] * scales[i])) for i in range(dim)]
        scales = [None] * dim
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
                         "a 4-D tensor as input")
    if mode == "lanczos" and dim == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    fits = mode in ("nearest", "nearest-exact", "area") or (mode in _LINEAR_RANK and _LINEAR_RANK[mode][0] == dim) \
        or (mode == "lanczos" and dim == 2)
    if not fits or not 1 <= dim <= 3:
        if mode in _LINEAR_RANK and mode != "bicubic" and 1 <= dim <= 3:
            rank, need = _LINEAR_RANK[mode]
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {need} input")
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                  f"for the modes: {_MODES} (got {mode})")
    if out_size is None:
        out_size = [int(math.floor(input.shape[i + 2] * scales[i])) for i in range(dim)]
    in_size = list(input.shape[2:])
    if min(out_size) <= 0 or min(in_size) <= 0:
        names = ("D", "H", "W")[3 - dim:]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{n}: {s}" for n, s in zip(names, in_size)) + ") output ("
            + ", ".join(f"{n}: {s}" for n, s in zip(names, out_size)) + ")")
    # torch's kernels take floating point, and uint8 in the nearest modes
    if not (input.dtype.is_floating_point or (input.dtype is D.uint8 and mode in ("nearest", "nearest-exact"))):
        kernel = "adaptive_avg_pool" if mode == "area" else f"upsample_{mode.replace('-', '_')}"
        raise NotImplementedError(f'"{kernel}{dim}d" not implemented for \'{_type_name(input.dtype)}\'')
    return _resize(input, out_size, scales, mode, align_corners, antialias)


def _type_name(dtype) -> str:
    from ._helpers import _type_name as name
    return name(dtype)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate (torch.nn.functional.upsample): warns, then resizes as
    ``interpolate(input, size, scale_factor, mode, align_corners)``.

    ``input``: ``[N, C, L]``, ``[N, C, H, W]`` or ``[N, C, D, H, W]``. ``size``: the output's
    spatial size, an int or one int per spatial dim; or ``scale_factor``: a float or one per
    spatial dim (one of the two). ``mode``: as interpolate's ('nearest' by default).
    ``align_corners``: interpolating modes only. Returns ``[N, C, *out]`` of the input's dtype;
    errors as interpolate's."""
    import warnings
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated (torch.nn.functional.upsample_nearest): warns, then ``interpolate(input, size,
    scale_factor, mode='nearest')``.

    ``input``: ``[N, C, L]``, ``[N, C, H, W]`` or ``[N, C, D, H, W]``. ``size``: the output's
    spatial size, an int or one int per spatial dim; or ``scale_factor``: a float or one per
    spatial dim (one of the two). Returns ``[N, C, *out]`` of the input's dtype; errors as
    interpolate's."""
    import warnings
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated (torch.nn.functional.upsample_bilinear): warns, then ``interpolate(input, size,
    scale_factor, mode='bilinear', align_corners=True)``.

    ``input``: ``[N, C, H, W]``, float. ``size``: the output's ``(H_out, W_out)``, an int or a
    pair; or ``scale_factor``: a float or a pair (one of the two). Returns ``[N, C, H_out,
    W_out]`` of the input's dtype; errors as interpolate's."""
    import warnings
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- pixel and channel shuffles ---------------------------------------------------------------

def pixel_shuffle(input, upscale_factor):
    """Sub-pixel rearrangement (torch.nn.functional.pixel_shuffle; Shi et al., arXiv:1609.05158):
    ``[*, C*r*r, H, W]`` to ``[*, C, H*r, W*r]``, each group of ``r*r`` channels becoming an
    r-by-r block of pixels.

    ``input``: ``[*, C*r*r, H, W]``, at least 3 dims, any dtype (kept). ``upscale_factor``:
    ``r``, positive. RuntimeError for fewer than 3 dims, ``r < 1``, or channels not divisible by
    ``r*r``."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    b = len(batch)
    x = input.reshape(tuple(batch) + (c // (r * r), r, r, h, w))
    x = x.permute(*range(b), b, b + 3, b + 1, b + 4, b + 2)
    return x.reshape(tuple(batch) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """The inverse of pixel_shuffle (torch.nn.functional.pixel_unshuffle): ``[*, C, H*r, W*r]`` to
    ``[*, C*r*r, H, W]``, each r-by-r block of pixels becoming ``r*r`` channels.

    ``input``: ``[*, C, H*r, W*r]``, at least 3 dims, any dtype (kept). ``downscale_factor``:
    ``r``, positive. RuntimeError for fewer than 3 dims, ``r < 1``, or H, W not divisible by
    ``r``."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    for name, n, d in (("height", h, -2), ("width", w, -1)):
        if n % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({d})={n} is not divisible by {r}")
    b = len(batch)
    x = input.reshape(tuple(batch) + (c, h // r, r, w // r, r))
    x = x.permute(*range(b), b, b + 2, b + 4, b + 1, b + 3)
    return x.reshape(tuple(batch) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """Channel shuffle (torch.nn.functional.channel_shuffle; ShuffleNet, Zhang et al.,
    arXiv:1707.01083): the channels of ``[N, C, *]``, seen as ``[groups, C/groups]``, transposed
    to ``[C/groups, groups]``, so the next grouped convolution mixes the groups.

    ``input``: ``[N, C, *]``, more than 2 dims, any dtype; the result has its shape and dtype.
    ``groups``: a positive divisor of ``C``. RuntimeError for fewer than 3 dims, ``groups < 1``,
    or ``C`` not divisible by ``groups``."""
    g = int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{g}")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {g} groups.")
    x = input.reshape((n, g, c // g) + tuple(rest)).transpose(1, 2)
    return x.reshape(tuple(input.shape))
