"""What runs inside a DataLoader worker process (torch.utils.data._utils.worker).

A worker takes ``(task_index, indices)`` from its own index queue, fetches and collates
the batch, and puts ``(task_index, batch)`` on the result queue shared by all workers.
``None`` on the index queue ends it; a ``ResumeIteration`` restarts the dataset's
iteration (persistent workers). Exceptions travel back as an ``ExceptionWrapper``.
Source: https://pytorch.org/docs/stable/data.html#multi-process-data-loading
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback

import numpy

from ._fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info", "worker_loop", "ExceptionWrapper", "ResumeIteration",
           "IterableDatasetStopIteration", "numpy_seed"]

# How often (seconds) a waiting worker checks that its parent is alive and still wants it.
WORKER_STATUS_CHECK_INTERVAL = 1.0

_worker_info = None


class WorkerInfo:
    """Facts about the current worker: ``id``, ``num_workers``, ``seed`` and ``dataset``
    (this worker's copy). Read-only: assigning an attribute raises RuntimeError."""

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_keys", tuple(kwargs))

    def __setattr__(self, key, val):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self._keys)
        return f"{type(self).__name__}({items})"


def get_worker_info():
    """The WorkerInfo of this DataLoader worker process, or None in the main process.

    Use it in ``worker_init_fn`` or in an IterableDataset's ``__iter__`` to give each
    worker its own shard of the data (torch.utils.data.get_worker_info).
    """
    return _worker_info


class ResumeIteration:
    """Index-queue message: start the dataset's iteration again (persistent workers)."""


class IterableDatasetStopIteration:
    """Result-queue message: worker ``worker_id`` has exhausted its IterableDataset copy."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class _KeyErrorMessage(str):
    """KeyError shows ``repr`` of its argument; this keeps a multi-line message readable."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried across the process boundary as its type
    and traceback text; ``reraise()`` raises the same type in the parent with the message
    ``"Caught <Type> in DataLoader worker process <id>.\\nOriginal Traceback ..."`` (torch's
    format), or a RuntimeError when the type cannot be built from one message."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            # No frame -> exception -> traceback -> frame cycle: the loader iterator in
            # the traceback is then freed (and its workers stopped) by reference counting.
            del exception


def numpy_seed(base_seed: int, worker_id: int) -> list:
    """The four 32-bit words a worker seeds numpy's legacy global RNG with: numpy's
    SeedSequence over ``[worker_id, low 32 bits, high 32 bits, 0]`` of the base seed
    (the same words torch's workers use)."""
    entropy = [worker_id, base_seed & 0xFFFF_FFFF, base_seed >> 32, 0]
    return numpy.random.SeedSequence(entropy).generate_state(4).tolist()


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed Python's ``random``, ember's default generator and numpy's global RNG as
    torch seeds its workers; returns the worker's seed ``base_seed + worker_id``."""
    from ...random import manual_seed
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    numpy.random.seed(numpy_seed(base_seed, worker_id))
    return seed


def worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers, persistent_workers):
    """The body of one worker process (see the module docstring for the protocol)."""
    global _worker_info
    parent_pid = os.getppid()
    try:
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)
        iteration_end = False
        while os.getppid() == parent_pid:  # a re-parented worker has lost its loader: exit
            try:
                r = index_queue.get(timeout=WORKER_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break  # shut down, but the final None was lost (its queue was finalized first)
                continue
            if isinstance(r, ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue  # draining: wait for the final None
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == "iterable":
                        data = IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=where)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass  # the main process raises it
    if done_event.is_set():
        # The parent no longer reads: do not block exit flushing unread results.
        data_queue.cancel_join_thread()
        data_queue.close()
