"""CUDA streams and events (torch.cuda.Stream, torch.cuda.Event), over cupy's.

A stream is a queue of work on one GPU; ember's kernels and cupy's calls go to the current
stream of the current device, which ``with ember.cuda.stream(s):`` sets. Events mark points
in a stream, to order streams (``Stream.wait_event``) or to time them
(``Event.elapsed_time``, milliseconds).

Source: https://pytorch.org/docs/stable/notes/cuda.html#cuda-streams
"""

from __future__ import annotations

__all__ = ["Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream", "set_stream"]


def _cupy_for_build(what: str) -> None:
    """Without cupy, torch's CPU-build RuntimeError naming ``what``."""
    from . import _cupy_module
    if _cupy_module() is None:
        raise RuntimeError(f"ember.cuda.{what} requires CUDA support (install ember's 'cuda' extra, cupy)")


class Stream:
    """A CUDA stream on ``device`` (an index, a device or None for the current one), created
    non-blocking as torch's pooled streams are: it does not wait for the legacy default
    stream. ``priority``: lower is sooner; CUDA clamps it to the device's range.

    Attributes: ``device`` (an ember.device), ``device_index``, ``cuda_stream`` (the
    ``cudaStream_t`` as an int), ``priority``.

    Raises:
        RuntimeError: no cupy, or no GPU.
    """

    def __init__(self, device=None, priority: int = 0, **kwargs):
        _cupy_for_build("Stream")
        from . import _index, _require
        cp = _require()
        self.device_index = _index(device)
        self.priority = priority
        self._contexts: list = []  # the contexts ``with stream:`` entered
        with cp.cuda.Device(self.device_index):
            self._cupy = cp.cuda.Stream(non_blocking=True, priority=priority)

    @classmethod
    def _wrap(cls, cupy_stream, index: int) -> "Stream":
        s = cls.__new__(cls)
        s._cupy, s.device_index, s.priority, s._contexts = cupy_stream, index, 0, []
        return s

    @property
    def device(self):
        from .._device import device
        return device("cuda", self.device_index)

    @property
    def device_type(self) -> int:
        return 1  # c10::DeviceType::CUDA, as torch's Stream reports it

    @property
    def cuda_stream(self) -> int:
        return self._cupy.ptr

    def _on_device(self):
        """Its device as the current one: a null stream's handle means the legacy stream of
        whichever device is current."""
        from . import _require
        return _require().cuda.Device(self.device_index)

    def wait_event(self, event: "Event") -> None:
        """Make later work on this stream wait until ``event`` has happened (an event never
        recorded: nothing to wait for)."""
        if event._cupy is not None:
            with self._on_device():
                self._cupy.wait_event(event._cupy)

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record ``event`` (a new one when None) at this point of the stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        """Whether all work queued on this stream has finished."""
        with self._on_device():
            return self._cupy.done

    def synchronize(self) -> None:
        """Wait for all work queued on this stream to finish."""
        with self._on_device():
            self._cupy.synchronize()

    def __enter__(self):
        """``with stream:`` is ``with ember.cuda.stream(stream):`` (torch.Stream's)."""
        context = StreamContext(self)
        self._contexts.append(context)
        return context.__enter__()

    def __exit__(self, *exc):
        return self._contexts.pop().__exit__(*exc)

    def __eq__(self, other):
        return isinstance(other, Stream) and (self.cuda_stream, self.device_index) == (other.cuda_stream,
                                                                                       other.device_index)

    def __hash__(self):
        return hash((self.cuda_stream, self.device_index))

    def __repr__(self):
        return f"<ember.cuda.Stream device=cuda:{self.device_index} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: a point in a stream that other streams or the host can wait for. As
    torch's, it is made on the device of the stream it is first recorded on; until then it
    has happened already (``query`` is True, ``synchronize`` returns at once).

    Args:
        enable_timing (bool): keep the time it happened, for ``elapsed_time``.
        blocking (bool): ``synchronize`` sleeps instead of spinning.
        interprocess (bool): can be shared with another process.

    Raises:
        RuntimeError: no cupy (torch's CPU build raises RuntimeError too); without a GPU,
            recording raises it.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        _cupy_for_build("Event")
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess
        self._cupy = None  # made at the first record

    @property
    def cuda_event(self) -> int:
        return 0 if self._cupy is None else self._cupy.ptr

    def record(self, stream: Stream | None = None) -> None:
        """Record the event at this point of ``stream`` (the current stream when None)."""
        stream = current_stream() if stream is None else stream
        from . import _require
        with stream._on_device():
            if self._cupy is None:
                self._cupy = _require().cuda.Event(block=self.blocking, disable_timing=not self.enable_timing,
                                                   interprocess=self.interprocess)
            self._cupy.record(stream._cupy)

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` (the current one when None) wait for this event; an
        event never recorded makes it wait for nothing."""
        if self._cupy is not None:
            (current_stream() if stream is None else stream).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event has finished (True for an event never recorded)."""
        return True if self._cupy is None else self._cupy.done

    def synchronize(self) -> None:
        """Wait until the event has happened."""
        if self._cupy is not None:
            self._cupy.synchronize()

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and ``end_event``, both recorded and happened.

        Raises:
            RuntimeError: either event was made without ``enable_timing`` or not recorded yet
                (torch's words).
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._cupy is None or end_event._cupy is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        from . import _require
        return float(_require().cuda.get_elapsed_time(self._cupy, end_event._cupy))

    def __repr__(self):
        return "<ember.cuda.Event uninitialized>" if self._cupy is None else f"<ember.cuda.Event {self.cuda_event:#x}>"


def current_stream(device=None) -> Stream:
    """The stream work on ``device`` (the current one when None) goes to now
    (torch.cuda.current_stream); errors as ``ember.cuda.init``."""
    from . import _index, _require
    cp = _require()
    index = _index(device)
    return Stream._wrap(cp.cuda.get_current_stream(index), index)


def default_stream(device=None) -> Stream:
    """The legacy default (null) stream of ``device`` (torch.cuda.default_stream)."""
    from . import _index, _require
    cp = _require()
    index = _index(device)
    with cp.cuda.Device(index):
        return Stream._wrap(cp.cuda.Stream.null, index)


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` the current stream of its device (torch.cuda.set_stream); None does
    nothing. Prefer ``with ember.cuda.stream(s):``, which restores the previous one."""
    if stream is None:
        return
    from . import _require
    _require().cuda.runtime.setDevice(stream.device_index)  # torch's set_stream moves to its device
    stream._cupy.use()


class StreamContext:
    """``with StreamContext(stream):`` makes ``stream`` the current stream, and its device the
    current device, until the block ends (torch.cuda.StreamContext). None, or anything that is
    not a Stream, makes the block run as it would without it, as torch does."""

    def __init__(self, stream):
        self.stream = stream if isinstance(stream, Stream) else None
        self._entered: list = []  # per entry, what it entered: the same context may nest

    def __enter__(self):
        if self.stream is None:
            self._entered.append(())
            return None
        contexts = (self.stream._on_device(), self.stream._cupy)
        for ctx in contexts:
            ctx.__enter__()
        self._entered.append(contexts)
        return self.stream

    def __exit__(self, *exc):
        for ctx in reversed(self._entered.pop()):
            ctx.__exit__(*exc)
        return False


def stream(stream) -> StreamContext:
    """``with ember.cuda.stream(stream):`` queues the block's work on ``stream``, a Stream
    (None: no change) (torch.cuda.stream)."""
    return StreamContext(stream)
