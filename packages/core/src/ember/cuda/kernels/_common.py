"""What the families share: device code (accumulation types, block-wide reductions, the
grid-stride loop) and the Python side of a launch (which arrays the kernels take, null
pointers, grid sizes).

Kernels that reduce a row run one block per row; the block's size is a multiple of 32
(a warp) and at most 1024, so one shared slot per warp suffices. Element-wise kernels run
a grid-stride loop over 64-bit indices: ``grid(total)`` blocks of ``BLOCK`` threads, one
element (or one group of elements) per thread until the grid is full, several beyond.
"""

import numpy

# The C++ types of the dtypes the kernels are instantiated for: float16 and bfloat16 are
# cuda_fp16.h's __half and cuda_bf16.h's __nv_bfloat16 (cupy puts CUDA's include folder on
# NVRTC's path).
CTYPES = {"float32": "float", "float64": "double", "float16": "__half", "bfloat16": "__nv_bfloat16"}
# The dtype each one computes and accumulates in, as torch's CUDA kernels do (its "opmath"
# type): the half types load into float and round once, on the store. Row statistics that a
# backward reads again (log-sum-exp, mean, rstd) are kept in this dtype too.
ACC_DTYPES = {"float32": "float32", "float64": "float64", "float16": "float32", "bfloat16": "float32"}
ACC_CTYPES = {name: CTYPES[acc] for name, acc in ACC_DTYPES.items()}

PRELUDE = r"""
template <typename T> struct acc;  // the type a kernel accumulates T in, and its -inf
template <> struct acc<float> {
  typedef float type;
  static __device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
};
template <> struct acc<double> {
  typedef double type;
  static __device__ __forceinline__ double neg_inf() { return __longlong_as_double(0xfff0000000000000ULL); }
};

// max that propagates NaN, as torch's reductions do (fmax would drop it)
template <typename A> __device__ __forceinline__ A nan_max(A a, A b) { return (a > b || a != a) ? a : b; }

template <typename A, bool IS_MAX> __device__ __forceinline__ A warp_reduce(A v) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const A other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = IS_MAX ? nan_max(v, other) : v + other;
  }
  return v;
}

// the reduction over the whole block, returned to every thread; `shared` holds 32 slots
template <typename A, bool IS_MAX> __device__ A block_reduce(A v, A* shared, A identity) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_reduce<A, IS_MAX>(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < warps ? shared[threadIdx.x] : identity;
  if (warp == 0) v = warp_reduce<A, IS_MAX>(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();  // the slots are free for the next reduction
  return v;
}
"""

# the half types' accumulation type (each specialization after its type's header)
HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <> struct acc<__half> {
  typedef float type;
  static __device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
};
template <> struct acc<__nv_bfloat16> {
  typedef float type;
  static __device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
};
"""

# what every family's source starts with
KERNEL_PRELUDE = PRELUDE + HALF

# for (long long i = first thread's index; i < n; i += threads in the grid): every element once
GRID_LOOP = r"""
#define GRID_LOOP(i, n) \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)
"""

BLOCK = 256  # threads per block of the element-wise kernels
MAX_BLOCKS = 1 << 20  # beyond this many blocks each thread loops (the grid stays a launchable size)

# a null pointer argument: cupy passes None as 0xffffffff, not as NULL (cupy issue 9046)
NULL = numpy.uint64(0)


def acc_dtype(dtype) -> numpy.dtype:
    """The dtype a kernel computes ``dtype``'s arrays in (``ACC_DTYPES``)."""
    return numpy.dtype(ACC_DTYPES[getattr(dtype, "name", dtype)])


def acc_scalar(dtype, value):
    """``value`` as a scalar argument of ``dtype``'s accumulation type (float32 or float64)."""
    return acc_dtype(dtype).type(value)


def pointer(a):
    """``a`` as a kernel argument, None as a null pointer."""
    return NULL if a is None else a


def grid(total: int, block: int = BLOCK) -> tuple:
    """The grid ``(blocks,)`` of a grid-stride loop over ``total`` items: one item per thread
    up to ``MAX_BLOCKS`` blocks, and at least one block (a launch of zero blocks is an error;
    the loop then runs no iteration)."""
    return (max(1, min(MAX_BLOCKS, -(-int(total) // block))),)


def on_cupy(*arrays) -> bool:
    """Whether every array (None skipped; at least one given) is a cupy array of one dtype
    the kernels are built for."""
    present = [a for a in arrays if a is not None]
    return bool(present) and all(type(a).__module__.startswith("cupy") and a.dtype == present[0].dtype
                                 and a.dtype.name in CTYPES for a in present)


def is_cupy(a) -> bool:
    """Whether ``a`` is a cupy array (of any dtype)."""
    return type(a).__module__.startswith("cupy")
