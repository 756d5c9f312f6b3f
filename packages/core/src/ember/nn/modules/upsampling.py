"""Resizing layers: Upsample, UpsamplingNearest2d, UpsamplingBilinear2d
(torch.nn.modules.upsampling)."""

from __future__ import annotations

from ...ops.upsample import interpolate
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resize ``[N, C, L]``, ``[N, C, H, W]`` or ``[N, C, D, H, W]`` to ``size`` or by
    ``scale_factor`` with :func:`ember.nn.functional.interpolate` (torch.nn.Upsample).
    A scale factor is kept as a float (a tuple of floats when given as a tuple).

    ``size``: the output's spatial size (an int or a tuple); ``scale_factor``: or the
    multiplier of each spatial size (one of the two).  ``mode``: 'nearest', 'nearest-exact',
    'linear' (3-D), 'bilinear' / 'bicubic' (4-D) or 'trilinear' (5-D).  ``align_corners``
    (linear modes only): map the corner pixels' centres onto each other instead of their
    edges.  ``recompute_scale_factor``: compute the interpolation from the output size that
    ``scale_factor`` gives rather than from the factor itself.
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour resize of ``[N, C, H, W]`` to ``size`` or by ``scale_factor``
    (torch.nn.UpsamplingNearest2d, deprecated there in favour of interpolate)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear resize of ``[N, C, H, W]`` to ``size`` or by ``scale_factor``, with
    ``align_corners=True`` (torch.nn.UpsamplingBilinear2d, deprecated there in favour of
    interpolate)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
