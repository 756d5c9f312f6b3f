"""DataLoader: batches of a dataset through a sampler, a fetcher and collate_fn.

The pieces are kept apart as in torch: the sampler yields indices (or index lists), a
fetcher turns them into a collated batch, and the iterator runs the loop, in this process
(``num_workers=0``) or in worker processes.
Source: https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader
"""

from __future__ import annotations

import math
import multiprocessing

from ._base_iter import SingleProcessDataLoaderIter
from ._multiprocessing_iter import MultiProcessingDataLoaderIter
from ._worker import get_worker_info
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info"]


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the index stream of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over ``dataset`` in batches.

    Args:
        dataset: a map-style Dataset (``__getitem__``/``__len__``) or an IterableDataset.
        batch_size (int or None): None turns automatic batching off; default 1.
        shuffle (bool): a RandomSampler (with ``generator``) instead of a SequentialSampler.
        sampler, batch_sampler: custom index orders (exclusive with shuffle / batching options).
        num_workers (int): the number of worker processes, default 0 (loads in this process).
        collate_fn: merges a list of samples (default_collate, or default_convert when
            batching is off).
        drop_last (bool): drop the last incomplete batch.
        pin_memory (bool): with a GPU, each batch's tensors are copied to page-locked host memory
            before the batch is returned (``ember.utils.data._pin_memory``); without one, a
            UserWarning, as torch.
        pin_memory_device (str): accepted and kept as an attribute (deprecated in torch).
        timeout (float): seconds to wait for a batch from the workers before a RuntimeError.
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after seeding.
        multiprocessing_context: a start method name or a multiprocessing context
            (default: the platform's default start method).
        generator: the ember.Generator of the random sampler and of the workers' base seed.
        prefetch_factor (int): batches loaded ahead per worker; default 2 with workers.
        persistent_workers (bool): keep the workers alive between epochs.
        in_order (bool): False hands batches back as they arrive.

    Each worker seeds Python's ``random`` and ember's default generator with
    ``base_seed + worker_id`` and numpy's global RNG from the same two numbers; the
    base seed is drawn from ``generator`` once per iterator.

    Raises ValueError for inconsistent options, TypeError for a bad
    ``multiprocessing_context``, exactly where torch does; iterating raises RuntimeError
    when a worker dies or ``timeout`` passes, and re-raises a worker's exception with its
    traceback text.
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
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
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
        self.multiprocessing_context = multiprocessing_context
        self._IterableDataset_len_called = None
        self._iterator = None
        self._initialized = True

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self._multiprocessing_context = context

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

    def _get_iterator(self):
        if self.num_workers == 0:
            return SingleProcessDataLoaderIter(self)
        return MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        # Persistent workers: one iterator (and one set of workers) for the loader's life.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._dataset_kind == "iterable":
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)
