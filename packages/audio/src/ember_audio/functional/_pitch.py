"""pitch_shift: time-stretch by the phase vocoder, then resample back to the original duration.

Source: torchaudio 2.8 ``functional.pitch_shift`` (librosa's ``effects.pitch_shift`` method).
"""

from __future__ import annotations

import math

import ember
from ember.nn import functional as F

from ._resample import resample
from ._spectral import phase_vocoder

__all__ = ["pitch_shift"]


def pitch_shift(waveform, sample_rate, n_steps, bins_per_octave=12, n_fft=512, win_length=None, hop_length=None,
                window=None):
    """Shift the pitch of ``waveform [..., time]`` (sampled at ``sample_rate`` Hz) by ``n_steps``
    steps of one ``bins_per_octave``-th of an octave (semitones by default), keeping its length
    (``[..., time]``).  ``n_fft``,
    ``win_length`` (default ``n_fft``), ``hop_length`` (default ``n_fft // 4``) and ``window``
    (default Hann) configure the STFT of the phase vocoder.

    Cost: the final resampling goes from ``int(sample_rate / rate)`` to ``sample_rate`` Hz, and
    its kernel has about ``new * (2 * width + orig)`` taps for the gcd-reduced rates: steps whose
    rate is coprime with ``sample_rate`` (e.g. +3 semitones at 8 kHz: 9513 -> 8000) build a
    kernel of ~10^8 floats, as torchaudio's does.  Octave steps are cheap.  Source: torchaudio 2.8."""
    hop_length = hop_length if hop_length is not None else n_fft // 4
    win_length = win_length if win_length is not None else n_fft
    if window is None:
        window = ember.hann_window(win_length, device=waveform.device)
    shape = tuple(waveform.shape)
    x = waveform.reshape(-1, shape[-1])
    rate = 2.0 ** (-float(n_steps) / bins_per_octave)
    spec = ember.stft(x, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, center=True,
                      pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
    phase_advance = ember.linspace(0, math.pi * hop_length, spec.shape[-2], device=spec.device)[..., None]
    stretched = phase_vocoder(spec, rate, phase_advance)
    y = ember.istft(stretched, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                    length=int(round(shape[-1] / rate)))
    y = resample(y, int(sample_rate / rate), sample_rate)
    n = y.shape[-1]
    y = y[..., :shape[-1]] if n > shape[-1] else F.pad(y, (0, shape[-1] - n))
    return y.reshape(shape[:-1] + (shape[-1],))
