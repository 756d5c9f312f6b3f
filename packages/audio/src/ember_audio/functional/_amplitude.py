"""Level conversions: amplitude_to_DB, DB_to_amplitude, gain, mu-law companding.

Source: torchaudio 2.8 ``torchaudio.functional``; mu-law from ITU-T G.711.
"""

from __future__ import annotations

import ember

__all__ = ["amplitude_to_DB", "DB_to_amplitude", "gain", "mu_law_encoding", "mu_law_decoding"]


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    """Decibels of ``x`` (``[..., freq, time]`` or ``[..., channel, freq, time]``):
    ``multiplier * log10(max(x, amin)) - multiplier * db_multiplier``, then, with ``top_db``,
    floored at ``top_db`` below the maximum of each spectrogram (the max is taken over the last
    three dims when there are more than two, else over the last two).

    ``multiplier`` is 10 for power, 20 for amplitude; ``amin`` (> 0) is the floor that keeps the
    log finite; ``db_multiplier`` is ``log10(max(ref, amin))``; ``top_db`` is in dB.
    Source: torchaudio 2.8 ``functional.amplitude_to_DB``.
    """
    x_db = multiplier * ember.log10(ember.clamp(x, min=amin))
    x_db = x_db - multiplier * db_multiplier
    if top_db is not None:
        shape = tuple(x_db.shape)
        packed = shape[-3] if x_db.ndim > 2 else 1
        x_db = x_db.reshape(-1, packed, shape[-2], shape[-1])
        floor = (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1)
        x_db = ember.maximum(x_db, floor).reshape(shape)
    return x_db


def DB_to_amplitude(x, ref, power):
    """The inverse of amplitude_to_DB: ``ref * (10 ** (0.1 * x)) ** power`` for decibels ``x``
    (any shape; ``power`` 1 for power, 0.5 for amplitude; ``ref`` the reference level).  Source: torchaudio 2.8
    ``functional.DB_to_amplitude``."""
    return ref * ember.pow(ember.pow(10.0, 0.1 * x), power)


def gain(waveform, gain_db=1.0):
    """``waveform`` scaled by ``gain_db`` decibels (amplitude ratio ``10 ** (gain_db / 20)``)."""
    if gain_db == 0:
        return waveform
    return waveform * (10 ** (gain_db / 20))


def mu_law_encoding(x, quantization_channels):
    """Mu-law companding of ``x`` in [-1, 1] into integers 0 .. ``quantization_channels - 1``
    (int64, same shape).  Source: torchaudio 2.8; ITU-T G.711."""
    if not x.dtype.is_floating_point:
        x = x.to(ember.float32)
    mu = ember.tensor(quantization_channels - 1.0, dtype=x.dtype, device=x.device)
    x_mu = ember.sign(x) * ember.log1p(mu * ember.abs(x)) / ember.log1p(mu)
    return ((x_mu + 1) / 2 * mu + 0.5).to(ember.int64)


def mu_law_decoding(x_mu, quantization_channels):
    """The inverse of mu_law_encoding: ``x_mu``, integers 0 .. ``quantization_channels - 1`` (any
    shape; integer tensors are computed in float32), to float samples in [-1, 1].
    Source: torchaudio 2.8 ``functional.mu_law_decoding``."""
    if not x_mu.dtype.is_floating_point:
        x_mu = x_mu.to(ember.float32)
    mu = ember.tensor(quantization_channels - 1.0, dtype=x_mu.dtype, device=x_mu.device)
    x = (x_mu / mu) * 2 - 1.0
    return ember.sign(x) * (ember.exp(ember.abs(x) * ember.log1p(mu)) - 1.0) / mu
