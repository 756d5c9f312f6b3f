"""LayerNorm (torch.nn.modules.normalization)."""

from __future__ import annotations

from ...ops.creation import empty
from ...ops.norm import layer_norm as _layer_norm
from .. import init
from ..parameter import Parameter
from .linear import _factory_kwargs
from .module import Module

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """Normalise the last dims ``normalized_shape`` of ``[*, *normalized_shape]`` to zero mean
    and unit variance, then scale by ``weight`` and shift by ``bias`` (torch.nn.LayerNorm)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, **fk))
            if bias:
                self.bias = Parameter(empty(self.normalized_shape, **fk))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return _layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")
