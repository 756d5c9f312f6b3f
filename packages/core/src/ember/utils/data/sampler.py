"""Samplers: the order in which a DataLoader visits indices (torch.utils.data.sampler).

Source: https://pytorch.org/docs/stable/data.html#data-loading-order-and-sampler
"""

from __future__ import annotations

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    """Base class: ``__iter__`` yields indices (or lists of indices for batch samplers)
    (torch.utils.data.Sampler). ``data_source`` is accepted and ignored, as torch 2.13
    ignores it."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """The indices 0, 1, ..., len(``data_source``) - 1 in order (torch.utils.data.SequentialSampler)."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _seeded_generator(generator):
    """``generator``, or a fresh CPU generator seeded from the default one (as torch does)."""
    from ...random import Generator, default_generator
    if generator is not None:
        return generator
    seed = int(default_generator().bit_generator.integers(0, 2 ** 63 - 1))
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """Random indices: a permutation (repeated for ``num_samples > n``), or with
    ``replacement`` independent draws.

    Args: ``data_source`` (sized), ``replacement`` (False), ``num_samples`` (len(data_source)),
    ``generator`` (an ember.Generator; None: a fresh one seeded from the default generator at
    each iteration, as torch).

    Raises TypeError for a non-bool ``replacement``, ValueError for a non-positive
    ``num_samples``.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from ...ops.creation import randint, randperm
        n = len(self.data_source)
        generator = _seeded_generator(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order (a permutation drawn from ``generator``)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        from ...ops.creation import randperm
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probabilities
    proportional to ``weights`` (torch.multinomial), with ``replacement`` (default) or
    without.

    Args: weights (a 1-d sequence of non-negative numbers, kept as a float64 tensor),
    num_samples (int), replacement (bool, True), ``generator`` (an ember.Generator; None: the
    default generator).

    Raises ValueError for a non-positive or non-int ``num_samples``, a non-bool
    ``replacement`` or weights that are not 1-d; iterating raises RuntimeError for
    negative or non-finite weights, or ``num_samples > len(weights)`` without replacement.
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        from ... import _dtype as D
        from ...ops.creation import as_tensor
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = as_tensor(weights, dtype=D.float64)
        if weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        from ...ops.creation import multinomial
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter
    unless ``drop_last``).

    Raises ValueError for a non-positive or non-int ``batch_size`` or a non-bool ``drop_last``.
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
