"""Shared by the datasets: decode a file and check its sample rate."""

from __future__ import annotations

from .io import load


def load_wave(path, expected_rate=None):
    """``[channels, time]`` float32 of ``path``; ValueError naming the file when its rate is not
    ``expected_rate`` Hz."""
    waveform, rate = load(path)
    if expected_rate is not None and rate != expected_rate:
        raise ValueError(f"sample rate of {path!r} is {rate} Hz, expected {expected_rate} Hz")
    return waveform
