"""Dropout with counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and Shaw,
"Parallel Random Numbers: As Easy as 1, 2, 3", SC'11), so that ``(seed, offset)`` gives
the same mask on any launch geometry, and activation checkpointing replays a dropout by
restoring the generator's ``(seed, offset)``.

Counter scheme. Element ``i`` of a mask of ``n`` elements belongs to group ``i // 4`` and
takes word ``i % 4`` of one Philox4x32-10 block, computed with

    key     = (seed mod 2**32, seed >> 32)                       (the 64-bit seed, low word first)
    counter = ((offset + i // 4) mod 2**32, (offset + i // 4) >> 32, 0, 0)

(the 64-bit sum taken modulo 2**64). The word ``r`` becomes the uniform float32
``u = (r >> 8) * 2**-24`` in ``[0, 1)``, and the element is kept where ``u >= p`` (``p``
rounded to float32, as the CPU path compares its float32 draws). A draw uses ``ceil(n / 4)``
groups; the generator's offset advances by that many (``Generator.philox_seed_offset``),
so consecutive draws never share a counter. The streams differ from torch's (torch rounds
its offset increment to its launch's unrolling), as the design allows.

Kernels (one thread per group of four elements in a grid-stride loop):
``dropout_{dtype}(x, out, scaled, n, p, scale, seed, offset)`` writes ``scaled = keep ?
scale : 0`` and, when ``x`` is given, ``out = x * scaled`` (a product, as the CPU path:
a dropped inf gives NaN); ``alpha_dropout_{dtype}(x, out, scaled, n, p, a, c1, c2, seed,
offset)`` writes ``scaled = keep * a`` and ``out = x * scaled + ((keep - 1) * c1 + c2)``.
The scalars come rounded to the arrays' dtype (as the CPU path rounds them) and the
arithmetic runs in the accumulation type (float32 for float16 and bfloat16), rounded once.
"""

import numpy

from ._common import ACC_CTYPES, BLOCK, CTYPES, GRID_LOOP, KERNEL_PRELUDE, NULL, acc_dtype, grid, on_cupy

GROUP = 4  # elements per Philox block (four 32-bit words)

PHILOX = r"""
// Philox4x32-10 (Salmon et al., SC'11): ten rounds of two 32x32->64-bit products, the key
// bumped by the Weyl constants between rounds
__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
  #pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r) {
      k.x += 0x9E3779B9u;
      k.y += 0xBB67AE85u;
    }
    const unsigned int hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const unsigned int hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
  }
  return c;
}

// the four uniform floats in [0, 1) of group `group` of the stream (seed, offset)
__device__ __forceinline__ void philox_uniform4(unsigned long long seed, unsigned long long offset,
                                                unsigned long long group, float u[4]) {
  const unsigned long long c = offset + group;
  const uint4 r = philox4x32_10(make_uint4((unsigned int)c, (unsigned int)(c >> 32), 0u, 0u),
                                make_uint2((unsigned int)seed, (unsigned int)(seed >> 32)));
  u[0] = (float)(r.x >> 8) * 5.9604644775390625e-08f;  // 2^-24: 24 random bits, exact in float32
  u[1] = (float)(r.y >> 8) * 5.9604644775390625e-08f;
  u[2] = (float)(r.z >> 8) * 5.9604644775390625e-08f;
  u[3] = (float)(r.w >> 8) * 5.9604644775390625e-08f;
}
"""

_TEMPLATES = r"""
template <typename T, typename A>
__device__ void dropout(const T* __restrict__ x, T* __restrict__ out, T* __restrict__ scaled, long long n, float p,
                        A scale, unsigned long long seed, unsigned long long offset) {
  GRID_LOOP(group, (n + 3) / 4) {
    float u[4];
    philox_uniform4(seed, offset, (unsigned long long)group, u);
    for (int lane = 0; lane < 4; ++lane) {
      const long long i = group * 4 + lane;
      if (i >= n) break;
      const A s = u[lane] >= p ? scale : A(0);
      scaled[i] = (T)s;
      if (x != nullptr) out[i] = (T)((A)x[i] * s);
    }
  }
}

template <typename T, typename A>
__device__ void alpha_dropout(const T* __restrict__ x, T* __restrict__ out, T* __restrict__ scaled, long long n,
                              float p, A a, A c1, A c2, unsigned long long seed, unsigned long long offset) {
  GRID_LOOP(group, (n + 3) / 4) {
    float u[4];
    philox_uniform4(seed, offset, (unsigned long long)group, u);
    for (int lane = 0; lane < 4; ++lane) {
      const long long i = group * 4 + lane;
      if (i >= n) break;
      const A keep = u[lane] >= p ? A(1) : A(0);
      const A s = keep * a;
      scaled[i] = (T)s;
      out[i] = (T)((A)x[i] * s + ((keep - A(1)) * c1 + c2));
    }
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void dropout_{dtype}(const {t}* x, {t}* out, {t}* scaled, long long n, float p, {a} scale,
                                          unsigned long long seed, unsigned long long offset) {{
  dropout<{t}, {a}>(x, out, scaled, n, p, scale, seed, offset);
}}
extern "C" __global__ void alpha_dropout_{dtype}(const {t}* x, {t}* out, {t}* scaled, long long n, float p, {a} a,
                                                {a} c1, {a} c2, unsigned long long seed, unsigned long long offset) {{
  alpha_dropout<{t}, {a}>(x, out, scaled, n, p, a, c1, c2, seed, offset);
}}
"""

# a test entry: the raw Philox words of groups [0, groups), to check the device's generator
_WORDS = r"""
extern "C" __global__ void philox_words(unsigned int* out, long long groups, unsigned long long seed,
                                        unsigned long long offset) {
  GRID_LOOP(g, groups) {
    const unsigned long long c = offset + (unsigned long long)g;
    const uint4 r = philox4x32_10(make_uint4((unsigned int)c, (unsigned int)(c >> 32), 0u, 0u),
                                  make_uint2((unsigned int)seed, (unsigned int)(seed >> 32)));
    out[4 * g] = r.x;
    out[4 * g + 1] = r.y;
    out[4 * g + 2] = r.z;
    out[4 * g + 3] = r.w;
  }
}
"""

NAMES = tuple(f"{op}_{dtype}" for op in ("dropout", "alpha_dropout") for dtype in CTYPES) + ("philox_words",)
SOURCE = KERNEL_PRELUDE + GRID_LOOP + PHILOX + _TEMPLATES + "".join(_ENTRY.format(dtype=dtype, t=t, a=ACC_CTYPES[dtype])
                                                                    for dtype, t in CTYPES.items()) + _WORDS


def accepts(x) -> bool:
    """Whether the kernels take ``x``: a cupy array of a kernel dtype."""
    return on_cupy(x)


def groups(n: int) -> int:
    """The Philox groups (counter values) a draw of ``n`` elements uses: ``ceil(n / 4)``."""
    return -(-int(n) // GROUP)


def stream_args(seed: int, offset: int) -> tuple:
    """``(seed, offset)`` as the kernels' 64-bit unsigned arguments (each taken modulo 2**64)."""
    return numpy.uint64(int(seed) & 0xFFFF_FFFF_FFFF_FFFF), numpy.uint64(int(offset) & 0xFFFF_FFFF_FFFF_FFFF)


def _scalar(dtype, value):
    """``value`` rounded to ``dtype`` (as the CPU path's scalars are), as an argument of the
    accumulation type."""
    return acc_dtype(dtype).type(dtype.type(value))


def _launch(name, n, *args):
    from . import function
    if n:
        function("dropout", name)(grid(groups(n)), (BLOCK,), args)


def apply(x, p: float, scale: float, seed: int, offset: int):
    """``(x * scaled, scaled)`` with ``scaled = scale`` where the element is kept and 0
    where dropped (probability ``p``), both C-contiguous in ``x``'s shape and dtype; the
    draw uses ``groups(x.size)`` counters from ``offset``."""
    import cupy
    x = cupy.ascontiguousarray(x)
    out, scaled = cupy.empty_like(x), cupy.empty_like(x)
    _launch(f"dropout_{x.dtype.name}", x.size, x, out, scaled, numpy.int64(x.size), numpy.float32(p),
            _scalar(x.dtype, scale), *stream_args(seed, offset))
    return out, scaled


def mask(shape, dtype, p: float, scale: float, seed: int, offset: int):
    """``scaled`` alone, of ``shape`` and ``dtype`` (a feature dropout's mask, broadcast over
    the input by the caller); the same draw as ``apply`` of that many elements."""
    import cupy
    scaled = cupy.empty(shape, dtype)
    _launch(f"dropout_{scaled.dtype.name}", scaled.size, NULL, NULL, scaled, numpy.int64(scaled.size),
            numpy.float32(p), _scalar(scaled.dtype, scale), *stream_args(seed, offset))
    return scaled


def apply_alpha(x, p: float, a: float, c1: float, c2: float, seed: int, offset: int):
    """Alpha dropout's ``(x * scaled + shift, scaled)``, ``scaled = keep * a`` and
    ``shift = (keep - 1) * c1 + c2`` (the CPU kernel's ``apply_alpha``, from Philox draws)."""
    import cupy
    x = cupy.ascontiguousarray(x)
    out, scaled = cupy.empty_like(x), cupy.empty_like(x)
    d = x.dtype
    _launch(f"alpha_dropout_{d.name}", x.size, x, out, scaled, numpy.int64(x.size), numpy.float32(p), _scalar(d, a),
            _scalar(d, c1), _scalar(d, c2), *stream_args(seed, offset))
    return out, scaled


def words(n_groups: int, seed: int, offset: int):
    """The raw Philox words of ``n_groups`` groups, ``[n_groups, 4]`` uint32 (for tests)."""
    import cupy
    out = cupy.empty((n_groups, GROUP), numpy.uint32)
    from . import function
    if n_groups:
        function("dropout", "philox_words")(grid(n_groups), (BLOCK,),
                                            (out, numpy.int64(n_groups), *stream_args(seed, offset)))
    return out
