"""Feature helpers: compute_deltas, detect_pitch_frequency, add_noise.

Source: torchaudio 2.8 ``torchaudio.functional``.
"""

from __future__ import annotations

import math

import ember
from ember.nn import functional as F

__all__ = ["compute_deltas", "detect_pitch_frequency", "add_noise"]


def compute_deltas(specgram, win_length=5, mode="replicate"):
    """Delta coefficients of ``specgram [..., freq, time]`` along time (same shape):
    ``d_t = sum_{n=1}^{N} n (c_{t+n} - c_{t-n}) / (2 sum_{n=1}^{N} n^2)`` with
    ``N = (win_length - 1) // 2``, the ends padded by ``mode``.  Raises ValueError for
    ``win_length < 3``.  Source: torchaudio 2.8; the HTK Book's delta formula."""
    if win_length < 3:
        raise ValueError(f"Window length should be greater than or equal to 3. Found win_length {win_length}")
    shape = tuple(specgram.shape)
    x = specgram.reshape(1, -1, shape[-1])
    n = (win_length - 1) // 2
    denom = n * (n + 1) * (2 * n + 1) / 3
    x = F.pad(x, (n, n), mode=mode)
    kernel = ember.arange(-n, n + 1, 1, dtype=specgram.dtype, device=specgram.device).repeat(x.shape[1], 1, 1)
    out = F.conv1d(x, kernel, groups=x.shape[1]) / denom
    return out.reshape(shape)


def _compute_nccf(waveform, sample_rate, frame_time, freq_low):
    """Normalized cross-correlation ``[N, frames, lags]`` of each frame with its lagged copy."""
    eps = 1e-9
    lags = int(math.ceil(sample_rate / freq_low))
    frame_size = int(math.ceil(sample_rate * frame_time))
    length = waveform.shape[-1]
    n_frames = int(math.ceil(length / frame_size))
    p = lags + n_frames * frame_size - length
    waveform = F.pad(waveform, (0, p))
    out = []
    for lag in range(1, lags + 1):
        s1 = waveform[..., :-lag].unfold(-1, frame_size, frame_size)[..., :n_frames, :]
        s2 = waveform[..., lag:].unfold(-1, frame_size, frame_size)[..., :n_frames, :]
        frames = ((s1 * s2).sum(-1) / (eps + ember.linalg.vector_norm(s1, ord=2, dim=-1)).pow(2)
                  / (eps + ember.linalg.vector_norm(s2, ord=2, dim=-1)).pow(2))
        out.append(frames.unsqueeze(-1))
    return ember.cat(out, -1)


def _find_max_per_frame(nccf, sample_rate, freq_high):
    """The best lag per frame, preferring the first half's peak when it is within 1% of the best
    (it avoids picking a multiple of the period)."""
    lag_min = int(math.ceil(sample_rate / freq_high))
    best_v, best_i = ember.max(nccf[..., lag_min:], -1)
    half = nccf.shape[-1] // 2
    half_v, half_i = ember.max(nccf[..., lag_min:half], -1)
    take_half = half_v > 0.99 * best_v
    indices = ember.where(take_half, half_i, best_i)
    return indices + lag_min + 1


def _median_smoothing(indices, win_length):
    pad = (win_length - 1) // 2
    first = indices[..., :1].expand(tuple(indices.shape[:-1]) + (pad,))
    padded = ember.cat([first, indices], -1)
    return ember.median(padded.unfold(-1, win_length, 1), -1)[0]


def detect_pitch_frequency(waveform, sample_rate, frame_time=10 ** (-2), win_length=30, freq_low=85,
                           freq_high=3400):
    """Pitch in Hz per frame of ``waveform [..., time]`` sampled at ``sample_rate`` Hz:
    ``[..., frames]`` with frames of ``frame_time`` seconds (``ceil(sample_rate * frame_time)`` samples), from the lag
    maximizing the normalized
    cross-correlation between ``freq_low`` and ``freq_high`` Hz, median-smoothed over
    ``win_length`` frames.  Not differentiable (it picks indices).  Source: torchaudio 2.8."""
    shape = tuple(waveform.shape)
    waveform = waveform.reshape(-1, shape[-1])
    nccf = _compute_nccf(waveform, sample_rate, frame_time, freq_low)
    indices = _find_max_per_frame(nccf, sample_rate, freq_high)
    indices = _median_smoothing(indices, win_length)
    freq = sample_rate / (1e-9 + indices.to(ember.float32))
    return freq.reshape(shape[:-1] + tuple(freq.shape[-1:]))


def add_noise(waveform, noise, snr, lengths=None):
    """``waveform + scale * noise`` with ``scale`` chosen so the signal-to-noise ratio is
    ``snr`` dB.  Shapes: ``waveform`` and ``noise`` ``[..., L]``, ``snr`` ``[...]``, ``lengths``
    ``[...]`` (valid samples per example, for padded batches; None: all ``L``).  Raises ValueError for mismatched
    shapes.
    Source: torchaudio 2.8 ``functional.add_noise``."""
    if not (waveform.ndim - 1 == noise.ndim - 1 == snr.ndim and (lengths is None or lengths.ndim == snr.ndim)):
        raise ValueError(f"Input leading dimensions don't match: waveform {list(waveform.shape)}, noise "
                         f"{list(noise.shape)}, snr {list(snr.shape)}"
                         f"{'' if lengths is None else f', lengths {list(lengths.shape)}'}.")
    L = waveform.shape[-1]
    if L != noise.shape[-1]:
        raise ValueError(f"Length dimensions of waveform and noise don't match (got {L} and {noise.shape[-1]}).")
    if lengths is not None:
        mask = ember.arange(0, L, device=lengths.device).expand(tuple(waveform.shape)) < lengths.unsqueeze(-1)
        masked_waveform, masked_noise = waveform * mask, noise * mask
    else:
        masked_waveform, masked_noise = waveform, noise
    energy_signal = ember.linalg.vector_norm(masked_waveform, ord=2, dim=-1) ** 2
    energy_noise = ember.linalg.vector_norm(masked_noise, ord=2, dim=-1) ** 2
    original_snr_db = 10 * (ember.log10(energy_signal) - ember.log10(energy_noise))
    scale = 10 ** ((original_snr_db - snr) / 20.0)
    return waveform + scale.unsqueeze(-1) * noise
