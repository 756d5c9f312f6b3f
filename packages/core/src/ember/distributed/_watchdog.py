"""Who is where when a collective times out. Each rank notes the last collective it entered;
a thread answers other ranks' questions about it on a communicator of its own, so that the
rank whose collective timed out can report every rank's last collective and sequence number
(a rank stuck in Python code still answers: the thread needs only the GIL between bytecodes).
Runs when MPI grants MPI_THREAD_MULTIPLE and the world has more than one rank."""

from __future__ import annotations

import atexit
import threading
import time

import numpy

__all__ = ["start", "stop_", "entered", "ask_everyone"]

_TAG_ASK, _TAG_ANSWER, _WIDTH = 71, 72, 160
_state = {"comm": None, "thread": None, "stop": None, "last": "no collective yet"}


def entered(name: str, seq: int, group_ranks=None) -> None:
    where = "" if group_ranks is None else f" in the group of ranks {group_ranks}"
    _state["last"] = f"{name} (sequence number {seq}){where}"


def _encode(text: str):
    row = numpy.zeros(_WIDTH, numpy.uint8)
    raw = text.encode()[:_WIDTH]
    row[:len(raw)] = numpy.frombuffer(raw, numpy.uint8)
    return row


def _serve(comm, stop):
    from ._mpi import mpi
    MPI = mpi()
    ask = numpy.zeros(1, numpy.uint8)
    status = MPI.Status()
    req = comm.Irecv(ask, source=MPI.ANY_SOURCE, tag=_TAG_ASK)
    while not stop.is_set():
        if req.Test(status):
            comm.Send(_encode(_state["last"]), dest=status.Get_source(), tag=_TAG_ANSWER)
            req = comm.Irecv(ask, source=MPI.ANY_SOURCE, tag=_TAG_ASK)
        else:
            time.sleep(0.01)
    req.Cancel()
    req.Wait()


def start(world) -> None:
    from ._mpi import mpi
    MPI = mpi()
    if _state["thread"] is not None or world.Get_size() < 2 or MPI.Query_thread() < MPI.THREAD_MULTIPLE:
        return
    comm = world.Dup()
    stop = threading.Event()
    thread = threading.Thread(target=_serve, args=(comm, stop), name="ember-distributed-watchdog", daemon=True)
    _state.update(comm=comm, thread=thread, stop=stop)
    thread.start()
    atexit.register(stop_)


def stop_() -> None:
    thread = _state["thread"]
    if thread is None:
        return
    _state["stop"].set()
    thread.join(timeout=5)
    _state["comm"].Free()
    _state.update(comm=None, thread=None, stop=None)



def ask_everyone(wait_s: float = 2.0) -> str:
    """Every rank's last collective, one entry per rank ("no answer" for a rank that did not
    reply within ``wait_s``); "" without the thread."""
    comm = _state["comm"]
    if comm is None:
        return ""
    me, size = comm.Get_rank(), comm.Get_size()
    answers = {me: _state["last"]}
    pending = {}
    for r in range(size):
        if r != me:
            comm.Isend(numpy.zeros(1, numpy.uint8), dest=r, tag=_TAG_ASK)
            row = numpy.zeros(_WIDTH, numpy.uint8)
            pending[r] = (comm.Irecv(row, source=r, tag=_TAG_ANSWER), row)
    deadline = time.monotonic() + wait_s
    while pending and time.monotonic() < deadline:
        for r, (req, row) in list(pending.items()):
            if req.Test():
                answers[r] = bytes(row).rstrip(b"\0").decode()
                del pending[r]
        time.sleep(0.005)
    return "; ".join(f"rank {r}: {answers.get(r, 'no answer')}" for r in range(size))
