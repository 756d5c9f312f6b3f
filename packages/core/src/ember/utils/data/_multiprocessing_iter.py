"""The DataLoader iterator over worker processes (``num_workers > 0``).

Each worker has its own index queue; all share one result queue. The parent keeps
``prefetch_factor * num_workers`` tasks in flight, dealt round-robin to the active
workers, and hands batches back in task order (results that arrive early wait in
``_task_info``) unless ``in_order=False``. Workers are shut down at the end of the
epoch (unless persistent), when the iterator is garbage-collected, and on interpreter
exit. A worker that died is noticed whenever no result arrives for a while.
Source: https://pytorch.org/docs/stable/data.html#multi-process-data-loading
"""

from __future__ import annotations

import atexit
import itertools
import multiprocessing
import queue
import time

from ._base_iter import BaseDataLoaderIter
from ._worker import ExceptionWrapper, IterableDatasetStopIteration, ResumeIteration, worker_loop

__all__ = ["MultiProcessingDataLoaderIter"]

# How long (seconds) the parent waits for a result before checking that workers live.
PARENT_STATUS_CHECK_INTERVAL = 1.0

_python_exiting = False


def _set_python_exiting():
    # At exit, multiprocessing terminates the daemonic workers itself; queues and
    # modules may already be torn down, so iterators must not try a clean shutdown.
    global _python_exiting
    _python_exiting = True


atexit.register(_set_python_exiting)


class MultiProcessingDataLoaderIter(BaseDataLoaderIter):
    """Fetches batches in ``loader.num_workers`` worker processes."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_result_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._shutdown = False
        self._index_queues, self._workers = [], []
        try:
            for i in range(self._num_workers):
                index_queue = ctx.Queue()
                index_queue.cancel_join_thread()  # never block exit on undelivered indices
                w = ctx.Process(target=worker_loop, args=(
                    self._dataset_kind, self._dataset, index_queue, self._worker_result_queue,
                    self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                    self._base_seed, loader.worker_init_fn, i, self._num_workers, self._persistent_workers))
                w.daemon = True
                w.start()
                self._index_queues.append(index_queue)
                self._workers.append(w)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter: bool = False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # index of the next task to send
        self._rcvd_idx = 0  # index of the next batch to return
        # task index -> (worker_id,) while in flight, (worker_id, data) once arrived early
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            # Persistent workers: restart every worker's dataset iteration and wait for all acks.
            for q in self._index_queues:
                q.put(ResumeIteration())
            pending = self._num_workers
            while pending > 0:
                return_idx, _ = self._get_data()
                if isinstance(return_idx, ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=PARENT_STATUS_CHECK_INTERVAL):
        """(True, item) from the result queue, or (False, None) after ``timeout`` seconds;
        RuntimeError when a worker has died."""
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as e:
            if not isinstance(e, queue.Empty):
                self._await_a_dying_worker()
            failed = [w for wid, w in enumerate(self._workers) if self._workers_status[wid] and not w.is_alive()]
            for w in failed:
                self._mark_worker_as_unavailable(self._workers.index(w))
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from e
            if isinstance(e, queue.Empty):
                return False, None
            raise

    def _await_a_dying_worker(self, patience: float = 1.0):
        """Wait up to ``patience`` seconds for an active worker to be seen dead: a batch whose
        transfer fails mid-way (its descriptor server reset the connection) most often comes
        from a worker that is exiting, before ``is_alive()`` can tell."""
        active = [w for wid, w in enumerate(self._workers) if self._workers_status[wid]]
        deadline = time.monotonic() + patience
        while active and all(w.is_alive() for w in active) and time.monotonic() < deadline:
            time.sleep(0.01)

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if not ok:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            return data
        while True:
            ok, data = self._try_get_data()
            if ok:
                return data

    def _next_data(self):
        while True:
            # Skip tasks whose worker has stopped without producing them (IterableDataset ends).
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # arrived earlier
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    return self._process_data(data, self._task_info.pop(idx)[0])
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id] and (
                    self._in_order or self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id):
        # None tells the worker to exit once it has read everything before it.
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        if _python_exiting or getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id)
            for w in self._workers:
                w.join(timeout=PARENT_STATUS_CHECK_INTERVAL * 5)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join()

    def __del__(self):
        self._shutdown_workers()
