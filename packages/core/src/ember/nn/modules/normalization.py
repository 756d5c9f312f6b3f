"""LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm (torch.nn.modules.normalization)."""

from __future__ import annotations

from ...ops.creation import empty
from ...ops.norm import group_norm as _group_norm
from ...ops.norm import layer_norm as _layer_norm
from ...ops.norm import local_response_norm as _local_response_norm
from ...ops.norm import rms_norm as _rms_norm
from .. import init
from ..parameter import Parameter
from .linear import _factory_kwargs
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _affine_parameters(module: Module, affine: bool, shape, bias: bool, fk: dict) -> None:
    """``weight`` (ones) and ``bias`` (zeros) of ``shape`` when ``affine``, else both None."""
    module.register_parameter("weight", Parameter(init.ones_(empty(shape, **fk))) if affine else None)
    module.register_parameter("bias", Parameter(init.zeros_(empty(shape, **fk))) if affine and bias else None)


def _reset_affine(module: Module) -> None:
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class LayerNorm(Module):
    """Normalise the last dims ``normalized_shape`` of ``[*, *normalized_shape]`` to zero mean
    and unit (biased) variance, then scale by ``weight`` and shift by ``bias`` (torch.nn.LayerNorm;
    Ba et al., 2016, arXiv:1607.06450).

    ``normalized_shape``: an int or the trailing shape normalised over.  ``eps``: added to the
    variance.  ``elementwise_affine``: learn ``weight`` (ones) and ``bias`` (zeros) of
    ``normalized_shape``; ``bias=False`` keeps the weight alone.  ``device``, ``dtype``: of
    the parameters.  Output: the input's shape.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _affine_parameters(self, elementwise_affine, self.normalized_shape, bias, fk)

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input):
        return _layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the C channels of ``[N, C, *]`` into ``num_groups`` groups, normalise each group
    of each sample, then scale and shift per channel by ``weight``/``bias`` ``[C]``
    (torch.nn.GroupNorm; Wu & He, 2018, arXiv:1803.08494).  ValueError when ``num_channels``
    is not divisible by ``num_groups``.

    ``num_channels``: C.  ``eps``: added to the variance.  ``affine``: learn ``weight`` (ones)
    and ``bias`` (zeros) ``[C]``; ``bias=False`` (keyword-only) keeps the weight alone.
    ``device``, ``dtype``: of the parameters.  Output: the input's shape.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        fk = _factory_kwargs(device, dtype)
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _affine_parameters(self, affine, (num_channels,), bias, fk)

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input):
        return _group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide ``[*, *normalized_shape]`` by the root mean square of its last dims, then scale
    by ``weight`` of ``normalized_shape`` (torch.nn.RMSNorm; Zhang & Sennrich, 2019).
    ``eps=None`` uses the machine epsilon of the input's dtype.

    ``normalized_shape``: an int or the trailing shape normalised over (arXiv:1910.07467).
    ``elementwise_affine``: learn ``weight`` (ones) of ``normalized_shape``.  ``device``,
    ``dtype``: of the parameter.  Output: the input's shape.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter("weight", Parameter(init.ones_(empty(self.normalized_shape, **fk)))
                                if elementwise_affine else None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return _rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each channel of ``[N, C, *]`` by the energy of its ``size`` neighbouring
    channels: ``x / (k + alpha / size * sum(x**2)) ** beta`` (torch.nn.LocalResponseNorm;
    Krizhevsky et al., 2012).  ValueError for input of fewer than 3 dims.

    ``size``: the number of channels summed over (centred on the channel, zero-padded at the
    ends).  ``alpha``: the scale, ``beta``: the exponent, ``k``: the additive constant.
    Output: the input's shape.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
