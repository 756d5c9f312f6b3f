"""The DataLoader's iterators: the common loop over index batches, and the iterator
that fetches in the main process (``num_workers=0``)."""

from __future__ import annotations

import warnings

from ._fetch import create_fetcher
from ._pin_memory import pin_memory

__all__ = ["BaseDataLoaderIter", "SingleProcessDataLoaderIter"]


def draw_base_seed(generator) -> int:
    """A non-negative int64 drawn from ``generator`` (or the default generator): the base
    seed of the workers of one iterator."""
    from ...random import default_generator
    g = generator if generator is not None else default_generator()
    return int(g.bit_generator.integers(0, 2 ** 63 - 1))


def _cuda_available() -> bool:
    from ... import cuda
    return cuda.is_available()


class BaseDataLoaderIter:
    """The loop over index batches; subclasses decide where the fetching runs."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._pin_memory = loader.pin_memory and _cuda_available()
        if loader.pin_memory and not self._pin_memory:
            # without a GPU nothing is pinned: torch warns the same way
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = draw_base_seed(loader.generator)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter: bool = False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        if self._pin_memory:
            data = pin_memory(data)
        self._num_yielded += 1
        if (self._dataset_kind == "iterable" and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                   f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see "
                        "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
            warnings.warn(msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{type(self).__name__} cannot be pickled")


class SingleProcessDataLoaderIter(BaseDataLoaderIter):
    """Fetches every batch in the calling process.

    Raises AssertionError for a loader with a ``timeout`` (it only applies to workers), as torch.
    """

    def __init__(self, loader):
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher = create_fetcher(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                       self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)
