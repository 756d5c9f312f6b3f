"""Module wrappers over ``functional``'s waveform and masking kernels (torchaudio.transforms'
names, arguments and defaults).  Source: torchaudio 2.8 ``torchaudio.transforms``."""

from __future__ import annotations

import math

import ember
from ember import nn

from .. import functional as F
from ..functional._resample import _apply_sinc_resample_kernel, _sinc_resample_kernel

__all__ = ["Fade", "Vol", "FrequencyMasking", "TimeMasking", "MuLawEncoding", "MuLawDecoding", "Resample",
           "ComputeDeltas", "Preemphasis", "Deemphasis", "AddNoise", "Speed", "SpeedPerturbation", "PitchShift"]

_FADE_SHAPES = ("quarter_sine", "half_sine", "linear", "logarithmic", "exponential")


class Fade(nn.Module):
    """Fade ``waveform [..., time]`` in over its first ``fade_in_len`` samples and out over its
    last ``fade_out_len``, with ``fade_shape`` one of "quarter_sine", "half_sine", "linear",
    "logarithmic", "exponential".  Raises ValueError for another shape."""

    def __init__(self, fade_in_len=0, fade_out_len=0, fade_shape="linear"):
        super().__init__()
        if fade_shape not in _FADE_SHAPES:
            raise ValueError(f"fade_shape must be one of {list(_FADE_SHAPES)}, got {fade_shape!r}")
        self.fade_in_len = fade_in_len
        self.fade_out_len = fade_out_len
        self.fade_shape = fade_shape

    def forward(self, waveform):
        n = waveform.shape[-1]
        if self.fade_in_len > n or self.fade_out_len > n:
            raise ValueError(f"fade lengths ({self.fade_in_len}, {self.fade_out_len}) exceed the waveform's {n} "
                             f"samples")
        return self._fade_in(n, waveform) * self._fade_out(n, waveform) * waveform

    def _fade_in(self, n, like):
        fade = ember.linspace(0, 1, self.fade_in_len, device=like.device)
        ones = ember.ones(n - self.fade_in_len, device=like.device)
        shape = self.fade_shape
        if shape == "exponential":
            fade = ember.pow(2, fade - 1) * fade
        elif shape == "logarithmic":
            fade = ember.log10(0.1 + fade) + 1
        elif shape == "quarter_sine":
            fade = ember.sin(fade * math.pi / 2)
        elif shape == "half_sine":
            fade = ember.sin(fade * math.pi - math.pi / 2) / 2 + 0.5
        return ember.cat((fade, ones)).clamp(0, 1)

    def _fade_out(self, n, like):
        fade = ember.linspace(0, 1, self.fade_out_len, device=like.device)
        ones = ember.ones(n - self.fade_out_len, device=like.device)
        shape = self.fade_shape
        if shape == "linear":
            fade = -fade + 1
        elif shape == "exponential":
            fade = ember.pow(2, -fade) * (1 - fade)
        elif shape == "logarithmic":
            fade = ember.log10(1.1 - fade) + 1
        elif shape == "quarter_sine":
            fade = ember.sin(fade * math.pi / 2 + math.pi / 2)
        elif shape == "half_sine":
            fade = ember.sin(fade * math.pi + math.pi / 2) / 2 + 0.5
        return ember.cat((ones, fade)).clamp(0, 1)


class Vol(nn.Module):
    """Scale a waveform by ``gain`` as an amplitude ratio, a power ratio or decibels
    (``gain_type`` "amplitude", "power", "db"), then clamp to [-1, 1].  Raises ValueError for
    a negative amplitude or power ratio or an unknown gain type."""

    def __init__(self, gain, gain_type="amplitude"):
        super().__init__()
        if gain_type not in ("amplitude", "power", "db"):
            raise ValueError(f"gain_type must be 'amplitude', 'power' or 'db', got {gain_type!r}")
        if gain_type in ("amplitude", "power") and gain < 0:
            raise ValueError("If gain_type = amplitude or power, gain must be positive.")
        self.gain = gain
        self.gain_type = gain_type

    def forward(self, waveform):
        if self.gain_type == "amplitude":
            waveform = waveform * self.gain
        elif self.gain_type == "db":
            waveform = F.gain(waveform, self.gain)
        else:
            waveform = F.gain(waveform, 10 * math.log10(self.gain))
        return ember.clamp(waveform, -1, 1)


class _AxisMasking(nn.Module):
    def __init__(self, mask_param, axis, iid_masks, p=1.0):
        super().__init__()
        self.mask_param = mask_param
        self.axis = axis
        self.iid_masks = iid_masks
        self.p = p

    def forward(self, specgram, mask_value=0.0):
        axis = self.axis + specgram.ndim - 3
        if self.iid_masks:
            return F.mask_along_axis_iid(specgram, self.mask_param, mask_value, axis, p=self.p)
        return F.mask_along_axis(specgram, self.mask_param, mask_value, axis, p=self.p)


class FrequencyMasking(_AxisMasking):
    """SpecAugment frequency mask on ``[..., freq, time]``: a band of up to ``freq_mask_param``
    bins; ``iid_masks=True`` draws one per example and channel (input ``[batch, channel, freq, time]``)."""

    def __init__(self, freq_mask_param, iid_masks=False):
        super().__init__(freq_mask_param, 1, iid_masks)


class TimeMasking(_AxisMasking):
    """SpecAugment time mask on ``[..., freq, time]``: a span of up to ``time_mask_param`` frames
    (at most ``p`` of the frames); ``iid_masks=True`` draws one per example and channel."""

    def __init__(self, time_mask_param, iid_masks=False, p=1.0):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
        super().__init__(time_mask_param, 2, iid_masks, p=p)


class MuLawEncoding(nn.Module):
    """``functional.mu_law_encoding`` with ``quantization_channels`` (default 256)."""

    def __init__(self, quantization_channels=256):
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x):
        return F.mu_law_encoding(x, self.quantization_channels)


class MuLawDecoding(nn.Module):
    """``functional.mu_law_decoding`` with ``quantization_channels`` (default 256)."""

    def __init__(self, quantization_channels=256):
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x_mu):
        return F.mu_law_decoding(x_mu, self.quantization_channels)


class Resample(nn.Module):
    """Resample ``[..., time]`` from ``orig_freq`` to ``new_freq`` Hz with the kernel computed once
    (a non-persistent ``kernel`` buffer; float64 arithmetic, stored as float32 unless ``dtype``).
    See ``functional.resample``; source: torchaudio 2.8 ``transforms.Resample``.

    Args:
        orig_freq, new_freq: the rates, in Hz (integers).
        resampling_method: "sinc_interp_hann" or "sinc_interp_kaiser".
        lowpass_filter_width: zero crossings of the sinc on each side.
        rolloff: cutoff as a fraction of the lower Nyquist frequency.
        beta: the Kaiser window's shape (default 14.769656459379492).
        dtype: the kernel's dtype (None: float32).

    Raises ValueError as ``functional.resample`` for bad rates or method.
    """

    def __init__(self, orig_freq=16000, new_freq=16000, resampling_method="sinc_interp_hann",
                 lowpass_filter_width=6, rolloff=0.99, beta=None, *, dtype=None):
        super().__init__()
        self.orig_freq = orig_freq
        self.new_freq = new_freq
        self.gcd = math.gcd(int(self.orig_freq), int(self.new_freq))
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta
        if self.orig_freq != self.new_freq:
            kernel, self.width = _sinc_resample_kernel(self.orig_freq, self.new_freq, self.gcd,
                                                       self.lowpass_filter_width, self.rolloff,
                                                       self.resampling_method, beta, dtype=dtype)
            self.register_buffer("kernel", kernel, persistent=False)

    def forward(self, waveform):
        if self.orig_freq == self.new_freq:
            return waveform
        return _apply_sinc_resample_kernel(waveform, self.orig_freq, self.new_freq, self.gcd, self.kernel,
                                           self.width)


class ComputeDeltas(nn.Module):
    """``functional.compute_deltas`` with ``win_length`` (default 5) and padding ``mode``."""

    def __init__(self, win_length=5, mode="replicate"):
        super().__init__()
        self.win_length = win_length
        self.mode = mode

    def forward(self, specgram):
        return F.compute_deltas(specgram, win_length=self.win_length, mode=self.mode)


class Preemphasis(nn.Module):
    """``functional.preemphasis`` with ``coeff`` (default 0.97)."""

    def __init__(self, coeff=0.97):
        super().__init__()
        self.coeff = coeff

    def forward(self, waveform):
        return F.preemphasis(waveform, coeff=self.coeff)


class Deemphasis(nn.Module):
    """``functional.deemphasis`` with ``coeff`` (default 0.97)."""

    def __init__(self, coeff=0.97):
        super().__init__()
        self.coeff = coeff

    def forward(self, waveform):
        return F.deemphasis(waveform, coeff=self.coeff)


class AddNoise(nn.Module):
    """``forward(waveform, noise, snr, lengths=None)``: ``functional.add_noise``."""

    def forward(self, waveform, noise, snr, lengths=None):
        return F.add_noise(waveform, noise, snr, lengths)


class Speed(nn.Module):
    """``forward(waveform, lengths=None) -> (waveform, lengths)``: ``functional.speed`` at
    ``factor`` for audio sampled at ``orig_freq`` Hz."""

    def __init__(self, orig_freq, factor):
        super().__init__()
        self.orig_freq = orig_freq
        self.factor = factor

    def forward(self, waveform, lengths=None):
        return F.speed(waveform, self.orig_freq, self.factor, lengths)


class SpeedPerturbation(nn.Module):
    """``Speed`` at a factor drawn uniformly from ``factors`` on each call (Ko et al., "Audio
    augmentation for speech recognition", 2015; torchaudio 2.8 ``transforms.SpeedPerturbation``)
    for audio sampled at ``orig_freq`` Hz; ``forward(waveform, lengths=None) -> (waveform,
    lengths)``."""

    def __init__(self, orig_freq, factors):
        super().__init__()
        self.speeders = nn.ModuleList([Speed(orig_freq=orig_freq, factor=f) for f in factors])

    def forward(self, waveform, lengths=None):
        idx = int(ember.randint(len(self.speeders), ()))
        return self.speeders[idx](waveform, lengths)


class PitchShift(nn.Module):
    """``functional.pitch_shift`` by ``n_steps`` for audio at ``sample_rate`` Hz
    (torchaudio 2.8 ``transforms.PitchShift``).

    Args:
        sample_rate: of the input, in Hz.
        n_steps: the shift, in steps of ``1 / bins_per_octave`` octave.
        bins_per_octave: steps per octave (12: semitones).
        n_fft: FFT size of the phase vocoder, in samples.
        win_length: window size in samples (default ``n_fft``).
        hop_length: samples between frames (default ``win_length // 4``).
        window_fn: builds the window from its length (default ``ember.hann_window``).
        wkwargs: keyword arguments of ``window_fn``.
    """

    def __init__(self, sample_rate, n_steps, bins_per_octave=12, n_fft=512, win_length=None, hop_length=None,
                 window_fn=ember.hann_window, wkwargs=None):
        super().__init__()
        self.sample_rate = sample_rate
        self.n_steps = n_steps
        self.bins_per_octave = bins_per_octave
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 4
        window = window_fn(self.win_length) if wkwargs is None else window_fn(self.win_length, **wkwargs)
        self.register_buffer("window", window, persistent=False)

    def forward(self, waveform):
        return F.pitch_shift(waveform, self.sample_rate, self.n_steps, self.bins_per_octave, self.n_fft,
                             self.win_length, self.hop_length, self.window)
