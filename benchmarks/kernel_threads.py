"""Do ember's kernel threads and OpenBLAS's threads get in each other's way?

    python benchmarks/kernel_threads.py

OpenBLAS's workers spin for a while after each matrix product; a kernel split over
ember's pool right after a product competes with them for the cores, and a product right
after a kernel may find its workers asleep.  Timed here (medians of 30, milliseconds): a
[512, 512] product alone, a GELU forward on [4096, 1000] alone, and each right after the
other, with the kernel pool at every thread count up to the BLAS's.  Nothing is asserted.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import ember
import ember.nn.functional as F
from ember.cpu.kernels import _runtime


def median_ms(fn, n=30):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    x = ember.tensor(rng.standard_normal((4096, 1000)).astype(np.float32))
    blas = ember.get_num_threads()
    print(f"OpenBLAS threads {blas}; kernels {'on' if _runtime.enabled() else 'off'}")
    print(f"{'kernel threads':>14} {'GEMM':>8} {'GELU':>8} {'GEMM then GELU':>15} {'GELU then GEMM':>15}")
    for threads in range(1, blas + 1):
        _runtime.threads = lambda n=threads: n
        gemm = median_ms(lambda: a @ a)
        gelu = median_ms(lambda: F.gelu(x))

        def gemm_then_gelu():
            a @ a
            t0 = time.perf_counter()
            F.gelu(x)
            return time.perf_counter() - t0

        def gelu_then_gemm():
            F.gelu(x)
            t0 = time.perf_counter()
            a @ a
            return time.perf_counter() - t0
        after_gemm = statistics.median(gemm_then_gelu() for _ in range(30)) * 1e3
        after_gelu = statistics.median(gelu_then_gemm() for _ in range(30)) * 1e3
        print(f"{threads:>14} {gemm:8.2f} {gelu:8.2f} {after_gemm:15.2f} {after_gelu:15.2f}")


if __name__ == "__main__":
    main()
