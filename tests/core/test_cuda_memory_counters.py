"""The counters ember.cuda keeps over cupy's memory pool, driven by a stand-in pool (no GPU
here): the bookkeeping of peaks and totals and the out-of-memory translation, with expected
values worked out by hand. The same counters on a real pool are in tests/core/cuda."""

from types import SimpleNamespace

import pytest

import ember
from ember.cuda.memory import CountingAllocator, format_size


class PoolOutOfMemory(MemoryError):
    pass


class StandInPool:
    """cupy's pool as the allocator sees it: blocks rounded up to 512 bytes that go back to
    the pool's cache when the last reference to them goes, ``used_bytes``/``total_bytes`` of
    the current device, out of memory past ``capacity``."""

    def __init__(self, capacity):
        self.capacity, self.used, self.cached = capacity, 0, 0

    def malloc(self, size):
        rounded = -(-size // 512) * 512
        if self.used + rounded > self.capacity:
            raise PoolOutOfMemory(size)
        self.cached -= min(self.cached, rounded)
        self.used += rounded
        return Block(self, rounded)

    def used_bytes(self):
        return self.used

    def total_bytes(self):
        return self.used + self.cached


class Block:
    def __init__(self, pool, size):
        self.pool, self.mem = pool, SimpleNamespace(size=size)

    def __del__(self):
        self.pool.used -= self.mem.size
        self.pool.cached += self.mem.size


def _hand_out(block, owner, device):
    """The pointer cupy would get: it keeps the owner (and through it the block) alive."""
    return SimpleNamespace(mem=block.mem, owner=owner, device=device)


def _allocator(capacity=1 << 20, device=0):
    pool = StandInPool(capacity)
    return pool, CountingAllocator(pool, PoolOutOfMemory, lambda: device, lambda: (capacity - pool.used, capacity),
                                   _hand_out)


def test_peaks_and_totals_follow_allocations_and_frees():
    pool, alloc = _allocator()
    a = alloc(1000)  # 1024 bytes
    b = alloc(3000)  # 3072
    counts = alloc.counters(0)
    assert counts.live == 4096 == pool.used_bytes()
    del a  # its block goes back to the pool's cache
    assert counts.live == 3072 == pool.used_bytes()
    c = alloc(100)  # 512, from the cache
    assert (counts.allocations, counts.allocated_bytes) == (3, 1024 + 3072 + 512)
    assert counts.live == 3584 == pool.used_bytes() and pool.total_bytes() == 4096
    assert alloc.peaks(0) == (4096, 4096)
    del b, c
    assert counts.live == 0 == pool.used_bytes()
    alloc.reset_peaks(0)
    assert alloc.peaks(0) == (0, 4096)  # the cache still holds the blocks
    d = alloc(512)
    assert alloc.peaks(0) == (512, 4096) and counts.allocations == 4 and d.device == 0


def test_each_device_counts_apart():
    pool = StandInPool(1 << 20)
    device = [0]
    alloc = CountingAllocator(pool, PoolOutOfMemory, lambda: device[0], lambda: (0, 0), _hand_out)
    alloc(512)
    device[0] = 1
    alloc(1024)
    assert alloc.counters(0).allocations == 1 and alloc.counters(1).allocated_bytes == 1024


def test_running_out_raises_embers_error_with_torchs_message():
    pool, alloc = _allocator(capacity=4 * 1024 ** 2)
    kept = alloc(3 * 1024 ** 2)
    with pytest.raises(ember.OutOfMemoryError) as info:
        alloc(2 * 1024 ** 2 + 1)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value.__cause__, PoolOutOfMemory)
    assert str(info.value) == ("CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of "
                               "4.00 MiB of which 1024.00 KiB is free. Of the allocated memory 3.00 MiB is allocated "
                               "by ember, and 0 bytes is reserved by ember but unallocated.")
    assert alloc.counters(0).ooms == 1 and alloc.counters(0).allocations == 1 and kept.mem.size == 3 * 1024 ** 2


@pytest.mark.parametrize("n,text", [(0, "0 bytes"), (1024, "1024 bytes"), (1025, "1.00 KiB"), (1536, "1.50 KiB"),
                                    (1024 ** 2, "1024.00 KiB"), (1024 ** 2 + 1, "1.00 MiB"),
                                    (5 * 1024 ** 2, "5.00 MiB"), (1024 ** 3, "1024.00 MiB"),
                                    (1024 ** 3 + 1, "1.00 GiB"), (int(79.5 * 1024 ** 3), "79.50 GiB")])
def test_sizes_are_written_as_torchs_allocator_writes_them(n, text):
    assert format_size(n) == text
