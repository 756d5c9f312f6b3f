"""One loaded model version: its archive, handler, effective config, batcher and statistics."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time

from ..archive import LoadedArchive
from ..config import ModelConfig
from ..handlers import HandlerContext, InvalidInput, Request, resolve_handler
from .batcher import Batcher, WorkItem
from .generation import GenerationEngine, GenerationJob

__all__ = ["ServedModel", "ModelStats"]

log = logging.getLogger("ember_serve.model")


@dataclasses.dataclass
class ModelStats:
    """Cumulative counters in Triton's sense (durations in microseconds)."""

    request_success: int = 0
    request_failure: int = 0
    inference_count: int = 0  # rows run through the model
    exec_count: int = 0  # batches executed
    request_duration_us: float = 0.0
    queue_duration_us: float = 0.0
    compute_input_duration_us: float = 0.0
    compute_infer_duration_us: float = 0.0
    compute_output_duration_us: float = 0.0
    # for Triton's statistics extension (the metrics above mix them)
    success_duration_us: float = 0.0
    failure_duration_us: float = 0.0
    executed_requests: int = 0  # requests a successful batch ran: what the queue and compute times add over
    last_inference_ms: int = 0  # when the last request was answered, ms since the epoch (0: never)
    # rows -> [batches, compute input us, compute infer us, compute output us]
    batches: dict = dataclasses.field(default_factory=dict)


class ServedModel:
    """A model version ready to answer: ``await submit(request)`` gives its answer.

    Raises from ``submit``: QueueFull, InvalidInput, TimeoutError, or the handler's exception."""

    def __init__(self, archive: LoadedArchive, config: ModelConfig, name: str, version: str,
                 source: str, metrics=None):
        self.archive, self.config, self.name, self.version, self.source = archive, config, name, version, source
        self.metrics = metrics
        self.stats = ModelStats()
        self.lock = threading.Lock()
        self.loaded_at = time.time()
        self.loaded_at_startup = False
        context = HandlerContext(archive=archive, config=config, device=config.device, model_name=name,
                                 model_version=version, metrics_registry=getattr(metrics, "registry", None))
        cls = resolve_handler(archive.handler, archive)
        self.handler = cls()
        self.handler.initialize(context)
        self.inputs, self.outputs = self.handler.signature()
        self.batcher = Batcher(self._run_batch, max_batch_size=config.max_batch_size,
                               max_batch_delay_ms=config.max_batch_delay_ms, queue_size=config.queue_size,
                               workers=config.workers, name=f"{name}:{version}")
        # a text_generation handler's requests go through its generation engine, not the batcher
        self.engine = None
        if getattr(self.handler, "generates", False):
            self.engine = GenerationEngine(self.handler, max_running=config.max_batch_size,
                                           queue_size=config.queue_size, delay_ms=config.max_batch_delay_ms,
                                           on_step=self._record_step, name=f"{name}:{version}")

    @property
    def ready(self) -> bool:
        return self.batcher.workers > 0 and (self.engine is None or self.engine.alive)

    @property
    def queue_length(self) -> int:
        return self.batcher.queue_length + (self.engine.waiting if self.engine is not None else 0)

    # ---- generation ---------------------------------------------------------------------
    def start_generation(self, specs: list, sink) -> list[GenerationJob]:
        """Queue one job per ``(prompt ids, GenerationSettings)`` of ``specs`` (job ``i`` reports as
        index ``i`` to ``sink``, a thread-safe callable); QueueFull when they do not fit."""
        from ..handlers._text_stream import TextStream
        h = self.handler
        jobs = [GenerationJob(prompt, settings, TextStream(h.tokenizer, settings.stop), sink, i, h.eos_token_ids)
                for i, (prompt, settings) in enumerate(specs)]
        self.engine.submit(jobs)
        return jobs

    async def generate(self, specs: list):
        """Run ``specs`` and yield their events ``(index, kind, value)`` as they come (see
        ``generation``); the jobs are cancelled when the consumer stops early."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()

        def sink(event):
            try:
                loop.call_soon_threadsafe(queue.put_nowait, event)
            except RuntimeError:  # the loop is closed: nobody listens any more
                pass

        jobs = self.start_generation(specs, sink)
        left = len(jobs)
        try:
            while left:
                event = await queue.get()
                if event[1] in ("done", "error"):
                    left -= 1
                yield event
        finally:
            for job in jobs:
                job.cancelled = True

    async def _submit_generation(self, request: Request):
        specs = self.handler.jobs(request)
        texts = [""] * len(specs)

        async def collect():
            async for index, kind, value in self.generate(specs):
                if kind == "text":
                    texts[index] += value
                elif kind == "error":
                    raise value

        try:
            await asyncio.wait_for(collect(), self.config.response_timeout_s)
        except asyncio.TimeoutError:
            raise TimeoutError(f"model {self.name} version {self.version} gave no answer within "
                               f"{self.config.response_timeout_s:g} s (response_timeout_s)") from None
        return self.handler.answer(request, texts)

    def _record_step(self, rows: int, seconds: float) -> None:
        # one decoding step of ``rows`` sequences is one execution of a batch of that many rows
        with self.lock:
            self.stats.exec_count += 1
            self.stats.inference_count += rows
            self.stats.compute_infer_duration_us += seconds * 1e6
            self._count_batch(rows, (0.0, seconds * 1e6, 0.0))
        if self.metrics is not None:
            self.metrics.observe_batch(self.name, self.version, rows)

    def rows(self, request: Request) -> int:
        """The request's batch rows (may parse its body); InvalidInput when too many."""
        rows = self.handler.rows(request)
        limit = self.config.max_batch_size
        if limit > 0 and rows > limit:
            raise InvalidInput(f"the request holds {rows} rows; model {self.name} takes at most {limit} per request "
                               "(max_batch_size)")
        return rows

    async def submit(self, request: Request):
        """Queue ``request`` and wait for its answer (the request counters are the caller's:
        see ``record``)."""
        if self.engine is not None and request.kind in ("infer", "predict"):
            return await self._submit_generation(request)
        loop = asyncio.get_running_loop()
        request.rows = self.rows(request)
        item = WorkItem(request, request.rows, loop)
        self.batcher.submit(item)
        # a timer on the item's own future, not wait_for(shield(...)): that made a task, a second
        # future and their callbacks per request, on the event loop every request goes through
        timer = loop.call_later(self.config.response_timeout_s, self._expire, item)
        try:
            return await item.future
        finally:
            timer.cancel()
            if not item.future.done() or item.future.cancelled():
                item.cancelled = True  # the caller is gone: a worker that has not started it drops it

    def _expire(self, item: WorkItem) -> None:
        item.cancelled = True
        if not item.future.done():
            item.future.set_exception(TimeoutError(
                f"model {self.name} version {self.version} gave no answer within "
                f"{self.config.response_timeout_s:g} s (response_timeout_s)"))

    def record(self, ok: bool, seconds: float) -> None:
        """Count one request answered (``ok``) or failed, and its end-to-end duration."""
        with self.lock:
            if ok:
                self.stats.request_success += 1
                self.stats.success_duration_us += seconds * 1e6
            else:
                self.stats.request_failure += 1
                self.stats.failure_duration_us += seconds * 1e6
            self.stats.request_duration_us += seconds * 1e6
            self.stats.last_inference_ms = int(time.time() * 1000)

    def _run_batch(self, batch: list[WorkItem]) -> None:
        live = [w for w in batch if not w.cancelled]
        if not live:
            return
        now = time.perf_counter()
        for w in live:
            w.started = now
        try:
            answers, timing = self._handle([w.request for w in live])
        except Exception as e:
            if len(live) > 1 and isinstance(e, InvalidInput):
                # one unreadable request must not fail its batch-mates: run each alone
                for w in live:
                    self._run_batch([w])
                return
            log.warning("model %s:%s: batch of %d failed: %s: %s", self.name, self.version, len(live),
                        type(e).__name__, e)
            for w in live:
                w.resolve(False, e)
            return
        rows = sum(w.rows for w in live)
        with self.lock:
            s = self.stats
            s.exec_count += 1
            s.inference_count += rows
            s.executed_requests += len(live)
            self._count_batch(rows, timing)
            for w in live:
                s.queue_duration_us += (w.started - w.enqueued) * 1e6
                # Triton credits each request of a batch with the batch's whole compute time
                s.compute_input_duration_us += timing[0]
                s.compute_infer_duration_us += timing[1]
                s.compute_output_duration_us += timing[2]
        if self.metrics is not None:
            self.metrics.observe_batch(self.name, self.version, rows)
        for w, a in zip(live, answers):
            w.resolve(True, a)

    def _count_batch(self, rows: int, timing) -> None:
        """One executed batch of ``rows`` rows and its compute times (us), under ``self.lock``."""
        entry = self.stats.batches.setdefault(rows, [0, 0.0, 0.0, 0.0])
        entry[0] += 1
        for i in range(3):
            entry[i + 1] += timing[i]

    def _handle(self, requests: list[Request]):
        h = self.handler
        t0 = time.perf_counter()
        batch = h.preprocess(requests)
        t1 = time.perf_counter()
        out = h.inference(batch)
        t2 = time.perf_counter()
        answers = h.postprocess(out, requests)
        t3 = time.perf_counter()
        if not isinstance(answers, list) or len(answers) != len(requests):
            raise RuntimeError(f"the handler gave {len(answers) if isinstance(answers, list) else type(answers)} "
                               f"answers for {len(requests)} requests; it must give one per request")
        return answers, ((t1 - t0) * 1e6, (t2 - t1) * 1e6, (t3 - t2) * 1e6)

    def describe(self) -> dict:
        """TorchServe's ``describe model`` fields, plus the queue and batch settings."""
        c = self.config
        return {"modelName": self.name, "modelVersion": self.version, "modelUrl": self.source,
                "runtime": "python", "handler": self.archive.handler,
                "minWorkers": self.batcher.workers, "maxWorkers": self.batcher.workers,
                "batchSize": c.max_batch_size, "maxBatchDelay": c.max_batch_delay_ms,
                "responseTimeout": c.response_timeout_s, "maxRequestBytes": c.max_request_bytes,
                "loadedAtStartup": self.loaded_at_startup,
                "jobQueueStatus": {"remainingCapacity": c.queue_size - self.queue_length,
                                   "pendingRequests": self.queue_length},
                "busyWorkers": self.batcher.busy_workers,
                "workers": [{"id": w["id"], "status": "READY"} for w in self.batcher.worker_info()]}

    def close(self, drain: bool = True) -> None:
        if self.engine is not None:
            self.engine.close(drain=drain, timeout=self.config.response_timeout_s)
        self.batcher.close(drain=drain, timeout=self.config.response_timeout_s)
        try:
            self.handler.close()
        finally:
            self.archive.close()
