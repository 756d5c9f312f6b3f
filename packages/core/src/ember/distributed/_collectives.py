"""Collectives and point-to-point messages (torch.distributed's functions) on MPI, and on
NCCL for cuda tensors in a group that has it (``_nccl_collectives``; a CPU tensor in a
"nccl" group raises torch's RuntimeError, since such a group has no CPU backend). A
collective waited on at once (``async_op=False``) runs as MPI's blocking call, bounded by
the watchdog thread; ``async_op=True`` starts MPI's non-blocking one and returns its Work.
Tensors move as their bytes in place (every dtype, bfloat16 included);
reductions run on MPI's typed operations, float16 / bfloat16 accumulated in float32 and
bool as 0/1 integers (SUM and MAX act as "or", PRODUCT and MIN as "and"). Every call bumps
a sequence number of its group, named in the timeout error.

Source: https://pytorch.org/docs/stable/distributed.html#collective-functions
"""

from __future__ import annotations

from threading import get_ident as _get_ident
from time import monotonic as _monotonic

import ml_dtypes
import numpy

from .._tensor import Tensor
from . import _nccl_collectives as _nc
from . import _watchdog
from ._debug import check
from ._group import ReduceOp, _resolve
from ._mpi import mpi
from ._watchdog import _blocking
from ._watchdog import _state as _watch
from ._work import Work

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
           "reduce_scatter_tensor", "all_to_all_single", "all_to_all", "gather", "scatter", "send", "recv",
           "isend", "irecv", "barrier"]

# reduced in float32; a set of dtypes, since ``dtype.name`` takes microseconds to build
_WIDENED = {numpy.dtype(numpy.float16), numpy.dtype(ml_dtypes.bfloat16)}


def _array(tensor, what: str):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(tensor).__name__}")
    arr = tensor._data
    if type(arr) is not numpy.ndarray:
        raise RuntimeError(f"{what} is on {tensor.device}; ember's MPI engine moves CPU tensors only")
    if not arr.flags.c_contiguous:
        raise ValueError("Tensors must be contiguous")
    return arr


def _bytes(arr):
    return arr.reshape(-1).view(numpy.uint8)


def _bump(tensor):
    if type(tensor._vc) is list:
        tensor._vc[0] += 1


def _on_nccl(pg, tensor) -> bool:
    """Whether this call runs on NCCL: a cuda tensor in a group with NCCL. A CPU tensor in
    a group without a CPU backend raises torch's RuntimeError."""
    if pg._nccl is not None and _nc.is_cuda(tensor):
        return True
    if not pg._cpu:
        raise RuntimeError("No backend type associated with device type cpu")
    return False


def _enter(pg, name, tensor=None, op=None):
    """Count the collective; in debug mode, check that every rank enters the same one."""
    seq = pg._seq = pg._seq + 1
    _watchdog.entered(name, seq, None if pg.group_name == "default" else pg._ranks)
    if _watchdog._works and _watchdog._state["thread"] is None:
        _watchdog.sweep()
    if pg._debug:
        check(pg, name, tensor, op)


def _run(pg, name, start, block=None, finish=None, result=None, async_op=False, outputs=()):
    """Run a collective: ``block()`` (MPI's blocking call) when it is waited on at once and
    the watchdog bounds it (or the group is one rank), else the requests ``start()`` makes,
    in a Work (returned when ``async_op``, else waited on). ``finish()`` runs once it is done."""
    if block is not None and not async_op and (_watchdog.running() or pg.size() == 1):
        key = _watchdog.guard(pg, name, pg._seq)
        try:
            block()
        finally:
            _watchdog.release(key)
        if finish is not None:
            finish()
        return result
    work = Work(start(), finish, group=pg, name=name, seq=pg._seq, result=result, outputs=outputs)
    if async_op:
        return work
    work.wait()
    return work._result


def _op(op):
    if type(op) is ReduceOp.RedOpType:
        return op, None  # the common case (ReduceOp.SUM is a member): no Enum lookup
    red = op.op if isinstance(op, ReduceOp) else ReduceOp.RedOpType(op)
    factor = op.factor if isinstance(op, ReduceOp) else None
    if red == ReduceOp.RedOpType.PREMUL_SUM and factor is None:
        raise ValueError("ReduceOp.PREMUL_SUM needs its factor: use _make_nccl_premul_sum(factor)")
    return red, factor


_MPI_OPS = {}


def _mpi_op(red):
    if not _MPI_OPS:
        MPI = mpi()
        _MPI_OPS.update({ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PREMUL_SUM: MPI.SUM,
                         ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX,
                         ReduceOp.BAND: MPI.BAND, ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR})
    return _MPI_OPS[red]


# (RedOpType, numpy dtype) -> (MPI's op, the dtype MPI reduces in, None for the tensor's own):
# worked out once per pair, since every all_reduce asks
_PLANS = {}
# (RedOpType member, numpy dtype) -> MPI's op, for the pairs MPI reduces in the tensor itself
# with nothing to do after (SUM, PRODUCT, MIN, MAX and the bitwise ops on their own dtype)
_DIRECT = {}
_RED_OP_TYPE = ReduceOp.RedOpType


def _plan(red, dtype):
    plan = _PLANS.get((red, dtype))
    if plan is None:
        kind = dtype.kind
        if red in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "biu":
            raise RuntimeError(f"Cannot use ReduceOp.{red.name} with {dtype} tensors: it needs integer or bool ones")
        if red in (ReduceOp.MIN, ReduceOp.MAX) and kind == "c":
            raise RuntimeError(f"Cannot use ReduceOp.{red.name} with complex tensors")
        wide = numpy.dtype(numpy.int32) if kind == "b" else numpy.dtype(numpy.float32) if dtype in _WIDENED else None
        plan = _PLANS[(red, dtype)] = (_mpi_op(red), wide)
        if wide is None and red not in (ReduceOp.AVG, ReduceOp.PREMUL_SUM):
            _DIRECT[(red, dtype)] = plan[0]
    return plan


def _reduction(arr, op, size):
    """The buffer MPI reduces (``arr`` itself, or a widened copy), MPI's op, and what writes
    the result back into ``arr`` (None when nothing needs writing)."""
    if type(op) is ReduceOp.RedOpType:
        # one dictionary look-up for the common call (a third of the general path's cost)
        mpi_op = _DIRECT.get((op, arr.dtype))
        if mpi_op is not None:
            return arr, mpi_op, None
    red, factor = _op(op)
    mpi_op, wide = _plan(red, arr.dtype)
    buf = arr if wide is None else arr.astype(wide)
    if red == ReduceOp.PREMUL_SUM:
        factor = factor.item() if isinstance(factor, Tensor) else factor
        # out= keeps 0-d buffers arrays (numpy turns 0-d products into scalars)
        buf = numpy.multiply(buf, buf.dtype.type(factor), out=numpy.empty_like(buf) if buf is arr else buf)
    if buf is arr and red != ReduceOp.AVG:
        return buf, mpi_op, None

    def finish(out=arr):
        result = buf
        if red == ReduceOp.AVG:
            # integers divide with floor, as a sum divided by the world size in torch's integer division
            if result.dtype.kind in "iu":
                result = result // size
            elif result is out:
                numpy.true_divide(result, size, out=result)
            else:
                result = result / size
        if result is not out:
            out[...] = result.astype(out.dtype) if out.dtype.kind != "b" else result != 0
    return buf, mpi_op, finish


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the ranks of ``group`` with ``op`` (a ReduceOp, SUM by
    default), in place on every rank (torch.distributed.all_reduce).

    Any shape and every dtype; the bitwise ops need integer or bool tensors. ``group`` is
    the process group (the default group when None). With ``async_op`` it returns a Work to
    wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if (not pg._debug and _watch["thread"] is not None and type(op) is _RED_OP_TYPE and pg._cpu
            and isinstance(tensor, Tensor)):
        # The calls most made, written out: no debug mode, the watchdog thread running, a CPU
        # tensor MPI reduces where it lies (SUM, PRODUCT, MIN, MAX or a bitwise op on the
        # tensor's own dtype: nothing to convert or divide). Python's cost is all that parts
        # a small all_reduce from MPI's own call: about 3 us here against 5 through the
        # general path below, which does the same (_enter, _array, _reduction, _run), on the
        # 2-core machine of benchmarks/NOTES.md.
        arr = tensor._data
        mpi_op = _DIRECT.get((op, arr.dtype)) if type(arr) is numpy.ndarray and arr.flags.c_contiguous else None
        if mpi_op is not None:
            seq = pg._seq = pg._seq + 1
            # the watchdog's entered(), guard() and release() written out (a call each saved)
            _watch["last"] = ("all_reduce", seq, None if pg.group_name == "default" else pg._ranks)
            # MPI takes the C-contiguous buffer of any shape (0-d too): nothing is reshaped
            if async_op:
                request = pg._comm.Iallreduce(_watch["in_place"], arr, op=mpi_op)
                return Work([request], lambda: _bump(tensor), group=pg, name="all_reduce", seq=seq, outputs=[tensor])
            key = _get_ident()
            _blocking[key] = (_monotonic() + pg._limit, pg, "all_reduce", seq, pg._limit)
            try:
                pg._comm.Allreduce(_watch["in_place"], arr, op=mpi_op)
            finally:
                _blocking.pop(key, None)
            vc = tensor._vc
            if type(vc) is list:
                vc[0] += 1
            return None
    if _on_nccl(pg, tensor):
        return _nc.all_reduce(pg, tensor, op, async_op)
    _enter(pg, "all_reduce", tensor, op=op)
    arr = _array(tensor, "all_reduce's tensor")
    buf, mpi_op, finish = _reduction(arr, op, pg.size())
    comm, in_place = pg._comm, mpi().IN_PLACE

    def done():
        if finish is not None:
            finish()
        _bump(tensor)
    return _run(pg, "all_reduce", lambda: [comm.Iallreduce(in_place, buf, op=mpi_op)],
                lambda: comm.Allreduce(in_place, buf, op=mpi_op), done, async_op=async_op, outputs=[tensor])


def _group_rank(pg, global_rank, group_rank, what):
    if group_rank is not None:
        return group_rank
    if global_rank is None:
        return 0
    if global_rank not in pg._ranks:
        raise ValueError(f"{what} {global_rank} is not part of group {pg._ranks}")
    return pg._ranks.index(global_rank)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` (a global rank; 0 of the group when neither is given)
    into ``tensor`` on every other rank of ``group``, which must have its shape and dtype
    (torch.distributed.broadcast).

    ``group_src`` names the source by its rank within ``group`` instead. ``group`` is the
    process group (the default group when None); a ``src`` outside it raises ValueError.
    With ``async_op`` it returns a Work to wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.broadcast(pg, tensor, _group_rank(pg, src, group_src, "src"), async_op)
    _enter(pg, "broadcast", tensor)
    root = _group_rank(pg, src, group_src, "src")
    arr = _array(tensor, "broadcast's tensor")
    data, comm = _bytes(arr), pg._comm
    return _run(pg, "broadcast", lambda: [comm.Ibcast(data, root=root)], lambda: comm.Bcast(data, root=root),
                lambda: _bump(tensor), async_op=async_op, outputs=[tensor])


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` of every rank with ``op`` (a ReduceOp, SUM by default) into ``tensor``
    on rank ``dst`` (a global rank); the others keep theirs (torch.distributed.reduce).

    ``group_dst`` names the destination by its rank within ``group`` instead. ``group`` is
    the process group (the default group when None). With ``async_op`` it returns a Work to
    wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.reduce(pg, tensor, _group_rank(pg, dst, group_dst, "dst"), op, async_op)
    _enter(pg, "reduce", tensor, op=op)
    root = _group_rank(pg, dst, group_dst, "dst")
    arr = _array(tensor, "reduce's tensor")
    buf, mpi_op, finish = _reduction(arr, op, pg.size())
    MPI, comm, flat = mpi(), pg._comm, buf.reshape(-1)
    if pg.rank() == root:
        def done():
            if finish is not None:
                finish()
            _bump(tensor)
        return _run(pg, "reduce", lambda: [comm.Ireduce(MPI.IN_PLACE, flat, op=mpi_op, root=root)],
                    lambda: comm.Reduce(MPI.IN_PLACE, flat, op=mpi_op, root=root), done, async_op=async_op)
    return _run(pg, "reduce", lambda: [comm.Ireduce(flat, None, op=mpi_op, root=root)],
                lambda: comm.Reduce(flat, None, op=mpi_op, root=root), async_op=async_op)


def _same(arr, other, what):
    if arr.dtype != other.dtype or arr.size != other.size:
        raise ValueError(f"{what}: expected {other.size} elements of {other.dtype}, got {arr.size} of {arr.dtype}")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list`` (one tensor per rank, each of ``tensor``'s dtype and size) with
    every rank's ``tensor``, in rank order (torch.distributed.all_gather).

    A list of another length or mismatched tensors raise ValueError. ``group`` is the
    process group (the default group when None). With ``async_op`` it returns a Work to wait
    on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.all_gather(pg, tensor_list, tensor, async_op)
    _enter(pg, "all_gather", tensor)
    arr = _array(tensor, "all_gather's tensor")
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list must hold {pg.size()} tensors, one per rank, got {len(tensor_list)}")
    outs = [_array(t, "all_gather's output") for t in tensor_list]
    for o in outs:
        _same(o, arr, "all_gather's output")
    flat, data, comm = numpy.empty((pg.size(), arr.nbytes), numpy.uint8), _bytes(arr), pg._comm

    def finish():
        for t, o, row in zip(tensor_list, outs, flat):
            _bytes(o)[...] = row
            _bump(t)
    return _run(pg, "all_gather", lambda: [comm.Iallgather(data, flat)], lambda: comm.Allgather(data, flat),
                finish, async_op=async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Every rank's ``input_tensor`` ``[*S]``, concatenated (``[world * S0, ...]``) or stacked (``[world,
    *S]``) into ``output_tensor``, in rank order (torch.distributed.all_gather_into_tensor).

    ``output_tensor`` has the input's dtype and world size times its elements (ValueError
    otherwise). ``group`` is the process group (the default group when None). With
    ``async_op`` it returns a Work to wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, input_tensor):
        return _nc.all_gather_into_tensor(pg, output_tensor, input_tensor, async_op)
    _enter(pg, "all_gather_into_tensor", input_tensor)
    arr = _array(input_tensor, "all_gather_into_tensor's input")
    out = _array(output_tensor, "all_gather_into_tensor's output")
    if out.dtype != arr.dtype or out.size != arr.size * pg.size():
        raise ValueError(f"all_gather_into_tensor: output must hold world size ({pg.size()}) times the input's "
                         f"{arr.size} elements of {arr.dtype}, got {out.size} of {out.dtype}")
    data, into, comm = _bytes(arr), _bytes(out), pg._comm
    return _run(pg, "all_gather_into_tensor", lambda: [comm.Iallgather(data, into)],
                lambda: comm.Allgather(data, into), lambda: _bump(output_tensor), async_op=async_op,
                outputs=[output_tensor])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (``[world * S0, ...]`` or ``[world, *S]``) across ranks with ``op`` (a
    ReduceOp, SUM by default) and give rank i the i-th block in ``output``
    (torch.distributed.reduce_scatter_tensor).

    ``input`` has ``output``'s dtype and world size times its elements (ValueError
    otherwise). ``group`` is the process group (the default group when None). With
    ``async_op`` it returns a Work to wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, input):
        return _nc.reduce_scatter_tensor(pg, output, input, op, async_op)
    _enter(pg, "reduce_scatter_tensor", input, op=op)
    arr = _array(input, "reduce_scatter_tensor's input")
    out = _array(output, "reduce_scatter_tensor's output")
    if out.dtype != arr.dtype or arr.size != out.size * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input must hold world size ({pg.size()}) times the output's "
                         f"{out.size} elements of {out.dtype}, got {arr.size} of {arr.dtype}")
    buf, mpi_op, _ = _reduction(arr.copy(), op, pg.size())
    block, flat, comm = numpy.empty(buf.size // pg.size(), buf.dtype), buf.reshape(-1), pg._comm
    red, _ = _op(op)

    def finish():
        result = block
        if red == ReduceOp.AVG:
            result = result // pg.size() if result.dtype.kind in "iu" else result / pg.size()
        out.reshape(-1)[...] = result if out.dtype.kind != "b" else result != 0
        _bump(output)
    return _run(pg, "reduce_scatter_tensor", lambda: [comm.Ireduce_scatter_block(flat, block, op=mpi_op)],
                lambda: comm.Reduce_scatter_block(flat, block, op=mpi_op), finish, async_op=async_op,
                outputs=[output])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce the i-th tensors of every rank's ``input_list`` (world size tensors) with ``op``
    into ``output`` on rank i (torch.distributed.reduce_scatter). A list of another length
    raises ValueError. ``group`` is the process group (the default group when None). With
    ``async_op`` it returns a Work to wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list must hold {pg.size()} tensors, got {len(input_list)}")
    from .. import cat
    stacked = cat([t.reshape(-1) for t in input_list])
    return reduce_scatter_tensor(output, stacked, op, group, async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``), send block i to rank
    i, and concatenate the blocks received into ``output`` along dim 0 (by
    ``output_split_sizes``) (torch.distributed.all_to_all_single).

    Split sizes that do not cover dim 0 in world size blocks, or an uneven dim 0 without
    them, raise ValueError. ``group`` is the process group (the default group when None).
    With ``async_op`` it returns a Work to wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, input):
        return _nc.all_to_all_single(pg, output, input, output_split_sizes, input_split_sizes, async_op)
    _enter(pg, "all_to_all_single", input)
    size = pg.size()
    arr = _array(input, "all_to_all_single's input")
    out = _array(output, "all_to_all_single's output")
    row_in = arr.nbytes // max(arr.shape[0], 1) if arr.ndim else arr.nbytes
    row_out = out.nbytes // max(out.shape[0], 1) if out.ndim else out.nbytes

    def counts(splits, arr_, row):
        if splits is None or len(splits) == 0:
            if arr_.shape[0] % size:
                raise ValueError(f"all_to_all_single: dim 0 ({arr_.shape[0]}) is not divisible by the world "
                                 f"size {size}")
            splits = [arr_.shape[0] // size] * size
        if len(splits) != size or sum(splits) != arr_.shape[0]:
            raise ValueError(f"all_to_all_single: split sizes {list(splits)} do not cover dim 0 ({arr_.shape[0]}) "
                             f"in {size} blocks")
        c = [int(s) * row for s in splits]
        return c, [sum(c[:i]) for i in range(size)]
    sc, sd = counts(input_split_sizes, arr, row_in)
    rc, rd = counts(output_split_sizes, out, row_out)
    send, recv, comm = [_bytes(arr), (sc, sd)], [_bytes(out), (rc, rd)], pg._comm
    return _run(pg, "all_to_all_single", lambda: [comm.Ialltoallv(send, recv)], lambda: comm.Alltoallv(send, recv),
                lambda: _bump(output), async_op=async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[i]`` to rank i and receive rank i's into
    ``output_tensor_list[i]`` (torch.distributed.all_to_all); both lists hold world size
    tensors (ValueError otherwise). ``group`` is the process group (the default group when
    None). With ``async_op`` it returns a Work to wait on; else it blocks and returns None."""
    pg = _resolve(group)
    if input_tensor_list and _on_nccl(pg, input_tensor_list[0]):
        return _nc.all_to_all(pg, output_tensor_list, input_tensor_list, async_op)
    _enter(pg, "all_to_all")
    size = pg.size()
    if len(output_tensor_list) != size or len(input_tensor_list) != size:
        raise ValueError(f"all_to_all: both lists must hold {size} tensors")
    ins = [_array(t, "all_to_all's input") for t in input_tensor_list]
    outs = [_array(t, "all_to_all's output") for t in output_tensor_list]
    send = numpy.concatenate([_bytes(a) for a in ins]) if ins else numpy.empty(0, numpy.uint8)
    recv = numpy.empty(sum(o.nbytes for o in outs), numpy.uint8)
    sc = [a.nbytes for a in ins]
    rc = [o.nbytes for o in outs]
    sends, recvs = [send, (sc, [sum(sc[:i]) for i in range(size)])], [recv, (rc, [sum(rc[:i]) for i in range(size)])]
    comm = pg._comm

    def finish():
        at = 0
        for t, o in zip(output_tensor_list, outs):
            _bytes(o)[...] = recv[at:at + o.nbytes]
            at += o.nbytes
            _bump(t)
    return _run(pg, "all_to_all", lambda: [comm.Ialltoallv(sends, recvs)], lambda: comm.Alltoallv(sends, recvs),
                finish, async_op=async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Every rank's ``tensor`` into ``gather_list`` (world size tensors like it) on rank
    ``dst`` (a global rank); the other ranks pass no list (torch.distributed.gather).

    ``group_dst`` names the destination by its rank within ``group`` instead. A missing list
    on the destination, or a list on another rank, raises ValueError. ``group`` is the
    process group (the default group when None). With ``async_op`` it returns a Work to wait
    on; else it blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.gather(pg, tensor, gather_list, _group_rank(pg, dst, group_dst, "dst"), async_op)
    _enter(pg, "gather", tensor)
    root = _group_rank(pg, dst, group_dst, "dst")
    arr = _array(tensor, "gather's tensor")
    if pg.rank() != root:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
        data, comm = _bytes(arr), pg._comm
        return _run(pg, "gather", lambda: [comm.Igather(data, None, root=root)],
                    lambda: comm.Gather(data, None, root=root), async_op=async_op)
    if gather_list is None or len(gather_list) != pg.size():
        raise ValueError(f"gather: the destination rank needs gather_list with {pg.size()} tensors")
    outs = [_array(t, "gather's output") for t in gather_list]
    for o in outs:
        _same(o, arr, "gather's output")
    flat, data, comm = numpy.empty((pg.size(), arr.nbytes), numpy.uint8), _bytes(arr), pg._comm

    def finish():
        for t, o, row in zip(gather_list, outs, flat):
            _bytes(o)[...] = row
            _bump(t)
    return _run(pg, "gather", lambda: [comm.Igather(data, flat, root=root)],
                lambda: comm.Gather(data, flat, root=root), finish, async_op=async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """``scatter_list[i]`` of rank ``src`` (a global rank) into ``tensor`` on rank i; the other
    ranks pass no list (torch.distributed.scatter).

    ``group_src`` names the source by its rank within ``group`` instead. A missing list on
    the source, or a list on another rank, raises ValueError. ``group`` is the process group
    (the default group when None). With ``async_op`` it returns a Work to wait on; else it
    blocks and returns None."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.scatter(pg, tensor, scatter_list, _group_rank(pg, src, group_src, "src"), async_op)
    _enter(pg, "scatter", tensor)
    root = _group_rank(pg, src, group_src, "src")
    arr = _array(tensor, "scatter's tensor")
    send = None
    if pg.rank() == root:
        if scatter_list is None or len(scatter_list) != pg.size():
            raise ValueError(f"scatter: the source rank needs scatter_list with {pg.size()} tensors")
        ins = [_array(t, "scatter's input") for t in scatter_list]
        for a in ins:
            _same(a, arr, "scatter's input")
        send = numpy.concatenate([_bytes(a) for a in ins])
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    into, comm = _bytes(arr), pg._comm
    return _run(pg, "scatter", lambda: [comm.Iscatter(send, into, root=root)],
                lambda: comm.Scatter(send, into, root=root), lambda: _bump(tensor), async_op=async_op)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst`` (a global rank; ``group_dst`` names it within
    ``group`` instead) with the int ``tag``; returns a Work to wait on
    (torch.distributed.isend). ``group`` is the process group (the default group when None)."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.isend(pg, tensor, _group_rank(pg, dst, group_dst, "dst"))
    pg._seq += 1
    peer = _group_rank(pg, dst, group_dst, "dst")
    arr = _array(tensor, "send's tensor")
    return Work([pg._comm.Isend(_bytes(arr), dest=peer, tag=tag)], group=pg, name=f"send to {peer}", seq=pg._seq)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (a global rank; ``group_src`` names it
    within ``group``; any rank when both are None) with the int ``tag``; returns a Work
    whose ``source_rank()`` names the sender once done (torch.distributed.irecv). ``group``
    is the process group (the default group when None)."""
    pg = _resolve(group)
    if _on_nccl(pg, tensor):
        return _nc.irecv(pg, tensor, None if src is None and group_src is None else
                         _group_rank(pg, src, group_src, "src"))
    pg._seq += 1
    MPI = mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else _group_rank(pg, src, group_src, "src")
    arr = _array(tensor, "recv's tensor")
    req = pg._comm.Irecv(_bytes(arr), source=peer, tag=tag)
    return Work([req], lambda: _bump(tensor), group=pg, name=f"recv from {'any rank' if src is None else peer}",
                seq=pg._seq, status=MPI.Status())


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` (a global rank; ``group_dst`` names it within ``group``
    instead) with the int ``tag``, and wait until it is sent (torch.distributed.send).
    ``group`` is the process group (the default group when None)."""
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (a global rank; ``group_src`` names it within
    ``group``; any rank when both are None) with the int ``tag``; returns the sender's rank
    (torch.distributed.recv). ``group`` is the process group (the default group when None)."""
    work = irecv(tensor, src, group, tag, group_src)
    work.wait()
    return work.source_rank()


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of ``group`` entered the barrier (torch.distributed.barrier).
    ``group`` is the process group (the default group when None); ``device_ids`` is accepted
    and unused. ``timeout`` (a timedelta) bounds this barrier instead of the group's timeout,
    with the same consequence (the watchdog ends the job, naming the barrier; where it cannot
    run, the wait raises DistBackendError). With ``async_op`` it returns a Work to wait on;
    else it blocks and returns None."""
    pg = _resolve(group)
    if pg._nccl is not None and not pg._cpu:  # torch's NCCL barrier: one byte all-reduced on the device
        return _nc.barrier(pg, async_op, None if timeout is None else timeout.total_seconds())
    _enter(pg, "barrier")
    comm = pg._comm
    if timeout is not None:
        # a Work whose deadline is this barrier's own: the watchdog holds it to that
        work = Work([comm.Ibarrier()], group=pg, name="barrier", seq=pg._seq, limit=timeout.total_seconds())
        if async_op:
            return work
        work.wait()
        return None
    return _run(pg, "barrier", lambda: [comm.Ibarrier()], comm.Barrier, async_op=async_op)
