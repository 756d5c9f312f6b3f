"""Tensors that cross process boundaries by sharing memory, not by copying it.

A shared tensor's memory is an anonymous in-memory file (Linux ``memfd_create``) mapped
``MAP_SHARED``; sending the tensor to another process sends a duplicate of the file's
descriptor (``multiprocessing.reduction.DupFd``: passed at spawn time, or through
multiprocessing's resource sharer for a ``Queue``), and the receiver maps the same pages.
This is torch's ``file_descriptor`` sharing strategy: memory is freed when the last
process holding a mapping lets go, so nothing is left behind in ``/dev/shm``.
"""

from __future__ import annotations

import mmap
import os
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy

__all__ = ["SharedBlock", "init_reductions", "is_shared", "share_memory_"]


class SharedBlock(mmap.mmap):
    """``nbytes`` of memory in an anonymous file mapped shared; ``fd`` is the file.
    Given an ``fd`` (received from another process), maps that file instead."""

    def __new__(cls, nbytes: int, fd: int | None = None):
        length = max(int(nbytes), 1)  # mmap refuses length 0
        if fd is None:
            fd = os.memfd_create("ember-tensor", os.MFD_CLOEXEC)
            os.ftruncate(fd, length)
        block = super().__new__(cls, fd, length, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        block.fd = fd
        block.address = numpy.frombuffer(block, numpy.uint8).__array_interface__["data"][0]
        return block

    def __del__(self):
        os.close(self.fd)


def _block_of(arr) -> SharedBlock | None:
    while arr is not None and not isinstance(arr, SharedBlock):
        arr = getattr(arr, "base", None)
    return arr


def _address(arr) -> int:
    return arr.__array_interface__["data"][0]


def is_shared(t) -> bool:
    return type(t._data) is not numpy.ndarray or _block_of(t._data) is not None


def share_memory_(t):
    """Move ``t``'s memory (its base's, for a view) into shared memory, in place.

    The base tensor and ``t`` see the moved memory; other views of the same base made
    before the move keep the old, private memory (ember's views hold arrays, not a shared
    storage object as torch's do): share a tensor before taking views of it."""
    if type(t._data) is not numpy.ndarray or _block_of(t._data) is not None:
        return t  # on a GPU, or already shared
    base = t if t._base is None else t._base
    old = base._data
    block = SharedBlock(old.nbytes)
    order = "F" if old.flags.f_contiguous and not old.flags.c_contiguous else "C"
    new = numpy.ndarray(old.shape, old.dtype, buffer=block, order=order)
    new[...] = old
    base._data = new
    if t is not base:
        t._data = t._view_fn(base)._data
    return t


def _rebuild_tensor(cls, fd, nbytes, dtype_name, shape, strides, offset, requires_grad):
    from .. import _dtype as D
    from .._tensor import _rebuild
    block = SharedBlock(nbytes, fd.detach())
    arr = numpy.ndarray(shape, D._dtype_by_name(dtype_name).np, buffer=block, offset=offset, strides=strides)
    t = _rebuild(arr, dtype_name, False)
    if cls is not None:
        return cls(t, requires_grad)
    t._requires_grad = requires_grad
    return t


def _reduce_tensor(t):
    from ..nn.parameter import Parameter
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
                           "does not support crossing process boundaries.  If you just want to transfer the data, "
                           "call detach() on the tensor before serializing (e.g., putting it on the queue).")
    if type(t._data) is not numpy.ndarray:
        raise RuntimeError(f"sharing {t.device.type} tensors between processes is not supported: move the tensor "
                           f"to the CPU first")
    share_memory_(t)
    block = _block_of(t._data)
    arr = t._data
    return (_rebuild_tensor, (Parameter if isinstance(t, Parameter) else None, DupFd(block.fd), len(block),
                              t.dtype.name, arr.shape, arr.strides, _address(arr) - block.address, t.requires_grad))


def init_reductions() -> None:
    """Teach multiprocessing's pickler (queues, pipes, process arguments) to send tensors
    as shared memory."""
    from .._tensor import Tensor
    from ..nn.parameter import Parameter
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, _reduce_tensor)
