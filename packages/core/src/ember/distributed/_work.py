"""Work (torch.distributed.Work): the handle of a collective started on MPI requests.
Completion is polled against a deadline, so that a collective that never completes ends
in an error naming the rank, the collective and its sequence number instead of a hang."""

from __future__ import annotations

import time

__all__ = ["Work", "DistBackendError"]


class DistBackendError(RuntimeError):
    """A collective failed or timed out in the MPI engine (torch.distributed.DistBackendError)."""


class Work:
    """Requests of one collective plus what finishes it (copying a converted result back,
    dividing for AVG). ``wait`` blocks until done or the group's timeout passes."""

    def __init__(self, requests, finish=None, *, group=None, name="", seq=0, result=None, outputs=()):
        self._requests = list(requests)
        self._finish = finish
        self._group = group
        self._name = name
        self._seq = seq
        self._done = False
        self._result = result
        self._outputs = list(outputs)

    def _complete(self):
        self._done = True
        self._requests = []
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def is_completed(self) -> bool:
        """Whether every request finished (tests them without blocking)."""
        if self._done:
            return True
        if all(r.Test() for r in self._requests):
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def wait(self, timeout=None) -> bool:
        """Block until the collective finishes. ``timeout`` (a timedelta or seconds) bounds
        this wait; by default the group's timeout does. Raises DistBackendError (a
        RuntimeError) on timeout, naming the rank, the collective and its sequence number."""
        if self._done:
            return True
        limit = self._group.timeout.total_seconds() if self._group is not None else None
        if timeout is not None:
            limit = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
        start = time.monotonic()
        deadline = None if limit is None else start + limit
        pending = list(self._requests)
        while pending:
            pending = [r for r in pending if not r.Test()]
            if not pending:
                break
            now = time.monotonic()
            if deadline is not None and now > deadline:
                rank = self._group.rank() if self._group is not None else "?"
                from ._watchdog import ask_everyone
                others = ask_everyone()
                raise DistBackendError(
                    f"[Rank {rank}] {self._name} (sequence number {self._seq}) did not complete within "
                    f"{limit:g} s, the process group's timeout: some rank did not enter the same "
                    f"collective (it raised, hangs or runs a different collective)"
                    + (f"; the last collective each rank entered: {others}" if others else ""))
            # MPI moves a non-blocking collective forward only inside MPI calls: test back to back
            # for the first 50 ms (a transfer in flight), then yield the core, then, for a peer
            # that is late by seconds, test every millisecond
            waited = now - start
            if waited > 0.05:
                time.sleep(0 if waited < 2.0 else 1e-3)
        self._complete()
        return True

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        """An ember.futures.Future of the collective's output tensors (a list), complete once
        the Work is (waiting on it waits on the Work)."""
        from ..futures import Future
        fut = Future()

        def drive():
            self.wait()
            if not fut._done:
                fut.set_result(self._outputs)
        fut._drive = drive
        fut._poll = lambda: self.is_completed() and drive()
        return fut

    def source_rank(self) -> int:
        return self._result

    def __repr__(self):
        return f"Work({self._name}, seq={self._seq}, completed={self._done})"
