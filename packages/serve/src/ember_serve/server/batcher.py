"""Dynamic batching: a bounded queue per model version and worker threads that drain it.

Requests wait in one queue (at most ``queue_size``; a full queue refuses at once, and the
server answers 503 with Retry-After). A worker thread takes the oldest request and waits up
to ``max_batch_delay_ms`` from its arrival for more, adding requests in arrival order while
their rows fit in ``max_batch_size``; then it runs the batch through the handler and hands
each answer back to the event loop. One worker forms a batch at a time, so that batches fill
while the others compute. A request whose client gave up (timeout) is dropped unrun.

Worker threads share the server process: numpy and BLAS release the GIL while they compute,
so several workers overlap on several cores. A Python exception in a handler fails only its
batch (answered 500) and the worker lives on; a crash inside native code ends the process.

Source: Triton's dynamic batcher (max_batch_size, max_queue_delay_microseconds),
https://github.com/triton-inference-server/server/blob/main/docs/user_guide/batcher.md
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from typing import Any, Callable

__all__ = ["WorkItem", "Batcher", "QueueFull"]

log = logging.getLogger("ember_serve.batcher")


class QueueFull(RuntimeError):
    """The model's queue holds ``queue_size`` requests already."""


class WorkItem:
    """One request waiting for its answer; ``future`` lives on ``loop``."""

    __slots__ = ("request", "rows", "future", "loop", "enqueued", "started", "cancelled")

    def __init__(self, request: Any, rows: int, loop: asyncio.AbstractEventLoop):
        self.request, self.rows, self.loop = request, rows, loop
        self.future = loop.create_future()
        self.enqueued = time.perf_counter()
        self.started = 0.0
        self.cancelled = False

    def _set(self, ok: bool, value) -> None:
        if not self.future.done():
            (self.future.set_result if ok else self.future.set_exception)(value)

    def resolve(self, ok: bool, value) -> None:
        """Hand the answer (or the exception) back from a worker thread."""
        try:
            self.loop.call_soon_threadsafe(self._set, ok, value)
        except RuntimeError:  # the loop is closed: the client is gone
            pass


class Batcher:
    """Queue + workers of one model version.

    Args:
        run_batch: called in a worker thread with ``list[WorkItem]``; it resolves each item.
        max_batch_size: most rows per batch; 0 or 1 means one request per batch.
        max_batch_delay_ms: how long the oldest request may wait for company, ms.
        queue_size: most requests waiting.
        workers: worker threads to start."""

    def __init__(self, run_batch: Callable[[list[WorkItem]], None], *, max_batch_size: int,
                 max_batch_delay_ms: float, queue_size: int, workers: int, name: str = "model"):
        self._run_batch = run_batch
        self.max_batch_size, self.max_batch_delay_ms, self.queue_size = max_batch_size, max_batch_delay_ms, queue_size
        self.name = name
        self._items: collections.deque[WorkItem] = collections.deque()
        self._cond = threading.Condition()
        self._form_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._retire = 0
        self._closing = False
        self._busy = 0
        self._serial = 0
        self.scale(workers)

    # ---- the event loop's side --------------------------------------------------------
    def submit(self, item: WorkItem) -> None:
        """Queue ``item``; QueueFull when the queue is full, RuntimeError when closing."""
        with self._cond:
            if self._closing:
                raise RuntimeError(f"model {self.name} is shutting down")
            if len(self._items) >= self.queue_size:
                raise QueueFull(f"the queue of model {self.name} is full ({self.queue_size} requests waiting)")
            self._items.append(item)
            self._cond.notify_all()

    @property
    def queue_length(self) -> int:
        return len(self._items)

    @property
    def workers(self) -> int:
        with self._cond:
            return sum(t.is_alive() for t in self._threads) - self._retire

    @property
    def busy_workers(self) -> int:
        return self._busy

    def worker_info(self) -> list[dict]:
        with self._cond:
            return [{"id": t.name, "alive": t.is_alive()} for t in self._threads if t.is_alive()]

    def scale(self, workers: int) -> None:
        """Run ``workers`` threads: start new ones, or let some retire after their batch."""
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        with self._cond:
            self._threads = [t for t in self._threads if t.is_alive()]
            current = len(self._threads) - self._retire
            if workers > current:
                take_back = min(self._retire, workers - current)
                self._retire -= take_back
                for _ in range(workers - current - take_back):
                    self._serial += 1
                    t = threading.Thread(target=self._work, name=f"{self.name}-worker-{self._serial}", daemon=True)
                    self._threads.append(t)
                    t.start()
            else:
                self._retire += current - workers
            self._cond.notify_all()

    def close(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop the workers: after finishing what is queued (``drain``) or now, failing the queued."""
        with self._cond:
            self._closing = True
            if not drain:
                while self._items:
                    self._items.popleft().resolve(False, RuntimeError(f"model {self.name} was unloaded"))
            self._cond.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in list(self._threads):
            t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    # ---- the workers' side ------------------------------------------------------------
    def _take(self) -> list[WorkItem] | None:
        with self._form_lock, self._cond:
            while True:
                if self._retire > 0:
                    self._retire -= 1
                    return None
                while self._items and self._items[0].cancelled:
                    self._items.popleft()
                if self._items:
                    break
                if self._closing:
                    return None
                self._cond.wait()
            first = self._items.popleft()
            batch, rows = [first], first.rows
            limit = max(self.max_batch_size, 1)
            deadline = first.enqueued + self.max_batch_delay_ms / 1000.0
            while rows < limit:
                while self._items and self._items[0].cancelled:
                    self._items.popleft()
                if self._items:
                    if rows + self._items[0].rows > limit:
                        break
                    nxt = self._items.popleft()
                    batch.append(nxt)
                    rows += nxt.rows
                    continue
                remaining = deadline - time.perf_counter()
                if remaining <= 0 or self._closing:
                    break
                self._cond.wait(remaining)
            self._busy += 1
            return batch

    def _work(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                self._run_batch(batch)
            except BaseException as e:  # run_batch resolves items itself; this is the last guard
                log.exception("model %s: batch failed outside the handler", self.name)
                for item in batch:
                    item.resolve(False, e)
            finally:
                with self._cond:
                    self._busy -= 1
