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
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window(window_length, periodic, lambda k, m: 0.5 - 0.5 * numpy.cos(2 * math.pi * k / (m - 1)), dtype,
                   device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window(window_length, periodic, lambda k, m: alpha - beta * numpy.cos(2 * math.pi * k / (m - 1)), dtype,
                   device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window(window_length, periodic, lambda k, m: 0.42 - 0.5 * numpy.cos(2 * math.pi * k / (m - 1))
                   + 0.08 * numpy.cos(4 * math.pi * k / (m - 1)), dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangle 1 - ``|2n / (N - 1) - 1|``."""
    return _window(window_length, periodic, lambda k, m: 1 - numpy.abs(2 * k / (m - 1) - 1), dtype, device,
                   requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)."""
    return _window(window_length, periodic, lambda k, m: numpy.i0(beta * numpy.sqrt(
        numpy.clip(1 - (2 * k / (m - 1) - 1) ** 2, 0, None))) / numpy.i0(beta), dtype, device, requires_grad)
