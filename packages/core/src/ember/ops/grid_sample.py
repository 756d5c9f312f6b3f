"""Sampling an image at given points: torch.nn.functional.affine_grid and grid_sample.

grid_sample reads ``input`` at the points of ``grid`` (normalized to [-1, 1]) and
interpolates between the neighbouring cells.  It is composed of differentiable ember ops:
the integer cell indices are constants, the neighbours are read by flat offsets (whose
gradient is a bincount-style scatter-add onto the input) and the interpolation weights are ember
expressions of the grid, so the gradient flows to both the input and the grid, and
higher-order gradients come for free.  Formulas follow torch's
aten/src/ATen/native/GridSampler.h: unnormalization, border clipping, reflection, and
bicubic convolution with A=-0.75 whose taps are each clipped or reflected.
"""

from __future__ import annotations

import warnings

from .. import _dtype as D
from .._autocast import autocast_op
from .._tensor import _make
from ..autograd.graph import on_arrays
from ..backends import backend_of_array
from ._helpers import _type_name, be, needs_grad, record, wrap
from .elementwise import where

__all__ = ["affine_grid", "grid_sample"]

_CUBIC_A = -0.75
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


# ---- affine_grid -----------------------------------------------------------------------------

def _base_coords(xp, n, align_corners, dt):
    """The normalized centres of ``n`` cells: -1..1 at the corner cells' centres with
    ``align_corners``, else at their outer edges."""
    if n <= 1:
        return xp.zeros(n, dtype=dt)
    a = 1.0 if align_corners else (n - 1) / n
    return xp.linspace(-a, a, n).astype(dt)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps (torch.nn.functional.affine_grid; spatial
    transformer networks, Jaderberg et al., arXiv:1506.02025), for grid_sample.

    ``theta``: float ``[N, 2, 3]`` with ``size`` ``(N, C, H, W)`` gives ``[N, H, W, 2]``; ``[N,
    3, 4]`` with ``(N, C, D, H, W)`` gives ``[N, D, H, W, 3]``: the map applied to each output
    cell's normalized (x, y[, z], 1), in the theta's dtype. ``align_corners``: True puts -1 and
    1 at the centres of the corner cells, False at their outer edges; None warns, as torch, and
    means False. Differentiable in ``theta``.

    ValueError for a non-floating theta, a theta shape that does not match ``size``, or sizes
    below 1; NotImplementedError for a ``size`` neither 4- nor 5-long; RuntimeError when the
    batch sizes differ."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size) if not isinstance(size, tuple) else size
    if len(size) not in (4, 5):
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    d = len(size) - 2
    if theta.ndim != 3 or theta.shape[-2] != d or theta.shape[-1] != d + 1:
        raise ValueError(f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {size}. "
                         f"Got {theta.shape}.")
    spatial = [int(s) for s in size[2:]]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = int(size[0])
    if theta.shape[0] != n:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{n}, {d + 1}] but got: "
                           f"[{theta.shape[0]}, {d + 1}].")
    xp = be(theta).xp
    dt = theta._data.dtype
    # base[..., k] is the normalized coordinate along x (k=0), y, z, then a column of ones
    axes = [_base_coords(xp, s, align_corners, dt) for s in spatial]  # D, H, W order
    mesh = xp.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(-1) for m in mesh[::-1]] + [xp.ones(mesh[0].size, dtype=dt)]
    base = wrap(xp.stack(cols, 1)[None], theta.dtype)  # [1, P, d + 1]
    from .linalg import matmul
    grid = matmul(base, theta.transpose(1, 2))  # [N, P, d]
    return grid.reshape((n,) + tuple(spatial) + (d,))


# ---- grid_sample ---------------------------------------------------------------------------

def _unnormalize(coord, size, align_corners):
    """[-1, 1] to cell coordinates: corner centres at -1/1 (align_corners) or corner edges."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """Reflect ``coord`` about the bounds (given doubled, so half cells stay integers) until
    it lies between them."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = dist.fmod(span)
    xp = be(coord).xp
    even = wrap(xp.floor(dist._data / span) % 2 == 0, D.bool_)
    return where(even, extra + low, (span + low) - extra)


def _fold(coord, size, padding_mode, align_corners):
    """torch's compute_coordinates: border clamps into the image, reflection mirrors first."""
    if padding_mode == "border":
        return coord.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0, size - 1)
    return coord


def _fold_array(xp, c, size, padding_mode, align_corners):
    """:func:`_fold` on a constant array (the bicubic taps)."""
    if padding_mode == "zeros":
        return c
    if padding_mode == "reflection":
        lo2, hi2 = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if lo2 == hi2:
            c = c * 0
        else:
            low, span = lo2 / 2, (hi2 - lo2) / 2
            dist = xp.abs(c - low)
            extra = xp.fmod(dist, span)
            c = xp.where(xp.floor(dist / span) % 2 == 0, extra + low, span - extra + low)
    return xp.clip(c, 0, size - 1)


def _read(flat, cells, sizes, weight):
    """``weight * input`` at integer cells (one int64 array ``[N, Q]`` per axis, x first);
    cells outside the image read 0.  ``flat`` is the input as ``[N, C, P]``."""
    xp = be(flat).xp
    inside = None
    lin = None
    stride = 1
    for c, s in zip(cells, sizes):
        ok = (c >= 0) & (c < s)
        inside = ok if inside is None else inside & ok
        term = xp.clip(c, 0, s - 1) * stride
        lin = term if lin is None else lin + term
        stride *= s
    n, ch, p = flat.shape
    # offsets into the whole flattened input, one per (batch, channel, point)
    rows = (xp.arange(n * ch, dtype=xp.int64) * p).reshape(n, ch, 1)
    vals = _take(flat, rows + lin[:, None, :])
    if not bool(inside.all()):
        weight = weight * wrap(inside.astype(flat._data.dtype), flat.dtype)
    return vals * weight.unsqueeze(1)


def _take(x, offsets):
    """``x.ravel()[offsets]``; its gradient adds each value back at its offset."""
    r = _make(be(x).xp.take(x._data.reshape(-1), offsets), x.dtype)
    if needs_grad(x):
        record("GridSampleGatherBackward0", _take_rule, (x,), r, (offsets, tuple(x.shape)))
    return r


@on_arrays(lambda g, offsets, shape: _put_array(backend_of_array(g).xp, g, offsets, shape))
def _take_rule(g, offsets, shape):
    return _put(g, offsets, shape)


def _put_array(xp, g, offsets, shape):
    size = 1
    for s in shape:
        size *= s
    summed = xp.bincount(offsets.reshape(-1), weights=g.reshape(-1), minlength=size)
    return summed.astype(g.dtype, copy=False).reshape(shape)


def _put(g, offsets, shape):
    """A zero tensor of ``shape`` with ``g`` added at the flat ``offsets``."""
    r = _make(_put_array(be(g).xp, g._data, offsets, shape), g.dtype)
    if needs_grad(g):
        record("GridSampleScatterBackward0", lambda gg, off: _take(gg, off), (g,), r, (offsets,))
    return r


def _cubic_coeffs(t):
    """The four cubic-convolution weights of taps -1, 0, 1, 2 at fraction ``t``."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _check(input, grid, mode, padding_mode):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    sizes = f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}"
    if input.ndim and grid.ndim and input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    if grid.ndim and grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got {sizes}")
    for i in range(2, input.ndim):
        if input.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {i} being empty")
    if mode == "bicubic" and input.ndim == 5:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"grid_sampler_{input.ndim - 2}d_cpu\" not implemented for "
                                  f"'{_type_name(input.dtype)}'")
    if grid.dtype is not input.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but got input of "
                           f"{input.dtype} and grid of {grid.dtype}")


@autocast_op("fp32")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` at the points of ``grid`` (torch.nn.functional.grid_sample).

    ``input`` ``[N, C, H, W]`` with ``grid`` ``[N, H_out, W_out, 2]`` gives ``[N, C, H_out, W_out]``;
    ``[N, C, D, H, W]`` with ``[N, D_out, H_out, W_out, 3]`` gives ``[N, C, D_out, H_out, W_out]``.
    ``grid[..., 0]`` is x (along W), then y, z, normalized so -1 and 1 are the corner
    cells' centres (``align_corners=True``) or their outer edges (False, the default, with
    torch's warning when not given).  ``mode``: 'bilinear' (trilinear for 5-D), 'nearest'
    (rounding half to even) or 'bicubic' (4-D, A=-0.75); ``padding_mode`` for points
    outside: 'zeros', 'border' (clamped) or 'reflection' (mirrored at the borders).
    Differentiable in ``input`` and ``grid`` (the grid gradient is 0 for 'nearest').
    Raises ValueError for an unknown mode or padding mode, RuntimeError for mismatched
    batch sizes, dims, dtypes, empty images or 5-D bicubic, NotImplementedError for
    non-floating input.
    """
    _check(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    xp = be(input).xp
    n, ch = input.shape[0], input.shape[1]
    d = input.ndim - 2
    out_spatial = tuple(grid.shape[1:-1])
    sizes = tuple(input.shape[2:])[::-1]  # x (W) first
    flat = input.reshape((n, ch, -1))
    g = grid.reshape((n, -1, d))
    coords = [_unnormalize(g[..., k], sizes[k], align_corners) for k in range(d)]
    dt = grid._data.dtype

    if mode == "bicubic":
        base = [xp.floor(c._data) for c in coords]
        coeffs = [_cubic_coeffs(c - wrap(b, grid.dtype)) for c, b in zip(coords, base)]
        out = None
        for j in range(4):
            for i in range(4):
                cells = [_fold_array(xp, base[0] + (i - 1), sizes[0], padding_mode, align_corners),
                         _fold_array(xp, base[1] + (j - 1), sizes[1], padding_mode, align_corners)]
                term = _read(flat, [c.astype(xp.int64) for c in cells], sizes, coeffs[0][i] * coeffs[1][j])
                out = term if out is None else out + term
    else:
        coords = [_fold(c, s, padding_mode, align_corners) for c, s in zip(coords, sizes)]
        if mode == "nearest":
            cells = [xp.round(c._data).astype(xp.int64) for c in coords]
            # the weight is 1; written from the grid so the grid gets its (zero) gradient
            out = _read(flat, cells, sizes, coords[0] * 0 + 1)
        else:
            base = [xp.floor(c._data) for c in coords]
            frac = [c - wrap(b.astype(dt), grid.dtype) for c, b in zip(coords, base)]
            out = None
            for corner in range(2 ** d):
                bits = [(corner >> k) & 1 for k in range(d)]
                weight = None
                for k, bit in enumerate(bits):
                    f = frac[k] if bit else 1 - frac[k]
                    weight = f if weight is None else weight * f
                cells = [(b + bit).astype(xp.int64) for b, bit in zip(base, bits)]
                term = _read(flat, cells, sizes, weight)
                out = term if out is None else out + term
    return out.reshape((n, ch) + out_spatial)
