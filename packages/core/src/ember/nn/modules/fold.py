"""Sliding-block layers: Fold and Unfold (torch.nn.modules.fold)."""

from __future__ import annotations

from ...ops.conv import _fold, _unfold
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sums sliding local blocks ``[N, C*kH*kW, L]`` (or ``[C*kH*kW, L]``) back into an
    image ``[N, C, H, W]`` with ``(H, W) = output_size`` (torch.nn.Fold); arguments are
    stored as given (ints or pairs).  See ``ember.nn.functional.fold``.

    ``output_size``: the image's spatial size ``(H, W)`` (an int for both).
    ``kernel_size``, ``dilation``, ``padding``, ``stride``: an int or a pair each, as for
    Conv2d; ``L`` is the number of block positions, ``prod over dims of floor((size +
    2*padding - dilation*(kernel_size-1) - 1) / stride) + 1``.  Overlapping
    blocks are summed.  RuntimeError in forward when L does not match.
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extracts sliding local blocks of an image ``[N, C, H, W]`` (or ``[C, H, W]``) as
    ``[N, C*kH*kW, L]`` (torch.nn.Unfold).  See ``ember.nn.functional.unfold``.

    ``kernel_size``, ``dilation``, ``padding``, ``stride``: an int or a pair each, as for
    Conv2d; ``L`` is the number of block positions, ``prod over dims of floor((size +
    2*padding - dilation*(kernel_size-1) - 1) / stride) + 1``.
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")
