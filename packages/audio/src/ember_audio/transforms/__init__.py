"""Transforms as modules (torchaudio.transforms' names), plus ember's own streaming features."""

from ._spectral import (
    LFCC,
    MFCC,
    AmplitudeToDB,
    GriffinLim,
    InverseMelScale,
    InverseSpectrogram,
    MelScale,
    MelSpectrogram,
    Spectrogram,
    TimeStretch,
)
from ._streaming import StreamingMelSpectrogram, StreamingMFCC
from ._waveform import (
    AddNoise,
    ComputeDeltas,
    Deemphasis,
    Fade,
    FrequencyMasking,
    MuLawDecoding,
    MuLawEncoding,
    PitchShift,
    Preemphasis,
    Resample,
    Speed,
    SpeedPerturbation,
    TimeMasking,
    Vol,
)
from ._whisper import WhisperLogMelSpectrogram

__all__ = [
    "AddNoise", "AmplitudeToDB", "ComputeDeltas", "Deemphasis", "Fade", "FrequencyMasking", "GriffinLim",
    "InverseMelScale", "InverseSpectrogram", "LFCC", "MFCC", "MelScale", "MelSpectrogram", "MuLawDecoding",
    "MuLawEncoding", "PitchShift", "Preemphasis", "Resample", "Spectrogram", "Speed", "SpeedPerturbation",
    "StreamingMFCC", "StreamingMelSpectrogram", "TimeMasking", "TimeStretch", "Vol", "WhisperLogMelSpectrogram",
]
