"""Spectrograms and their inverses: spectrogram, inverse_spectrogram, griffinlim, phase_vocoder.

All are built from ember ops (``ember.stft``/``ember.istft``, complex arithmetic), so they are
differentiable and run on every device the core has.  Source: torchaudio 2.8
``torchaudio.functional``; Griffin-Lim from Griffin & Lim (1984) with the fast momentum of
Perraudin et al. (2013).
"""

from __future__ import annotations

import math

import ember
from ember.nn import functional as F

__all__ = ["spectrogram", "inverse_spectrogram", "griffinlim", "phase_vocoder"]


def _spec_norms(normalized):
    """(frame_length_norm, window_norm) for torchaudio's ``normalized`` (bool, "window", "frame_length")."""
    if normalized is True or normalized == "window":
        return False, True
    if normalized == "frame_length":
        return True, False
    if normalized is False:
        return False, False
    raise ValueError(f"normalized must be a bool, 'window' or 'frame_length', got {normalized!r}")


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized, center=True,
                pad_mode="reflect", onesided=True, return_complex=None):
    """The (power) spectrogram of ``waveform [..., time]``: ``[..., n_fft // 2 + 1, n_frames]``
    (``n_fft`` rows when ``onesided=False``).

    Args:
        pad: zeros added on both sides of the signal (samples).
        window: ``[win_length]`` window tensor.
        n_fft: FFT size (samples).
        hop_length: samples between frames.
        win_length: window size (samples, <= ``n_fft``).
        power: exponent of the magnitude (2.0 power, 1.0 magnitude); None returns the complex spectrum.
        normalized: True or "window" divides by the window's L2 norm; "frame_length" by sqrt(n_fft).
        center, pad_mode: pad ``n_fft // 2`` samples on both sides ("reflect", "constant", ...).
        onesided: keep only the ``n_fft // 2 + 1`` non-negative frequencies.
        return_complex: must not be False when ``power`` is None (ValueError); otherwise unused.

    Frames: ``1 + (time + 2 * pad) // hop_length`` when centred.  Raises ValueError for a bad
    ``normalized``.  Source: torchaudio 2.8 ``functional.spectrogram``.
    """
    if power is None and return_complex is False:
        raise ValueError("power=None returns the complex spectrum; return_complex=False is not supported")
    if pad > 0:
        waveform = F.pad(waveform, (pad, pad), "constant")
    frame_length_norm, window_norm = _spec_norms(normalized)
    shape = tuple(waveform.shape)
    waveform = waveform.reshape(-1, shape[-1])
    spec = ember.stft(waveform, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                      center=center, pad_mode=pad_mode, normalized=frame_length_norm, onesided=onesided,
                      return_complex=True)
    spec = spec.reshape(shape[:-1] + tuple(spec.shape[-2:]))
    if window_norm:
        spec = spec / window.pow(2.0).sum().sqrt()
    if power is None:
        return spec
    if power == 1.0:
        return spec.abs()
    return spec.abs().pow(power)


def inverse_spectrogram(spectrogram, length, pad, window, n_fft, hop_length, win_length, normalized, center=True,
                        pad_mode="reflect", onesided=True):
    """The waveform ``[..., time]`` whose complex spectrogram is ``spectrogram [..., freq, n_frames]``
    (overlap-add of inverse FFTs; ``length`` trims or zero-pads the result to that many samples).

    The other arguments are :func:`spectrogram`'s, for the forward transform to undo: ``pad``
    samples removed from both ends (when ``length`` is given), ``window`` ``[win_length]``,
    ``n_fft``, ``hop_length``, ``win_length`` (samples), ``normalized``, ``center`` and
    ``onesided``.

    Raises ValueError when ``spectrogram`` is not complex.  ``pad_mode`` is accepted for
    torchaudio's signature (istft needs no padding mode).  Source: torchaudio 2.8
    ``functional.inverse_spectrogram``.
    """
    frame_length_norm, window_norm = _spec_norms(normalized)
    if not spectrogram.dtype.is_complex:
        raise ValueError(f"Expected `spectrogram` to be complex dtype, got {spectrogram.dtype}.")
    if window_norm:
        spectrogram = spectrogram * window.pow(2.0).sum().sqrt()
    shape = tuple(spectrogram.shape)
    spectrogram = spectrogram.reshape(-1, shape[-2], shape[-1])
    waveform = ember.istft(spectrogram, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                           center=center, normalized=frame_length_norm, onesided=onesided,
                           length=length + 2 * pad if length is not None else None, return_complex=False)
    if length is not None and pad > 0:
        waveform = waveform[:, pad:-pad]
    return waveform.reshape(shape[:-2] + tuple(waveform.shape[-1:]))


def griffinlim(specgram, window, n_fft, hop_length, win_length, power, n_iter, momentum, length, rand_init):
    """A waveform ``[..., time]`` whose magnitude spectrogram approximates ``specgram
    [..., freq, frames]`` (``|STFT| ** power``, ``power`` > 0), by ``n_iter`` Griffin-Lim iterations with
    fast momentum (``momentum`` in [0, 1); ``rand_init`` starts from random phases, else zeros).
    The STFT is ``n_fft``, ``hop_length``, ``win_length`` (samples) with ``window``
    ``[win_length]``; ``length`` is the output's samples (None: as the STFT gives).

    Raises ValueError for a momentum outside [0, 1).  Source: torchaudio 2.8
    ``functional.griffinlim``; Perraudin, Balazs & Sondergaard, "A fast Griffin-Lim algorithm" (2013).
    """
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in range [0, 1). Found: {momentum}")
    momentum = momentum / (1 + momentum)
    shape = tuple(specgram.shape)
    specgram = specgram.reshape((-1,) + shape[-2:])
    specgram = specgram.pow(1 / power)
    if rand_init:
        re = ember.rand(tuple(specgram.shape), dtype=specgram.dtype, device=specgram.device)
        im = ember.rand(tuple(specgram.shape), dtype=specgram.dtype, device=specgram.device)
        angles = ember.complex(re, im)
    else:
        angles = ember.complex(ember.ones_like(specgram), ember.zeros_like(specgram))
    tprev = None
    for _ in range(n_iter):
        inverse = ember.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                              window=window, length=length)
        rebuilt = ember.stft(inverse, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                             center=True, pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
        angles = rebuilt
        if momentum and tprev is not None:
            angles = angles - tprev * momentum
        angles = angles / (angles.abs() + 1e-16)
        tprev = rebuilt
    waveform = ember.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length, win_length=win_length,
                           window=window, length=length)
    return waveform.reshape(shape[:-2] + tuple(waveform.shape[-1:]))


def phase_vocoder(complex_specgrams, rate, phase_advance):
    """Speed ``complex_specgrams``, a complex spectrogram ``[..., freq, frames]``, up by ``rate``
    without changing its pitch: ``[..., freq, ceil(frames / rate)]``.  ``phase_advance`` is ``[freq, 1]``, the expected
    phase advance per hop (``linspace(0, pi * hop_length, freq)[..., None]``).

    Source: torchaudio 2.8 ``functional.phase_vocoder``; Flanagan & Golden, "Phase vocoder" (1966).
    """
    if rate == 1.0:
        return complex_specgrams
    if not complex_specgrams.dtype.is_complex:
        raise ValueError(f"phase_vocoder expects a complex spectrogram, got {complex_specgrams.dtype}")
    shape = tuple(complex_specgrams.shape)
    complex_specgrams = complex_specgrams.reshape((-1,) + shape[-2:])
    real_dtype = complex_specgrams.dtype.to_real()
    time_steps = ember.arange(0, complex_specgrams.shape[-1], rate, dtype=real_dtype, device=complex_specgrams.device)
    alphas = time_steps % 1.0
    phase_0 = complex_specgrams[..., :1].angle()
    padded = F.pad(complex_specgrams, [0, 2])
    spec_0 = padded.index_select(-1, time_steps.long())
    spec_1 = padded.index_select(-1, (time_steps + 1).long())
    angle_0, angle_1 = spec_0.angle(), spec_1.angle()
    norm_0, norm_1 = spec_0.abs(), spec_1.abs()
    phase = angle_1 - angle_0 - phase_advance
    phase = phase - 2 * math.pi * ember.round(phase / (2 * math.pi))
    phase = phase + phase_advance
    phase = ember.cat([phase_0, phase[..., :-1]], dim=-1)
    phase_acc = ember.cumsum(phase, -1)
    mag = alphas * norm_1 + (1 - alphas) * norm_0
    out = ember.polar(mag, phase_acc)
    return out.reshape(shape[:-2] + tuple(out.shape[1:]))


