"""Run a generated CUDA kernel's code on the host, one thread per block and one block, by
compiling it as C++ (g++) and calling it through ctypes: what the kernel computes, checked
without a GPU (the parallel parts, block reductions and the grid, are what a GPU run
checks). A per-row kernel's ``block_reduce`` becomes the identity (the one thread holds the
whole row's sum or max); an element-wise body runs in a loop over the ``[R, C]`` elements
with each parameter bound to its element as cupy binds it (``row`` by its row, ``col`` by
its column, ``scalar`` to its one value)."""

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ember.compiler.fusion.cuda_codegen import HELPERS, ElementwiseKernel
from ember.cuda.kernels._common import PRELUDE

COMPILER = shutil.which("g++")

_HOST = r"""
#include <cmath>
#include <cstring>
using namespace std;
struct Dim { long long x; };
static Dim blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
#define __syncthreads() ((void)0)
static float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
template <typename A> A nan_max(A a, A b) { return (a > b || a != a) ? a : b; }
template <typename A, bool IS_MAX> A block_reduce(A v, A*, A) { return v; }
static double host_shared[1 << 16];
"""


@functools.lru_cache(maxsize=None)
def _build(source: str):
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    with tempfile.TemporaryDirectory(prefix="ember-host-") as folder:
        cpp, lib = os.path.join(folder, f"{digest}.cpp"), os.path.join(folder, f"{digest}.so")
        with open(cpp, "w") as f:
            f.write(source)
        subprocess.run([COMPILER, "-O1", "-shared", "-fPIC", "-x", "c++", cpp, "-o", lib], check=True,
                       capture_output=True, text=True)
        return ctypes.CDLL(lib)  # loaded: the file may go


def _row_source(kernel) -> str:
    text = kernel.source.replace(PRELUDE, "").replace(HELPERS, "")
    text = text.replace("__shared__ float reduce_slots[32];", "float reduce_slots[32];")
    text = text.replace("__shared__ double reduce_slots[32];", "double reduce_slots[32];")
    for t in ("float", "double"):
        text = text.replace(f"extern __shared__ {t} row_buffers[];", f"{t}* row_buffers = ({t}*)host_shared;")
    return _HOST + HELPERS + text


def _elementwise_source(kernel: ElementwiseKernel, in_kinds) -> str:
    ctypes_ = {"float32": "float", "float64": "double", "int64": "long long"}
    ins = [tuple(p.split()) for p in kernel.in_params.split(",")]
    outs = [tuple(p.split()) for p in kernel.out_params.split(",")]
    params, binds = [], []
    index = {"vec": "e", "row": "r", "irow": "r", "col": "c", "scalar": "0"}
    for (dtype, name), kind in zip(ins, in_kinds):
        params.append(f"const {ctypes_[dtype]}* p_{name}")
        binds.append(f"const {ctypes_[dtype]} &{name} = p_{name}[{index[kind]}];")
    for dtype, name in outs:
        params.append(f"{ctypes_[dtype]}* p_{name}")
        binds.append(f"{ctypes_[dtype]} &{name} = p_{name}[e];")
    body = "\n".join(binds + [kernel.operation])
    signature = f'extern "C" void {kernel.name}({", ".join(params)}, long long R, long long C)'
    return (f"{_HOST}{kernel.preamble}\n{signature} {{\n  const long long _cols = C;\n"
            "  for (long long e = 0; e < R * C; ++e) {\n"
            f"    const long long i = e, r = e / C, c = e % C;\n    (void)i; (void)r; (void)c; (void)_cols;\n"
            f"{body};\n  }}\n}}\n")


def run(kernel, arrays, in_kinds, kinds, rows, width, dtype):
    """What ``cuda_run.run`` returns, computed on the host (numpy arrays in and out)."""
    R, C = int(rows), int(width)
    if isinstance(kernel, ElementwiseKernel):
        fn = getattr(_build(_elementwise_source(kernel, in_kinds)), kernel.name)
        outs = [np.empty((R, C), dtype) for _ in kinds]
        fn(*(a.ctypes.data_as(ctypes.c_void_p) for a in arrays + outs), ctypes.c_longlong(R), ctypes.c_longlong(C))
        return outs
    fn = getattr(_build(_row_source(kernel)), kernel.name)
    outs = [np.empty((R, C), dtype) if k == "vec" else np.zeros((1, C), dtype) if k == "csum"
            else np.empty(R, dtype) for k in kinds]
    fn(*(a.ctypes.data_as(ctypes.c_void_p) for a in arrays + outs), ctypes.c_longlong(R))
    return [o.sum(axis=0) if k == "csum" else o for o, k in zip(outs, kinds)]
