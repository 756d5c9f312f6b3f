"""Collectives of picklable objects (torch.distributed's ``*_object*`` functions) and
``monitored_barrier``.

Objects travel as ``ember.save`` archives and come back through ``ember.load``'s restricted
unpickler by default: tensors, numbers, strings and plain containers load; any other class
(a dataclass, a numpy array) raises ``pickle.UnpicklingError`` naming it. To unpickle
anything, as torch does, set ``ember.distributed.trust_object_collectives = True`` or the
environment variable ``EMBER_DISTRIBUTED_TRUST_OBJECTS=1`` on every rank (only between
processes you trust: unpickling runs code), or allow single classes with
``ember.serialization.add_safe_globals``.

Source: https://pytorch.org/docs/stable/distributed.html#object-collectives
"""

from __future__ import annotations

import io
import os
import pickle
import time

import numpy

from ._group import _resolve
from ._work import DistBackendError

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list", "monitored_barrier"]

_MONITOR_TAG = 0x6D42  # a tag of its own, so that user messages never match the barrier's


def _trusted() -> bool:
    from .. import distributed
    return bool(getattr(distributed, "trust_object_collectives", False)) or \
        os.environ.get("EMBER_DISTRIBUTED_TRUST_OBJECTS", "") not in ("", "0")


def _dumps(obj) -> numpy.ndarray:
    from ..serialization import save
    buf = io.BytesIO()
    save(obj, buf)
    return numpy.frombuffer(buf.getvalue(), numpy.uint8)


def _loads(data: numpy.ndarray):
    from ..serialization import load
    try:
        return load(io.BytesIO(data.tobytes()), weights_only=not _trusted())
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(
            f"{e} (object collectives unpickle with ember.load's restricted rules; to accept any object from "
            f"ranks you trust set ember.distributed.trust_object_collectives = True or "
            f"EMBER_DISTRIBUTED_TRUST_OBJECTS=1)") from None


def _gather_bytes(pg, data: numpy.ndarray) -> list[numpy.ndarray]:
    """Every rank's byte string, in rank order (sizes first, then one padded all-gather)."""
    from .. import from_numpy
    from ._collectives import all_gather_into_tensor
    size = pg.size()
    sizes = numpy.zeros(size, numpy.int64)
    all_gather_into_tensor(from_numpy(sizes), from_numpy(numpy.array([data.size], numpy.int64)), group=pg)
    width = int(sizes.max())
    mine = numpy.zeros(width, numpy.uint8)
    mine[:data.size] = data
    rows = numpy.zeros((size, width), numpy.uint8)
    all_gather_into_tensor(from_numpy(rows), from_numpy(mine), group=pg)
    return [rows[r, :int(sizes[r])] for r in range(size)]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace ``object_list``'s items on every rank with those of rank ``src`` (same length on every rank).

    ``src`` is a global rank (0 of the group when neither is given); ``group_src`` names it
    by its rank within ``group`` instead. ``group`` is the process group (the default group
    when None). ``device`` is accepted and unused (the objects travel as bytes in CPU
    tensors) (torch.distributed.broadcast_object_list)."""
    from .. import from_numpy
    from ._collectives import _group_rank, broadcast
    pg = _resolve(group)
    root = _group_rank(pg, src, group_src, "src")
    blobs = [_dumps(o) for o in object_list] if pg.rank() == root else []
    sizes = numpy.array([b.size for b in blobs] if blobs else [0] * len(object_list), numpy.int64)
    broadcast(from_numpy(sizes), group_src=root, group=pg)
    flat = numpy.concatenate(blobs) if blobs else numpy.zeros(int(sizes.sum()), numpy.uint8)
    broadcast(from_numpy(flat), group_src=root, group=pg)
    if pg.rank() != root:
        at = 0
        for i, n in enumerate(sizes.tolist()):
            object_list[i] = _loads(flat[at:at + n])
            at += n


def all_gather_object(object_list, obj, group=None):
    """Fill ``object_list`` (world size items) with every rank's ``obj``.

    ``group`` is the process group (the default group when None). A list of another length
    raises ValueError (torch.distributed.all_gather_object)."""
    pg = _resolve(group)
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} items, got {len(object_list)}")
    for i, data in enumerate(_gather_bytes(pg, _dumps(obj))):
        object_list[i] = _loads(data)


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """Every rank's ``obj`` into ``object_gather_list`` (world size items) on rank ``dst``;
    the other ranks pass None.

    ``dst`` is a global rank; ``group_dst`` names it by its rank within ``group`` instead.
    ``group`` is the process group (the default group when None). A missing list on the
    destination, or a list on another rank, raises ValueError
    (torch.distributed.gather_object)."""
    from ._collectives import _group_rank
    pg = _resolve(group)
    root = _group_rank(pg, dst, group_dst, "dst")
    if pg.rank() == root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: the destination needs object_gather_list with {pg.size()} items")
    if pg.rank() != root and object_gather_list is not None:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on non-destination ranks.")
    gathered = _gather_bytes(pg, _dumps(obj))
    if pg.rank() == root:
        for i, data in enumerate(gathered):
            object_gather_list[i] = _loads(data)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """``scatter_object_input_list[i]`` of rank ``src`` into ``scatter_object_output_list[0]`` on rank i.

    ``src`` is a global rank; ``group_src`` names it by its rank within ``group`` instead.
    ``group`` is the process group (the default group when None). ValueError for an output
    list that is not a list of at least one item, or a source list of another length than
    the world (torch.distributed.scatter_object_list)."""
    from ._collectives import _group_rank
    pg = _resolve(group)
    root = _group_rank(pg, src, group_src, "src")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    items = list(scatter_object_input_list) if pg.rank() == root else [None] * pg.size()
    if len(items) != pg.size():
        raise ValueError(f"scatter_object_list: the source needs {pg.size()} objects, got {len(items)}")
    broadcast_object_list(items, group_src=root, group=pg)
    scatter_object_output_list[0] = items[pg.rank()]


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False) -> None:
    """A barrier whose rank 0 names the ranks that did not arrive within ``timeout`` (the
    group's by default): RuntimeError "Rank 2 failed to pass monitoredBarrier in 2000 ms",
    or every missing rank with ``wait_all_ranks=True``.

    ``group`` is the process group (the default group when None).
    (torch.distributed.monitored_barrier)"""
    pg = _resolve(group)
    pg._next_seq()
    limit = (timeout or pg.timeout).total_seconds()
    comm, me = pg._comm, pg.rank()
    token = numpy.zeros(1, numpy.uint8)
    deadline = time.monotonic() + limit
    if me != 0:
        comm.Isend(token, dest=0, tag=_MONITOR_TAG).Wait()
        release = comm.Irecv(numpy.zeros(1, numpy.uint8), source=0, tag=_MONITOR_TAG)
        while not release.Test():
            if time.monotonic() > deadline:
                raise DistBackendError(f"[Rank {me}] monitored_barrier (sequence number {pg._seq}): rank 0 did "
                                       f"not release the barrier within {limit * 1000:g} ms")
            time.sleep(1e-3)
        return
    pending = {r: comm.Irecv(numpy.zeros(1, numpy.uint8), source=r, tag=_MONITOR_TAG) for r in range(1, pg.size())}
    while pending and time.monotonic() <= deadline:
        pending = {r: q for r, q in pending.items() if not q.Test()}
        time.sleep(1e-3)
    if pending:
        for q in pending.values():
            q.Cancel()
        missing = sorted(pending) if wait_all_ranks else sorted(pending)[:1]
        what = ", ".join(str(r) for r in missing)
        raise RuntimeError(f"Rank{'s' if len(missing) > 1 else ''} {what} failed to pass monitoredBarrier in "
                           f"{limit * 1000:g} ms")
    for r in range(1, pg.size()):
        comm.Isend(token, dest=r, tag=_MONITOR_TAG).Wait()
