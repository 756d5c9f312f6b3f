"""Convolution layers: Conv1d, Conv2d (torch.nn.modules.conv)."""

from __future__ import annotations

import math

from ...ops.conv import conv1d as _conv1d
from ...ops.conv import conv2d as _conv2d
from ...ops.creation import empty
from .. import init
from ..parameter import Parameter
from .linear import _factory_kwargs
from .module import Module

__all__ = ["Conv1d", "Conv2d"]


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"expected {n} values, got {len(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


class _ConvNd(Module):
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode != "zeros":
            if padding_mode in ("reflect", "replicate", "circular"):
                raise NotImplementedError(f"padding_mode={padding_mode!r} is not supported by ember yet")
            raise ValueError(f"padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], "
                             f"but got padding_mode='{padding_mode}'")
        fk = _factory_kwargs(device, dtype)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = False
        self.output_padding = (0,) * n
        self.groups = groups
        self.padding_mode = padding_mode
        self.weight = Parameter(empty((out_channels, in_channels // groups) + self.kernel_size, **fk))
        if bias:
            self.bias = Parameter(empty(out_channels, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._n
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-d convolution over ``[N, C_in, H, W]`` (or ``[C_in, H, W]``) giving
    ``[N, C_out, H_out, W_out]``; weight ``[C_out, C_in/groups, kH, kW]``, bias ``[C_out]``
    (torch.nn.Conv2d). ``padding`` is an int, a pair, 'valid' or 'same'."""

    _n = 2

    def forward(self, input):
        return _conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-d convolution over ``[N, C_in, L]`` (or ``[C_in, L]``); weight ``[C_out, C_in/groups, k]``."""

    _n = 1

    def forward(self, input):
        return _conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
