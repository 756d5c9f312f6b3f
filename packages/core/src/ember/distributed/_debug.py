"""The debug mode's check before each collective: with ``EMBER_DISTRIBUTED_DEBUG=DETAIL``
(or torch's ``TORCH_DISTRIBUTED_DEBUG=DETAIL``), the ranks exchange a fingerprint of the
collective they are entering (sequence number, name, reduce op, the tensor's shape and
dtype) and every rank raises, naming each rank's side, when they differ. The exchange is
itself a collective every ember collective starts with, so ranks in different collectives
still meet in it."""

from __future__ import annotations

import os

import numpy

__all__ = ["enabled", "check"]

_WIDTH = 240


def enabled() -> bool:
    level = os.environ.get("EMBER_DISTRIBUTED_DEBUG") or os.environ.get("TORCH_DISTRIBUTED_DEBUG") or ""
    return level.upper() == "DETAIL"


def _fingerprint(seq, name, tensor, op) -> str:
    parts = [f"SequenceNumber={seq}", f"OpType={name}"]
    if op is not None:
        parts.append(f"ReduceOp={getattr(op, 'op', op).name}")
    if tensor is not None:
        parts += [f"TensorShape={list(tensor.shape)}", f"TensorDtype={str(tensor.dtype).rsplit('.', 1)[-1]}"]
    return "(" + ", ".join(parts) + ")"


def check(pg, name, tensor=None, op=None) -> None:
    from ._work import Work
    mine = _fingerprint(pg._seq, name, tensor, op)
    row = numpy.zeros(_WIDTH, numpy.uint8)
    raw = mine.encode()[:_WIDTH]
    row[:len(raw)] = numpy.frombuffer(raw, numpy.uint8)
    rows = numpy.zeros((pg.size(), _WIDTH), numpy.uint8)
    Work([pg._comm.Iallgather(row, rows)], group=pg, name=f"the debug check of {name}", seq=pg._seq).wait()
    sides = [bytes(r).rstrip(b"\0").decode() for r in rows]
    if len(set(sides)) > 1:
        listing = "; ".join(f"rank {r} is running {s}" for r, s in enumerate(sides))
        raise RuntimeError(f"Detected mismatch between collectives on ranks: {listing} (on rank {pg.rank()})")
