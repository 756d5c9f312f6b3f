"""Datasets: Dataset, IterableDataset, TensorDataset, StackDataset, Subset, ConcatDataset,
ChainDataset and random_split.

Source: https://pytorch.org/docs/stable/data.html
"""

from __future__ import annotations

import bisect
import math
import warnings
from itertools import accumulate

from ..._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset", "ChainDataset",
           "random_split"]


class Dataset:
    """A map-style dataset: ``__getitem__(index)`` returns one sample; ``__len__`` is
    expected by samplers.  ``a + b`` concatenates (a ConcatDataset)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement ``__iter__``; indices mean nothing.
    ``a + b`` chains two streams (a ChainDataset). With worker processes each worker
    iterates its own copy; use ``get_worker_info()`` in ``__iter__`` to shard."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``.

    Raises AssertionError ("Size mismatch between tensors") unless every tensor has the
    same first dimension.
    """

    def __init__(self, *tensors: Tensor):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Sample ``i`` of several equally long datasets together: a tuple for positional
    datasets (``StackDataset(images, labels)``), a dict for keyword ones
    (``StackDataset(image=images, label=labels)``).

    Raises ValueError when both or neither forms are given, or the lengths differ.
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        members = list(args) if args else list(kwargs.values())
        self._length = len(members[0])
        if any(self._length != len(d) for d in members):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list):
        named = isinstance(self.datasets, dict)
        columns = {}
        for key, d in (self.datasets.items() if named else enumerate(self.datasets)):
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                                     f"got {len(items)}")
            else:
                items = [d[i] for i in indices]
            columns[key] = items
        if named:
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        return [tuple(col[j] for col in columns.values()) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (a sequence), in that order.

    Raises NotImplementedError when a subclass overrides ``__getitem__`` but not
    ``__getitems__`` (the DataLoader would bypass the override).
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after the other.

    Raises AssertionError for an empty list or an IterableDataset member, ValueError
    for an index whose absolute value exceeds the length.

    ``datasets`` is an iterable of map-style datasets, concatenated in its order
    (torch.utils.data.ConcatDataset)."""

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if which == 0 else idx - self.cumulative_sizes[which - 1]
        return self.datasets[which][sample_idx]


class ChainDataset(IterableDataset):
    """Several IterableDatasets one after the other, chained lazily while iterating.

    Raises AssertionError (while iterating or in ``len``) for a member that is not an
    IterableDataset.

    ``datasets`` is an iterable of IterableDatasets (torch.utils.data.ChainDataset)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


def random_split(dataset, lengths, generator=None) -> list:
    """Split ``dataset`` into non-overlapping random Subsets of the given ``lengths``.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1 (each
    gets ``floor(frac * n)`` and the remainder is dealt one by one from the first).
    ``generator`` (an ember.Generator) makes the permutation reproducible.

    Raises ValueError when the lengths do not sum to the dataset's length, or a
    fraction is outside [0, 1].
    """
    from ...ops.creation import randperm
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        n = len(dataset)
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        remainder = n - sum(counts)
        for i in range(remainder):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - length: offset])
            for offset, length in zip(accumulate(lengths), lengths)]
