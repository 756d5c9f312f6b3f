"""NCCL for cuda tensors, through cupy's bindings (``cupy.cuda.nccl``): the communicators of
the groups made with backend "nccl" (or "cpu:gloo,cuda:nccl"), and the collectives on
cupy arrays. The one place that imports cupy's NCCL module.

A group's communicator is made when the group is (init_process_group, new_group): rank 0
of the group asks NCCL for a unique id, MPI broadcasts it, and every rank joins with
``NcclCommunicator(size, id, rank)`` on its device (``device_id``, else LOCAL_RANK).
Collectives are enqueued on cupy's current stream, so they follow the kernels that wrote
their inputs and precede the ones that read their outputs, as torch's NCCL collectives
do on the current stream; the host does not wait. Each one records a cupy event after it:
its Work is done when the event is. Reductions NCCL lacks are composed around NCCL's SUM
on the same stream (AVG divides after, integers with floor; PREMUL_SUM scales a copy
first); bool reduces as uint8 (SUM and MAX are "or", PRODUCT and MIN "and"); complex
tensors move as pairs of reals (SUM, AVG and PREMUL_SUM only); BAND, BOR and BXOR raise
ValueError, as torch's NCCL backend does.

Timeout: NCCL kernels cannot be interrupted, so a collective that a peer never joins is
bounded from the host. Every NCCL Work (waited on or not) is tracked by the watchdog
thread (``_watchdog``), which polls its event against the group's deadline and, once it is
late, aborts the NCCL communicators and ends the job (MPI_Abort) with the usual report.
Where the thread cannot run (MPI without MPI_THREAD_MULTIPLE), a collective waited on at
once polls its event on the host against the deadline and raises DistBackendError.
"""

from __future__ import annotations

import importlib.util
import os
import time
import weakref

from . import _watchdog
from ._work import Work

__all__ = ["available", "unavailable_reason", "Communicator", "local_device", "abort_all", "CudaWork"]

# numpy dtype name -> NCCL datatype name (the half types included; int16 and uint16 NCCL lacks)
TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "bool": "NCCL_UINT8", "int32": "NCCL_INT32",
          "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float16": "NCCL_FLOAT16",
          "bfloat16": "NCCL_BFLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
          "complex64": "NCCL_FLOAT32", "complex128": "NCCL_FLOAT64"}
_LIVE: weakref.WeakSet = weakref.WeakSet()  # communicators to abort when the watchdog ends the job


def _module():
    from cupy.cuda import nccl
    return nccl


def available() -> bool:
    """Whether cupy imports with its NCCL bindings (no GPU is asked for)."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        nccl = _module()
    except Exception:  # cupy without its CUDA libraries, or built without NCCL
        return False
    return bool(getattr(nccl, "available", True)) and hasattr(nccl, "NcclCommunicator")


def unavailable_reason():
    """torch's error for a "nccl" group that cannot be made here, or None when it can."""
    if not available():
        return RuntimeError("Distributed package doesn't have NCCL built in")
    from .. import cuda
    if not cuda.is_available():
        return RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found!")
    return None


def local_device(device_id=None) -> int:
    """The CUDA device of this rank: ``device_id`` (an index or a cuda device), else
    LOCAL_RANK (ember-run and torchrun set it), else the launcher's local rank, else 0."""
    if device_id is not None:
        index = device_id if isinstance(device_id, int) else getattr(device_id, "index", None)
        if getattr(device_id, "type", "cuda") != "cuda":
            raise ValueError(f"device_id must be a cuda device for backend nccl, got {device_id}")
        return 0 if index is None else int(index)
    for name in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


class Communicator:
    """An NCCL communicator over the ranks of the MPI communicator ``mpi_comm`` (all of them
    call this at once), on CUDA device ``device``."""

    def __init__(self, mpi_comm, device: int):
        from .. import cuda
        cupy = cuda._require()
        nccl = _module()
        count = cupy.cuda.runtime.getDeviceCount()
        if not 0 <= device < count:
            raise RuntimeError(f"this rank's CUDA device is {device} (LOCAL_RANK or device_id) but there are "
                               f"{count} devices")
        unique = nccl.get_unique_id() if mpi_comm.Get_rank() == 0 else None
        unique = mpi_comm.bcast(unique, root=0)
        self.device = device
        self.size, self.rank = mpi_comm.Get_size(), mpi_comm.Get_rank()
        with cupy.cuda.Device(device):
            self.comm = nccl.NcclCommunicator(self.size, unique, self.rank)
        self.nccl, self.cupy = nccl, cupy
        _LIVE.add(self)

    def type_of(self, name: str) -> int:
        return getattr(self.nccl, TYPES[name])

    def destroy(self) -> None:
        if self.comm is not None:
            self.comm.destroy()
            self.comm = None
            _LIVE.discard(self)

    def abort(self) -> None:
        if self.comm is not None:
            self.comm.abort()
            self.comm = None


def abort_all() -> None:
    """Abort every live communicator (the watchdog, before it ends the job: NCCL kernels
    waiting for a peer would otherwise keep the device)."""
    for comm in list(_LIVE):
        try:
            comm.abort()
        except Exception:  # noqa: BLE001  (ending the job matters more than a clean abort)
            pass


class _Event:
    """A cupy event recorded after a collective, with the request interface Work tests."""

    __slots__ = ("event",)

    def __init__(self, stream):
        self.event = stream.record()

    def Test(self) -> bool:  # noqa: N802  (MPI's request method name, which Work calls)
        return self.event.done

    def Wait(self) -> None:  # noqa: N802
        while not self.event.done:
            time.sleep(1e-4)


class CudaWork(Work):
    """The Work of an NCCL collective: done when the event recorded after it on its stream
    is. ``wait()`` makes cupy's current stream wait for that event, as torch's NCCL Work
    does (the host goes on; the group's timeout is the watchdog's to enforce); where the
    watchdog cannot run, and for ``wait(timeout=...)``, the host polls the event against the
    deadline instead and raises DistBackendError once it passes. ``keep`` holds the
    temporary buffers until the collective is done."""

    __slots__ = ("_keep",)

    def __init__(self, stream, *, group, name, seq, outputs=(), keep=(), limit=None):
        self._keep = list(keep)
        super().__init__([_Event(stream)], None, group=group, name=name, seq=seq, outputs=outputs, limit=limit)

    def _complete(self):
        self._keep = []
        super()._complete()

    def wait(self, timeout=None) -> bool:
        if self._done:
            return True
        if timeout is None and _watchdog.running():
            requests = self._requests
            if requests:
                from cupy.cuda import get_current_stream
                get_current_stream().wait_event(requests[0].event)
            return True
        with self._lock:
            limit = self._limit
            if timeout is not None:
                limit = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
            self._poll(limit)
        return True

    def synchronize(self) -> None:
        """Block the host until the collective is done (bounded as ``wait`` is)."""
        with self._lock:
            self._poll(self._limit)
