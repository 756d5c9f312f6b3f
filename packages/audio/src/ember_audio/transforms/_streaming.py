"""Streaming features, ember's own (torchaudio has none): StreamingMelSpectrogram and
StreamingMFCC, fed chunks of any size, give exactly the frames the offline transform gives
with ``center=False`` on the concatenated samples.

A frame needs ``n_fft`` samples and frames start every ``hop_length`` samples, so the state is
the tail of the signal not yet covered by a full frame (less than ``n_fft + hop_length``
samples): memory stays bounded however long the stream.
"""

from __future__ import annotations

import ember
from ember import nn

from ._spectral import MFCC, MelSpectrogram

__all__ = ["StreamingMelSpectrogram", "StreamingMFCC"]


class _Framed(nn.Module):
    """Buffers samples and runs ``self.transform`` (a center=False frame transform) on whole frames."""

    def __init__(self, transform, n_fft, hop_length):
        super().__init__()
        self.transform = transform
        self.n_fft = n_fft
        self.hop_length = hop_length
        self._buffer = None

    def reset(self) -> None:
        """Forget the buffered samples: the next chunk starts a new stream."""
        self._buffer = None

    def forward(self, chunk):
        """The frames that ``chunk`` (``[..., time]``, any length, even 0) completes:
        ``[..., n_features, k]`` with k >= 0."""
        if self._buffer is not None and tuple(self._buffer.shape[:-1]) != tuple(chunk.shape[:-1]):
            raise ValueError(f"chunk's leading shape {list(chunk.shape[:-1])} differs from the stream's "
                             f"{list(self._buffer.shape[:-1])}; call reset() to start a new stream")
        buf = chunk if self._buffer is None else ember.cat([self._buffer, chunk], -1)
        n_frames = (buf.shape[-1] - self.n_fft) // self.hop_length + 1 if buf.shape[-1] >= self.n_fft else 0
        if n_frames == 0:
            self._buffer = buf
            return self._empty(buf)
        used = buf[..., :(n_frames - 1) * self.hop_length + self.n_fft]
        self._buffer = buf[..., n_frames * self.hop_length:]
        return self.transform(used)

    def _empty(self, buf):
        n = self._n_features()
        return ember.zeros(tuple(buf.shape[:-1]) + (n, 0), dtype=buf.dtype, device=buf.device)


class StreamingMelSpectrogram(_Framed):
    """``MelSpectrogram`` (same arguments but ``center``, fixed to False) over a stream of
    chunks ``[..., time]``: each call returns the ``[..., n_mels, k]`` frames completed so far;
    concatenated along the last dim they equal ``MelSpectrogram(center=False)`` of the whole
    signal.  ``reset()`` starts a new stream; a chunk of another leading shape raises
    ValueError.  An ember extension (torchaudio has no streaming features).

    Args:
        sample_rate: of the input, in Hz.
        n_fft: FFT size, in samples.
        win_length: window size in samples (default ``n_fft``).
        hop_length: samples between frames (default ``win_length // 2``).
        f_min: lowest filter frequency, in Hz.
        f_max: highest filter frequency, in Hz (default ``sample_rate // 2``).
        n_mels: mel bands.
        window_fn: builds the window from its length (default ``ember.hann_window``).
        power: exponent of the magnitude (2.0 power, 1.0 magnitude; None: complex output).
        normalized: True or "window" divides by the window's L2 norm; "frame_length" by sqrt(n_fft).
        wkwargs: keyword arguments of ``window_fn``.
        norm: None, or "slaney" to divide each triangle by its width (unit area).
        mel_scale: "htk" or "slaney" mel formula.
    """

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None, f_min=0.0, f_max=None,
                 n_mels=128, window_fn=ember.hann_window, power=2.0, normalized=False, wkwargs=None, norm=None,
                 mel_scale="htk"):
        mel = MelSpectrogram(sample_rate=sample_rate, n_fft=n_fft, win_length=win_length, hop_length=hop_length,
                             f_min=f_min, f_max=f_max, n_mels=n_mels, window_fn=window_fn, power=power,
                             normalized=normalized, wkwargs=wkwargs, center=False, norm=norm, mel_scale=mel_scale)
        super().__init__(mel, n_fft, mel.hop_length)

    def _n_features(self):
        return self.transform.n_mels


class StreamingMFCC(_Framed):
    """``MFCC`` over a stream of chunks ``[..., time]``; ``melkwargs`` as MFCC's (``center`` is
    forced to False).  Each call returns the ``[..., n_mfcc, k]`` frames completed so far.

    torchaudio's MFCC floors the dB mel spectrogram at 80 dB below the peak of the whole
    signal, which a stream cannot know; this class uses ``top_db=None`` (no floor), so its
    frames equal those of ``MFCC(..., melkwargs={..., "center": False})`` whose
    ``amplitude_to_DB.top_db`` is None (or with ``log_mels=True``, where no floor applies).
    An ember extension.

    Args:
        sample_rate: of the input, in Hz.
        n_mfcc: coefficients kept.
        dct_type: only 2 (DCT-II) is supported.
        norm: the DCT's norm, "ortho" or None.
        log_mels: natural log instead of decibels.
        melkwargs: keyword arguments of the ``MelSpectrogram``.
    """

    def __init__(self, sample_rate=16000, n_mfcc=40, dct_type=2, norm="ortho", log_mels=False, melkwargs=None):
        melkwargs = dict(melkwargs or {})
        melkwargs["center"] = False
        mfcc = MFCC(sample_rate=sample_rate, n_mfcc=n_mfcc, dct_type=dct_type, norm=norm, log_mels=log_mels,
                    melkwargs=melkwargs)
        mfcc.amplitude_to_DB.top_db = None
        mel = mfcc.MelSpectrogram
        super().__init__(mfcc, mel.n_fft, mel.hop_length)

    def _n_features(self):
        return self.transform.n_mfcc
