"""Module wrappers over ``functional``'s spectral kernels (torchaudio.transforms' names,
arguments, defaults and buffer names, so state_dicts match torchaudio's)."""

from __future__ import annotations

import math
import warnings

import ember
from ember import nn

from .. import functional as F

__all__ = ["Spectrogram", "InverseSpectrogram", "GriffinLim", "AmplitudeToDB", "MelScale", "InverseMelScale",
           "MelSpectrogram", "MFCC", "LFCC", "TimeStretch"]


def _window(window_fn, win_length, wkwargs):
    return window_fn(win_length) if wkwargs is None else window_fn(win_length, **wkwargs)


class Spectrogram(nn.Module):
    """Waveform ``[..., time]`` -> spectrogram ``[..., n_fft // 2 + 1, frames]`` (see
    ``functional.spectrogram``).  Source: torchaudio 2.8 ``transforms.Spectrogram``.

    Args:
        n_fft: FFT size, in samples.
        win_length: window size in samples (default ``n_fft``).
        hop_length: samples between frames (default ``win_length // 2``).
        pad: zeros added on both sides of the signal, in samples.
        window_fn: builds the window from its length (default ``ember.hann_window``).
        power: exponent of the magnitude (2.0 power, 1.0 magnitude; None: complex output).
        normalized: True or "window" divides by the window's L2 norm; "frame_length" by sqrt(n_fft).
        wkwargs: keyword arguments of ``window_fn``.
        center: pad ``n_fft // 2`` samples on both sides, so frame ``t`` is centred on sample ``t * hop_length``.
        pad_mode: the padding of ``center`` ("reflect", "constant", "replicate", "circular").
        onesided: only the ``n_fft // 2 + 1`` non-negative frequencies.
        return_complex: must not be False when ``power`` is None (ValueError at forward).
    """

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, window_fn=ember.hann_window,
                 power=2.0, normalized=False, wkwargs=None, center=True, pad_mode="reflect", onesided=True,
                 return_complex=None):
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided
        self.return_complex = return_complex

    def forward(self, waveform):
        return F.spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length, self.win_length,
                             self.power, self.normalized, self.center, self.pad_mode, self.onesided,
                             self.return_complex)


class InverseSpectrogram(nn.Module):
    """Complex spectrogram ``[..., freq, frames]`` -> waveform ``[..., time]`` (``forward(spec,
    length=None)``, ``length`` in samples).  Source: torchaudio 2.8 ``transforms.InverseSpectrogram``.

    The arguments describe the forward STFT to undo:

    Args:
        n_fft: FFT size, in samples.
        win_length: window size in samples (default ``n_fft``).
        hop_length: samples between frames (default ``win_length // 2``).
        pad: zeros added on both sides of the signal, in samples.
        window_fn: builds the window from its length (default ``ember.hann_window``).
        normalized: True or "window" divides by the window's L2 norm; "frame_length" by sqrt(n_fft).
        wkwargs: keyword arguments of ``window_fn``.
        center: pad ``n_fft // 2`` samples on both sides, so frame ``t`` is centred on sample ``t * hop_length``.
        pad_mode: the padding of ``center`` ("reflect", "constant", "replicate", "circular").
        onesided: only the ``n_fft // 2 + 1`` non-negative frequencies.

    Raises ValueError at forward for a real input. ``pad_mode`` is kept for torchaudio's signature (the
    inverse needs no padding).
    """

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, window_fn=ember.hann_window,
                 normalized=False, wkwargs=None, center=True, pad_mode="reflect", onesided=True):
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.pad = pad
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided

    def forward(self, spectrogram, length=None):
        return F.inverse_spectrogram(spectrogram, length, self.pad, self.window, self.n_fft, self.hop_length,
                                     self.win_length, self.normalized, self.center, self.pad_mode, self.onesided)


class GriffinLim(nn.Module):
    """Magnitude spectrogram ``[..., n_fft // 2 + 1, frames]`` -> waveform ``[..., time]`` by
    Griffin-Lim with fast momentum (see ``functional.griffinlim``; Perraudin et al., 2013).
    Raises ValueError for a momentum outside [0, 1).  Source: torchaudio 2.8 ``transforms.GriffinLim``.

    Args:
        n_fft: FFT size, in samples.
        n_iter: Griffin-Lim iterations.
        win_length: window size in samples (default ``n_fft``).
        hop_length: samples between frames (default ``win_length // 2``).
        window_fn: builds the window from its length (default ``ember.hann_window``).
        power: the exponent the input spectrogram was raised to (2.0 power, 1.0 magnitude).
        wkwargs: keyword arguments of ``window_fn``.
        momentum: the fast Griffin-Lim momentum, in [0, 1).
        length: output length in samples (None: as the STFT gives).
        rand_init: start from random phases (else zero phases).
    """

    def __init__(self, n_fft=400, n_iter=32, win_length=None, hop_length=None, window_fn=ember.hann_window,
                 power=2.0, wkwargs=None, momentum=0.99, length=None, rand_init=True):
        super().__init__()
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in the range [0, 1). Found: {momentum}")
        self.n_fft = n_fft
        self.n_iter = n_iter
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", _window(window_fn, self.win_length, wkwargs))
        self.length = length
        self.power = power
        self.momentum = momentum
        self.rand_init = rand_init

    def forward(self, specgram):
        return F.griffinlim(specgram, self.window, self.n_fft, self.hop_length, self.win_length, self.power,
                            self.n_iter, self.momentum, self.length, self.rand_init)


class AmplitudeToDB(nn.Module):
    """Power (``stype="power"``, 10 log10) or amplitude (``"magnitude"``, 20 log10) to decibels,
    floored at ``top_db`` below the peak when given (``amin=1e-10``, ``ref=1``).  Raises
    ValueError for a negative ``top_db``.  Source: torchaudio 2.8 ``transforms.AmplitudeToDB``."""

    def __init__(self, stype="power", top_db=None):
        super().__init__()
        self.stype = stype
        if top_db is not None and top_db < 0:
            raise ValueError(f"top_db must be positive value, got {top_db}")
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x):
        return F.amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)


class MelScale(nn.Module):
    """Spectrogram ``[..., n_stft, time]`` -> mel spectrogram ``[..., n_mels, time]`` through the
    ``fb`` buffer (``functional.melscale_fbanks``).  Raises ValueError when ``f_min > f_max``.
    Source: torchaudio 2.8 ``transforms.MelScale``.

    Args:
        n_mels: mel bands.
        sample_rate: of the input, in Hz.
        f_min: lowest filter frequency, in Hz.
        f_max: highest filter frequency, in Hz (default ``sample_rate // 2``).
        n_stft: frequency bins of the input (``n_fft // 2 + 1``).
        norm: None, or "slaney" to divide each triangle by its width (unit area).
        mel_scale: "htk" or "slaney" mel formula.
    """

    def __init__(self, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, n_stft=201, norm=None,
                 mel_scale="htk"):
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        self.norm = norm
        self.mel_scale = mel_scale
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate,
                                                     self.norm, self.mel_scale))

    def forward(self, specgram):
        return ember.matmul(specgram.transpose(-1, -2), self.fb).transpose(-1, -2)


class InverseMelScale(nn.Module):
    """Mel spectrogram ``[..., n_mels, time]`` -> linear spectrogram ``[..., n_stft, time]`` by
    least squares (``linalg.lstsq`` with ``driver``, then ReLU).  Raises ValueError for an
    unknown driver, ``f_min > f_max`` or (at forward) a wrong number of mel bins.
    Source: torchaudio 2.8 ``transforms.InverseMelScale``.

    Args:
        n_stft: frequency bins of the output (``n_fft // 2 + 1``).
        n_mels: mel bands.
        sample_rate: of the input, in Hz.
        f_min: lowest filter frequency, in Hz.
        f_max: highest filter frequency, in Hz (default ``sample_rate // 2``).
        norm: None, or "slaney" to divide each triangle by its width (unit area).
        mel_scale: "htk" or "slaney" mel formula.
        driver: the lstsq driver, "gels", "gelsy", "gelsd" or "gelss".
    """

    def __init__(self, n_stft, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, norm=None, mel_scale="htk",
                 driver="gels"):
        super().__init__()
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max or float(sample_rate // 2)
        self.f_min = f_min
        self.driver = driver
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} <= f_max: {self.f_max}")
        if driver not in ("gels", "gelsy", "gelsd", "gelss"):
            raise ValueError(f'driver must be one of ["gels", "gelsy", "gelsd", "gelss"]. Found {driver}.')
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate,
                                                     norm, mel_scale))

    def forward(self, melspec):
        shape = tuple(melspec.shape)
        melspec = melspec.reshape(-1, shape[-2], shape[-1])
        n_mels, time = shape[-2], shape[-1]
        freq = self.fb.shape[0]
        if self.n_mels != n_mels:
            raise ValueError(f"Expected an input with {self.n_mels} mel bins. Found: {n_mels}")
        A = self.fb.transpose(-1, -2)[None].expand(melspec.shape[0], n_mels, freq)
        specgram = ember.relu(ember.linalg.lstsq(A, melspec, driver=self.driver).solution)
        return specgram.reshape(shape[:-2] + (freq, time))


class MelSpectrogram(nn.Module):
    """Waveform ``[..., time]`` -> mel spectrogram ``[..., n_mels, frames]``: a ``Spectrogram``
    (submodule ``spectrogram``) then a ``MelScale`` (submodule ``mel_scale``).
    Source: torchaudio 2.8 ``transforms.MelSpectrogram``.

    Args:
        sample_rate: of the input, in Hz.
        n_fft: FFT size, in samples.
        win_length: window size in samples (default ``n_fft``).
        hop_length: samples between frames (default ``win_length // 2``).
        f_min: lowest filter frequency, in Hz.
        f_max: highest filter frequency, in Hz (default ``sample_rate // 2``).
        pad: zeros added on both sides of the signal, in samples.
        n_mels: mel bands.
        window_fn: builds the window from its length (default ``ember.hann_window``).
        power: exponent of the magnitude (2.0 power, 1.0 magnitude; None: complex output).
        normalized: True or "window" divides by the window's L2 norm; "frame_length" by sqrt(n_fft).
        wkwargs: keyword arguments of ``window_fn``.
        center: pad ``n_fft // 2`` samples on both sides, so frame ``t`` is centred on sample ``t * hop_length``.
        pad_mode: the padding of ``center`` ("reflect", "constant", "replicate", "circular").
        onesided: deprecated and unused (a warning when given); the spectrogram is one-sided.
        norm: None, or "slaney" to divide each triangle by its width (unit area).
        mel_scale: "htk" or "slaney" mel formula.
    """

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None, f_min=0.0, f_max=None,
                 pad=0, n_mels=128, window_fn=ember.hann_window, power=2.0, normalized=False, wkwargs=None,
                 center=True, pad_mode="reflect", onesided=None, norm=None, mel_scale="htk"):
        super().__init__()
        if onesided is not None:
            warnings.warn("Argument 'onesided' has been deprecated and has no influence on the behavior of this "
                          "module.", stacklevel=2)
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.n_mels = n_mels
        self.f_max = f_max
        self.f_min = f_min
        self.spectrogram = Spectrogram(n_fft=self.n_fft, win_length=self.win_length, hop_length=self.hop_length,
                                       pad=self.pad, window_fn=window_fn, power=self.power,
                                       normalized=self.normalized, wkwargs=wkwargs, center=center,
                                       pad_mode=pad_mode, onesided=True)
        self.mel_scale = MelScale(self.n_mels, self.sample_rate, self.f_min, self.f_max, self.n_fft // 2 + 1, norm,
                                  mel_scale)

    def forward(self, waveform):
        return self.mel_scale(self.spectrogram(waveform))


class MFCC(nn.Module):
    """Waveform ``[..., time]`` -> MFCCs ``[..., n_mfcc, frames]``: mel spectrogram, then dB
    (``AmplitudeToDB("power", top_db=80)``) or ``log(x + 1e-6)`` with ``log_mels=True``, then
    DCT-II (``dct_mat`` buffer).  Raises ValueError for a DCT type other than 2 or more
    coefficients than mel bins.  Source: torchaudio 2.8 ``transforms.MFCC``.

    Args:
        sample_rate: of the input, in Hz.
        n_mfcc: coefficients kept.
        dct_type: only 2 (DCT-II) is supported.
        norm: the DCT's norm, "ortho" or None.
        log_mels: natural log instead of decibels.
        melkwargs: keyword arguments of the ``MelSpectrogram`` (``n_mels``, ``n_fft``, ...).
    """

    def __init__(self, sample_rate=16000, n_mfcc=40, dct_type=2, norm="ortho", log_mels=False, melkwargs=None):
        super().__init__()
        if dct_type not in (2,):
            raise ValueError(f"DCT type not supported: {dct_type}")
        self.sample_rate = sample_rate
        self.n_mfcc = n_mfcc
        self.dct_type = dct_type
        self.norm = norm
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        melkwargs = melkwargs or {}
        self.MelSpectrogram = MelSpectrogram(sample_rate=self.sample_rate, **melkwargs)
        if self.n_mfcc > self.MelSpectrogram.n_mels:
            raise ValueError("Cannot select more MFCC coefficients than # mel bins")
        self.register_buffer("dct_mat", F.create_dct(self.n_mfcc, self.MelSpectrogram.n_mels, self.norm))
        self.log_mels = log_mels

    def forward(self, waveform):
        mel = self.MelSpectrogram(waveform)
        mel = ember.log(mel + 1e-6) if self.log_mels else self.amplitude_to_DB(mel)
        return ember.matmul(mel.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class LFCC(nn.Module):
    """Waveform ``[..., time]`` -> linear-frequency cepstral coefficients ``[..., n_lfcc, frames]``:
    spectrogram, ``n_filter`` linear triangular filters (``filter_mat``), dB or log, DCT-II.
    Raises ValueError for a DCT type other than 2 or more coefficients than FFT bins.
    Source: torchaudio 2.8 ``transforms.LFCC``.

    Args:
        sample_rate: of the input, in Hz.
        n_filter: linear triangular filters.
        f_min: lowest filter frequency, in Hz.
        f_max: highest filter frequency, in Hz (default ``sample_rate // 2``).
        n_lfcc: coefficients kept.
        dct_type: only 2 (DCT-II) is supported.
        norm: the DCT's norm, "ortho" or None.
        log_lf: natural log instead of decibels.
        speckwargs: keyword arguments of the ``Spectrogram`` (``n_fft``, ``hop_length``, ...).
    """

    def __init__(self, sample_rate=16000, n_filter=128, f_min=0.0, f_max=None, n_lfcc=40, dct_type=2, norm="ortho",
                 log_lf=False, speckwargs=None):
        super().__init__()
        if dct_type not in (2,):
            raise ValueError(f"DCT type not supported: {dct_type}")
        self.sample_rate = sample_rate
        self.f_min = f_min
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.n_filter = n_filter
        self.n_lfcc = n_lfcc
        self.dct_type = dct_type
        self.norm = norm
        self.log_lf = log_lf
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        speckwargs = speckwargs or {}
        self.Spectrogram = Spectrogram(**speckwargs)
        if self.n_lfcc > self.Spectrogram.n_fft:
            raise ValueError("Cannot select more LFCC coefficients than # fft bins")
        self.register_buffer("filter_mat", F.linear_fbanks(self.Spectrogram.n_fft // 2 + 1, self.f_min, self.f_max,
                                                           self.n_filter, self.sample_rate))
        self.register_buffer("dct_mat", F.create_dct(self.n_lfcc, self.n_filter, self.norm))

    def forward(self, waveform):
        spec = self.Spectrogram(waveform)
        spec = ember.matmul(spec.transpose(-1, -2), self.filter_mat).transpose(-1, -2)
        spec = ember.log(spec + 1e-6) if self.log_lf else self.amplitude_to_DB(spec)
        return ember.matmul(spec.transpose(-1, -2), self.dct_mat).transpose(-1, -2)


class TimeStretch(nn.Module):
    """Complex spectrogram ``[..., n_freq, frames]`` -> ``[..., n_freq, ceil(frames / rate)]``
    by the phase vocoder (``forward(spec, overriding_rate=None)``).  Raises ValueError when
    neither ``fixed_rate`` nor a rate is given.  Source: torchaudio 2.8 ``transforms.TimeStretch``.

    Args:
        hop_length: the STFT's hop in samples (default ``n_fft // 2`` with ``n_fft = 2 * (n_freq - 1)``).
        n_freq: frequency bins of the input.
        fixed_rate: the speed-up used when forward gets no rate (> 1 faster).
    """

    def __init__(self, hop_length=None, n_freq=201, fixed_rate=None):
        super().__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        hop_length = hop_length if hop_length is not None else n_fft // 2
        self.register_buffer("phase_advance", ember.linspace(0, math.pi * hop_length, n_freq)[..., None])

    def forward(self, complex_specgrams, overriding_rate=None):
        if overriding_rate is None:
            if self.fixed_rate is None:
                raise ValueError("If no fixed_rate is specified, must pass a valid rate to the forward method.")
            rate = self.fixed_rate
        else:
            rate = overriding_rate
        return F.phase_vocoder(complex_specgrams, rate, self.phase_advance)
