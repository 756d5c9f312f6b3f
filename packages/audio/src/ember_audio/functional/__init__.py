"""Audio kernels on tensors ``[..., time]`` (torchaudio.functional's names and arguments)."""

from ._amplitude import DB_to_amplitude, amplitude_to_DB, gain, mu_law_decoding, mu_law_encoding
from ._features import add_noise, compute_deltas, detect_pitch_frequency
from ._filtering import (
    allpass_biquad,
    bandpass_biquad,
    bandreject_biquad,
    biquad,
    deemphasis,
    equalizer_biquad,
    filtfilt,
    highpass_biquad,
    lfilter,
    lowpass_biquad,
    preemphasis,
)
from ._masking import mask_along_axis, mask_along_axis_iid
from ._mel import create_dct, linear_fbanks, melscale_fbanks
from ._pitch import pitch_shift
from ._resample import resample, speed
from ._spectral import griffinlim, inverse_spectrogram, phase_vocoder, spectrogram

__all__ = [
    "DB_to_amplitude", "add_noise", "allpass_biquad", "amplitude_to_DB", "bandpass_biquad", "bandreject_biquad",
    "biquad", "compute_deltas", "create_dct", "deemphasis", "detect_pitch_frequency", "equalizer_biquad",
    "filtfilt", "gain", "griffinlim", "highpass_biquad", "inverse_spectrogram", "lfilter", "linear_fbanks",
    "lowpass_biquad", "mask_along_axis", "mask_along_axis_iid", "melscale_fbanks", "mu_law_decoding",
    "mu_law_encoding", "phase_vocoder", "pitch_shift", "preemphasis", "resample", "spectrogram", "speed",
]
