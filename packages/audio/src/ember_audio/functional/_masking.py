"""SpecAugment masks: mask_along_axis and mask_along_axis_iid.

Source: torchaudio 2.8; Park et al., "SpecAugment" (Interspeech 2019).
"""

from __future__ import annotations

import ember

__all__ = ["mask_along_axis", "mask_along_axis_iid"]


def _mask_param(mask_param, p, axis_length):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
    return mask_param if p == 1.0 else min(mask_param, int(axis_length * p))


def mask_along_axis_iid(specgrams, mask_param, mask_value, axis, p=1.0):
    """One mask per example and channel of ``specgrams [batch, channel, freq, time]`` (or any
    ``[..., freq, time]``): a band ``[v0, v0 + v)`` along ``axis`` (the last or second-to-last
    dim) with ``v ~ U(0, mask_param)``, ``v0 ~ U(0, size - v)``, set to ``mask_value``.
    ``mask_param`` is the widest band, in bins or frames; ``p`` (in [0, 1]) caps it at
    ``p * size``. Raises ValueError for fewer than 3 dims,
    another axis or ``p`` outside [0, 1].  Source: torchaudio 2.8 ``functional.mask_along_axis_iid``."""
    dim = specgrams.ndim
    if dim < 3:
        raise ValueError(f"Spectrogram must have at least three dimensions ({dim} given).")
    if axis not in (dim - 2, dim - 1):
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and axis {dim - 1} "
                         f"supported; {axis} given).")
    mask_param = _mask_param(mask_param, p, specgrams.shape[axis])
    if mask_param < 1:
        return specgrams
    lead = tuple(specgrams.shape[:dim - 2])
    value = ember.rand(lead, dtype=specgrams.dtype, device=specgrams.device) * mask_param
    min_value = ember.rand(lead, dtype=specgrams.dtype, device=specgrams.device) * (specgrams.shape[axis] - value)
    start = min_value.long()[..., None, None]
    end = (min_value.long() + value.long())[..., None, None]
    idx = ember.arange(0, specgrams.shape[axis], device=specgrams.device)
    out = specgrams.transpose(axis, -1)
    out = out.masked_fill((idx >= start) & (idx < end), mask_value)
    return out.transpose(axis, -1)


def mask_along_axis(specgram, mask_param, mask_value, axis, p=1.0):
    """One mask shared by every example and channel of ``specgram [..., freq, time]``: the
    band ``[v0, v0 + v)`` along ``axis`` (``v ~ U(0, mask_param)``, ``v0 ~ U(0, size - v)``)
    set to ``mask_value``; ``mask_param`` is the widest band, in bins or frames, and ``p`` (in
    [0, 1]) caps it at ``p * size``. Raises ValueError for fewer than 2 dims, another axis or
    ``p`` outside [0, 1].  Source: torchaudio 2.8 ``functional.mask_along_axis``."""
    dim = specgram.ndim
    if dim < 2:
        raise ValueError(f"Spectrogram must have at least two dimensions (time and frequency) ({dim} given).")
    if axis not in (dim - 2, dim - 1):
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and axis {dim - 1} "
                         f"supported; {axis} given).")
    mask_param = _mask_param(mask_param, p, specgram.shape[axis])
    if mask_param < 1:
        return specgram
    shape = tuple(specgram.shape)
    spec = specgram.reshape((-1,) + shape[-2:])
    axis = axis - dim + 3  # the same axis in the [N, freq, time] view
    value = float(ember.rand(1)) * mask_param
    min_value = float(ember.rand(1)) * (spec.shape[axis] - value)
    start = int(min_value)
    end = int(min_value) + int(value)
    idx = ember.arange(0, spec.shape[axis], device=spec.device)
    mask = (idx >= start) & (idx < end)
    if axis == 1:
        mask = mask.unsqueeze(-1)
    return spec.masked_fill(mask, mask_value).reshape(shape)
