"""DataLoader: batches of a dataset through a sampler, a fetcher and collate_fn.

The pieces are kept apart as in torch so worker processes can be added: the sampler
yields indices (or index lists), a fetcher turns them into a collated batch, and the
iterator runs the loop (in this process for now).
Source: https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
"""

from __future__ import annotations

import math
import warnings

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """Information about the current worker process; None in the main process (always, for now)."""
    return None


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the index stream of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


# ---- fetchers: indices -> a batch ------------------------------------------------------

class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _create_fetcher(kind: str, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableDatasetFetcher if kind == "iterable" else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Args:
        dataset: a map-style Dataset (``__getitem__``/``__len__``) or an IterableDataset.
        batch_size (int or None, default 1): None turns automatic batching off.
        shuffle (bool): a RandomSampler (with ``generator``) instead of a SequentialSampler.
        sampler, batch_sampler: custom index orders (exclusive with shuffle / batching options).
        num_workers (int, default 0): loading runs in this process (values > 0 warn and
            still run here).
        collate_fn: merges a list of samples (default_collate, or default_convert when
            batching is off).
        drop_last (bool): drop the last incomplete batch.
        generator: the ember.Generator of the random sampler.
        pin_memory, timeout, worker_init_fn, prefetch_factor, persistent_workers: accepted.

    Raises ValueError for inconsistent options, exactly where torch does.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0:
            warnings.warn(f"ember's DataLoader loads in the main process for now; num_workers={num_workers} "
                          "is accepted and ignored", UserWarning, stacklevel=2)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __setattr__(self, attr, val):
        if self.__dict__.get("_initialized") and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, val)

    def __iter__(self):
        return _SingleProcessDataLoaderIter(self)

    def __len__(self) -> int:
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    """The loop over index batches; subclasses decide where the fetching runs."""

    def __init__(self, loader: DataLoader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_seed(loader.generator)  # for worker processes (later)
        self._num_yielded = 0
        self._len = None
        try:
            self._len = len(loader)
        except TypeError:
            pass

    def __iter__(self):
        return self

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return data

    def __len__(self) -> int:
        return self._len


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        self._fetcher = _create_fetcher(self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn,
                                        self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


def _draw_seed(generator) -> int:
    from ...random import default_generator
    g = generator if generator is not None else default_generator()
    return int(g.bit_generator.integers(0, 2 ** 63 - 1))

