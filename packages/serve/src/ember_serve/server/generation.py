"""The generation engine of a ``text_generation`` model: one thread, one running decode batch.

Sequences share the decoding steps of one ember-text ``DecodeBatch`` (iteration-level
batching): a waiting job is prefilled alone (its own KV cache) and joins the batch at the
next step, every step feeds all running sequences one token, and a sequence that finished
leaves before the next. At most ``max_running`` sequences run together (the model config's
``max_batch_size``; 0 or 1: one at a time); an idle engine waits ``max_batch_delay_ms``
after a job's arrival for others to start with it. Each step is reported to ``on_step``
(the server's ``ember_batch_size`` histogram and Triton's execution counters).

Requests of every route (``/predictions``, the protocol's infer, ``/v1/completions``,
``/v1/chat/completions``) become jobs, one per sequence to generate, waiting in one bounded
queue (``queue_size``; a full queue refuses at once, answered 503). Each generated token goes
through the job's ``TextStream`` (stop strings, whole characters) and the text that became
final is handed to the job's ``sink`` from the engine's thread; the last event of a job says
why it ended: "stop" (an EOS token or a stop string) or "length" (``max_new_tokens``).

Events a sink receives: ``(index, "text", str)``, ``(index, "done", (finish_reason,
completion_tokens))``, ``(index, "error", exception)``.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Callable

from .batcher import QueueFull

__all__ = ["GenerationJob", "GenerationEngine"]

log = logging.getLogger("ember_serve.generation")


class GenerationJob:
    """One sequence to generate: its prompt ids, GenerationSettings, TextStream and sink."""

    def __init__(self, prompt: list[int], settings, stream, sink: Callable[[tuple], None], index: int = 0,
                 eos_token_ids=()):
        self.prompt, self.settings, self.stream, self.sink, self.index = prompt, settings, stream, sink, index
        self.eos = set(eos_token_ids)
        self.enqueued = time.perf_counter()
        self.completion_tokens = 0
        self.finish_reason: str | None = None
        self.cancelled = False  # the client went away: the engine drops the job at its next step

    def take(self, token: int) -> bool:
        """Account for one generated token; True when the job is finished now."""
        if self.finish_reason is not None:
            return True
        self.completion_tokens += 1
        if token in self.eos:
            self.finish("stop")
            return True
        delta = self.stream.push(token)
        if delta:
            self.sink((self.index, "text", delta))
        if self.stream.finish_reason is not None:
            self.finish("stop")
        elif self.completion_tokens >= self.settings.max_new_tokens:
            self.finish("length")
        return self.finish_reason is not None

    def finish(self, reason: str) -> None:
        if self.finish_reason is not None:
            return
        self.finish_reason = reason
        delta = self.stream.flush()
        if delta:
            self.sink((self.index, "text", delta))
        self.sink((self.index, "done", (reason, self.completion_tokens)))

    def fail(self, exc: BaseException) -> None:
        if self.finish_reason is None:
            self.finish_reason = "error"
            self.sink((self.index, "error", exc))


class GenerationEngine:
    """Runs the jobs of one model version on its own thread.

    Args:
        handler: the TextGenerationHandler (its ``model``).
        max_running: most sequences decoded together (the config's ``max_batch_size``, at least 1).
        queue_size: most jobs waiting.
        delay_ms: how long an idle engine waits after a first job for others to start with it.
        on_step: called with ``(sequences, seconds)`` after every decoding step."""

    def __init__(self, handler, *, max_running: int, queue_size: int, delay_ms: float = 0.0,
                 on_step: Callable[[int, float], None] | None = None, name: str = "model"):
        self.handler, self.max_running, self.queue_size, self.delay_ms = handler, max(1, max_running), queue_size, \
            delay_ms
        self.on_step = on_step or (lambda rows, seconds: None)
        self.name = name
        self._waiting: collections.deque[GenerationJob] = collections.deque()
        self._running = 0
        self._cond = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=f"{name}-generation", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def running(self) -> int:
        return self._running

    def submit(self, jobs: list[GenerationJob]) -> None:
        """Queue all of ``jobs`` or none: QueueFull when they do not fit, RuntimeError when closing."""
        with self._cond:
            if self._closing:
                raise RuntimeError(f"model {self.name} is shutting down")
            if len(self._waiting) + len(jobs) > self.queue_size:
                raise QueueFull(f"the queue of model {self.name} is full ({self.queue_size} sequences waiting)")
            self._waiting.extend(jobs)
            self._cond.notify_all()

    def close(self, drain: bool = True, timeout: float | None = None) -> None:
        with self._cond:
            self._closing = True
            if not drain:
                while self._waiting:
                    self._waiting.popleft().fail(RuntimeError(f"model {self.name} was unloaded"))
            self._cond.notify_all()
        self._thread.join(timeout)

    def _admit(self, batch, jobs: dict) -> None:
        """Prefill waiting jobs into ``batch`` while it has room; an idle engine first waits up to
        ``delay_ms`` after the oldest job's arrival for company."""
        with self._cond:
            while True:
                while self._waiting and self._waiting[0].cancelled:
                    self._waiting.popleft()
                if self._waiting or len(batch) or self._closing:
                    break
                self._cond.wait()
            if not len(batch) and self._waiting and self.delay_ms > 0:
                deadline = self._waiting[0].enqueued + self.delay_ms / 1000.0
                while len(self._waiting) < self.max_running and not self._closing:
                    remaining = deadline - time.perf_counter()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
            taken = []
            while self._waiting and len(batch) + len(taken) < self.max_running:
                job = self._waiting.popleft()
                if not job.cancelled:
                    taken.append(job)
        for job in taken:
            s = job.settings
            sample = s.do_sample and s.temperature > 0
            try:
                seq = batch.add(job.prompt, max_new_tokens=s.max_new_tokens, do_sample=sample,
                                temperature=s.temperature, top_k=s.top_k, top_p=s.top_p,
                                repetition_penalty=s.repetition_penalty, eos_token_id=sorted(job.eos),
                                generator=s.generator() if sample else None)
            except Exception as e:
                log.warning("model %s: prefill failed: %s: %s", self.name, type(e).__name__, e)
                job.fail(e)
                continue
            if not seq.tokens:  # max_new_tokens 0
                job.finish("length")
            elif job.take(seq.tokens[0]):  # done with its first token (EOS, a stop string, one token asked)
                batch.cancel(seq)
            else:
                jobs[seq] = job
        self._running = len(batch)

    def _run(self) -> None:
        from ember_text.models import DecodeBatch
        batch, jobs = DecodeBatch(self.handler.model), {}
        while True:
            self._admit(batch, jobs)
            for seq, job in list(jobs.items()):
                if job.cancelled:  # the client left: its row goes at once
                    batch.cancel(seq)
                    del jobs[seq]
            if not len(batch):
                self._running = 0
                with self._cond:
                    if self._closing and not self._waiting:
                        return
                continue
            start = time.perf_counter()
            try:
                stepped = batch.step()
            except Exception as e:
                log.warning("model %s: decoding step failed: %s: %s", self.name, type(e).__name__, e)
                for job in jobs.values():
                    job.fail(e)
                batch, jobs = DecodeBatch(self.handler.model), {}
                continue
            seconds = time.perf_counter() - start
            log.debug("model %s: decoding step of %d sequences, %.1f ms", self.name, len(stepped), seconds * 1e3)
            self.on_step(len(stepped), seconds)
            for seq in stepped:
                job = jobs.get(seq)
                if job is None:
                    continue
                if job.take(seq.tokens[-1]) or seq.finished:
                    if not seq.finished:
                        batch.cancel(seq)  # a stop string ended it
                    job.finish(seq.finish_reason or "stop")
                    del jobs[seq]
            self._running = len(batch)
