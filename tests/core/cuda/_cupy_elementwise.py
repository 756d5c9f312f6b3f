"""The translation unit cupy compiles for an ``ElementwiseKernel``, written here so that a
kernel's body can be compiled with NVRTC on a machine without cupy or a GPU.

What cupy does (cupy/_core/_kernel.pyx: ``_get_elementwise_kernel_code`` and
``_get_simple_elementwise_kernel_code``; the headers of ``compile_with_cache``), followed
here for the parameters ember's fused kernels use (typed arrays and typed scalars, no
``raw`` ones, no type placeholders, so no typedefs):

- the module starts with cupy's headers (``cupy/carray.cuh`` among them), then the kernel's
  ``preamble``;
- the kernel is ``extern "C" __global__ void <name>(<params>)``: an array argument becomes
  ``CArray<ctype, ndim, c_contiguous, index_32_bits> _raw_<name>`` (``const`` for an input
  parameter), a scalar argument ``const <ctype> <name>``, and the last parameter is the
  indexer ``CIndexer<ndim, index_32_bits> _ind``; every array has the output's ndim
  after broadcasting, and when every array is C-contiguous the dims are merged into one;
- the body is ``CUPY_FOR(i, _ind.size()) { _ind.set(i); <refs> <operation>; }``, where
  ``<refs>`` binds each array parameter's element: ``const T &a = _raw_a[_ind.get()];``
  for inputs, ``T &o = _raw_o[_ind.get()];`` for outputs.

``HEADER`` stands in for ``cupy/carray.cuh``: only what that expansion uses (``CArray``
indexed by a pointer to per-dim indices, ``CIndexer``'s size/set/get, ``CUPY_FOR``),
with cupy's template parameters, so a body that compiles here compiles there.
"""

import re

HEADER = r"""
template <typename T, int ndim, bool c_contiguous = false, bool use_32bit_indexing = false>
class CArray {
 public:
  T* data_;
  long long size_;
  long long shape_[ndim > 0 ? ndim : 1];
  long long strides_[ndim > 0 ? ndim : 1];
  __device__ T& operator[](const long long* idx) {
    char* p = reinterpret_cast<char*>(data_);
    for (int d = 0; d < ndim; ++d) p += strides_[d] * idx[d];
    return *reinterpret_cast<T*>(p);
  }
  __device__ const T& operator[](const long long* idx) const {
    const char* p = reinterpret_cast<const char*>(data_);
    for (int d = 0; d < ndim; ++d) p += strides_[d] * idx[d];
    return *reinterpret_cast<const T*>(p);
  }
};

template <int ndim, bool use_32bit_indexing = false>
class CIndexer {
 public:
  long long size_;
  long long shape_[ndim > 0 ? ndim : 1];
  long long index_[ndim > 0 ? ndim : 1];
  __device__ long long size() const { return size_; }
  __device__ void set(long long i) {
    for (int d = ndim - 1; d >= 0; --d) { index_[d] = i % shape_[d]; i /= shape_[d]; }
  }
  __device__ const long long* get() const { return index_; }
};

#define CUPY_FOR(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)
"""

_CTYPES = {"float32": "float", "float64": "double", "int64": "long long"}


def _params(text):
    return [tuple(p.split()) for p in text.split(",") if p.strip()]


def translation_unit(kernel, in_kinds) -> str:
    """The module cupy builds for ``kernel`` (a ``cuda_codegen.ElementwiseKernel``) called
    with inputs of ``in_kinds`` ("vec" ``[R, C]``, "row"/"irow" ``[R, 1]``, "col" ``[C]``,
    "scalar" 0-d) and ``[R, C]`` outputs (``int64 _cols``, when present, is a scalar)."""
    ins, outs = _params(kernel.in_params), _params(kernel.out_params)
    arrays = list(zip(ins, in_kinds))
    merged = all(kind == "vec" for kind in in_kinds)  # every array contiguous: one dim
    ndim = 1 if merged else 2
    params, refs = [], []
    for (dtype, name), kind in arrays:
        ctype = _CTYPES[dtype]
        params.append(f"const CArray<{ctype}, {ndim}, {int(kind == 'vec')}, 1> _raw_{name}")
        refs.append(f"const {ctype} &{name} = _raw_{name}[_ind.get()];")
    for dtype, name in ins[len(in_kinds):]:  # scalars after the arrays (``_cols``)
        params.append(f"const {_CTYPES[dtype]} {name}")
    for dtype, name in outs:
        ctype = _CTYPES[dtype]
        params.append(f"CArray<{ctype}, {ndim}, 1, 1> _raw_{name}")
        refs.append(f"{ctype} &{name} = _raw_{name}[_ind.get()];")
    params.append(f"CIndexer<{ndim}, 1> _ind")
    body = "\n".join(refs + [kernel.operation])
    return (f"{HEADER}\n{kernel.preamble}\n"
            f'extern "C" __global__ void {kernel.name}({", ".join(params)}) {{\n'
            f"  ;\n  #pragma unroll 1\n  CUPY_FOR(i, _ind.size()) {{\n    _ind.set(i);\n{body};\n  }}\n  ;\n}}\n")


def names(ptx: str) -> set:
    """The kernels a PTX module defines."""
    return set(re.findall(r"\.entry\s+(\w+)", ptx))
