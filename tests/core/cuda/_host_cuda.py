"""Run a kernel family's CUDA source on the host: the whole grid, every thread of a block an
OS thread, so that the kernels' arithmetic, indexing, shared memory, barriers, warp shuffles
and atomics are checked numerically on a machine without a GPU.

The source is compiled as C++20 by g++ after a prelude that gives CUDA's names host
meanings: ``threadIdx``/``blockIdx`` are per-thread, ``blockDim``/``gridDim`` per launch;
``__shared__`` variables are statics, shared by a block's threads (blocks run one after
another, each thread looping over them with a barrier between blocks); ``__syncthreads``
is a barrier of the block's threads and ``__shfl_xor_sync`` an exchange through a warp's
slots between two barriers of its 32 threads; atomics are ``std::atomic_ref``s. ``__half``
and ``__nv_bfloat16`` come from stand-in headers: storage of the type, conversions that
round to nearest even (``_Float16``'s for half, bit arithmetic for bfloat16), as CUDA's.

``function(family, name)`` returns a launcher with cupy's calling convention,
``kernel(grid, block, args)``, over numpy arrays: the launchers in ``ember.cuda.kernels``
run unchanged on the cupy stand-in (``_cupy_stand_in``), computing what the GPU computes.
What this cannot show is the GPU's own behaviour: its memory model and timing,
occupancy, and the machine code's speed.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from ember.cuda import kernels

COMPILER = shutil.which("g++")

_PRELUDE = r"""
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>
using std::exp; using std::log; using std::sqrt; using std::tanh; using std::fabs;
using std::min; using std::max;

struct uint3_ { unsigned int x, y, z; };
static thread_local uint3_ threadIdx, blockIdx;
static uint3_ blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __shared__ static

static std::barrier<>* block_barrier;
static std::barrier<>* warp_barriers[32];
alignas(16) static unsigned char warp_slots[32][32][16];
static void __syncthreads() { block_barrier->arrive_and_wait(); }
template <typename T> static T __shfl_xor_sync(unsigned, T v, int offset) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  std::memcpy(warp_slots[warp][lane], &v, sizeof(T));
  warp_barriers[warp]->arrive_and_wait();
  T other;
  std::memcpy(&other, warp_slots[warp][lane ^ offset], sizeof(T));
  warp_barriers[warp]->arrive_and_wait();
  return other;
}
static float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
static unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((uint64_t)a * b) >> 32); }
struct uint2 { unsigned int x, y; };
struct uint4 { unsigned int x, y, z, w; };
static uint2 make_uint2(unsigned int x, unsigned int y) { return {x, y}; }
static uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return {x, y, z, w}; }
template <typename T> static T atomicAdd(T* at, T v) { return std::atomic_ref<T>(*at).fetch_add(v); }
static unsigned long long atomicMin(unsigned long long* at, unsigned long long v) {
  std::atomic_ref<unsigned long long> ref(*at);
  unsigned long long seen = ref.load();
  while (v < seen && !ref.compare_exchange_weak(seen, v)) {}
  return seen;
}

// the grid: blockDim.x threads, each running `body` for every block in turn
static void run_grid(unsigned int blocks, unsigned int threads, const std::function<void()>& body) {
  blockDim = {threads, 1, 1};
  gridDim = {blocks, 1, 1};
  std::barrier<> block(threads);
  std::vector<std::barrier<>*> warps;
  for (unsigned int w = 0; w * 32 < threads; ++w)
    warps.push_back(warp_barriers[w] = new std::barrier<>(std::min(32u, threads - w * 32)));
  block_barrier = &block;
  std::vector<std::thread> pool;
  for (unsigned int t = 0; t < threads; ++t)
    pool.emplace_back([&, t]() {
      threadIdx = {t, 0, 0};
      for (unsigned int b = 0; b < blocks; ++b) {
        blockIdx = {b, 0, 0};
        body();
        block.arrive_and_wait();  // the block's statics are free for the next block
      }
    });
  for (auto& thread : pool) thread.join();
  for (auto* w : warps) delete w;
}
"""

# the headers NVRTC finds in CUDA's include folder, as host types
_FP16 = r"""
#pragma once
struct __half {
  _Float16 v;
  __half() = default;
  __half(float f) : v((_Float16)f) {}
  __half(double d) : v((_Float16)d) {}
  __half(int i) : v((_Float16)(float)i) {}
  operator float() const { return (float)v; }
};
"""

_BF16 = r"""
#pragma once
#include <cstdint>
#include <cstring>
struct __nv_bfloat16 {
  uint16_t bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    bits = (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0 : (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  __nv_bfloat16(double d) : __nv_bfloat16((float)d) {}
  __nv_bfloat16(int i) : __nv_bfloat16((float)i) {}
  operator float() const { uint32_t u = (uint32_t)bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
"""

_CTYPES = {"long long": ctypes.c_longlong, "int": ctypes.c_int, "float": ctypes.c_float,
           "double": ctypes.c_double, "unsigned long long": ctypes.c_ulonglong}
_ENTRY = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')


def _parameters(params: str) -> list:
    """``[(name, ctype, is_pointer)]`` of a C parameter list."""
    found = []
    for param in params.split(","):
        words = param.replace("const", " ").replace("*", " * ").split()
        found.append((words[-1], " ".join(w for w in words[:-1] if w != "*"), "*" in words))
    return found


@functools.lru_cache(maxsize=None)
def _library(family: str):
    """The family's source compiled for the host, with a ``host_<kernel>(blocks, threads,
    args...)`` wrapper per kernel; returns ``(library, {kernel: parameters})``."""
    source = kernels.sources()[family].source
    signatures = {name: _parameters(params) for name, params in _ENTRY.findall(source)}
    wrappers = []
    for name, params in signatures.items():
        declared = ", ".join(f"{'void*' if ptr else ctype} {pname}" for pname, ctype, ptr in params)
        passed = ", ".join(f"({ctype}*){pname}" if ptr else pname for pname, ctype, ptr in params)
        wrappers.append(f'extern "C" void host_{name}(unsigned int blocks, unsigned int threads, {declared}) {{\n'
                        f"  run_grid(blocks, threads, [&]() {{ {name}({passed}); }});\n}}\n")
    with tempfile.TemporaryDirectory(prefix="ember-host-cuda-") as folder:
        for header, text in (("cuda_fp16.h", _FP16), ("cuda_bf16.h", _BF16)):
            with open(os.path.join(folder, header), "w") as f:
                f.write(text)
        cpp, lib = os.path.join(folder, f"{family}.cpp"), os.path.join(folder, f"{family}.so")
        with open(cpp, "w") as f:
            f.write(_PRELUDE + source + "".join(wrappers))
        subprocess.run([COMPILER, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", f"-I{folder}", cpp,
                        "-o", lib], check=True, capture_output=True, text=True)
        return ctypes.CDLL(lib), signatures  # loaded: the files may go


def function(family: str, name: str):
    """Kernel ``name`` of ``family`` as cupy's ``RawKernel`` is called, ``kernel(grid, block,
    args)``, run on the host over numpy arrays (a null pointer: ``numpy.uint64(0)``)."""
    library, signatures = _library(family)
    params = signatures[name]
    host = getattr(library, f"host_{name}")
    host.argtypes = [ctypes.c_uint, ctypes.c_uint] + [ctypes.c_void_p if ptr else _CTYPES[ctype]
                                                      for _, ctype, ptr in params]
    host.restype = None

    def launch(grid, block, args):
        assert len(args) == len(params), (name, len(args), len(params))
        values = []
        for arg, (_, _, ptr) in zip(args, params):
            if ptr:
                values.append(arg.ctypes.data if isinstance(arg, np.ndarray) else None)
            else:
                values.append(arg.item() if isinstance(arg, np.generic) else arg)
        host(int(np.prod(grid)), int(block[0]), *values)
    return launch
