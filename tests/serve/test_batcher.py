"""The batcher alone: batch formation by rows and delay, the bounded queue, scaling, draining."""

import asyncio
import threading
import time

import pytest

from ember_serve.server.batcher import Batcher, QueueFull, WorkItem


def run(coro):
    return asyncio.run(coro)


def test_batches_fill_by_rows_in_arrival_order():
    seen = []
    gate = threading.Event()

    def run_batch(items):
        gate.wait(5)
        seen.append([i.request for i in items])
        for i in items:
            i.resolve(True, sum(x.rows for x in items))

    async def main():
        b = Batcher(run_batch, max_batch_size=4, max_batch_delay_ms=50, queue_size=100, workers=1)
        loop = asyncio.get_running_loop()
        items = [WorkItem(name, rows, loop) for name, rows in [("a", 1), ("b", 2), ("c", 2), ("d", 1), ("e", 4)]]
        for it in items:
            b.submit(it)
        gate.set()
        results = [await it.future for it in items]
        b.close()
        return results
    results = run(main())
    # a+b fit in 4 rows, c would make 5: it starts the next batch with d; e alone fills one
    assert seen == [["a", "b"], ["c", "d"], ["e"]]
    assert results == [3, 3, 3, 3, 4]


def test_queue_bound_and_close_without_drain():
    release = threading.Event()

    def run_batch(items):
        release.wait(5)
        for i in items:
            i.resolve(True, "done")

    async def main():
        b = Batcher(run_batch, max_batch_size=1, max_batch_delay_ms=0, queue_size=2, workers=1)
        loop = asyncio.get_running_loop()
        first = WorkItem("first", 1, loop)
        b.submit(first)
        while b.queue_length:  # the worker has taken it
            await asyncio.sleep(0.01)
        queued = [WorkItem(n, 1, loop) for n in "xy"]
        for it in queued:
            b.submit(it)
        with pytest.raises(QueueFull, match="full"):
            b.submit(WorkItem("z", 1, loop))
        closer = threading.Thread(target=b.close, kwargs={"drain": False})
        closer.start()
        release.set()
        closer.join(5)
        assert await first.future == "done"
        for it in queued:
            with pytest.raises(RuntimeError, match="unloaded"):
                await it.future
        with pytest.raises(RuntimeError, match="shutting down"):
            b.submit(WorkItem("late", 1, loop))
    run(main())


def test_scaling_starts_and_retires_threads():
    b = Batcher(lambda items: None, max_batch_size=1, max_batch_delay_ms=0, queue_size=10, workers=3)
    assert b.workers == 3
    b.scale(1)
    deadline = time.monotonic() + 5
    while len(b.worker_info()) != 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert b.workers == 1 and len(b.worker_info()) == 1
    b.scale(2)
    assert b.workers == 2 and len(b.worker_info()) == 2
    b.close()
    assert b.worker_info() == []


def test_cancelled_requests_are_never_run():
    ran = []

    def run_batch(items):
        ran.extend(i.request for i in items)
        for i in items:
            i.resolve(True, None)

    async def main():
        loop = asyncio.get_running_loop()
        b = Batcher(run_batch, max_batch_size=8, max_batch_delay_ms=0, queue_size=10, workers=0)
        items = [WorkItem(n, 1, loop) for n in "abc"]
        for it in items:
            b.submit(it)
        items[1].cancelled = True  # its client gave up (timeout)
        b.scale(1)
        await items[0].future
        await items[2].future
        b.close()
    run(main())
    assert ran == ["a", "c"]
