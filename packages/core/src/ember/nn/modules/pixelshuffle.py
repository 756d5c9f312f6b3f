"""Space/channel rearranging layers: PixelShuffle, PixelUnshuffle, ChannelShuffle
(torch.nn.modules.pixelshuffle and channelshuffle)."""

from __future__ import annotations

from ...ops.upsample import channel_shuffle, pixel_shuffle, pixel_unshuffle
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """``[*, C*r*r, H, W]`` to ``[*, C, H*r, W*r]`` with r = ``upscale_factor`` (torch.nn.PixelShuffle)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``[*, C, H*r, W*r]`` to ``[*, C*r*r, H, W]`` with r = ``downscale_factor`` (torch.nn.PixelUnshuffle)."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the ``groups`` channel groups of ``[N, C, *]`` (torch.nn.ChannelShuffle)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
