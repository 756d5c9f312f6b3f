"""Keep large numpy buffers in the C heap between ops (glibc only).

A training step allocates and frees arrays of megabytes many times over.  glibc's malloc
serves blocks above its mmap threshold (at most 32 MiB, adjusted as blocks are freed)
with fresh mappings, and each one's pages are faulted in and zeroed by the kernel on first
touch: on a small CNN that kernel time was a quarter of an epoch.  Raising the mmap and
trim thresholds lets freed buffers be reused from the heap instead.  Memory above the trim
threshold at the top of the heap is still returned to the system, and blocks above the
mmap threshold are still mapped on their own.

Set ``EMBER_MALLOC_TUNING=0`` before importing ember to leave the allocator as it is.
Source: mallopt(3) (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD).
"""

from __future__ import annotations

import ctypes
import os
import platform

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 << 20   # bytes: blocks up to this size come from the heap
TRIM_THRESHOLD = 512 << 20   # bytes of free heap top kept before returning memory


def tune() -> bool:
    """Apply the thresholds; True when they were set (glibc, and not switched off)."""
    if os.environ.get("EMBER_MALLOC_TUNING", "1") == "0" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


TUNED = tune()
