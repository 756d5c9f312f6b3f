"""ember.cuda.memory: the caching allocator and its counters (torch.cuda.memory).

The caching allocator is cupy's default memory pool. When the first cuda tensor is made,
``install`` makes a ``CountingAllocator`` over that pool cupy's allocator, so every cuda
allocation, ember's and cupy's own, passes through it. It keeps per device what torch
reports and cupy's pool does not: the peaks of allocated and reserved bytes, the bytes and
the number of allocations so far, and the out-of-memory count. A failed allocation becomes
``ember.OutOfMemoryError`` with torch's message; cupy's pool has freed its cached blocks and
retried before that. Before any GPU use every counter reads 0 and ``memory_stats`` is empty,
as torch's are.

Source: https://pytorch.org/docs/stable/notes/cuda.html#memory-management
"""

from __future__ import annotations

import contextlib

from .._errors import OutOfMemoryError

__all__ = ["OutOfMemoryError", "CountingAllocator", "install", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "reset_max_memory_cached", "memory_stats", "mem_get_info", "format_size"]


def format_size(n: int) -> str:
    """``n`` bytes as torch's caching allocator writes sizes: up to 1024 in bytes, then up to
    each next unit in KiB or MiB, then GiB, with two decimals."""
    if n <= 1024:
        return f"{n} bytes"
    for unit, scale in (("KiB", 1024), ("MiB", 1024 ** 2)):
        if n <= scale * 1024:
            return f"{n / scale:.2f} {unit}"
    return f"{n / 1024 ** 3:.2f} GiB"


class DeviceCounters:
    """What one device's allocations have added up to (bytes as the pool rounds them)."""

    def __init__(self):
        self.live = 0  # bytes of the blocks handed out and not yet given back
        self.peak_allocated = 0
        self.peak_reserved = 0
        self.allocated_bytes = 0  # every allocation's bytes, freed since or not
        self.allocations = 0
        self.ooms = 0


class _Held:
    """The owner of a pooled block while arrays use it: when the last one goes, its bytes
    leave the device's live count and the block goes back to the pool."""

    __slots__ = ("block", "counts", "size")

    def __init__(self, block, counts: DeviceCounters, size: int):
        self.block, self.counts, self.size = block, counts, size

    def __del__(self):
        self.counts.live -= self.size


class CountingAllocator:
    """cupy's allocator interface (``size`` in bytes -> a ``MemoryPointer``) over ``pool``,
    counting per device in constant time: each block is handed out through an owner that
    takes its bytes off the live count when freed (cupy's ``used_bytes``/``total_bytes``
    walk every block, too slow for every allocation). The pool's reserved bytes only grow
    until ``empty_cache``, so their peak is read when asked for and before the cache empties.

    Args:
        pool: cupy's ``MemoryPool`` (``malloc``, and ``used_bytes``/``total_bytes`` of the
            current device).
        out_of_memory: the exception type ``pool.malloc`` raises when memory runs out.
        current_device: ``() -> int``, the current CUDA device.
        mem_get_info: ``() -> (free, total)`` bytes of the current device, from the driver.
        hand_out: ``(block, owner, device) -> pointer``, the pointer given to cupy for a
            pooled block, keeping ``owner`` alive as long as it lives.
    """

    def __init__(self, pool, out_of_memory, current_device, mem_get_info, hand_out):
        self.pool = pool
        self.out_of_memory = out_of_memory
        self.current_device = current_device
        self.mem_get_info = mem_get_info
        self.hand_out = hand_out
        self.devices: dict[int, DeviceCounters] = {}

    def counters(self, index: int) -> DeviceCounters:
        return self.devices.setdefault(index, DeviceCounters())

    def __call__(self, size: int):
        index = self.current_device()
        counts = self.counters(index)
        try:
            block = self.pool.malloc(size)
        except self.out_of_memory as e:
            counts.ooms += 1
            raise OutOfMemoryError(self._message(size, index)) from e
        rounded = block.mem.size
        counts.allocations += 1
        counts.allocated_bytes += rounded
        counts.live += rounded
        counts.peak_allocated = max(counts.peak_allocated, counts.live)
        return self.hand_out(block, _Held(block, counts, rounded), index)

    def _message(self, size: int, index: int) -> str:
        free, total = self.mem_get_info()
        used, reserved = self.pool.used_bytes(), self.pool.total_bytes()
        return (f"CUDA out of memory. Tried to allocate {format_size(size)}. GPU {index} has a total capacity of "
                f"{format_size(total)} of which {format_size(free)} is free. Of the allocated memory "
                f"{format_size(used)} is allocated by ember, and {format_size(reserved - used)} is reserved by ember "
                f"but unallocated.")

    def peaks(self, index: int) -> tuple[int, int]:
        """The allocated and reserved peaks of device ``index`` (the current one): blocks
        made before the allocator was set count from when they are read."""
        counts = self.counters(index)
        counts.peak_allocated = max(counts.peak_allocated, self.pool.used_bytes())
        counts.peak_reserved = max(counts.peak_reserved, self.pool.total_bytes())
        return counts.peak_allocated, counts.peak_reserved

    def reset_peaks(self, index: int) -> None:
        counts = self.counters(index)
        counts.peak_allocated = counts.live
        counts.peak_reserved = self.pool.total_bytes()


_allocator: CountingAllocator | None = None


def install(cupy) -> None:
    """Make the counting allocator over cupy's default pool cupy's allocator (once). An
    allocator the program set itself (RMM, managed memory) is left in place; the counters
    then read only the default pool's current bytes."""
    global _allocator
    if _allocator is None:
        pool, memory = cupy.get_default_memory_pool(), cupy.cuda.memory

        def hand_out(block, owner, index):
            return memory.MemoryPointer(memory.UnownedMemory(block.ptr, block.mem.size, owner, index), 0)

        _allocator = CountingAllocator(pool, memory.OutOfMemoryError, cupy.cuda.runtime.getDevice,
                                       cupy.cuda.runtime.memGetInfo, hand_out)
        if cupy.cuda.get_allocator() == pool.malloc:
            cupy.cuda.set_allocator(_allocator)


@contextlib.contextmanager
def _on(device):
    """The allocator and the index of ``device`` (None: the current one), with that device
    current; the allocator is None before any GPU use."""
    if _allocator is None:
        yield None, None
        return
    from . import _index, _require
    index = _index(device)
    with _require().cuda.Device(index):
        yield _allocator, index


def empty_cache() -> None:
    """Give the pool's cached, unused blocks on every device back to the driver
    (torch.cuda.empty_cache); a no-op before any GPU use."""
    if _allocator is not None:
        from . import _require, device_count
        cp = _require()
        for index in range(device_count()):
            with cp.cuda.Device(index):
                _allocator.peaks(index)  # the reserved peak, before the cache shrinks
                _allocator.pool.free_all_blocks()


def memory_allocated(device=None) -> int:
    """Bytes held by live cuda tensors on ``device`` (an index, a device or None for the
    current one), as the pool rounds them (torch.cuda.memory_allocated); 0 before any GPU
    use."""
    with _on(device) as (allocator, _):
        return allocator.pool.used_bytes() if allocator else 0


def memory_reserved(device=None) -> int:
    """Bytes the pool holds on ``device``, in use or cached (torch.cuda.memory_reserved); 0
    before any GPU use."""
    with _on(device) as (allocator, _):
        return allocator.pool.total_bytes() if allocator else 0


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` on ``device`` since the start or the last
    ``reset_peak_memory_stats`` (torch.cuda.max_memory_allocated); 0 before any GPU use."""
    with _on(device) as (allocator, index):
        return allocator.peaks(index)[0] if allocator else 0


def max_memory_reserved(device=None) -> int:
    """The peak of ``memory_reserved`` on ``device`` since the start or the last
    ``reset_peak_memory_stats`` (torch.cuda.max_memory_reserved); 0 before any GPU use."""
    with _on(device) as (allocator, index):
        return allocator.peaks(index)[1] if allocator else 0


def reset_peak_memory_stats(device=None) -> None:
    """Start both peaks of ``device`` again from its current bytes
    (torch.cuda.reset_peak_memory_stats); a no-op before any GPU use (torch's CPU build has no such function and raises
    AttributeError; ember keeps programs that call it running)."""
    with _on(device) as (allocator, index):
        if allocator:
            allocator.reset_peaks(index)


def reset_max_memory_allocated(device=None) -> None:
    """``reset_peak_memory_stats`` of ``device`` under torch's deprecated name."""
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """``reset_peak_memory_stats`` of ``device`` under torch's deprecated name."""
    reset_peak_memory_stats(device)


def memory_stats(device=None) -> dict:
    """The allocator's statistics for ``device`` under torch's keys
    (torch.cuda.memory_stats): ``allocated_bytes.all.{current,peak,allocated}``,
    ``reserved_bytes.all.{current,peak}``, ``allocation.all.allocated`` and ``num_ooms``;
    empty before any GPU use, as torch's. The running totals count from ember's first cuda
    tensor (cupy arrays made before it are in ``current`` only)."""
    with _on(device) as (allocator, index):
        if not allocator:
            return {}
        counts, (peak_allocated, peak_reserved) = allocator.counters(index), allocator.peaks(index)
        return {"allocated_bytes.all.current": allocator.pool.used_bytes(), "allocated_bytes.all.peak": peak_allocated,
                "allocated_bytes.all.allocated": counts.allocated_bytes,
                "reserved_bytes.all.current": allocator.pool.total_bytes(),
                "reserved_bytes.all.peak": peak_reserved,
                "allocation.all.allocated": counts.allocations, "num_ooms": counts.ooms}


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes of ``device`` (the current one when None), from the driver
    (torch.cuda.mem_get_info); AssertionError without cupy, RuntimeError without a GPU."""
    from . import _index, _require
    cp = _require()
    with cp.cuda.Device(_index(device)):
        return tuple(cp.cuda.runtime.memGetInfo())
