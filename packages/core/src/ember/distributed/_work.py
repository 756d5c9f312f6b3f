"""Work (torch.distributed.Work): the handle of a collective started on MPI requests.

Every Work is bounded by its group's timeout from the moment it starts, waited on or not:
the watchdog thread (``_watchdog``) tests the requests of unfinished Works and ends the job
with a report naming the rank, the collective and its sequence number once one is late, as
torch's watchdog aborts a job whose collective timed out. ``wait(timeout=...)`` bounds one
wait instead and raises DistBackendError on this rank."""

from __future__ import annotations

import threading
import time

from . import _watchdog
from ._mpi import mpi

__all__ = ["Work", "DistBackendError", "timeout_message"]


class DistBackendError(RuntimeError):
    """A collective failed or timed out in the MPI engine (torch.distributed.DistBackendError)."""


def timeout_message(rank, name, seq, limit, others) -> str:
    return (f"[Rank {rank}] {name} (sequence number {seq}) did not complete within {limit:g} s, the process "
            f"group's timeout: some rank did not enter the same collective (it raised, hangs or runs a different "
            f"collective)" + (f"; the last collective each rank entered: {others}" if others else ""))


class Work:
    """Requests of one collective plus what finishes it (copying a converted result back,
    dividing for AVG). ``wait`` blocks until done.

    Args:
        requests: the MPI requests the collective started.
        finish: called once they all completed (or None).
        group: the process group, whose timeout bounds the wait (None: unbounded).
        name, seq: the collective's name and sequence number, for the timeout's message.
        result: what ``wait`` hands back once done.
        outputs: the tensors the collective writes (their version counters are bumped).
        status: an ``MPI.Status`` the single request fills (``irecv``'s sender).
        limit: seconds that bound it instead of the group's timeout (None: the group's).
    """

    # slots: a Work is made per collective, and slots make it a few attribute stores cheaper
    __slots__ = ("_requests", "_status", "_finish", "_group", "_name", "_seq", "_done", "_result", "_outputs",
                 "_lock", "_limit", "_deadline", "__weakref__")

    def __init__(self, requests, finish=None, *, group=None, name="", seq=0, result=None, outputs=(), status=None,
                 limit=None):
        self._requests = list(requests)
        self._status = status  # an MPI.Status the (single) request fills: irecv's sender
        self._finish = finish
        self._group = group
        self._name = name
        self._seq = seq
        self._done = False
        self._result = result
        self._outputs = list(outputs)
        # one thread at a time tests the requests (the owner's waits, the watchdog's sweeps)
        self._lock = threading.Lock()
        self._limit = limit if limit is not None else group._limit if group is not None else None
        self._deadline = None if self._limit is None else time.monotonic() + self._limit
        _watchdog.track(self)

    def _complete(self):
        """With ``_lock`` held, once every request finished: run what finishes the collective
        (done only after it, since ``wait`` returns without the lock once done)."""
        self._requests = []
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()
        self._done = True

    def _test(self) -> bool:
        """With ``_lock`` held: test the requests without blocking, finishing when all are done."""
        if not self._done:
            if self._status is not None:
                if self._requests and not self._requests[0].Test(self._status):
                    return False
                self._requests = []
            else:
                self._requests = [r for r in self._requests if not r.Test()]
            if not self._requests:
                self._complete()
        return self._done

    def is_completed(self) -> bool:
        """Whether every request finished (tests them without blocking)."""
        if self._done:
            return True
        with self._lock:
            return self._test()

    def is_success(self) -> bool:
        return self.is_completed()

    def wait(self, timeout=None) -> bool:
        """Block until the collective finishes. ``timeout`` (a timedelta or seconds) bounds
        this wait and raises DistBackendError (a RuntimeError) when it passes, naming the
        rank, the collective and its sequence number; without it the group's timeout holds
        (the watchdog ends the job, or, where it cannot run, this wait raises)."""
        if self._done:
            return True
        with self._lock:
            if timeout is None and _watchdog.running():
                # blocking in MPI: the fastest wait, bounded by the watchdog's sweep
                if len(self._requests) == 1 and self._status is None:
                    self._requests[0].Wait()  # the common case, without Waitall's lists
                else:
                    mpi().Request.Waitall(self._requests, None if self._status is None else [self._status])
                self._complete()
                return True
            limit = self._limit
            if timeout is not None:
                limit = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
            self._poll(limit)
        return True

    def _poll(self, limit):
        start = time.monotonic()
        deadline = None if limit is None else start + limit
        while not self._test():
            now = time.monotonic()
            if deadline is not None and now > deadline:
                from ._watchdog import ask_everyone
                rank = self._group.rank() if self._group is not None else "?"
                raise DistBackendError(timeout_message(rank, self._name, self._seq, limit, ask_everyone()))
            # MPI moves a non-blocking collective forward only inside MPI calls: test back to back
            # for the first 50 ms (a transfer in flight), then yield the core, then, for a peer
            # that is late by seconds, test every millisecond
            waited = now - start
            if waited > 0.05:
                time.sleep(0 if waited < 2.0 else 1e-3)

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
        """The global rank a finished receive came from."""
        if self._status is not None:
            return self._group._ranks[self._status.Get_source()]
        return self._result

    def __repr__(self):
        return f"Work({self._name}, seq={self._seq}, completed={self._done})"
