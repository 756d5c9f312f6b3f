"""Memory formats (torch.memory_format): how a 4-d or 5-d tensor's elements are laid out.

``contiguous_format`` is row-major (NCHW); ``channels_last`` keeps the channels of each
pixel together (NHWC memory, still indexed [N, C, H, W]), ``channels_last_3d`` the same for
[N, C, D, H, W]; ``preserve_format`` keeps a dense tensor's own strides. Convolution,
pooling, batch norm, interpolation and elementwise ops give a channels-last result for a
channels-last input, as torch's do.
"""

from __future__ import annotations

import numpy

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "is_channels_last", "to_format", "channels_last_strides", "keep_format"]


class memory_format:
    """A memory format (torch.memory_format): how a dense tensor's elements are laid out.
    ``ember.contiguous_format`` (row-major), ``channels_last`` ([N, C, H, W] stored as N, H,
    W, C), ``channels_last_3d`` (the 5-d form) and ``preserve_format`` (keep the input's)
    are the instances; ``name`` is the one printed after ``ember.``. Compared by identity."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
_ALL = {f.name: f for f in (contiguous_format, channels_last, channels_last_3d, preserve_format)}


def _by_name(name):
    return _ALL[name]


def _perm(ndim):
    return (0, *range(2, ndim), 1)  # NCHW -> NHWC (and NCDHW -> NDHWC)


def channels_last_strides(shape) -> tuple:
    """torch's strides (in elements) of a channels-last tensor of ``shape`` (4-d or 5-d)."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(_perm(len(shape))):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _format_for(ndim, fmt):
    if fmt is channels_last and ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if fmt is channels_last_3d and ndim != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
    return fmt


def _strides_match(shape, strides, expected) -> bool:
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected))


def is_channels_last(t) -> bool:
    """Whether ``t`` (4-d or 5-d) is laid out channels-last and not also plainly contiguous."""
    if t.ndim not in (4, 5):
        return False
    shape, strides = tuple(t.shape), t.stride()
    return _strides_match(shape, strides, channels_last_strides(shape)) and not t.is_contiguous()


def to_format(arr, ndim: int, fmt):
    """``arr`` copied into layout ``fmt`` (channels-last or contiguous)."""
    fmt = _format_for(ndim, fmt)
    if fmt is contiguous_format:
        return numpy.ascontiguousarray(arr)
    perm = _perm(ndim)
    inverse = numpy.argsort(perm)
    return numpy.ascontiguousarray(arr.transpose(perm)).transpose(inverse)


def keep_format(source, out):
    """``out`` laid out channels-last when ``source`` is (the result of a layer that keeps
    its input's format), in place; other tensors are left as they are."""
    if isinstance(out, tuple):  # (values, indices)
        for o in out:
            keep_format(source, o)
        return out
    if type(out._data) is numpy.ndarray and out.ndim == source.ndim and is_channels_last(source) \
            and not is_channels_last(out):
        out._data = to_format(out._data, out.ndim, channels_last if out.ndim == 4 else channels_last_3d)
    return out
