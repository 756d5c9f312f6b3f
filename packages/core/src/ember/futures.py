"""``ember.futures``: torch.futures.Future, the result of an asynchronous operation.

Ember has no background progress thread: a Future made from a collective's Work completes
when someone waits on it (or asks ``done()``, which tests without blocking), and the
callbacks chained with ``then`` run at that moment, in order.

Source: https://pytorch.org/docs/stable/futures.html
"""

from __future__ import annotations

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A value that becomes available later. ``wait()`` blocks until it is (and re-raises
    an exception set with ``set_exception``); ``then(callback)`` gives a Future of
    ``callback(this_future)``.

    ``devices`` is accepted for torch's signature (torch.futures.Future); ember's futures
    hold any value."""

    def __init__(self, *, devices=None):
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []
        self._drive = None   # blocks until the operation behind this future has finished
        self._poll = None    # tests it without blocking

    def done(self) -> bool:
        if not self._done and self._poll is not None:
            self._poll()
        return self._done

    def wait(self):
        if not self._done and self._drive is not None:
            self._drive()
        if not self._done:
            raise RuntimeError("Future.wait(): nothing will complete this future (no result was set)")
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """The result (waits for it; torch expects it to be complete already)."""
        return self.wait()

    def set_result(self, result) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once")
        self._value, self._done = result, True
        self._run_callbacks()

    def set_exception(self, result) -> None:
        if self._done:
            raise RuntimeError("Future can only be marked completed once")
        self._error, self._done = result, True
        self._run_callbacks()

    def _run_callbacks(self):
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` once this future completes (now, if it has)."""
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def then(self, callback) -> "Future":
        """A future of ``callback(self)``, run when this one completes."""
        child = Future()

        def chain(parent):
            try:
                child.set_result(callback(parent))
            except Exception as e:  # noqa: BLE001  (carried to whoever waits on the child)
                child.set_exception(e)
        self.add_done_callback(chain)
        child._drive = lambda: self.wait() if not self._done else None
        child._poll = self.done
        return child

    def __repr__(self):
        return f"Future(done={self._done})"


def collect_all(futures) -> Future:
    """A future of the list of ``futures``, complete when each of them is."""
    futures = list(futures)
    out = Future()

    def drive():
        for f in futures:
            f.wait()
        if not out._done:
            out.set_result(futures)
    out._drive = drive
    out._poll = lambda: all(f.done() for f in futures) and drive()
    return out


def wait_all(futures) -> list:
    """Wait on every future of the list ``futures`` and return their values, in order; an
    exception set on one is raised (torch.futures.wait_all)."""
    return [f.wait() for f in futures]
