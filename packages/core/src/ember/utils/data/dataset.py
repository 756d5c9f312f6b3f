"""Datasets: Dataset, IterableDataset, TensorDataset, Subset, ConcatDataset, random_split.

Source: https://pytorch.org/docs/stable/data.html
"""

from __future__ import annotations

import bisect
import math
import warnings
from itertools import accumulate

from ..._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset", "random_split"]


class Dataset:
    """A map-style dataset: ``__getitem__(index)`` returns one sample; ``__len__`` is
    expected by samplers.  ``a + b`` concatenates (a ConcatDataset)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement ``__iter__``; indices mean nothing."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        raise TypeError("ConcatDataset does not support IterableDataset; use ChainDataset")


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``.

    Raises AssertionError ("Size mismatch between tensors") unless every tensor has the
    same first dimension.
    """

    def __init__(self, *tensors: Tensor):
        assert all(tensors[0].size(0) == t.size(0) for t in tensors), "Size mismatch between tensors"
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices`` (a sequence), in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

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
    """

    @staticmethod
    def cumsum(sequence):
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __init__(self, datasets):
        self.datasets = list(datasets)
        assert len(self.datasets) > 0, "datasets should not be an empty iterable"
        for d in self.datasets:
            assert not isinstance(d, IterableDataset), "ConcatDataset does not support IterableDataset"
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
