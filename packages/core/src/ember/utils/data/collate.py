"""Collation: turning a list of samples into a batch (torch.utils.data.default_collate).

Source: https://pytorch.org/docs/stable/data.html#working-with-collate-fn
"""

from __future__ import annotations

import collections.abc
import copy
import numbers

import numpy

from ..._tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_NP_STR_KINDS = "SaUO"


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """Numpy arrays (not of strings/objects) and numpy scalars inside ``data`` become
    tensors; containers are rebuilt around the converted values (same mapping, namedtuple
    or mutable-sequence type; plain tuples become lists, as torch); the rest is kept.
    Used when automatic batching is off (``batch_size=None``).

    numpy ``bytes_`` scalars stay as they are, as documented; torch 2.13 with numpy 2
    raises TypeError for them.
    """
    from ...ops.creation import as_tensor
    if isinstance(data, Tensor):
        return data
    if isinstance(data, numpy.ndarray):
        return data if data.dtype.char in _NP_STR_KINDS else as_tensor(data)
    if isinstance(data, numpy.generic) and data.dtype.char not in _NP_STR_KINDS:
        return as_tensor(numpy.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def default_collate(batch):
    """Stack ``batch``, a list of samples, into a batch, recursively (torch.utils.data.default_collate).

    * tensors -> ``stack`` along a new first dim (same shapes required);
    * numpy arrays / numpy scalars -> tensors, stacked;
    * Python floats -> float64 tensor, ints (and bools) -> int64 (bool) tensor;
    * str / bytes -> the list unchanged;
    * dicts -> a dict of collated values per key (same type when it can be built);
    * namedtuples -> the namedtuple of collated fields; tuples -> a list of collated
      fields; other sequences -> the same type of collated positions.

    Raises TypeError for other element types (or numpy arrays of strings/objects) and
    RuntimeError when the sequences of a batch differ in length.
    """
    from ...ops.creation import as_tensor, tensor
    from ...ops.shape import stack
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, numpy.ndarray) or (
            isinstance(elem, numpy.generic) and not isinstance(elem, (numpy.str_, numpy.bytes_))):
        if elem.dtype.char in _NP_STR_KINDS:
            raise TypeError(_ERR.format(elem.dtype))
        if isinstance(elem, numpy.ndarray) and elem.ndim > 0:
            return default_collate([as_tensor(b) for b in batch])
        return as_tensor(numpy.asarray(batch))
    if isinstance(elem, float):
        from ... import _dtype as D
        return tensor(batch, dtype=D.float64)
    if isinstance(elem, bool):
        return tensor(batch)
    if isinstance(elem, int):
        from ... import _dtype as D
        return tensor(batch, dtype=D.int64)
    if isinstance(elem, numbers.Number) and not isinstance(elem, complex):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return rebuild_mapping(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        size = len(next(it))
        if not all(len(e) == size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        collated = [default_collate(samples) for samples in transposed]
        return collated if isinstance(elem, tuple) else rebuild_sequence(elem, collated)
    raise TypeError(_ERR.format(type(elem)))


def rebuild_mapping(template, values: dict):
    """``values`` as a mapping of ``template``'s type: a mutable one is copied and updated
    (which keeps, say, a defaultdict's factory), another built from the dict, and a type
    that cannot be built either way gives the plain dict (torch's rule)."""
    try:
        if isinstance(template, collections.abc.MutableMapping):
            clone = copy.copy(template)
            clone.update(values)
            return clone
        return type(template)(values)
    except TypeError:
        return values


def rebuild_sequence(template, values: list):
    """``values`` as a sequence of ``template``'s type, by the same rule as
    ``rebuild_mapping`` (a plain list where the type cannot be built, such as ``range``)."""
    try:
        if isinstance(template, collections.abc.MutableSequence):
            clone = copy.copy(template)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(template)(values)
    except TypeError:
        return values
