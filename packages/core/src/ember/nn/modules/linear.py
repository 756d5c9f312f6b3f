"""Linear, Bilinear, Identity, Flatten, Unflatten (torch.nn.modules.linear, flatten)."""

from __future__ import annotations

import math

from ... import _dtype as D
from ...ops.activation import bilinear as _bilinear
from ...ops.activation import linear as _linear
from ...ops.creation import empty
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Linear", "Bilinear", "Identity", "Flatten", "Unflatten"]


def _factory_kwargs(device, dtype):
    return {"device": device, "dtype": D.to_dtype(dtype) if dtype is not None else None}


class Identity(Module):
    """Returns its input; ignores constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``: input ``[*, in_features]``, output ``[*, out_features]``;
    weight ``[out_features, in_features]`` initialised with kaiming_uniform_(a=sqrt(5)) and
    bias uniform on ±1/sqrt(in_features), as torch.nn.Linear.

    ``in_features``, ``out_features``: the sizes of the last dim in and out.  ``bias``: learn
    the additive ``[out_features]`` bias.  ``device``, ``dtype``: of the parameters (the defaults
    when None).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), **fk))
        if bias:
            self.bias = Parameter(empty(out_features, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return _linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b``: input1 ``[*, in1_features]`` and input2 ``[*, in2_features]`` to
    ``[*, out_features]``; weight ``[out_features, in1_features, in2_features]`` and bias
    ``[out_features]`` drawn uniformly on ±1/sqrt(in1_features), as torch.nn.Bilinear.

    ``in1_features``, ``in2_features``, ``out_features``: the last-dim sizes of the two inputs
    and of the output (the leading dims of the inputs must match).  ``bias``: learn the
    additive bias.  ``device``, ``dtype``: of the parameters (the defaults when None).
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), **fk))
        if bias:
            self.bias = Parameter(empty(out_features, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return _bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")

class Flatten(Module):
    """Flatten dims ``start_dim`` to ``end_dim`` (both included, negative counting from the end)
    into one: ``[N, C, H, W]`` to ``[N, C*H*W]`` by default (torch.nn.Flatten)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
