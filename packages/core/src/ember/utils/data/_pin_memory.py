"""Page-locked copies of a batch, for fast and asynchronous copies to the GPU
(torch.utils.data._utils.pin_memory.pin_memory)."""

from __future__ import annotations

import collections.abc

from .collate import _is_namedtuple, rebuild_mapping, rebuild_sequence

__all__ = ["pin_memory"]


def pin_memory(data, device=None):
    """``data`` with each tensor in it replaced by ``tensor.pin_memory()``: a tensor, or any
    object with a ``pin_memory()`` method (a custom batch), is asked to pin itself; mappings,
    tuples (named ones too) and sequences are rebuilt with their type where it can be, else as
    a dict or a list; anything else comes back as it is. ``device`` is accepted and unused,
    as in torch 2.13."""
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return rebuild_mapping(data, {key: pin_memory(value, device) for key, value in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(pin_memory(item, device) for item in data))
    if isinstance(data, tuple):
        return type(data)(pin_memory(item, device) for item in data)
    if isinstance(data, collections.abc.Sequence):
        return rebuild_sequence(data, [pin_memory(item, device) for item in data])
    return data
