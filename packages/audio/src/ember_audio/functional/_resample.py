"""Band-limited resampling by windowed-sinc interpolation: resample and speed.

The kernel is torchaudio's: for rates reduced by their gcd to ``orig -> new``, each of the
``new`` output phases is a sinc low-pass at ``rolloff * min(orig, new)`` windowed by a Hann
(``sinc_interp_hann``) or Kaiser (``sinc_interp_kaiser``) window ``lowpass_filter_width``
zero crossings wide, applied as one strided ``conv1d``.  Source: torchaudio 2.8
``functional.resample``; J. O. Smith, "Digital Audio Resampling" (CCRMA).
"""

from __future__ import annotations

import math
import warnings

import ember
from ember.nn import functional as F

__all__ = ["resample", "speed"]

_KAISER_BETA = 14.769656459379492  # torchaudio's default beta for sinc_interp_kaiser
_DEPRECATED = {"sinc_interpolation": "sinc_interp_hann", "kaiser_window": "sinc_interp_kaiser"}


def _check_rates(orig_freq, new_freq):
    if orig_freq <= 0.0 or new_freq <= 0.0:
        raise ValueError(f"Original frequency and desired frequency should be positive, got {orig_freq} and "
                         f"{new_freq}")
    if int(orig_freq) != orig_freq or int(new_freq) != new_freq:
        raise ValueError(f"Frequencies must be of integer type to ensure quality resampling computation, got "
                         f"{orig_freq} and {new_freq}")


def _sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width=6, rolloff=0.99,
                          resampling_method="sinc_interp_hann", beta=None, device=None, dtype=None):
    """``(kernel [new, 1, 2 * width + orig], width)`` for rates reduced by ``gcd``."""
    _check_rates(orig_freq, new_freq)
    if resampling_method in _DEPRECATED:
        warnings.warn(f'"{resampling_method}" resampling method name is being deprecated and replaced by '
                      f'"{_DEPRECATED[resampling_method]}" in the next release. The default behavior remains '
                      f'unchanged.', stacklevel=3)
        resampling_method = _DEPRECATED[resampling_method]
    if resampling_method not in ("sinc_interp_hann", "sinc_interp_kaiser"):
        raise ValueError(f"Invalid resampling method: {resampling_method!r} (expected 'sinc_interp_hann' or "
                         f"'sinc_interp_kaiser')")
    if lowpass_filter_width <= 0:
        raise ValueError(f"Low pass filter width should be positive, got {lowpass_filter_width}.")
    orig = int(orig_freq) // gcd
    new = int(new_freq) // gcd
    base_freq = min(orig, new) * rolloff
    # Enough input samples on each side for lowpass_filter_width zero crossings of the sinc.
    width = math.ceil(lowpass_filter_width * orig / base_freq)
    idx_dtype = dtype if dtype is not None else ember.float64
    idx = ember.arange(-width, width + orig, dtype=idx_dtype, device=device)[None, None] / orig
    t = ember.arange(0, -new, -1, dtype=idx_dtype, device=device)[:, None, None] / new + idx
    t = t * base_freq
    t = t.clamp(-lowpass_filter_width, lowpass_filter_width)
    if resampling_method == "sinc_interp_hann":
        window = ember.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    else:
        b = ember.tensor(float(beta if beta is not None else _KAISER_BETA), dtype=idx_dtype, device=device)
        window = ember.i0(b * ember.sqrt(1 - (t / lowpass_filter_width) ** 2)) / ember.i0(b)
    t = t * math.pi
    scale = base_freq / orig
    kernels = ember.where(t == 0, ember.ones_like(t), ember.sin(t) / ember.where(t == 0, ember.ones_like(t), t))
    kernels = kernels * window * scale
    if dtype is None:
        kernels = kernels.to(ember.float32)
    return kernels, width


def _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width):
    if not waveform.dtype.is_floating_point:
        raise TypeError(f"Expected floating point type for waveform tensor, but received {waveform.dtype}.")
    orig = int(orig_freq) // gcd
    new = int(new_freq) // gcd
    shape = tuple(waveform.shape)
    waveform = waveform.reshape(-1, shape[-1])
    num_wavs, length = waveform.shape
    waveform = F.pad(waveform, (width, width + orig))
    resampled = F.conv1d(waveform[:, None], kernel.to(waveform.dtype), stride=orig)  # [B, new, blocks]
    resampled = resampled.transpose(1, 2).reshape(num_wavs, -1)
    target_length = math.ceil(new * length / orig)
    resampled = resampled[..., :target_length]
    return resampled.reshape(shape[:-1] + tuple(resampled.shape[-1:]))


def resample(waveform, orig_freq, new_freq, lowpass_filter_width=6, rolloff=0.99,
             resampling_method="sinc_interp_hann", beta=None):
    """Resample ``waveform [..., time]`` from ``orig_freq`` to ``new_freq`` Hz:
    ``[..., ceil(time * new_freq / orig_freq)]``.

    Args:
        lowpass_filter_width: zero crossings of the sinc on each side (sharper filter, more work).
        rolloff: cutoff as a fraction of the lower Nyquist frequency (below 1 to leave a
            transition band and reduce aliasing).
        resampling_method: "sinc_interp_hann" or "sinc_interp_kaiser".
        beta: the Kaiser window's shape (default 14.769656459379492).

    Stop band with the defaults (measured, 16 kHz -> 8 kHz): a tone at 1.5x the new Nyquist
    frequency is attenuated by more than 50 dB (Hann) / 45 dB (Kaiser), at 1.75x by more than
    80 / 100 dB; the transition band starts at ``rolloff`` times the new Nyquist frequency.

    Raises ValueError for non-positive or non-integer rates, an unknown method or a
    non-positive width; TypeError for an integer waveform.  Source: torchaudio 2.8.
    """
    _check_rates(orig_freq, new_freq)
    if orig_freq == new_freq:
        return waveform
    gcd = math.gcd(int(orig_freq), int(new_freq))
    kernel, width = _sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                                          resampling_method, beta, waveform.device, waveform.dtype)
    return _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width)


def speed(waveform, orig_freq, factor, lengths=None):
    """Play ``waveform [..., time]`` ``factor`` times faster (pitch moves with it), keeping the
    sample rate ``orig_freq``: resamples from ``int(factor * orig_freq)`` to ``orig_freq``.

    Returns ``(waveform [..., ceil(time / factor)], lengths or None)``: ``lengths`` ``[...]``, the
    valid samples of each example of a padded batch, scaled the same way.  Source: torchaudio 2.8 ``functional.speed``.
    """
    source = int(factor * orig_freq)
    target = int(orig_freq)
    gcd = math.gcd(source, target)
    source //= gcd
    target //= gcd
    out_lengths = None
    if lengths is not None:
        out_lengths = ember.ceil(lengths * target / source).to(lengths.dtype)
    return resample(waveform, source, target), out_lengths


class _StreamingResampler:
    """``resample`` fed chunk by chunk: the concatenated outputs equal ``resample`` of the
    concatenated input (same kernel, same zero padding at both ends), holding only
    ``2 * width + orig`` samples of history.  Input chunks are ``[channels, time]`` float tensors."""

    def __init__(self, orig_freq, new_freq, **kwargs):
        self.gcd = math.gcd(int(orig_freq), int(new_freq))
        self.orig = int(orig_freq) // self.gcd
        self.new = int(new_freq) // self.gcd
        self.kernel, self.width = _sinc_resample_kernel(orig_freq, new_freq, self.gcd, **kwargs)
        self.buffer = None
        self.consumed = 0  # input samples seen
        self.emitted = 0  # output samples given out

    def _run(self, final: bool):
        buf = self.buffer
        span = 2 * self.width + self.orig
        n_blocks = (buf.shape[-1] - span) // self.orig + 1 if buf.shape[-1] >= span else 0
        if n_blocks <= 0:
            return buf[..., :0]
        used = buf[..., :2 * self.width + n_blocks * self.orig]
        out = F.conv1d(used[:, None], self.kernel.to(buf.dtype), stride=self.orig)  # [C, new, blocks]
        out = out.transpose(1, 2).reshape(buf.shape[0], -1)
        self.buffer = buf[..., n_blocks * self.orig:]
        if final:
            out = out[..., :max(0, math.ceil(self.new * self.consumed / self.orig) - self.emitted)]
        self.emitted += out.shape[-1]
        return out

    def push(self, chunk):
        """The output samples that ``chunk`` ([channels, time]) completes."""
        if self.buffer is None:
            self.buffer = ember.zeros((chunk.shape[0], self.width), dtype=chunk.dtype, device=chunk.device)
        self.buffer = ember.cat([self.buffer, chunk], -1)
        self.consumed += chunk.shape[-1]
        return self._run(final=False)

    def flush(self):
        """The remaining output samples, once the input has ended."""
        if self.buffer is None:
            return None
        tail = ember.zeros((self.buffer.shape[0], self.width + self.orig), dtype=self.buffer.dtype,
                           device=self.buffer.device)
        self.buffer = ember.cat([self.buffer, tail], -1)
        return self._run(final=True)
