"""IIR filtering: lfilter, filtfilt, the RBJ biquads, preemphasis and deemphasis.

``lfilter`` computes the FIR part with ``conv1d`` and the all-pole recursion in an autograd
Function whose backward is the same recursion run backwards in time (the adjoint of a causal
all-pole filter), so gradients reach the waveform and both coefficient vectors, to any order.
The recursion itself runs on the host through ``scipy.signal.lfilter`` (numpy has no
recursive filter); tensors on other devices are copied there and back.
Sources: torchaudio 2.8 ``functional.filtering``; R. Bristow-Johnson, "Cookbook formulae for
audio EQ biquad filter coefficients" (the biquads).
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember.autograd import Function
from ember.nn import functional as F

__all__ = ["lfilter", "filtfilt", "biquad", "lowpass_biquad", "highpass_biquad", "bandpass_biquad",
           "bandreject_biquad", "allpass_biquad", "equalizer_biquad", "preemphasis", "deemphasis"]


def _all_pole(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """``y[n] = x[n] - sum_{k>=1} a[c, k] y[n - k]`` for ``x [B, C, T]``, ``a [C, K]`` with a[:, 0] == 1."""
    from scipy.signal import lfilter as _sp_lfilter
    out = np.empty_like(x)
    one = np.ones(1, dtype=x.dtype)
    for c in range(x.shape[1]):
        out[:, c] = _sp_lfilter(one, a[c], x[:, c], axis=-1)
    return out


class _AllPole(Function):
    """The recursion of lfilter with normalized denominators ``a [C, K]`` (``a[:, 0] == 1``)."""

    @staticmethod
    def forward(ctx, x, a):
        xa = x.detach().cpu().numpy()
        aa = a.detach().cpu().numpy().astype(xa.dtype)
        y = ember.from_numpy(_all_pole(xa, aa)).to(x.device)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        a, y = ctx.saved_tensors
        # The adjoint of a causal all-pole filter is the same filter run anti-causally.
        grad_x = _AllPole.apply(grad_y.flip(-1), a).flip(-1)
        grad_a = None
        if ctx.needs_input_grad[1]:
            order = a.shape[1]
            y_pad = F.pad(y, (order - 1, 0))
            T = y.shape[-1]
            # d y / d a[k] enters the recursion as -y[n - k]; k = 0 is fixed at 1 (normalized).
            cols = [-(grad_x * y_pad[..., order - 1 - k:order - 1 - k + T]).sum((0, 2)) for k in range(order)]
            grad_a = ember.stack(cols, -1)
            grad_a = ember.cat([ember.zeros_like(grad_a[:, :1]), grad_a[:, 1:]], -1)
        return grad_x, grad_a


def _lfilter(waveform, a_coeffs, b_coeffs):
    """``waveform [B, C, T]`` through filter c of ``a, b [C, K]``."""
    n_channel = waveform.shape[1]
    order = a_coeffs.shape[1]
    padded = F.pad(waveform, (order - 1, 0))
    fir = F.conv1d(padded, b_coeffs.flip(1).unsqueeze(1), groups=n_channel)
    a0 = a_coeffs[:, :1]
    return _AllPole.apply(fir / a0, a_coeffs / a0)


def lfilter(waveform, a_coeffs, b_coeffs, clamp=True, batching=True):
    """An IIR filter by its difference equation,
    ``a[0] y[n] = sum_k b[k] x[n - k] - sum_{k>=1} a[k] y[n - k]``, with zero initial state.

    Args:
        waveform: ``[..., time]``.
        a_coeffs, b_coeffs: ``[K]`` (one filter) or ``[F, K]`` (a bank of F filters), the
            denominator and numerator, lowest delay first; same shape.
        clamp: clip the output to [-1, 1].
        batching: with ``[F, K]`` coefficients, True applies filter i to ``waveform[..., i, :]``
            (which must have F rows); False applies every filter to the whole waveform,
            giving ``[..., F, time]``.

    Returns ``[..., time]`` (or ``[..., F, time]``).  Differentiable in all three tensors.
    Raises ValueError for mismatched coefficient shapes.  Source: torchaudio 2.8 ``lfilter``.
    """
    if tuple(a_coeffs.shape) != tuple(b_coeffs.shape):
        raise ValueError(f"Expected coeffs to be the same size, got a_coeffs {list(a_coeffs.shape)} and b_coeffs "
                         f"{list(b_coeffs.shape)}")
    if a_coeffs.ndim not in (1, 2):
        raise ValueError(f"Expected coeffs to be 1D or 2D, got a_coeffs with {a_coeffs.ndim} dims")
    squeeze = a_coeffs.ndim == 1
    if not squeeze:
        if batching:
            if waveform.ndim < 2 or a_coeffs.shape[0] != waveform.shape[-2]:
                raise ValueError(f"Expected waveform [..., {a_coeffs.shape[0]}, time] to match the "
                                 f"{a_coeffs.shape[0]} filters (batching=True), got {list(waveform.shape)}")
        else:
            waveform = ember.stack([waveform] * a_coeffs.shape[0], -2)
    else:
        a_coeffs = a_coeffs.unsqueeze(0)
        b_coeffs = b_coeffs.unsqueeze(0)
        waveform = waveform.unsqueeze(-2)
    shape = tuple(waveform.shape)
    x = waveform.reshape(-1, a_coeffs.shape[0], shape[-1])
    out = _lfilter(x, a_coeffs.to(x.dtype), b_coeffs.to(x.dtype))
    if clamp:
        out = ember.clamp(out, min=-1.0, max=1.0)
    out = out.reshape(shape)
    return out.squeeze(-2) if squeeze else out


def filtfilt(waveform, a_coeffs, b_coeffs, clamp=True):
    """Zero-phase filtering: ``lfilter`` forwards, then backwards over the reversed result
    (torchaudio.functional.filtfilt).

    As torchaudio's (and unlike ``scipy.signal.filtfilt``) it neither pads the ends nor sets
    initial conditions: both passes start from a zero state. ``waveform``, ``a_coeffs`` and
    ``b_coeffs`` are shaped as ``lfilter``'s with ``batching=True``; ``clamp`` clips the final
    output to [-1, 1] (the intermediate pass is not clipped). Raises ValueError as ``lfilter``.
    """
    forward = lfilter(waveform, a_coeffs, b_coeffs, clamp=False, batching=True)
    return lfilter(forward.flip(-1), a_coeffs, b_coeffs, clamp=clamp, batching=True).flip(-1)


def _as(value, like):
    return ember.as_tensor(value, dtype=like.dtype, device=like.device).view(1)


def biquad(waveform, b0, b1, b2, a0, a1, a2):
    """A second-order IIR filter ``(b0 + b1 z^-1 + b2 z^-2) / (a0 + a1 z^-1 + a2 z^-2)`` over
    ``waveform [..., time]`` (output clamped to [-1, 1], as lfilter's default;
    torchaudio.functional.biquad). The coefficients ``b0``, ``b1``, ``b2`` (numerator) and
    ``a0``, ``a1``, ``a2`` (denominator) are numbers or 0-d tensors (differentiable).
    """
    coeffs = [_as(c, waveform) for c in (b0, b1, b2, a0, a1, a2)]
    return lfilter(waveform, ember.cat(coeffs[3:]), ember.cat(coeffs[:3]))


def _w0_alpha(waveform, sample_rate, freq, Q):
    freq = ember.as_tensor(freq, dtype=waveform.dtype, device=waveform.device)
    Q = ember.as_tensor(Q, dtype=waveform.dtype, device=waveform.device)
    w0 = 2 * math.pi * freq / sample_rate
    return w0, ember.sin(w0) / 2 / Q


def lowpass_biquad(waveform, sample_rate, cutoff_freq, Q=0.707):
    """Second-order low-pass at ``cutoff_freq`` Hz (RBJ cookbook; torchaudio.functional.lowpass_biquad):
    ``waveform`` ``[..., time]`` float, ``sample_rate`` in Hz, quality factor ``Q``; output clamped to [-1, 1].
    """
    w0, alpha = _w0_alpha(waveform, sample_rate, cutoff_freq, Q)
    cos = ember.cos(w0)
    b0 = (1 - cos) / 2
    return biquad(waveform, b0, 1 - cos, b0, 1 + alpha, -2 * cos, 1 - alpha)


def highpass_biquad(waveform, sample_rate, cutoff_freq, Q=0.707):
    """Second-order high-pass at ``cutoff_freq`` Hz (RBJ cookbook; torchaudio.functional.highpass_biquad):
    ``waveform`` ``[..., time]`` float, ``sample_rate`` in Hz, quality factor ``Q``; output clamped to [-1, 1].
    """
    w0, alpha = _w0_alpha(waveform, sample_rate, cutoff_freq, Q)
    cos = ember.cos(w0)
    b0 = (1 + cos) / 2
    return biquad(waveform, b0, -1 - cos, b0, 1 + alpha, -2 * cos, 1 - alpha)


def bandpass_biquad(waveform, sample_rate, central_freq, Q=0.707, const_skirt_gain=False):
    """Second-order band-pass around ``central_freq`` Hz: 0 dB peak gain, or constant skirt
    gain (peak gain Q) with ``const_skirt_gain=True`` (RBJ cookbook; torchaudio.functional.bandpass_biquad):
    ``waveform`` ``[..., time]`` float, ``sample_rate`` in Hz, quality factor ``Q``; output clamped to [-1, 1].
    """
    w0, alpha = _w0_alpha(waveform, sample_rate, central_freq, Q)
    temp = ember.sin(w0) / 2 if const_skirt_gain else alpha
    return biquad(waveform, temp, 0.0, -temp, 1 + alpha, -2 * ember.cos(w0), 1 - alpha)


def bandreject_biquad(waveform, sample_rate, central_freq, Q=0.707):
    """Second-order notch at ``central_freq`` Hz (RBJ cookbook; torchaudio.functional.bandreject_biquad):
    ``waveform`` ``[..., time]`` float, ``sample_rate`` in Hz, quality factor ``Q``; output clamped to [-1, 1].
    """
    w0, alpha = _w0_alpha(waveform, sample_rate, central_freq, Q)
    cos = ember.cos(w0)
    return biquad(waveform, 1.0, -2 * cos, 1.0, 1 + alpha, -2 * cos, 1 - alpha)


def allpass_biquad(waveform, sample_rate, central_freq, Q=0.707):
    """Second-order all-pass (unit gain, phase turning through -pi at ``central_freq`` Hz; RBJ
    cookbook; torchaudio.functional.allpass_biquad): ``waveform`` ``[..., time]`` float, ``sample_rate`` in Hz,
    quality factor ``Q``; output clamped to [-1, 1].
    """
    w0, alpha = _w0_alpha(waveform, sample_rate, central_freq, Q)
    cos = ember.cos(w0)
    return biquad(waveform, 1 - alpha, -2 * cos, 1 + alpha, 1 + alpha, -2 * cos, 1 - alpha)


def equalizer_biquad(waveform, sample_rate, center_freq, gain, Q=0.707):
    """Peaking equalizer: ``gain`` dB at ``center_freq`` Hz, 0 dB far from it (RBJ cookbook;
    torchaudio.functional.equalizer_biquad): ``waveform`` ``[..., time]`` float, ``sample_rate`` in Hz, quality factor
    ``Q``; output clamped to [-1, 1].
    """
    w0, alpha = _w0_alpha(waveform, sample_rate, center_freq, Q)
    gain = ember.as_tensor(gain, dtype=waveform.dtype, device=waveform.device)
    A = ember.exp(gain / 40.0 * math.log(10))
    cos = ember.cos(w0)
    return biquad(waveform, 1 + alpha * A, -2 * cos, 1 - alpha * A, 1 + alpha / A, -2 * cos, 1 - alpha / A)


def preemphasis(waveform, coeff=0.97):
    """``y[n] = x[n] - coeff * x[n - 1]`` along the last dim of ``waveform [..., time]``; the first
    sample is kept (torchaudio.functional.preemphasis). ``coeff`` is typically in [0.9, 1.0].
    """
    return ember.cat([waveform[..., :1], waveform[..., 1:] - coeff * waveform[..., :-1]], -1)


def deemphasis(waveform, coeff=0.97):
    """The inverse of preemphasis, ``y[n] = x[n] + coeff * y[n - 1]`` (``coeff`` as given to
    preemphasis) along the last dim of
    ``waveform`` ``[..., time]`` (through lfilter, whose default clamps the output to [-1, 1],
    as torchaudio.functional.deemphasis's)."""
    a = ember.tensor([1.0, -coeff], dtype=waveform.dtype, device=waveform.device)
    b = ember.tensor([1.0, 0.0], dtype=waveform.dtype, device=waveform.device)
    return lfilter(waveform, a, b)
