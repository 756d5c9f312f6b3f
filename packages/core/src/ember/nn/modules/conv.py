"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn.modules.conv)."""

from __future__ import annotations

import math

from ...ops import conv as _F
from ...ops.creation import empty
from ...ops.layout import _pad_last_dims
from .. import init
from ..parameter import Parameter
from .linear import _factory_kwargs
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ["zeros", "reflect", "replicate", "circular"]


def _ntuple(v, n):
    """An int repeated ``n`` times; a sequence as a tuple (its length is checked by the
    functional form, as in torch)."""
    if isinstance(v, (tuple, list)):
        return tuple(int(x) for x in v)
    return (int(v),) * n


class _ConvNd(Module):
    """Shared parameters, initialisation and repr of the convolution layers; ``_n`` is the
    number of spatial dims, ``_transposed`` tells which weight layout is made."""

    _n = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, output_padding=0):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        stride = _ntuple(stride, n)
        valid = {"same", "valid"}
        if isinstance(padding, str):
            if self._transposed:  # torch splits the string into characters and fails in forward
                raise ValueError(f"padding must be an int or a tuple of ints for {type(self).__name__}, "
                                 f"got {padding!r}")
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        fk = _factory_kwargs(device, dtype)
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = stride
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad's argument for the non-zero padding modes: last dim first, (low, high) each
        if padding == "same":
            self._reversed_padding_repeated_twice = [
                v for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)) for v in _F._same_pad(k, d)]
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * n
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(self.padding) for _ in (0, 1)]
        shape = ((in_channels, out_channels // groups) if self._transposed
                 else (out_channels, in_channels // groups)) + self.kernel_size
        self.weight = Parameter(empty(shape, **fk))
        if bias:
            self.bias = Parameter(empty(out_channels, **fk))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default: kaiming-uniform weight (a=sqrt(5)), bias uniform in
        ``+-1/sqrt(fan_in)``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _conv = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)

    def forward(self, input):
        if self.padding_mode != "zeros":
            input = _pad_last_dims(input, self._reversed_padding_repeated_twice, self.padding_mode)
            return type(self)._conv(input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return type(self)._conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution over ``[N, C_in, L]`` (or ``[C_in, L]``) giving ``[N, C_out, L_out]``;
    weight ``[C_out, C_in/groups, k]``, bias ``[C_out]`` (torch.nn.Conv1d).

    ``in_channels``, ``out_channels``: C_in and C_out, both divisible by ``groups``.
    ``kernel_size``, ``stride``, ``padding``, ``dilation`` (spacing of the kernel taps): an int
    for every spatial dim or a tuple of 1; ``padding`` is also 'valid' (none) or 'same' (the
    input's size, stride 1 only).  ``padding_mode``: 'zeros', 'reflect', 'replicate' or
    'circular', what the padding holds.  ``groups``: the channels split into that many groups
    convolved apart (``groups == in_channels`` is depthwise).  ``bias``: learn a ``[C_out]``
    bias.  ``device``, ``dtype``: of the parameters (the defaults when None).  Each output
    size is ``floor((L + 2*padding - dilation*(k-1) - 1) / stride) + 1``.  Weight initialised
    with kaiming_uniform_(a=sqrt(5)), bias uniform on ±1/sqrt(fan_in), ``fan_in = C_in/groups
    * prod(kernel_size)``.  ValueError (as torch) for groups not dividing the channels, a bad
    padding string or mode, and 'same' with a stride.
    """

    _n = 1
    _conv = _F.conv1d


class Conv2d(_Conv):
    """2-d convolution over ``[N, C_in, H, W]`` (or ``[C_in, H, W]``) giving
    ``[N, C_out, H_out, W_out]``; weight ``[C_out, C_in/groups, kH, kW]``, bias ``[C_out]``
    (torch.nn.Conv2d).

    ``in_channels``, ``out_channels``: C_in and C_out, both divisible by ``groups``.
    ``kernel_size``, ``stride``, ``padding``, ``dilation`` (spacing of the kernel taps): an int
    for every spatial dim or a tuple of 2; ``padding`` is also 'valid' (none) or 'same' (the
    input's size, stride 1 only).  ``padding_mode``: 'zeros', 'reflect', 'replicate' or
    'circular', what the padding holds.  ``groups``: the channels split into that many groups
    convolved apart (``groups == in_channels`` is depthwise).  ``bias``: learn a ``[C_out]``
    bias.  ``device``, ``dtype``: of the parameters (the defaults when None).  Each output
    size is ``floor((L + 2*padding - dilation*(k-1) - 1) / stride) + 1``.  Weight initialised
    with kaiming_uniform_(a=sqrt(5)), bias uniform on ±1/sqrt(fan_in), ``fan_in = C_in/groups
    * prod(kernel_size)``.  ValueError (as torch) for groups not dividing the channels, a bad
    padding string or mode, and 'same' with a stride.
    """

    _n = 2
    _conv = _F.conv2d


class Conv3d(_Conv):
    """3-d convolution over ``[N, C_in, D, H, W]`` (or unbatched) giving
    ``[N, C_out, D_out, H_out, W_out]``; weight ``[C_out, C_in/groups, kD, kH, kW]``
    (torch.nn.Conv3d).

    ``in_channels``, ``out_channels``: C_in and C_out, both divisible by ``groups``.
    ``kernel_size``, ``stride``, ``padding``, ``dilation`` (spacing of the kernel taps): an int
    for every spatial dim or a tuple of 3; ``padding`` is also 'valid' (none) or 'same' (the
    input's size, stride 1 only).  ``padding_mode``: 'zeros', 'reflect', 'replicate' or
    'circular', what the padding holds.  ``groups``: the channels split into that many groups
    convolved apart (``groups == in_channels`` is depthwise).  ``bias``: learn a ``[C_out]``
    bias.  ``device``, ``dtype``: of the parameters (the defaults when None).  Each output
    size is ``floor((L + 2*padding - dilation*(k-1) - 1) / stride) + 1``.  Weight initialised
    with kaiming_uniform_(a=sqrt(5)), bias uniform on ±1/sqrt(fan_in), ``fan_in = C_in/groups
    * prod(kernel_size)``.  ValueError (as torch) for groups not dividing the channels, a bad
    padding string or mode, and 'same' with a stride.
    """

    _n = 3
    _conv = _F.conv3d


class _ConvTransposeNd(_ConvNd):
    _transposed = True
    _conv = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, output_padding)

    def _output_padding(self, input, output_size):
        """The output_padding giving ``output_size`` (spatial sizes, optionally with the
        batch and channel dims in front); ValueError when it is out of reach."""
        if output_size is None:
            return self.output_padding
        n = self._n
        lead = 2 if input.ndim == n + 2 else 1
        output_size = [int(s) for s in output_size]
        if len(output_size) == n + lead:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or {n + lead} "
                             f"elements (got {len(output_size)})")
        low = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
               + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        high = [lo + s - 1 for lo, s in zip(low, self.stride)]
        if any(not lo <= s <= hi for s, lo, hi in zip(output_size, low, high)):
            raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {low} to "
                             f"{high} (for an input of {list(input.shape[lead:])})")
        return tuple(s - lo for s, lo in zip(output_size, low))

    def forward(self, input, output_size=None):
        return type(self)._conv(input, self.weight, self.bias, self.stride, self.padding,
                                self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over ``[N, C_in, L]`` (or ``[C_in, L]``); weight
    ``[C_in, C_out/groups, k]``, bias ``[C_out]``, giving ``[N, C_out, L_out]``
    (torch.nn.ConvTranspose1d; the gradient of Conv1d with respect to its input).

    ``in_channels``, ``out_channels``: C_in and C_out, both divisible by ``groups``.
    ``kernel_size``, ``stride``, ``padding``, ``output_padding``, ``dilation``: an int for every
    spatial dim or a tuple of 1.  ``padding`` takes ``padding`` off both ends of each output
    dim (it is the padding of the convolution this one is the gradient of); ``output_padding``
    adds that much at the high end, choosing among the sizes a strided convolution maps to the
    same input size (smaller than ``stride`` or ``dilation``, else RuntimeError in forward).
    ``groups``: the channels split into that many groups.  ``bias``: learn a ``[C_out]`` bias.
    ``padding_mode``: only 'zeros' (ValueError else, as torch).  ``device``, ``dtype``: of the
    parameters (the defaults when None).  Each output size is ``(L-1)*stride - 2*padding +
    dilation*(k-1) + output_padding + 1``; ``forward(input, output_size=None)``: an
    ``output_size`` picks the output padding that gives it (ValueError when out of reach).
    Initialised as the convolutions (kaiming_uniform_(a=sqrt(5)), fan_in from the weight's dim
    1).  A string padding raises ValueError (torch accepts it here and fails in forward).
    """

    _n = 1
    _conv = _F.conv_transpose1d


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution over ``[N, C_in, H, W]`` (or ``[C_in, H, W]``) giving
    ``[N, C_out, H_out, W_out]``, ``H_out = (H-1)*stride - 2*padding + dilation*(kH-1) +
    output_padding + 1``; weight ``[C_in, C_out/groups, kH, kW]``, bias ``[C_out]``
    (torch.nn.ConvTranspose2d; the gradient of Conv2d with respect to its input).

    ``in_channels``, ``out_channels``: C_in and C_out, both divisible by ``groups``.
    ``kernel_size``, ``stride``, ``padding``, ``output_padding``, ``dilation``: an int for every
    spatial dim or a tuple of 2.  ``padding`` takes ``padding`` off both ends of each output
    dim (it is the padding of the convolution this one is the gradient of); ``output_padding``
    adds that much at the high end, choosing among the sizes a strided convolution maps to the
    same input size (smaller than ``stride`` or ``dilation``, else RuntimeError in forward).
    ``groups``: the channels split into that many groups.  ``bias``: learn a ``[C_out]`` bias.
    ``padding_mode``: only 'zeros' (ValueError else, as torch).  ``device``, ``dtype``: of the
    parameters (the defaults when None).  Each output size is ``(L-1)*stride - 2*padding +
    dilation*(k-1) + output_padding + 1``; ``forward(input, output_size=None)``: an
    ``output_size`` picks the output padding that gives it (ValueError when out of reach).
    Initialised as the convolutions (kaiming_uniform_(a=sqrt(5)), fan_in from the weight's dim
    1).  A string padding raises ValueError (torch accepts it here and fails in forward).
    """

    _n = 2
    _conv = _F.conv_transpose2d


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over ``[N, C_in, D, H, W]`` (or unbatched); weight
    ``[C_in, C_out/groups, kD, kH, kW]``, bias ``[C_out]``, giving
    ``[N, C_out, D_out, H_out, W_out]`` (torch.nn.ConvTranspose3d).

    ``in_channels``, ``out_channels``: C_in and C_out, both divisible by ``groups``.
    ``kernel_size``, ``stride``, ``padding``, ``output_padding``, ``dilation``: an int for every
    spatial dim or a tuple of 3.  ``padding`` takes ``padding`` off both ends of each output
    dim (it is the padding of the convolution this one is the gradient of); ``output_padding``
    adds that much at the high end, choosing among the sizes a strided convolution maps to the
    same input size (smaller than ``stride`` or ``dilation``, else RuntimeError in forward).
    ``groups``: the channels split into that many groups.  ``bias``: learn a ``[C_out]`` bias.
    ``padding_mode``: only 'zeros' (ValueError else, as torch).  ``device``, ``dtype``: of the
    parameters (the defaults when None).  Each output size is ``(L-1)*stride - 2*padding +
    dilation*(k-1) + output_padding + 1``; ``forward(input, output_size=None)``: an
    ``output_size`` picks the output padding that gives it (ValueError when out of reach).
    Initialised as the convolutions (kaiming_uniform_(a=sqrt(5)), fan_in from the weight's dim
    1).  A string padding raises ValueError (torch accepts it here and fails in forward).
    """

    _n = 3
    _conv = _F.conv_transpose3d
