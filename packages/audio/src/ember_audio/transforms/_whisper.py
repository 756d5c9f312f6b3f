"""The log-mel features of OpenAI's Whisper, as a preset of ember's own.

Whisper's front end (Radford et al., "Robust Speech Recognition via Large-Scale Weak
Supervision", 2022; its ``audio.log_mel_spectrogram``, reproduced by Hugging Face's
``WhisperFeatureExtractor``): 16 kHz audio, ``n_fft=400`` (25 ms), ``hop_length=160`` (10 ms),
periodic Hann window, centred reflect-padded frames, power spectrum without its last frame,
Slaney-scale mel filters with Slaney norm (``n_mels`` 80, or 128 for large-v3), then
``log10(max(mel, 1e-10))``, floored at 8 below the maximum (over each example), and mapped by
``(x + 4) / 4``.
"""

from __future__ import annotations

import ember
from ember import nn

from ._spectral import MelSpectrogram

__all__ = ["WhisperLogMelSpectrogram"]


class WhisperLogMelSpectrogram(nn.Module):
    """Waveform ``[..., time]`` at 16 kHz -> Whisper's log-mel features ``[..., n_mels, time // 160]``
    (float32).  Whisper's models expect 30 s inputs (480000 samples, 3000 frames): pad or trim the
    waveform before calling this (it does neither), as ``WhisperFeatureExtractor`` does.
    The floor at ``max - 8`` is taken over each example's last two dims.
    Raises ValueError for an ``n_mels`` other than 80 or 128.  An ember preset (not in torchaudio).

    ``sample_rate`` (Hz), ``n_fft`` and ``hop_length`` (samples) are Whisper's 16000, 400 and 160;
    other values give features Whisper's models were not trained on."""

    def __init__(self, n_mels=80, sample_rate=16000, n_fft=400, hop_length=160):
        super().__init__()
        if n_mels not in (80, 128):
            raise ValueError(f"Whisper's models use n_mels 80 or 128, got {n_mels}")
        self.mel = MelSpectrogram(sample_rate=sample_rate, n_fft=n_fft, hop_length=hop_length, n_mels=n_mels,
                                  power=2.0, center=True, pad_mode="reflect", norm="slaney", mel_scale="slaney")

    def forward(self, waveform):
        mel = self.mel(waveform)[..., :-1]
        log_spec = ember.log10(ember.clamp(mel, min=1e-10))
        peak = log_spec.amax(dim=(-2, -1), keepdim=True)
        log_spec = ember.maximum(log_spec, peak - 8.0)
        return (log_spec + 4.0) / 4.0
