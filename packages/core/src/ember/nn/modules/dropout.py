"""Dropout layers (torch.nn.modules.dropout)."""

from __future__ import annotations

from ...ops.activation import alpha_dropout as _alpha_dropout
from ...ops.activation import dropout as _dropout
from ...ops.activation import dropout1d as _dropout1d
from ...ops.activation import dropout2d as _dropout2d
from ...ops.activation import dropout3d as _dropout3d
from ...ops.activation import feature_alpha_dropout as _feature_alpha_dropout
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


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
    the identity in eval mode (torch.nn.Dropout; Srivastava et al., 2014, "Dropout: a simple
    way to prevent neural networks from overfitting").  Any shape, kept.

    ``p``: the drop probability (ValueError outside [0, 1]).  ``inplace``: overwrite the
    input.
    """

    def forward(self, input):
        return _dropout(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """In training, zero whole channels of ``[N, C, H, W]`` with probability ``p`` and scale the
    rest by 1/(1-p); the identity in eval mode (torch.nn.Dropout2d; Tompson et al., 2015,
    arXiv:1411.4280).  Other numbers of dims: see ``nn.functional.dropout2d``.

    ``p``: the drop probability (ValueError outside [0, 1]).  ``inplace``: overwrite the
    input.
    """

    def forward(self, input):
        return _dropout2d(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """In training, zero whole channels of ``[N, C, L]`` or ``[C, L]`` with probability ``p`` and
    scale the rest by 1/(1-p) (torch.nn.Dropout1d).  RuntimeError for other dims.

    ``p``: the drop probability (ValueError outside [0, 1]).  ``inplace``: overwrite the
    input.
    """

    def forward(self, input):
        return _dropout1d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """In training, zero whole channels of ``[N, C, D, H, W]`` or ``[C, D, H, W]`` with
    probability ``p`` and scale the rest by 1/(1-p) (torch.nn.Dropout3d); the identity in eval
    mode.

    ``p``: the drop probability (ValueError outside [0, 1]).  ``inplace``: overwrite the
    input.
    """

    def forward(self, input):
        return _dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """In training, alpha dropout: dropped elements take SELU's saturation value and the
    output is rescaled to keep zero mean and unit variance (torch.nn.AlphaDropout;
    Klambauer et al., 2017, arXiv:1706.02515).  Any shape; the identity in eval mode.

    ``p``: the drop probability (ValueError outside [0, 1]).  ``inplace``: overwrite the
    input.
    """

    def forward(self, input):
        return _alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """In training, alpha dropout of whole channels of ``[N, C, *]``
    (torch.nn.FeatureAlphaDropout); the identity in eval mode.

    ``p``: the drop probability (ValueError outside [0, 1]).  ``inplace``: overwrite the
    input.
    """

    def forward(self, input):
        return _feature_alpha_dropout(input, self.p, self.training, self.inplace)
