"""Window functions for spectral analysis (torch.hann_window, ...): 1-d tensors of length
``window_length``; ``periodic=True`` (the default, for use with stft) computes the
symmetric window of length N + 1 and drops its last point.  Formulas: torch's docs."""

from __future__ import annotations

import math

import numpy

from .. import _dtype as D
from .creation import tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


def _window(n, periodic, fn, dtype, device, requires_grad):
    if n < 0:
        raise RuntimeError(f"window_length must be non-negative, got {n}")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if n == 0:
        values = numpy.zeros(0)
    elif n == 1:
        values = numpy.ones(1)
    else:
        m = n + 1 if periodic else n
        values = fn(numpy.arange(m, dtype=numpy.float64), m)[:n]
    return tensor(values, dtype=dt, device=device, requires_grad=requires_grad)  # computed on the host


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``, n = 0 .. N-1, as a 1-d tensor
    (torch.hann_window).

    ``window_length`` is the number of samples N (0 gives an empty window, 1 the window
    [1]); with ``periodic`` (the default) the window of length N + 1 is computed and its
    last sample dropped, so it repeats seamlessly (for spectral analysis); without it the
    window is symmetric. ``dtype`` defaults to the default dtype; ``device`` places it;
    ``requires_grad`` makes it a leaf that records gradients; ``layout`` is accepted
    (strided only). Computed in float64 on the host, then cast."""
    return _window(window_length, periodic, lambda k, m: 0.5 - 0.5 * numpy.cos(2 * math.pi * k / (m - 1)), dtype,
                   device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))``, n = 0 .. N-1, as a 1-d tensor
    (torch.hamming_window); ``alpha`` (0.54) and ``beta`` (0.46) are its coefficients.

    ``window_length`` is the number of samples N (0 gives an empty window, 1 the window
    [1]); with ``periodic`` (the default) the window of length N + 1 is computed and its
    last sample dropped, so it repeats seamlessly (for spectral analysis); without it the
    window is symmetric. ``dtype`` defaults to the default dtype; ``device`` places it;
    ``requires_grad`` makes it a leaf that records gradients; ``layout`` is accepted
    (strided only). Computed in float64 on the host, then cast."""
    return _window(window_length, periodic, lambda k, m: alpha - beta * numpy.cos(2 * math.pi * k / (m - 1)), dtype,
                   device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``, n
    = 0 .. N-1, as a 1-d tensor (torch.blackman_window).

    ``window_length`` is the number of samples N (0 gives an empty window, 1 the window
    [1]); with ``periodic`` (the default) the window of length N + 1 is computed and its
    last sample dropped, so it repeats seamlessly (for spectral analysis); without it the
    window is symmetric. ``dtype`` defaults to the default dtype; ``device`` places it;
    ``requires_grad`` makes it a leaf that records gradients; ``layout`` is accepted
    (strided only). Computed in float64 on the host, then cast."""
    return _window(window_length, periodic, lambda k, m: 0.42 - 0.5 * numpy.cos(2 * math.pi * k / (m - 1))
                   + 0.08 * numpy.cos(4 * math.pi * k / (m - 1)), dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangle) window ``1 - |2n / (N - 1) - 1|``, n = 0 .. N-1, as a 1-d tensor
    (torch.bartlett_window).

    ``window_length`` is the number of samples N (0 gives an empty window, 1 the window
    [1]); with ``periodic`` (the default) the window of length N + 1 is computed and its
    last sample dropped, so it repeats seamlessly (for spectral analysis); without it the
    window is symmetric. ``dtype`` defaults to the default dtype; ``device`` places it;
    ``requires_grad`` makes it a leaf that records gradients; ``layout`` is accepted
    (strided only). Computed in float64 on the host, then cast."""
    return _window(window_length, periodic, lambda k, m: 1 - numpy.abs(2 * k / (m - 1) - 1), dtype, device,
                   requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2n / (N - 1) - 1)**2)) / I0(beta)``, n = 0 .. N-1,
    as a 1-d tensor (torch.kaiser_window); ``beta`` (12.0) sets its shape.

    ``window_length`` is the number of samples N (0 gives an empty window, 1 the window
    [1]); with ``periodic`` (the default) the window of length N + 1 is computed and its
    last sample dropped, so it repeats seamlessly (for spectral analysis); without it the
    window is symmetric. ``dtype`` defaults to the default dtype; ``device`` places it;
    ``requires_grad`` makes it a leaf that records gradients; ``layout`` is accepted
    (strided only). Computed in float64 on the host, then cast."""
    return _window(window_length, periodic, lambda k, m: numpy.i0(beta * numpy.sqrt(
        numpy.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / numpy.i0(beta), dtype, device, requires_grad)
