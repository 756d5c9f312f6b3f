"""The watchdog: a thread that bounds every collective by its group's timeout and knows who
is where when one times out.

- Blocking collectives register their deadline (``guard``) and run as MPI's blocking calls
  (the GIL released inside MPI); unfinished Works are tracked (``track``) and their requests
  tested by the thread every few milliseconds, waited on or not. Once one is late the thread
  prints the error (rank, collective, sequence number, every rank's last collective) and
  ends the whole job with MPI_Abort, as torch's watchdog tears a timed-out job down.
- Each rank notes the last collective it entered; the thread answers other ranks'
  questions about it on a communicator of its own, so that the report names every rank's
  last collective (a rank stuck in Python code still answers: the thread needs only the GIL
  between bytecodes, a rank blocked in MPI has released it).

- NCCL collectives (cuda tensors) are Works too, whose "request" is a cupy event recorded
  after the collective on its stream: the thread polls the event against the deadline, and
  on a timeout aborts the NCCL communicators before ending the job.

Runs when MPI grants MPI_THREAD_MULTIPLE and the world has more than one rank; otherwise
collectives poll their requests (or events) and raise DistBackendError on the rank that
timed out."""

from __future__ import annotations

import atexit
import sys
import threading
import time

import numpy

__all__ = ["start", "stop_", "running", "entered", "ask_everyone", "track", "guard", "release", "sweep"]

_TAG_ASK, _TAG_ANSWER, _WIDTH = 71, 72, 160
_PERIOD_S = 0.01
# in_place: MPI.IN_PLACE, kept here for all_reduce's fast path (which runs only with the thread)
_state = {"comm": None, "thread": None, "stop": None, "last": None, "ask": None, "status": None, "in_place": None}
# unfinished Works (held here so that neither a request nor its buffer is freed before MPI is done)
_works: set = set()
# the blocking collective each thread is in: thread id -> (deadline, group, name, seq, limit)
_blocking: dict = {}


def running() -> bool:
    return _state["thread"] is not None


def entered(name: str, seq: int, group_ranks=None) -> None:
    _state["last"] = (name, seq, group_ranks)  # formatted only when asked


def _last() -> str:
    last = _state["last"]
    if last is None:
        return "no collective yet"
    name, seq, ranks = last
    return f"{name} (sequence number {seq})" + ("" if ranks is None else f" in the group of ranks {ranks}")


def track(work) -> None:
    _works.add(work)


def guard(pg, name, seq):
    """Register the blocking collective this thread enters; returns the key for ``release``."""
    key = threading.get_ident()
    limit = pg._limit
    _blocking[key] = (time.monotonic() + limit, pg, name, seq, limit)
    return key


def release(key) -> None:
    _blocking.pop(key, None)


def sweep() -> None:
    """Test the tracked Works once, forgetting the finished ones (the thread's loop; called
    at each collective where there is no thread)."""
    for work in list(_works):
        if work._done:
            _works.discard(work)
        elif work._lock.acquire(blocking=False):
            try:
                if work._test():
                    _works.discard(work)
            finally:
                work._lock.release()


def _late():
    """(group, name, seq, limit) of a collective past its deadline, or None."""
    now = time.monotonic()
    for deadline, pg, name, seq, limit in list(_blocking.values()):
        if now > deadline:
            return pg, name, seq, limit
    for work in list(_works):
        if not work._done and work._deadline is not None and now > work._deadline:
            return work._group, work._name, work._seq, work._limit
    return None


def _abort(pg, name, seq, limit):
    from ._mpi import mpi
    from ._work import timeout_message
    try:
        rank = pg.rank()
        text = timeout_message(rank, name, seq, limit, ask_everyone())
        sys.stderr.write(f"[rank {rank}] the watchdog ends the MPI job: ember.distributed.DistBackendError: "
                         f"{text}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        # NCCL kernels waiting for a peer that never comes hold the device: abort them first
        from . import _nccl
        _nccl.abort_all()
    finally:
        mpi().COMM_WORLD.Abort(1)


def _encode(text: str):
    row = numpy.zeros(_WIDTH, numpy.uint8)
    raw = text.encode()[:_WIDTH]
    row[:len(raw)] = numpy.frombuffer(raw, numpy.uint8)
    return row


def _answer(comm):
    """Answer a question about this rank's last collective, if one came."""
    from ._mpi import mpi
    if _state["ask"].Test(_state["status"]):
        comm.Send(_encode(_last()), dest=_state["status"].Get_source(), tag=_TAG_ANSWER)
        _state["ask"] = comm.Irecv(numpy.zeros(1, numpy.uint8), source=mpi().ANY_SOURCE, tag=_TAG_ASK)


def _serve(comm, stop):
    while not stop.is_set():
        _answer(comm)
        sweep()
        late = _late()
        if late is not None:
            _abort(*late)
        time.sleep(_PERIOD_S)
    _state["ask"].Cancel()
    _state["ask"].Wait()


def start(world) -> None:
    from ._mpi import mpi
    MPI = mpi()
    if _state["thread"] is not None or world.Get_size() < 2 or MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        return
    comm = world.Dup()
    stop = threading.Event()
    _state["status"] = MPI.Status()
    _state["ask"] = comm.Irecv(numpy.zeros(1, numpy.uint8), source=MPI.ANY_SOURCE, tag=_TAG_ASK)
    thread = threading.Thread(target=_serve, args=(comm, stop), name="ember-distributed-watchdog", daemon=True)
    _state.update(in_place=MPI.IN_PLACE, comm=comm, thread=thread, stop=stop)
    thread.start()
    atexit.register(stop_)


def stop_() -> None:
    thread = _state["thread"]
    if thread is None:
        return
    _state["stop"].set()
    thread.join(timeout=5)
    _state["comm"].Free()
    _state.update(comm=None, thread=None, stop=None, ask=None)


def ask_everyone(wait_s: float = 2.0) -> str:
    """Every rank's last collective, one entry per rank ("no answer" for a rank that did not
    reply within ``wait_s``); "" without the thread. Called from the thread itself (a
    timeout it found) or from a rank's own wait; it keeps answering the others meanwhile."""
    comm = _state["comm"]
    if comm is None:
        return ""
    me, size = comm.Get_rank(), comm.Get_size()
    answers = {me: _last()}
    pending = {}
    serving = threading.current_thread() is _state["thread"]
    for r in range(size):
        if r != me:
            comm.Isend(numpy.zeros(1, numpy.uint8), dest=r, tag=_TAG_ASK)
            row = numpy.zeros(_WIDTH, numpy.uint8)
            pending[r] = (comm.Irecv(row, source=r, tag=_TAG_ANSWER), row)
    deadline = time.monotonic() + wait_s
    while pending and time.monotonic() < deadline:
        if serving:
            _answer(comm)
        for r, (req, row) in list(pending.items()):
            if req.Test():
                answers[r] = bytes(row).rstrip(b"\0").decode()
                del pending[r]
        time.sleep(0.005)
    return "; ".join(f"rank {r}: {answers.get(r, 'no answer')}" for r in range(size))
