"""Filter banks and the DCT matrix: melscale_fbanks (HTK and Slaney scales and norms),
linear_fbanks, create_dct.

Sources: torchaudio 2.8 ``functional.melscale_fbanks``/``linear_fbanks``/``create_dct``; the HTK
mel scale (Young et al., The HTK Book), Slaney's (Auditory Toolbox, 1998; librosa's default).
"""

from __future__ import annotations

import math
import warnings

import ember

__all__ = ["melscale_fbanks", "linear_fbanks", "create_dct"]

_SCALES = ("htk", "slaney")


def _check_scale(mel_scale):
    if mel_scale not in _SCALES:
        raise ValueError(f'mel_scale should be one of "htk" or "slaney", got {mel_scale!r}.')


def _hz_to_mel(freq: float, mel_scale: str = "htk") -> float:
    """Hz -> mels (a Python float)."""
    _check_scale(mel_scale)
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    f_sp = 200.0 / 3
    mels = freq / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    if freq >= min_log_hz:
        mels = min_log_mel + math.log(freq / min_log_hz) / logstep
    return mels


def _mel_to_hz(mels, mel_scale: str = "htk"):
    """mels (a Tensor) -> Hz."""
    _check_scale(mel_scale)
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    freqs = f_sp * mels
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return ember.where(mels >= min_log_mel, min_log_hz * ember.exp(logstep * (mels - min_log_mel)), freqs)


def _triangular_filterbank(all_freqs, f_pts):
    """``[n_freqs, n_filter]`` triangles with corners at ``f_pts`` (``[n_filter + 2]``, Hz)."""
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return ember.clamp(ember.minimum(down, up), min=0.0)


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None, mel_scale="htk"):
    """Triangular mel filters ``[n_freqs, n_mels]`` (float32): a ``[..., n_freqs, time]``
    spectrogram times ``fb`` along the frequency axis is the mel spectrogram.

    Args:
        n_freqs: frequency bins (``n_fft // 2 + 1``), evenly spaced over 0 .. ``sample_rate // 2`` Hz.
        f_min, f_max: lowest and highest edges in Hz.
        n_mels: number of filters.
        norm: None (peak 1) or "slaney" (each filter divided by its width in Hz, times 2: constant energy).
        mel_scale: "htk" or "slaney".

    Raises ValueError for an unknown norm or scale.  Warns when a filter is all zeros (too many
    mels for the frequency resolution), as torchaudio.  Source: torchaudio 2.8.
    """
    if norm is not None and norm != "slaney":
        raise ValueError(f'norm must be one of None or "slaney", got {norm!r}')
    all_freqs = ember.linspace(0, sample_rate // 2, n_freqs)
    m_min = _hz_to_mel(f_min, mel_scale)
    m_max = _hz_to_mel(f_max, mel_scale)
    m_pts = ember.linspace(m_min, m_max, n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_scale)
    fb = _triangular_filterbank(all_freqs, f_pts)
    if norm == "slaney":
        enorm = 2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])
        fb = fb * enorm.unsqueeze(0)
    if bool((fb.amax(dim=0) == 0.0).any()):
        warnings.warn(
            "At least one mel filterbank has all zero values. "
            f"The value for `n_mels` ({n_mels}) may be set too high. "
            f"Or, the value for `n_freqs` ({n_freqs}) may be set too low.", stacklevel=2)
    return fb


def linear_fbanks(n_freqs, f_min, f_max, n_filter, sample_rate):
    """``n_filter`` triangular filters ``[n_freqs, n_filter]`` evenly spaced in Hz between ``f_min``
    and ``f_max`` (the LFCC front end), over ``n_freqs`` STFT bins from 0 to ``sample_rate // 2`` Hz.  Source:
    torchaudio 2.8 ``functional.linear_fbanks``."""
    all_freqs = ember.linspace(0, sample_rate // 2, n_freqs)
    f_pts = ember.linspace(f_min, f_max, n_filter + 2)
    return _triangular_filterbank(all_freqs, f_pts)


def create_dct(n_mfcc, n_mels, norm):
    """The DCT-II matrix ``[n_mels, n_mfcc]`` (float32) taking ``n_mels`` mel bands to ``n_mfcc``
    coefficients, applied along the mel axis; ``norm`` None
    (unscaled, times 2 as scipy's ``dct(type=2)``) or "ortho".  Source: torchaudio 2.8."""
    if norm is not None and norm != "ortho":
        raise ValueError(f'norm must be either "ortho" or None, got {norm!r}')
    n = ember.arange(float(n_mels))
    k = ember.arange(float(n_mfcc)).unsqueeze(1)
    dct = ember.cos(math.pi / float(n_mels) * (n + 0.5) * k)  # [n_mfcc, n_mels]
    if norm is None:
        dct = dct * 2.0
    else:
        scale = ember.ones(n_mfcc, 1)
        scale[0] = 1.0 / math.sqrt(2.0)
        dct = dct * scale * math.sqrt(2.0 / float(n_mels))
    return dct.t()
