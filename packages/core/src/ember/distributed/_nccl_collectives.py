"""The collectives and point-to-point messages of ``_collectives`` for cuda tensors in a
group with NCCL (see ``_nccl`` for the stream, reduction and timeout rules). Each function
takes the resolved group, enqueues on cupy's current stream and returns what the public
function returns: a CudaWork with ``async_op``, else None (with the watchdog running the
host does not wait; without it, it waits for the collective, bounded by the deadline).

Data moves as bytes (``NCCL_UINT8``) where nothing is reduced, so every dtype broadcasts,
gathers and travels point to point; all_to_all and the point-to-point calls are grouped
sends and receives (``ncclGroupStart``/``End``). NCCL has no message tags and no receive
from any rank: ``tag`` is ignored, and ``src=None`` raises ValueError.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import _nccl, _watchdog
from ._group import ReduceOp
from ._nccl import CudaWork

__all__ = ["all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor",
           "all_to_all_single", "all_to_all", "gather", "scatter", "isend", "irecv", "barrier", "is_cuda"]

_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def is_cuda(tensor) -> bool:
    return isinstance(tensor, Tensor) and type(tensor._data).__module__.startswith("cupy")


def _array(pg, tensor, what: str):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what} must be a Tensor, got {type(tensor).__name__}")
    arr = tensor._data
    if not is_cuda(tensor):
        raise RuntimeError(f"{what} is on {tensor.device}, but this collective runs on NCCL: every tensor of one "
                           f"call must be a cuda tensor")
    if not arr.flags.c_contiguous:
        raise ValueError("Tensors must be contiguous")
    if arr.device.id != pg._nccl.device:
        raise ValueError(f"{what} is on cuda:{arr.device.id} but this rank's NCCL communicator is on "
                         f"cuda:{pg._nccl.device}")
    if arr.dtype.name not in _nccl.TYPES:
        raise RuntimeError(f"Unsupported data type for NCCL process group: {tensor.dtype}")
    return arr


def _bytes(arr):
    return arr.reshape(-1).view("uint8")


def _bump(tensor):
    if type(tensor._vc) is list:
        tensor._vc[0] += 1


def _start(pg, name):
    """Count the collective (the sequence number the timeout report names)."""
    seq = pg._seq = pg._seq + 1
    _watchdog.entered(name, seq, None if pg.group_name == "default" else pg._ranks)
    return seq


def _end(pg, name, seq, async_op, outputs=(), keep=()):
    """The Work of what was just enqueued; waited on here when the watchdog cannot bound it."""
    import cupy
    stream = cupy.cuda.get_current_stream()
    for t in outputs:
        _bump(t)
    work = CudaWork(stream, group=pg, name=name, seq=seq, outputs=outputs, keep=keep)
    if async_op:
        return work
    if not _watchdog.running():
        work.wait()
    return None


def _reduction(pg, arr, op):
    """(buffer NCCL reads, buffer it writes in place of ``arr``'s flat view, count, datatype,
    NCCL op, what to do after: None or "avg")."""
    red = op.op if isinstance(op, ReduceOp) else ReduceOp.RedOpType(op)
    factor = op.factor if isinstance(op, ReduceOp) else None
    nccl, name = pg._nccl.nccl, arr.dtype.name
    if red in _BITWISE:
        raise ValueError(f"Cannot use ReduceOp.{red.name} with NCCL")
    if name.startswith("complex") and red not in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PREMUL_SUM):
        raise RuntimeError(f"all_reduce does not support ReduceOp.{red.name} on complex tensors")
    if red == ReduceOp.PREMUL_SUM and factor is None:
        raise ValueError("ReduceOp.PREMUL_SUM needs its factor: use _make_nccl_premul_sum(factor)")
    flat = arr.reshape(-1)
    if name == "bool":  # 0/1 bytes: "or" is MAX, "and" is MIN
        view = flat.view("uint8")
        mapped = nccl.NCCL_MIN if red in (ReduceOp.PRODUCT, ReduceOp.MIN) else nccl.NCCL_MAX
        return view, view, view.size, nccl.NCCL_UINT8, mapped, None
    view = flat.view("float32" if name == "complex64" else "float64") if name.startswith("complex") else flat
    mapped = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.AVG: nccl.NCCL_SUM, ReduceOp.PREMUL_SUM: nccl.NCCL_SUM,
              ReduceOp.PRODUCT: nccl.NCCL_PROD, ReduceOp.MIN: nccl.NCCL_MIN, ReduceOp.MAX: nccl.NCCL_MAX}[red]
    send = view
    if red == ReduceOp.PREMUL_SUM:
        factor = factor.item() if isinstance(factor, Tensor) else factor
        send = flat * flat.dtype.type(factor)
        send = send.view(view.dtype) if send.dtype != view.dtype else send
    return send, view, view.size, pg._nccl.type_of(view.dtype.name), mapped, "avg" if red == ReduceOp.AVG else None


def _average(flat, size) -> None:
    if flat.dtype.kind in "iu":
        flat //= size
    else:
        flat /= size


def _stream():
    import cupy
    return cupy.cuda.get_current_stream().ptr


def all_reduce(pg, tensor, op, async_op):
    seq = _start(pg, "all_reduce")
    arr = _array(pg, tensor, "all_reduce's tensor")
    send, recv, count, dtype, nop, after = _reduction(pg, arr, op)
    with pg._nccl.cupy.cuda.Device(pg._nccl.device):
        pg._nccl.comm.allReduce(send.data.ptr, recv.data.ptr, count, dtype, nop, _stream())
        if after == "avg":
            _average(arr.reshape(-1), pg.size())
    return _end(pg, "all_reduce", seq, async_op, [tensor], keep=[send])


def reduce(pg, tensor, root, op, async_op):
    seq = _start(pg, "reduce")
    arr = _array(pg, tensor, "reduce's tensor")
    send, recv, count, dtype, nop, after = _reduction(pg, arr, op)
    mine = pg.rank() == root
    with pg._nccl.cupy.cuda.Device(pg._nccl.device):
        # a rank that is not the root passes its own buffer as the (unwritten) receive buffer
        pg._nccl.comm.reduce(send.data.ptr, recv.data.ptr if mine else send.data.ptr, count, dtype, nop, root,
                             _stream())
        if mine and after == "avg":
            _average(arr.reshape(-1), pg.size())
    return _end(pg, "reduce", seq, async_op, [tensor] if mine else [], keep=[send])


def broadcast(pg, tensor, root, async_op):
    seq = _start(pg, "broadcast")
    data = _bytes(_array(pg, tensor, "broadcast's tensor"))
    with pg._nccl.cupy.cuda.Device(pg._nccl.device):
        pg._nccl.comm.broadcast(data.data.ptr, data.data.ptr, data.size, pg._nccl.nccl.NCCL_UINT8, root, _stream())
    return _end(pg, "broadcast", seq, async_op, [tensor])


def _same(arr, other, what):
    if arr.dtype != other.dtype or arr.size != other.size:
        raise ValueError(f"{what}: expected {other.size} elements of {other.dtype}, got {arr.size} of {arr.dtype}")


def all_gather_into_tensor(pg, output_tensor, input_tensor, async_op, name="all_gather_into_tensor"):
    seq = _start(pg, name)
    arr = _array(pg, input_tensor, f"{name}'s input")
    out = _array(pg, output_tensor, f"{name}'s output")
    if out.dtype != arr.dtype or out.size != arr.size * pg.size():
        raise ValueError(f"{name}: output must hold world size ({pg.size()}) times the input's {arr.size} elements "
                         f"of {arr.dtype}, got {out.size} of {out.dtype}")
    data, into = _bytes(arr), _bytes(out)
    with pg._nccl.cupy.cuda.Device(pg._nccl.device):
        pg._nccl.comm.allGather(data.data.ptr, into.data.ptr, data.size, pg._nccl.nccl.NCCL_UINT8, _stream())
    return _end(pg, name, seq, async_op, [output_tensor])


def all_gather(pg, tensor_list, tensor, async_op):
    arr = _array(pg, tensor, "all_gather's tensor")
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list must hold {pg.size()} tensors, one per rank, got {len(tensor_list)}")
    outs = [_array(pg, t, "all_gather's output") for t in tensor_list]
    for o in outs:
        _same(o, arr, "all_gather's output")
    cupy = pg._nccl.cupy
    with cupy.cuda.Device(pg._nccl.device):
        flat = cupy.empty((pg.size(), arr.size), arr.dtype)
        from .._tensor import _make
        staging = _make(flat, tensor.dtype)
        all_gather_into_tensor(pg, staging, tensor, True, name="all_gather")
        for o, row in zip(outs, flat):  # copies on the same stream, after the gather
            o.reshape(-1)[...] = row
    for t in tensor_list:
        _bump(t)
    work = CudaWork(cupy.cuda.get_current_stream(), group=pg, name="all_gather", seq=pg._seq, outputs=tensor_list,
                    keep=[flat])
    if async_op:
        return work
    if not _watchdog.running():
        work.wait()
    return None


def reduce_scatter_tensor(pg, output, input, op, async_op):
    seq = _start(pg, "reduce_scatter_tensor")
    arr = _array(pg, input, "reduce_scatter_tensor's input")
    out = _array(pg, output, "reduce_scatter_tensor's output")
    if out.dtype != arr.dtype or arr.size != out.size * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input must hold world size ({pg.size()}) times the output's "
                         f"{out.size} elements of {out.dtype}, got {arr.size} of {arr.dtype}")
    send, _, _, dtype, nop, after = _reduction(pg, arr, op)
    recv = _reduction(pg, out, ReduceOp.SUM)[1]  # the output's flat view NCCL writes (bool as bytes)
    with pg._nccl.cupy.cuda.Device(pg._nccl.device):
        pg._nccl.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv.size, dtype, nop, _stream())
        if after == "avg":
            _average(out.reshape(-1), pg.size())
    return _end(pg, "reduce_scatter_tensor", seq, async_op, [output], keep=[send])


def _exchange(pg, sends, recvs):
    """Grouped point-to-point: ``sends`` and ``recvs`` are (peer, uint8 array) pairs."""
    nccl, comm, stream = pg._nccl.nccl, pg._nccl.comm, _stream()
    with pg._nccl.cupy.cuda.Device(pg._nccl.device):
        nccl.groupStart()
        try:
            for peer, data in sends:
                if data.size:
                    comm.send(data.data.ptr, data.size, nccl.NCCL_UINT8, peer, stream)
            for peer, data in recvs:
                if data.size:
                    comm.recv(data.data.ptr, data.size, nccl.NCCL_UINT8, peer, stream)
        finally:
            nccl.groupEnd()


def _splits(splits, arr, size, what):
    rows = arr.shape[0] if arr.ndim else 1
    if splits is None or len(splits) == 0:
        if rows % size:
            raise ValueError(f"all_to_all_single: dim 0 ({rows}) is not divisible by the world size {size}")
        splits = [rows // size] * size
    if len(splits) != size or sum(splits) != rows:
        raise ValueError(f"all_to_all_single: split sizes {list(splits)} do not cover dim 0 ({rows}) in {size} "
                         f"blocks")
    row = arr.nbytes // max(rows, 1)
    at, blocks, data = 0, [], _bytes(arr)
    for s in splits:
        blocks.append(data[at:at + int(s) * row])
        at += int(s) * row
    return blocks


def all_to_all_single(pg, output, input, output_split_sizes, input_split_sizes, async_op):
    seq = _start(pg, "all_to_all_single")
    size = pg.size()
    ins = _splits(input_split_sizes, _array(pg, input, "all_to_all_single's input"), size, "input")
    outs = _splits(output_split_sizes, _array(pg, output, "all_to_all_single's output"), size, "output")
    _exchange(pg, list(enumerate(ins)), list(enumerate(outs)))
    return _end(pg, "all_to_all_single", seq, async_op, [output])


def all_to_all(pg, output_tensor_list, input_tensor_list, async_op):
    seq = _start(pg, "all_to_all")
    size = pg.size()
    if len(output_tensor_list) != size or len(input_tensor_list) != size:
        raise ValueError(f"all_to_all: both lists must hold {size} tensors")
    ins = [_bytes(_array(pg, t, "all_to_all's input")) for t in input_tensor_list]
    outs = [_bytes(_array(pg, t, "all_to_all's output")) for t in output_tensor_list]
    _exchange(pg, list(enumerate(ins)), list(enumerate(outs)))
    return _end(pg, "all_to_all", seq, async_op, list(output_tensor_list))


def gather(pg, tensor, gather_list, root, async_op):
    seq = _start(pg, "gather")
    arr = _array(pg, tensor, "gather's tensor")
    if pg.rank() != root:
        if gather_list:
            raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
        _exchange(pg, [(root, _bytes(arr))], [])
        return _end(pg, "gather", seq, async_op)
    if gather_list is None or len(gather_list) != pg.size():
        raise ValueError(f"gather: the destination rank needs gather_list with {pg.size()} tensors")
    outs = [_array(pg, t, "gather's output") for t in gather_list]
    for o in outs:
        _same(o, arr, "gather's output")
    _bytes(outs[root])[...] = _bytes(arr)
    _exchange(pg, [], [(r, _bytes(o)) for r, o in enumerate(outs) if r != root])
    return _end(pg, "gather", seq, async_op, list(gather_list))


def scatter(pg, tensor, scatter_list, root, async_op):
    seq = _start(pg, "scatter")
    arr = _array(pg, tensor, "scatter's tensor")
    if pg.rank() != root:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
        _exchange(pg, [], [(root, _bytes(arr))])
        return _end(pg, "scatter", seq, async_op, [tensor])
    if scatter_list is None or len(scatter_list) != pg.size():
        raise ValueError(f"scatter: the source rank needs scatter_list with {pg.size()} tensors")
    ins = [_array(pg, t, "scatter's input") for t in scatter_list]
    for a in ins:
        _same(a, arr, "scatter's input")
    _bytes(arr)[...] = _bytes(ins[root])
    _exchange(pg, [(r, _bytes(a)) for r, a in enumerate(ins) if r != root], [])
    return _end(pg, "scatter", seq, async_op, [tensor])


def isend(pg, tensor, peer):
    seq = _start(pg, f"send to {peer}")
    _exchange(pg, [(peer, _bytes(_array(pg, tensor, "send's tensor")))], [])
    return CudaWork(_current(), group=pg, name=f"send to {peer}", seq=seq, keep=[tensor])


def irecv(pg, tensor, peer):
    if peer is None:
        raise ValueError("NCCL cannot receive from any rank: give recv a src")
    seq = _start(pg, f"recv from {peer}")
    _exchange(pg, [], [(peer, _bytes(_array(pg, tensor, "recv's tensor")))])
    _bump(tensor)
    work = CudaWork(_current(), group=pg, name=f"recv from {peer}", seq=seq, outputs=[tensor])
    work._result = pg._ranks[peer]  # source_rank()
    return work


def _current():
    import cupy
    return cupy.cuda.get_current_stream()


def barrier(pg, async_op, limit=None):
    """An all-reduce of one byte on the device; waited on by the host, as torch's NCCL
    barrier synchronizes the device (``limit``: seconds that bound it instead of the group's)."""
    cupy = pg._nccl.cupy
    seq = _start(pg, "barrier")
    with cupy.cuda.Device(pg._nccl.device):
        one = cupy.ones(1, cupy.uint8)
        pg._nccl.comm.allReduce(one.data.ptr, one.data.ptr, 1, pg._nccl.nccl.NCCL_UINT8, pg._nccl.nccl.NCCL_MAX,
                                _stream())
    work = CudaWork(_current(), group=pg, name="barrier", seq=seq, keep=[one], limit=limit)
    if async_op:
        return work
    work.synchronize()
    return None
