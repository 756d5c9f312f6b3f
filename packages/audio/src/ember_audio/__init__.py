"""ember-audio: audio io, functional kernels and transforms for ember, with torchaudio 2.8's
names and layouts (``import ember_audio as torchaudio``).  Waveforms are ``[..., channels,
time]`` and sample rates are in Hz."""

from . import compliance, datasets, functional, io, models, pipelines, transforms
from .io import AudioMetaData, info, load, save

__version__ = "0.1.0"

__all__ = ["AudioMetaData", "compliance", "datasets", "functional", "info", "io", "list_audio_backends", "load",
           "models", "pipelines", "save", "transforms"]


def list_audio_backends():
    """The io backends available: always ``["soundfile"]`` (no FFmpeg, no sox)."""
    return ["soundfile"]
