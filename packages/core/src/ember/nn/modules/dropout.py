"""Dropout layers (torch.nn.modules.dropout)."""

from __future__ import annotations

from ...ops.activation import dropout as _dropout
from ...ops.activation import dropout2d as _dropout2d
from .module import Module

__all__ = ["Dropout", "Dropout2d"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """In training, zero each element with probability ``p`` and scale the rest by 1/(1-p);
    the identity in eval mode (torch.nn.Dropout). Any shape."""

    def forward(self, input):
        return _dropout(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """In training, zero whole channels of ``[N, C, H, W]`` with probability ``p`` (torch.nn.Dropout2d)."""

    def forward(self, input):
        return _dropout2d(input, self.p, self.training, self.inplace)
