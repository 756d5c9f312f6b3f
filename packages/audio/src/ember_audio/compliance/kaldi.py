"""Kaldi's feature pipelines: ``spectrogram`` (compute-spectrogram-feats), ``fbank``
(compute-fbank-feats) and ``mfcc`` (compute-mfcc-feats), with Kaldi's option names and
defaults, as ``torchaudio.compliance.kaldi`` exposes them.

Input is ``[channels, time]`` (one channel is used, see ``channel``) with samples as Kaldi
reads them (torchaudio's convention: pass the waveform scaled as you want it; Kaldi's own
tools see 16-bit integers).  Output is ``[frames, features]``.  Built from ember ops, so the
features are differentiable in the waveform (except through ``dither``'s noise).

Bad options raise ValueError (torchaudio uses ``assert``, which ``python -O`` removes).
Sources: the Kaldi toolkit (feat/feature-window.cc, mel-computations.cc, feature-mfcc.cc);
torchaudio 2.8 ``compliance.kaldi``.
"""

from __future__ import annotations

import math

import ember
from ember.nn import functional as F

from ..functional import create_dct

__all__ = ["spectrogram", "fbank", "mfcc", "get_mel_banks", "mel_scale", "inverse_mel_scale", "vtln_warp_freq",
           "vtln_warp_mel_freq"]

_EPSILON = 1.1920928955078125e-07  # float32 machine epsilon: Kaldi's floor on energies
_WINDOWS = ("hamming", "hanning", "povey", "rectangular", "blackman")


def mel_scale_scalar(freq: float) -> float:
    return 1127.0 * math.log(1.0 + freq / 700.0)


def mel_scale(freq):
    """Kaldi's mel scale, ``1127 ln(1 + f / 700)``, of ``freq`` (a tensor of Hz) -> mel."""
    return 1127.0 * ember.log(1.0 + freq / 700.0)


def inverse_mel_scale(mel_freq):
    """The inverse of :func:`mel_scale`, ``700 (exp(m / 1127) - 1)``: ``mel_freq`` (a tensor of
    mels) -> Hz (torchaudio.compliance.kaldi.inverse_mel_scale).
    """
    return 700.0 * (ember.exp(mel_freq / 1127.0) - 1.0)


def _check(cond, message):
    if not cond:
        raise ValueError(message)


def _properties(waveform, channel, sample_frequency, frame_shift, frame_length, round_to_power_of_two,
                preemphasis_coefficient):
    _check(waveform.ndim == 2, f"expected a waveform [channels, time], got shape {list(waveform.shape)}")
    channel = max(channel, 0)
    _check(channel < waveform.shape[0], f"Invalid channel {channel} for size {waveform.shape[0]}")
    x = waveform[channel]
    shift = int(sample_frequency * frame_shift * 0.001)
    size = int(sample_frequency * frame_length * 0.001)
    padded = 1 << (size - 1).bit_length() if round_to_power_of_two else size
    _check(2 <= size <= x.shape[0], f"choose a window size {size} that is in [2, {x.shape[0]}]")
    _check(shift > 0, f"frame_shift must give a positive number of samples, got {shift}")
    _check(padded % 2 == 0, f"the padded window size must be even, got {padded}: use round_to_power_of_two or "
                            f"change frame_length")
    _check(0.0 <= preemphasis_coefficient <= 1.0,
           f"preemphasis_coefficient must be in [0, 1], got {preemphasis_coefficient}")
    _check(sample_frequency > 0, f"sample_frequency must be positive, got {sample_frequency}")
    return x, shift, size, padded


def _frames(x, size, shift, snip_edges):
    """``[m, size]`` frames; without ``snip_edges``, m depends only on the shift and the ends are
    reflected (Kaldi's ExtractWindow)."""
    n = x.shape[0]
    if snip_edges:
        if n < size:
            return ember.empty((0, size), dtype=x.dtype, device=x.device)
        return x.unfold(0, size, shift)
    m = (n + shift // 2) // shift
    rev = x.flip(0)
    pad = size // 2 - shift // 2
    ext = ember.cat([rev[n - pad:], x, rev]) if pad > 0 else ember.cat([x[-pad:], rev])
    return ext.unfold(0, size, shift)[:m]


def _window_function(window_type, size, blackman_coeff, like):
    kw = dict(dtype=like.dtype, device=like.device)
    if window_type == "hanning":
        return ember.hann_window(size, periodic=False, **kw)
    if window_type == "hamming":
        return ember.hamming_window(size, periodic=False, alpha=0.54, beta=0.46, **kw)
    if window_type == "povey":
        return ember.hann_window(size, periodic=False, **kw).pow(0.85)
    if window_type == "rectangular":
        return ember.ones(size, **kw)
    if window_type == "blackman":
        a = 2 * math.pi / (size - 1)
        n = ember.arange(size, **kw)
        return blackman_coeff - 0.5 * ember.cos(a * n) + (0.5 - blackman_coeff) * ember.cos(2 * a * n)
    raise ValueError(f"Invalid window type {window_type!r}: expected one of {list(_WINDOWS)}")


def _log_energy(frames, energy_floor):
    log_energy = ember.clamp(frames.pow(2).sum(1), min=_EPSILON).log()
    if energy_floor == 0.0:
        return log_energy
    return ember.clamp(log_energy, min=math.log(energy_floor))


def _windowed(x, padded, size, shift, window_type, blackman_coeff, snip_edges, raw_energy, energy_floor, dither,
              remove_dc_offset, preemphasis_coefficient):
    """Framed, dithered, DC-removed, pre-emphasized, windowed and zero-padded frames ``[m, padded]``
    and their log energy ``[m]``."""
    frames = _frames(x, size, shift, snip_edges)
    if dither != 0.0:
        frames = frames + ember.randn(tuple(frames.shape), dtype=frames.dtype, device=frames.device) * dither
    if remove_dc_offset:
        frames = frames - frames.mean(1, keepdim=True)
    if raw_energy:
        log_energy = _log_energy(frames, energy_floor)
    if preemphasis_coefficient != 0.0:
        previous = ember.cat([frames[:, :1], frames[:, :-1]], 1)  # the first sample is its own predecessor
        frames = frames - preemphasis_coefficient * previous
    frames = frames * _window_function(window_type, size, blackman_coeff, frames).unsqueeze(0)
    if padded != size:
        frames = F.pad(frames, (0, padded - size))
    if not raw_energy:
        log_energy = _log_energy(frames, energy_floor)
    return frames, log_energy


def _subtract_column_mean(t, subtract_mean):
    return t - t.mean(0, keepdim=True) if subtract_mean else t


def spectrogram(waveform, blackman_coeff=0.42, channel=-1, dither=0.0, energy_floor=1.0, frame_length=25.0,
                frame_shift=10.0, min_duration=0.0, preemphasis_coefficient=0.97, raw_energy=True,
                remove_dc_offset=True, round_to_power_of_two=True, sample_frequency=16000.0, snip_edges=True,
                subtract_mean=False, window_type="povey"):
    """Kaldi's log power spectrogram of ``waveform [channels, time]``: ``[frames, padded // 2 + 1]``
    where column 0 holds the frame's log energy (Kaldi's compute-spectrogram-feats;
    torchaudio.compliance.kaldi.spectrogram).

    Args:
        waveform: ``[channels, time]`` float samples.
        blackman_coeff: the Blackman window's coefficient (``window_type="blackman"``).
        channel: the channel used (negative: 0).
        dither: standard deviation of the Gaussian noise added to each framed sample (0: none).
        energy_floor: floor on the energy (linear; 0: none; default 1.0, as torchaudio's).
        frame_length: window length, in milliseconds.
        frame_shift: hop between frames, in milliseconds.
        min_duration: shorter signals (seconds) give an empty tensor.
        preemphasis_coefficient: ``x[n] -= c * x[n - 1]`` within each frame, c in [0, 1].
        raw_energy: take the energy before preemphasis and windowing.
        remove_dc_offset: subtract each frame's mean.
        round_to_power_of_two: zero-pad each frame to a power of two for the FFT.
        sample_frequency: of the waveform, in Hz.
        snip_edges: only frames that fit in the signal; False reflects the ends and gives
            ``(time + shift // 2) // shift`` frames.
        subtract_mean: subtract each feature's mean over the frames.
        window_type: "povey" (Hann ** 0.85), "hanning", "hamming", "rectangular" or "blackman".

    Raises ValueError for bad options (a window longer than the signal, an unknown window type, ...).
    """
    x, shift, size, padded = _properties(waveform, channel, sample_frequency, frame_shift, frame_length,
                                         round_to_power_of_two, preemphasis_coefficient)
    if x.shape[0] < min_duration * sample_frequency:
        return ember.empty(0, dtype=waveform.dtype, device=waveform.device)
    frames, log_energy = _windowed(x, padded, size, shift, window_type, blackman_coeff, snip_edges, raw_energy,
                                   energy_floor, dither, remove_dc_offset, preemphasis_coefficient)
    power = ember.clamp(ember.fft.rfft(frames).abs().pow(2.0), min=_EPSILON).log()
    power = ember.cat([log_energy.unsqueeze(1), power[:, 1:]], 1)
    return _subtract_column_mean(power, subtract_mean)


def vtln_warp_freq(vtln_low_cutoff, vtln_high_cutoff, low_freq, high_freq, vtln_warp_factor, freq):
    """Kaldi's piecewise-linear VTLN warp of frequencies ``freq`` (a tensor, Hz): ``f / vtln_warp_factor``
    between two inflection points, linear to the fixed ends ``low_freq`` and ``high_freq`` (Hz);
    frequencies outside them are unchanged (torchaudio.compliance.kaldi.vtln_warp_freq).

    The inflection points are ``vtln_low_cutoff * max(1, vtln_warp_factor)`` and
    ``vtln_high_cutoff * min(1, vtln_warp_factor)`` (Hz). Raises ValueError unless
    ``low_freq < vtln_low_cutoff``, ``vtln_high_cutoff < high_freq`` and the inflection points
    lie within them. ``vtln_warp_factor`` is the warp (1.0: identity).
    """
    _check(vtln_low_cutoff > low_freq, "be sure to set the vtln_low option higher than low_freq")
    _check(vtln_high_cutoff < high_freq, "be sure to set the vtln_high option lower than high_freq [or negative]")
    lo = vtln_low_cutoff * max(1.0, vtln_warp_factor)
    hi = vtln_high_cutoff * min(1.0, vtln_warp_factor)
    scale = 1.0 / vtln_warp_factor
    f_lo, f_hi = scale * lo, scale * hi
    _check(lo > low_freq and hi < high_freq, "VTLN inflection points fall outside [low_freq, high_freq]")
    scale_left = (f_lo - low_freq) / (lo - low_freq)
    scale_right = (high_freq - f_hi) / (high_freq - hi)
    res = ember.where(freq >= hi, high_freq + scale_right * (freq - high_freq), scale * freq)
    res = ember.where(freq < lo, low_freq + scale_left * (freq - low_freq), res)
    return ember.where((freq < low_freq) | (freq > high_freq), freq, res)


def vtln_warp_mel_freq(vtln_low_cutoff, vtln_high_cutoff, low_freq, high_freq, vtln_warp_factor, mel_freq):
    """``vtln_warp_freq`` applied to mel frequencies ``mel_freq`` (a tensor of mels): converted to
    Hz, warped with ``vtln_low_cutoff``, ``vtln_high_cutoff``, ``low_freq``, ``high_freq`` (Hz) and
    ``vtln_warp_factor``, and back to mels (torchaudio.compliance.kaldi.vtln_warp_mel_freq).
    """
    return mel_scale(vtln_warp_freq(vtln_low_cutoff, vtln_high_cutoff, low_freq, high_freq, vtln_warp_factor,
                                    inverse_mel_scale(mel_freq)))


def get_mel_banks(num_bins, window_length_padded, sample_freq, low_freq, high_freq, vtln_low, vtln_high,
                  vtln_warp_factor):
    """Kaldi's triangular mel bins on the mel axis: ``(bins [num_bins, padded // 2], center_freqs
    [num_bins])`` (Hz) (torchaudio.compliance.kaldi.get_mel_banks).

    Args:
        num_bins: mel bins (> 3).
        window_length_padded: the FFT size ``padded`` in samples (even).
        sample_freq: the sample rate, in Hz.
        low_freq: lowest edge, in Hz.
        high_freq: highest edge in Hz; <= 0 is an offset from the Nyquist frequency.
        vtln_low: VTLN's lower inflection point, in Hz.
        vtln_high: VTLN's upper inflection point in Hz; negative is an offset from the Nyquist frequency.
        vtln_warp_factor: the VTLN warp (1.0: none).

    Raises ValueError for bad values.
    """
    _check(num_bins > 3, f"Must have at least 3 mel bins, got {num_bins}")
    _check(window_length_padded % 2 == 0, f"window_length_padded must be even, got {window_length_padded}")
    num_fft_bins = window_length_padded // 2
    nyquist = 0.5 * sample_freq
    if high_freq <= 0.0:
        high_freq += nyquist
    _check(0.0 <= low_freq < nyquist and 0.0 < high_freq <= nyquist and low_freq < high_freq,
           f"Bad values in options: low-freq {low_freq} and high-freq {high_freq} vs. nyquist {nyquist}")
    fft_bin_width = sample_freq / window_length_padded
    mel_low, mel_high = mel_scale_scalar(low_freq), mel_scale_scalar(high_freq)
    delta = (mel_high - mel_low) / (num_bins + 1)
    if vtln_high < 0.0:
        vtln_high += nyquist
    _check(vtln_warp_factor == 1.0 or (low_freq < vtln_low < high_freq and 0.0 < vtln_high < high_freq
                                       and vtln_low < vtln_high),
           f"Bad values in options: vtln-low {vtln_low} and vtln-high {vtln_high}, versus low-freq {low_freq} and "
           f"high-freq {high_freq}")
    b = ember.arange(num_bins).unsqueeze(1).to(ember.float32)
    left = mel_low + b * delta
    center = mel_low + (b + 1.0) * delta
    right = mel_low + (b + 2.0) * delta
    if vtln_warp_factor != 1.0:
        warp = lambda m: vtln_warp_mel_freq(vtln_low, vtln_high, low_freq, high_freq, vtln_warp_factor, m)  # noqa: E731
        left, center, right = warp(left), warp(center), warp(right)
    center_freqs = inverse_mel_scale(center)
    mel = mel_scale(fft_bin_width * ember.arange(num_fft_bins).to(ember.float32)).unsqueeze(0)
    up = (mel - left) / (center - left)
    down = (right - mel) / (right - center)
    if vtln_warp_factor == 1.0:
        bins = ember.clamp(ember.minimum(up, down), min=0.0)
    else:
        # warped edges can cross: take each slope only on its own side of the centre
        zeros = ember.zeros_like(up)
        bins = ember.where((mel > left) & (mel <= center), up, zeros)
        bins = ember.where((mel > center) & (mel < right), down, bins)
    return bins, center_freqs.squeeze(1)


def fbank(waveform, blackman_coeff=0.42, channel=-1, dither=0.0, energy_floor=1.0, frame_length=25.0,
          frame_shift=10.0, high_freq=0.0, htk_compat=False, low_freq=20.0, min_duration=0.0, num_mel_bins=23,
          preemphasis_coefficient=0.97, raw_energy=True, remove_dc_offset=True, round_to_power_of_two=True,
          sample_frequency=16000.0, snip_edges=True, subtract_mean=False, use_energy=False, use_log_fbank=True,
          use_power=True, vtln_high=-500.0, vtln_low=100.0, vtln_warp=1.0, window_type="povey"):
    """Kaldi's (log) mel filter bank energies of ``waveform [channels, time]``:
    ``[frames, num_mel_bins + use_energy]`` (the energy first, or last with ``htk_compat``)
    (Kaldi's compute-fbank-feats; torchaudio.compliance.kaldi.fbank).

    Args:
        waveform: ``[channels, time]`` float samples.
        blackman_coeff: the Blackman window's coefficient (``window_type="blackman"``).
        channel: the channel used (negative: 0).
        dither: standard deviation of the Gaussian noise added to each framed sample (0: none).
        energy_floor: floor on the energy (linear; 0: none; default 1.0, as torchaudio's).
        frame_length: window length, in milliseconds.
        frame_shift: hop between frames, in milliseconds.
        high_freq: highest mel bin edge in Hz; <= 0 is an offset from the Nyquist frequency.
        htk_compat: put the energy (or C0) last, as HTK does.
        low_freq: lowest mel bin edge, in Hz.
        min_duration: shorter signals (seconds) give an empty tensor.
        num_mel_bins: triangular mel bins (> 3).
        preemphasis_coefficient: ``x[n] -= c * x[n - 1]`` within each frame, c in [0, 1].
        raw_energy: take the energy before preemphasis and windowing.
        remove_dc_offset: subtract each frame's mean.
        round_to_power_of_two: zero-pad each frame to a power of two for the FFT.
        sample_frequency: of the waveform, in Hz.
        snip_edges: only frames that fit in the signal; False reflects the ends and gives
            ``(time + shift // 2) // shift`` frames.
        subtract_mean: subtract each feature's mean over the frames.
        use_energy: add the log energy as a feature.
        use_log_fbank: log of the mel energies (else linear).
        use_power: mel bins of the power spectrum (else of the magnitude).
        vtln_high: VTLN's upper inflection point in Hz; negative is an offset from the Nyquist frequency.
        vtln_low: VTLN's lower inflection point, in Hz.
        vtln_warp: the VTLN warp factor (1.0: none).
        window_type: "povey" (Hann ** 0.85), "hanning", "hamming", "rectangular" or "blackman".

    Raises ValueError for bad options (a window longer than the signal, an unknown window type, ...).
    """
    x, shift, size, padded = _properties(waveform, channel, sample_frequency, frame_shift, frame_length,
                                         round_to_power_of_two, preemphasis_coefficient)
    if x.shape[0] < min_duration * sample_frequency:
        return ember.empty(0, dtype=waveform.dtype, device=waveform.device)
    frames, log_energy = _windowed(x, padded, size, shift, window_type, blackman_coeff, snip_edges, raw_energy,
                                   energy_floor, dither, remove_dc_offset, preemphasis_coefficient)
    spectrum = ember.fft.rfft(frames).abs()
    if use_power:
        spectrum = spectrum.pow(2.0)
    bins, _ = get_mel_banks(num_mel_bins, padded, sample_frequency, low_freq, high_freq, vtln_low, vtln_high,
                            vtln_warp)
    bins = F.pad(bins.to(frames.dtype), (0, 1))  # the Nyquist bin carries no weight
    energies = ember.matmul(spectrum, bins.t())
    if use_log_fbank:
        energies = ember.clamp(energies, min=_EPSILON).log()
    if use_energy:
        e = log_energy.unsqueeze(1)
        energies = ember.cat([energies, e] if htk_compat else [e, energies], 1)
    return _subtract_column_mean(energies, subtract_mean)


def _dct_matrix(num_ceps, num_mel_bins):
    dct = create_dct(num_mel_bins, num_mel_bins, "ortho")
    col0 = ember.full((num_mel_bins, 1), math.sqrt(1 / float(num_mel_bins)))
    return ember.cat([col0, dct[:, 1:]], 1)[:, :num_ceps]


def _lifter_coeffs(num_ceps, cepstral_lifter):
    i = ember.arange(num_ceps).to(ember.float32)
    return 1.0 + 0.5 * cepstral_lifter * ember.sin(math.pi * i / cepstral_lifter)


def mfcc(waveform, blackman_coeff=0.42, cepstral_lifter=22.0, channel=-1, dither=0.0, energy_floor=1.0,
         frame_length=25.0, frame_shift=10.0, high_freq=0.0, htk_compat=False, low_freq=20.0, num_ceps=13,
         min_duration=0.0, num_mel_bins=23, preemphasis_coefficient=0.97, raw_energy=True, remove_dc_offset=True,
         round_to_power_of_two=True, sample_frequency=16000.0, snip_edges=True, subtract_mean=False,
         use_energy=False, vtln_high=-500.0, vtln_low=100.0, vtln_warp=1.0, window_type="povey"):
    """Kaldi's MFCCs of ``waveform [channels, time]``: ``[frames, num_ceps]`` — the DCT of the log
    mel energies, liftered by ``1 + lifter / 2 * sin(pi i / lifter)``; with ``use_energy`` C0 is
    replaced by the log energy; with ``htk_compat`` C0 goes last (times sqrt(2) without energy)
    (Kaldi's compute-mfcc-feats; torchaudio.compliance.kaldi.mfcc).

    Args:
        waveform: ``[channels, time]`` float samples.
        blackman_coeff: the Blackman window's coefficient (``window_type="blackman"``).
        cepstral_lifter: the lifter's L (0: no liftering).
        channel: the channel used (negative: 0).
        dither: standard deviation of the Gaussian noise added to each framed sample (0: none).
        energy_floor: floor on the energy (linear; 0: none; default 1.0, as torchaudio's).
        frame_length: window length, in milliseconds.
        frame_shift: hop between frames, in milliseconds.
        high_freq: highest mel bin edge in Hz; <= 0 is an offset from the Nyquist frequency.
        htk_compat: put the energy (or C0) last, as HTK does.
        low_freq: lowest mel bin edge, in Hz.
        num_ceps: cepstral coefficients kept (<= ``num_mel_bins``).
        min_duration: shorter signals (seconds) give an empty tensor.
        num_mel_bins: triangular mel bins (> 3).
        preemphasis_coefficient: ``x[n] -= c * x[n - 1]`` within each frame, c in [0, 1].
        raw_energy: take the energy before preemphasis and windowing.
        remove_dc_offset: subtract each frame's mean.
        round_to_power_of_two: zero-pad each frame to a power of two for the FFT.
        sample_frequency: of the waveform, in Hz.
        snip_edges: only frames that fit in the signal; False reflects the ends and gives
            ``(time + shift // 2) // shift`` frames.
        subtract_mean: subtract each feature's mean over the frames.
        use_energy: add the log energy as a feature.
        vtln_high: VTLN's upper inflection point in Hz; negative is an offset from the Nyquist frequency.
        vtln_low: VTLN's lower inflection point, in Hz.
        vtln_warp: the VTLN warp factor (1.0: none).
        window_type: "povey" (Hann ** 0.85), "hanning", "hamming", "rectangular" or "blackman".

    Raises ValueError for bad options (a window longer than the signal, an unknown window type, ...).
    """
    _check(num_ceps <= num_mel_bins, f"num_ceps cannot be larger than num_mel_bins: {num_ceps} vs {num_mel_bins}")
    feature = fbank(waveform, blackman_coeff=blackman_coeff, channel=channel, dither=dither,
                    energy_floor=energy_floor, frame_length=frame_length, frame_shift=frame_shift,
                    high_freq=high_freq, htk_compat=htk_compat, low_freq=low_freq, min_duration=min_duration,
                    num_mel_bins=num_mel_bins, preemphasis_coefficient=preemphasis_coefficient,
                    raw_energy=raw_energy, remove_dc_offset=remove_dc_offset,
                    round_to_power_of_two=round_to_power_of_two, sample_frequency=sample_frequency,
                    snip_edges=snip_edges, subtract_mean=False, use_energy=use_energy, use_log_fbank=True,
                    use_power=True, vtln_high=vtln_high, vtln_low=vtln_low, vtln_warp=vtln_warp,
                    window_type=window_type)
    if feature.ndim == 1:  # shorter than min_duration
        return feature
    if use_energy:
        log_energy = feature[:, num_mel_bins if htk_compat else 0]
        offset = int(not htk_compat)
        feature = feature[:, offset:num_mel_bins + offset]
    feature = ember.matmul(feature, _dct_matrix(num_ceps, num_mel_bins).to(feature.dtype))
    if cepstral_lifter != 0.0:
        feature = feature * _lifter_coeffs(num_ceps, cepstral_lifter).unsqueeze(0).to(feature.dtype)
    if use_energy:
        feature = ember.cat([log_energy.unsqueeze(1), feature[:, 1:]], 1)
    if htk_compat:
        energy = feature[:, :1]
        if not use_energy:
            energy = energy * math.sqrt(2)
        feature = ember.cat([feature[:, 1:], energy], 1)
    return _subtract_column_mean(feature, subtract_mean)
