"""Device code every family includes: accumulation types and block-wide reductions.

Kernels that reduce a row run one block per row; the block's size is a multiple of 32
(a warp) and at most 1024, so one shared slot per warp suffices.
"""

# The C++ types of the dtypes the kernels are instantiated for (float16 and bfloat16 come
# with cupy's headers, at launch time, where cuda_fp16.h is on the include path).
CTYPES = {"float32": "float", "float64": "double"}

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
