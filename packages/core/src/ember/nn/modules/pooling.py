"""Pooling layers in 1, 2 and 3 dimensions: max, max-unpool, average, power-average and
adaptive pools (torch.nn.modules.pooling).  Attributes keep what the constructor got, as
torch's do, so reprs and scripts read the same."""

from __future__ import annotations

from ...ops import pool as P
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d",
           "AvgPool2d", "AvgPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# ---- max pool ----------------------------------------------------------------------

class _MaxPoolNd(Module):
    _pool = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._pool(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over windows: ``[N, C, L]`` (or ``[C, L]``) to ``[N, C, L_out]``; with
    ``return_indices`` also the int64 positions of the maxima (torch.nn.MaxPool1d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` (implicit -inf, at
    most half the effective kernel, else RuntimeError in forward), ``dilation`` (spacing of the
    window taps): an int or a tuple of 1.  Each output size is ``floor((L + 2*padding -
    dilation*(kernel_size-1) - 1) / stride) + 1``, rounded up instead with ``ceil_mode``
    (windows starting in the right padding are dropped).
    ``return_indices``: also return the int64 flat positions of the maxima within each
    ``[*spatial]`` plane (for MaxUnpool1d).  Same dtype as the input.
    """

    _pool = staticmethod(P.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Max over windows: ``[N, C, H, W]`` (or ``[C, H, W]``) to ``[N, C, H_out, W_out]``
    (torch.nn.MaxPool2d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` (implicit -inf, at
    most half the effective kernel, else RuntimeError in forward), ``dilation`` (spacing of the
    window taps): an int or a tuple of 2.  Each output size is ``floor((L + 2*padding -
    dilation*(kernel_size-1) - 1) / stride) + 1``, rounded up instead with ``ceil_mode``
    (windows starting in the right padding are dropped).
    ``return_indices``: also return the int64 flat positions of the maxima within each
    ``[*spatial]`` plane (for MaxUnpool2d).  Same dtype as the input.
    """

    _pool = staticmethod(P.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Max over windows: ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) to
    ``[N, C, D_out, H_out, W_out]`` (torch.nn.MaxPool3d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` (implicit -inf, at
    most half the effective kernel, else RuntimeError in forward), ``dilation`` (spacing of the
    window taps): an int or a tuple of 3.  Each output size is ``floor((L + 2*padding -
    dilation*(kernel_size-1) - 1) / stride) + 1``, rounded up instead with ``ceil_mode``
    (windows starting in the right padding are dropped).
    ``return_indices``: also return the int64 flat positions of the maxima within each
    ``[*spatial]`` plane (for MaxUnpool3d).  Same dtype as the input.
    """

    _pool = staticmethod(P.max_pool3d)


# ---- max unpool --------------------------------------------------------------------

class _MaxUnpoolNd(Module):
    _nd = 0
    _unpool = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._nd)
        self.stride = _ntuple(stride if (stride is not None) else kernel_size, self._nd)
        self.padding = _ntuple(padding, self._nd)

    def forward(self, input, indices, output_size=None):
        return type(self)._unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of MaxPool1d: values put back at their indices, zeros elsewhere,
    ``[N, C, L]`` to ``[N, C, (L-1)*stride - 2*padding + kernel_size]`` (torch.nn.MaxUnpool1d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding``: those of the pool that
    made the indices, an int or a tuple of 1.  ``forward(input, indices, output_size=None)``:
    indices are the int64 positions MaxPool1d returned; ``output_size`` picks among the sizes
    that pool to the input's (each ``(L-1)*stride - 2*padding + kernel_size`` by default).
    """

    _nd = 1
    _unpool = staticmethod(P.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of MaxPool2d: ``[N, C, H, W]`` to ``[N, C, H_out, W_out]``
    (torch.nn.MaxUnpool2d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding``: those of the pool that
    made the indices, an int or a tuple of 2.  ``forward(input, indices, output_size=None)``:
    indices are the int64 positions MaxPool2d returned; ``output_size`` picks among the sizes
    that pool to the input's (each ``(L-1)*stride - 2*padding + kernel_size`` by default).
    """

    _nd = 2
    _unpool = staticmethod(P.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of MaxPool3d: ``[N, C, D, H, W]`` to ``[N, C, D_out, H_out, W_out]``
    (torch.nn.MaxUnpool3d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding``: those of the pool that
    made the indices, an int or a tuple of 3.  ``forward(input, indices, output_size=None)``:
    indices are the int64 positions MaxPool3d returned; ``output_size`` picks among the sizes
    that pool to the input's (each ``(L-1)*stride - 2*padding + kernel_size`` by default).
    """

    _nd = 3
    _unpool = staticmethod(P.max_unpool3d)


# ---- average pool ------------------------------------------------------------------

class _AvgPoolNd(Module):
    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Mean over windows: ``[N, C, L]`` (or ``[C, L]``) to ``[N, C, L_out]`` (torch.nn.AvgPool1d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` (zeros, at most half
    the kernel, else RuntimeError in forward): an int or a tuple of 1.  Each output size is
    ``floor((L + 2*padding - kernel_size) / stride) + 1``, rounded up instead with
    ``ceil_mode`` (windows starting in the right padding are dropped).
    ``count_include_pad``: divide by the whole window, padding included (the default), or by
    its input elements only.
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return P.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class _AvgPool23d(_AvgPoolNd):
    _pool = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return type(self)._pool(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPool23d):
    """Mean over windows: ``[N, C, H, W]`` (or ``[C, H, W]``) to ``[N, C, H_out, W_out]``
    (torch.nn.AvgPool2d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` (zeros, at most half
    the kernel, else RuntimeError in forward): an int or a tuple of 2.  Each output size is
    ``floor((L + 2*padding - kernel_size) / stride) + 1``, rounded up instead with
    ``ceil_mode`` (windows starting in the right padding are dropped).
    ``count_include_pad``: divide by the whole window, padding included (the default), or by
    its input elements only.  ``divisor_override``: divide every window by this int instead.
    """

    _pool = staticmethod(P.avg_pool2d)


class AvgPool3d(_AvgPool23d):
    """Mean over windows: ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) to
    ``[N, C, D_out, H_out, W_out]`` (torch.nn.AvgPool3d).

    ``kernel_size``, ``stride`` (default ``kernel_size``), ``padding`` (zeros, at most half
    the kernel, else RuntimeError in forward): an int or a tuple of 3.  Each output size is
    ``floor((L + 2*padding - kernel_size) / stride) + 1``, rounded up instead with
    ``ceil_mode`` (windows starting in the right padding are dropped).
    ``count_include_pad``: divide by the whole window, padding included (the default), or by
    its input elements only.  ``divisor_override``: divide every window by this int instead.
    """

    _pool = staticmethod(P.avg_pool3d)


# ---- power-average pool ------------------------------------------------------------

class _LPPoolNd(Module):
    _pool = None

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return type(self)._pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """``(sum of x**p over a window) ** (1/p)``: ``[N, C, L]`` (or ``[C, L]``) to
    ``[N, C, L_out]`` (torch.nn.LPPool1d).

    ``norm_type``: the power ``p`` (1 gives sum pooling).  ``kernel_size``,
    ``stride`` (default ``kernel_size``): an int or a tuple of 1; no padding.  ``ceil_mode``:
    round the output size up as the average pool does.
    """

    _pool = staticmethod(P.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling ``(sum of x**p over a window) ** (1/p)`` over ``[N, C, H, W]`` (or
    ``[C, H, W]``) to ``[N, C, H_out, W_out]`` (torch.nn.LPPool2d).

    ``norm_type``: the power ``p`` (1 gives sum pooling).  ``kernel_size``,
    ``stride`` (default ``kernel_size``): an int or a tuple of 2; no padding.  ``ceil_mode``:
    round the output size up as the average pool does.
    """

    _pool = staticmethod(P.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling ``(sum of x**p over a window) ** (1/p)`` over ``[N, C, D, H, W]``
    (or ``[C, D, H, W]``) to ``[N, C, D_out, H_out, W_out]`` (torch.nn.LPPool3d).

    ``norm_type``: the power ``p`` (1 gives sum pooling).  ``kernel_size``,
    ``stride`` (default ``kernel_size``): an int or a tuple of 3; no padding.  ``ceil_mode``:
    round the output size up as the average pool does.
    """

    _pool = staticmethod(P.lp_pool3d)


# ---- adaptive pools ----------------------------------------------------------------

class _AdaptiveAvgPoolNd(Module):
    _pool = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._pool(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to ``output_size`` cells: ``[N, C, L]`` (or ``[C, L]``) to
    ``[N, C, output_size]`` (torch.nn.AdaptiveAvgPool1d)."""

    _pool = staticmethod(P.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to ``output_size`` (an int or a pair, None keeping that size):
    ``[N, C, H, W]`` to ``[N, C, oH, oW]`` (torch.nn.AdaptiveAvgPool2d)."""

    _pool = staticmethod(P.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to ``output_size``: ``[N, C, D, H, W]`` to ``[N, C, oD, oH, oW]``
    (torch.nn.AdaptiveAvgPool3d)."""

    _pool = staticmethod(P.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    _pool = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._pool(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to ``output_size`` cells: ``[N, C, L]`` (or ``[C, L]``) to
    ``[N, C, output_size]``, with int64 indices when ``return_indices`` (torch.nn.AdaptiveMaxPool1d)."""

    _pool = staticmethod(P.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to ``output_size`` (an int or a pair, None keeping that size): ``[N, C, H, W]``
    (or ``[C, H, W]``) to ``[N, C, oH, oW]``; cell ``i`` covers ``floor(i*H/oH)`` to
    ``ceil((i+1)*H/oH)`` (torch.nn.AdaptiveMaxPool2d).  ``return_indices``: also return the
    int64 flat positions of the maxima within each ``[H, W]`` plane."""

    _pool = staticmethod(P.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to ``output_size`` (an int or a triple, None keeping that size):
    ``[N, C, D, H, W]`` (or ``[C, D, H, W]``) to ``[N, C, oD, oH, oW]``
    (torch.nn.AdaptiveMaxPool3d).  ``return_indices``: also return the int64 flat positions of
    the maxima within each ``[D, H, W]`` volume."""

    _pool = staticmethod(P.adaptive_max_pool3d)
