"""Launching a fused region's generated CUDA kernels (``cuda_codegen``) on cupy arrays.

An ``ElementwiseKernel`` gets its inputs as views cupy broadcasts to the ``[R, C]``
outputs (``row`` and ``irow`` ``[R, 1]``, ``col`` ``[C]``, ``scalar`` 0-d). A ``RowKernel``
gets the contiguous arrays themselves and runs ``rows`` blocks (fewer, each walking several
rows, when it writes column sums: one ``[C]`` row of partial sums per block, added up here).
Both run on cupy's current stream and device; compiled kernels are kept per device (cupy
also caches the binaries on disk).
"""

from __future__ import annotations

import threading

import numpy

from .cuda_codegen import ElementwiseKernel, RowKernel

__all__ = ["run", "row_launch"]

_LOCK = threading.Lock()
_COMPILED: dict = {}  # (device id, kernel name) -> the cupy kernel
_MAX_BLOCKS = (1 << 31) - 1  # the grid's x dimension
_BLOCKS_PER_SM = 4  # blocks of a kernel that writes column sums, per multiprocessor


def _compiled(kernel):
    import cupy
    key = (cupy.cuda.runtime.getDevice(), kernel.name)
    found = _COMPILED.get(key)
    if found is None:
        with _LOCK:
            found = _COMPILED.get(key)
            if found is None:
                if isinstance(kernel, ElementwiseKernel):
                    found = cupy.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation,
                                                   kernel.name, preamble=kernel.preamble)
                else:
                    found = cupy.RawModule(code=kernel.source, options=("-std=c++17",)).get_function(kernel.name)
                _COMPILED[key] = found
    return found


def row_launch(kernel: RowKernel, rows: int, width: int, multiprocessors: int) -> tuple:
    """(grid, block) of a RowKernel: a block per row (a multiple of 32 threads, one per
    element up to 1024); a kernel writing column sums runs at most ``_BLOCKS_PER_SM`` blocks
    per multiprocessor, which bounds its ``[blocks, C]`` partial sums."""
    block = min(1024, max(32, -(-int(width) // 32) * 32))
    cap = _BLOCKS_PER_SM * multiprocessors if kernel.column_sums else _MAX_BLOCKS
    return (max(1, min(int(rows), cap)),), (block,)


def run(kernel, arrays, in_kinds, kinds, rows: int, width: int, dtype) -> list:
    """Run ``kernel`` on ``arrays`` (the prepared inputs, of ``in_kinds``: ``vec`` ``[R, C]``,
    ``row`` and ``irow`` ``[R]``, ``col`` ``[C]``, ``scalar`` ``[1]``); the outputs as
    ``kinds`` says ("vec" ``[R, C]``, "row" ``[R]``, "csum" ``[C]``), of ``dtype``."""
    import cupy
    R, C = int(rows), int(width)
    if isinstance(kernel, ElementwiseKernel):
        broadcast = {"row": (R, 1), "irow": (R, 1), "scalar": ()}
        shaped = [a.reshape(broadcast[k]) if k in broadcast else a for a, k in zip(arrays, in_kinds)]
        outs = [cupy.empty((R, C), dtype) for _ in kinds]
        if R:
            extra = [numpy.int64(C)] if kernel.needs_cols else []
            _compiled(kernel)(*shaped, *extra, *outs)
        return outs
    multiprocessors = cupy.cuda.Device().attributes["MultiProcessorCount"]
    grid, block = row_launch(kernel, R, C, multiprocessors)
    outs = [cupy.empty((R, C), dtype) if k == "vec" else cupy.zeros((grid[0], C), dtype) if k == "csum"
            else cupy.empty(R, dtype) for k in kinds]
    if R:
        _compiled(kernel)(grid, block, (*arrays, *outs, numpy.int64(R)), shared_mem=kernel.shared_bytes)
    return [o.sum(axis=0) if k == "csum" else o for o, k in zip(outs, kinds)]
