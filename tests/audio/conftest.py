"""Helpers for the audio tests: real speech rendered by Debian's espeak-ng, tensor conversion."""

import shutil
import subprocess

import numpy as np
import pytest
import soundfile

SPEECH_TEXT = "The quick brown fox jumps over the lazy dog. Seven, eight, nine."


@pytest.fixture(scope="session")
def speech_file(tmp_path_factory):
    """A wav of real (synthesized) speech, 22050 Hz mono int16, rendered by espeak-ng."""
    exe = shutil.which("espeak-ng")
    assert exe, "espeak-ng is required (Debian package espeak-ng; the noxfile installs it)"
    path = tmp_path_factory.mktemp("speech") / "speech.wav"
    subprocess.run([exe, "-v", "en", "-s", "160", "-w", str(path), SPEECH_TEXT], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def speech(speech_file):
    """(float32 numpy [time] in [-1, 1], sample rate in Hz) of the espeak-ng speech."""
    data, sr = soundfile.read(str(speech_file), dtype="float32")
    return data, sr


@pytest.fixture(scope="session")
def speech_16k(speech):
    """The speech resampled to 16 kHz by soxr's reference-quality resampler (librosa's default)."""
    import librosa
    data, sr = speech
    return librosa.resample(data, orig_sr=sr, target_sr=16000, res_type="soxr_hq").astype(np.float32), 16000
