"""``ember.profiler``: torch.profiler's API over ember's op calls (torch docs,
"torch.profiler").

Events are recorded at the dispatch seam (``ember.ops._dispatch``): every op call on the
profiling thread becomes an event named ``ember::<op>`` (where torch's read ``aten::<op>``),
nested as the calls nest, so a decomposed op shows the ops it is made of as children.
``record_function`` adds named ranges. Times are wall-clock microseconds
(``time.perf_counter_ns``); with ``profile_memory``, an event's memory is the bytes of the
tensors it returned (ember has no allocator of its own to ask). CUDA activity is not traced.
"""

from __future__ import annotations

import contextlib
import enum
import gzip
import json
import os
import socket
import threading
import time
import warnings

from ..ops import _dispatch
from ._events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    """The devices a profile can record (torch.profiler.ProfilerActivity): CPU, CUDA, MTIA,
    XPU. ember records its ops' CPU time whichever are asked for."""
    CPU = 0
    CUDA = 1
    MTIA = 2
    XPU = 3


class ProfilerAction(enum.Enum):
    """What a profile does at a step of its ``schedule`` (torch.profiler.ProfilerAction): NONE
    (idle), WARMUP (running, nothing kept), RECORD (events kept) and RECORD_AND_SAVE (kept,
    then handed to ``on_trace_ready``)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """The action of each step: ``skip_first`` steps, then cycles of ``wait`` idle steps,
    ``warmup`` steps and ``active`` recorded ones (the last of which saves), ``repeat``
    cycles (0: forever), as torch.profiler.schedule.

    With ``skip_first_wait`` nonzero the first cycle starts without its wait steps. Invalid
    counts raise AssertionError; no warmup gives a warning, as torch's."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def action(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:  # the first cycle starts without its wait
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return action


class _Recorder(_dispatch.Mode):
    """The seam mode of one profile: times every op call on the thread that entered it."""

    def __init__(self, prof: profile):
        self.prof = prof

    def __ember_op__(self, op, args, kwargs, proceed):
        prof = self.prof
        if not prof._recording:
            return proceed(args, kwargs)
        shapes = _shapes(args) if prof.record_shapes else None
        event = prof._open(f"ember::{op.name}", shapes)
        try:
            result = proceed(args, kwargs)
        finally:
            prof._close(event)
        if prof.profile_memory:
            event.cpu_memory_usage = _nbytes(result)
        return result


def _shapes(args) -> list:
    from .._tensor import Tensor
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


def _nbytes(result) -> int:
    from .._tensor import Tensor
    if isinstance(result, Tensor):
        return result.numel() * result.element_size()
    if isinstance(result, (tuple, list)):
        return sum(_nbytes(r) for r in result)
    return 0


_ACTIVE = threading.local()  # the profile record_function reports to, on this thread


class profile:
    """Profile the ops run inside the block (torch.profiler.profile's arguments).

    ``key_averages()`` and ``events()`` return what was recorded; ``export_chrome_trace(path)``
    writes the Trace Event Format that Perfetto and chrome://tracing open. With a
    ``schedule``, call ``step()`` after each training step: events are kept only in RECORD
    steps and handed to ``on_trace_ready`` at the end of each RECORD_AND_SAVE step.

    ``activities`` (ProfilerActivity members; CPU by default) is kept; ``record_shapes``
    keeps each op's input shapes (see ``key_averages(group_by_input_shape=True)``);
    ``profile_memory`` records the bytes of each op's results. ``with_stack``,
    ``with_flops`` and ``with_modules`` are kept as attributes and record nothing;
    ``experimental_config``, ``execution_trace_observer``, ``acc_events``, ``use_cuda`` and
    ``custom_trace_id_callback`` are accepted for torch's signature and unused."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        self.activities = set(activities) if activities else {ProfilerActivity.CPU}
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack, self.with_flops, self.with_modules = with_stack, with_flops, with_modules
        self.step_num = 0
        self._events: list[FunctionEvent] = []
        self._stack: list[FunctionEvent] = []
        self._recording = False
        self._t0 = 0
        self._thread = threading.get_ident()
        self._mode = _Recorder(self)

    # ---- recording ------------------------------------------------------------------
    def _now(self) -> float:
        return (time.perf_counter_ns() - self._t0) / 1e3

    def _open(self, name, shapes=None, user=False) -> FunctionEvent:
        event = FunctionEvent(name, self._now(), threading.get_ident(), shapes, user)
        if self._stack:
            event.cpu_parent = self._stack[-1]
            self._stack[-1].cpu_children.append(event)
        self._stack.append(event)
        return event

    def _close(self, event: FunctionEvent) -> None:
        event.time_range_end = self._now()
        if event.is_user_annotation:  # a named range allocates nothing itself
            event.cpu_memory_usage = sum(c.cpu_memory_usage for c in event.cpu_children)
        if self._stack and self._stack[-1] is event:
            self._stack.pop()
        self._events.append(event)

    def _action(self) -> ProfilerAction:
        return self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD

    def start(self) -> None:
        self._t0 = time.perf_counter_ns()
        self._recording = self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        self._previous = getattr(_ACTIVE, "profile", None)
        _ACTIVE.profile = self
        self._mode.__enter__()

    def stop(self) -> None:
        self._mode.__exit__(None, None, None)
        _ACTIVE.profile = self._previous
        if self.on_trace_ready is not None and (self.schedule is None or self._action() in (
                ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)):
            self.on_trace_ready(self)
        self._recording = False

    def step(self) -> None:
        """End a step: hand the trace over after a RECORD_AND_SAVE step (the next cycle then
        starts empty), and record or not as the schedule says for the next one."""
        previous = self._action()
        self.step_num += 1
        if previous is ProfilerAction.RECORD_AND_SAVE:
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
            self._events, self._stack = [], []
        self._recording = self._action() in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---- results --------------------------------------------------------------------
    def events(self) -> EventList:
        return EventList(sorted(self._events, key=lambda e: e.time_range_start), self.profile_memory,
                         self.record_shapes)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        return self.events().key_averages(group_by_input_shape)

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as Trace Event Format JSON ("X" complete events, microseconds),
        to a temporary name renamed into place; a ``.gz`` path is gzip-compressed."""
        pid = os.getpid()
        trace = {"traceEvents": [
            {"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "name": e.name,
             "pid": pid, "tid": e.thread, "ts": e.time_range_start, "dur": e.cpu_time_total,
             "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}}
            for e in self.events()], "displayTimeUnit": "ms"}
        data = json.dumps(trace).encode()
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            f.write(gzip.compress(data) if path.endswith(".gz") else data)
        os.replace(tmp, path)


class record_function(contextlib.ContextDecorator):
    """A named range in the active profile (a no-op outside one), as a context manager or a
    decorator: ``with record_function("data loading"): ...``
    (torch.profiler.record_function). ``name`` is the range's name in the events and the
    trace; ``args`` is accepted and unused."""

    def __init__(self, name: str, args: str | None = None):
        self.name = name
        self._event = None

    def __enter__(self):
        prof = getattr(_ACTIVE, "profile", None)
        if prof is not None and prof._recording:
            self._prof = prof
            self._event = prof._open(self.name, user=True)
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            self._prof._close(self._event)
            self._event = None
        return False


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An ``on_trace_ready`` that writes ``<dir_name>/<worker>.<ms>.pt.trace.json`` (``.gz``
    added and gzip-compressed with ``use_gzip``), the files TensorBoard's profiler plugin
    reads (torch.profiler.tensorboard_trace_handler). ``worker_name`` defaults to
    ``<host>_<pid>``; ``dir_name`` is made when missing."""
    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, name))
    return handler
