"""Scaled dot-product attention on cupy arrays, forward and backward, tiled so that the
``[L, S]`` score matrix is never written out (the FlashAttention scheme: Dao et al.,
arXiv:2205.14135, and FlashAttention-2, arXiv:2307.08691): the forward of
``ops/attention.py``'s ``scaled_dot_product_attention`` and its gradient, dropout included
(each probability kept or dropped by the counter-based draw of ``drop_factor``, drawn again
in the backward rather than stored).

Shapes: ``q`` ``[BH, L, E]``, ``k`` ``[BH, S, E]``, ``v`` ``[BH, S, Ev]`` (``BH = B * H``,
C-contiguous, ``1 <= E, Ev <= E_MAX``), float32, float64, float16 or bfloat16, the half
types loaded into float32 tiles and accumulated there (``_common.ACC_DTYPES``).
Scores ``s_ij = (q_i . k_j) * scale + mask_ij``, ``-inf`` where masked: ``j > i`` under
``causal`` (top-left aligned, torch's ``tril(ones(L, S))``), where a boolean mask is
False; a float mask is added. The mask is one contiguous array read through four element
strides over ``[B, H, L, S]`` (0 along the dims it broadcasts over: ``plan``).

- ``attention_forward``: one block of ``THREADS`` threads per (bh, tile of ``BQ`` query
  rows), grid ``(BH * ceil(L / BQ),)``. The query tile stays in shared memory; key and
  value tiles of ``BK`` rows pass through it. Per key tile: the ``BQ x BK`` scores, then
  the online softmax per row (one thread a row): ``m' = max(m, max_j s_ij)``,
  ``alpha = exp(m - m')``, ``p_ij = exp(s_ij - m')``, ``l' = alpha * l + sum_j p_ij``,
  ``o' = alpha * o + p @ v``; at the end ``out = o / l`` and ``lse = m + log(l)``. A row
  whose keys are all masked keeps ``l = 0``: its output is 0 and its ``lse`` is ``-inf``.
  Under ``causal`` the key tiles past the tile's last row are skipped.
- backward: ``D_i = sum_e dO_ie * O_ie`` first (a cupy reduction), then, with
  ``p_ij = exp(s_ij - lse_i)`` recomputed per tile (0 where masked or ``lse_i = -inf``),
  ``dP = dO @ v^T`` and ``dS = p * (dP - D)``:
  ``attention_backward_kv``: one block per (bh, tile of ``BK`` key rows), looping over the
  query tiles: ``dv = sum p^T @ dO``, ``dk = scale * sum dS^T @ q``;
  ``attention_backward_q``: one block per (bh, query tile), looping over the key tiles:
  ``dq = scale * sum dS @ k``, and (when asked, for a float mask's gradient) ``dS``
  written out as ``[BH, L, S]``. Two kernels rather than atomic adds into ``dq``: each
  output element is written by one thread, so results do not depend on scheduling.

Tiles (``TILES``): ``BQ = BK = 16`` for float32 and the half types, 8 for float64, so that a block's static
shared memory stays under 48 KiB at ``E = Ev = E_MAX`` (``shared_bytes``). Each thread
keeps ``ceil(tile rows * E_MAX / THREADS)`` accumulators in registers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy

from ._common import ACC_CTYPES, CTYPES, KERNEL_PRELUDE, acc_dtype, is_cupy, on_cupy, pointer
from .dropout import PHILOX, stream_args

__all__ = ["E_MAX", "TILES", "THREADS", "Plan", "accepts", "backward", "forward", "plan", "shared_bytes"]

E_MAX = 128  # the largest head dim (query/key and value alike)
THREADS = 128  # threads per block
# (query rows, key rows) per tile; the tiles hold the accumulation type
TILES = {"float32": (16, 16), "float64": (8, 8), "float16": (16, 16), "bfloat16": (16, 16)}
SHARED_LIMIT = 48 << 10  # static shared memory per block
_KSTRIDE = E_MAX + 1  # key/value rows in shared memory: threads reading one column of several rows hit distinct banks

_PROBLEM = ("long long L, long long S, int E, int Ev, long long heads, long long msb, long long msh, long long msl, "
            "long long mss, int causal, double scale, float drop_p, double drop_scale, unsigned long long seed, "
            "unsigned long long offset")
_PROBLEM_NAMES = "L, S, E, Ev, heads, msb, msh, msl, mss, causal, scale, drop_p, drop_scale, seed, offset"

_TEMPLATES = r"""
#define E_MAX {e_max}
#define KSTRIDE {kstride}
#define THREADS {threads}

__device__ __forceinline__ long long min_ll(long long a, long long b) {{ return a < b ? a : b; }}

// rows [r0, r0 + rows) of a C-contiguous [n, width] matrix into shared memory (row stride `stride`), zeros past n
template <typename T, typename A>
__device__ __forceinline__ void load_rows(A* dst, const T* __restrict__ src, long long r0, int rows, long long n,
                                          int width, int stride) {{
  for (int t = threadIdx.x; t < rows * width; t += THREADS) {{
    const int r = t / width, e = t - r * width;
    dst[r * stride + e] = r0 + r < n ? (A)src[(r0 + r) * width + e] : A(0);
  }}
}}

// the score of query i and key j from their rows in shared memory: (q . k) * scale + mask, -inf where masked
template <typename T, typename A>
__device__ __forceinline__ A score(const A* qrow, const A* krow, long long i, long long j,
                                   const bool* __restrict__ bmask, const T* __restrict__ fmask, long long moff,
                                   PROBLEM) {{
  if (causal && j > i) return acc<T>::neg_inf();
  const long long at = moff + i * msl + j * mss;
  if (bmask != nullptr && !bmask[at]) return acc<T>::neg_inf();
  A dot = 0;
  for (int e = 0; e < E; ++e) dot += qrow[e] * krow[e];
  dot *= (A)scale;
  if (fmask != nullptr) dot += (A)fmask[at];
  return dot;
}}

// dropout's multiplier of probability (bh, i, j): element (bh * L + i) * S + j of the [BH, L, S]
// mask drawn as the dropout kernels draw theirs (word e % 4 of Philox group e / 4 of the stream
// (seed, offset)); 0 where dropped, drop_scale (1 / (1 - p)) where kept
template <typename A>
__device__ __forceinline__ A drop_factor(long long bh, long long i, long long j, PROBLEM) {{
  const unsigned long long e = (unsigned long long)((bh * L + i) * S + j);
  float u[4];
  philox_uniform4(seed, offset, e >> 2, u);
  const unsigned int lane = (unsigned int)(e & 3);
  const float draw = lane == 0 ? u[0] : lane == 1 ? u[1] : lane == 2 ? u[2] : u[3];
  return draw >= drop_p ? (A)drop_scale : A(0);
}}

// the probability of a score given its row's log-sum-exp: 0 where masked or the row has no key
template <typename T, typename A>
__device__ __forceinline__ A prob(A s, A lse) {{
  return (s == acc<T>::neg_inf() || lse == acc<T>::neg_inf()) ? A(0) : exp(s - lse);
}}

template <typename T, int BQ, int BK>
__device__ void attention_forward(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                  const bool* __restrict__ bmask, const T* __restrict__ fmask, T* __restrict__ out,
                                  typename acc<T>::type* __restrict__ lse, PROBLEM) {{
  typedef typename acc<T>::type A;
  const A neg_inf = acc<T>::neg_inf();
  __shared__ A qs[BQ * E_MAX], ks[BK * KSTRIDE], vs[BK * KSTRIDE], ps[BQ * BK];
  __shared__ A row_max[BQ], row_sum[BQ], row_alpha[BQ];
  const long long tiles = (L + BQ - 1) / BQ;
  const long long bh = blockIdx.x / tiles, q0 = (blockIdx.x % tiles) * BQ;
  const long long moff = (bh / heads) * msb + (bh % heads) * msh;
  const T* kb = k + bh * S * E;
  const T* vb = v + bh * S * Ev;
  load_rows<T, A>(qs, q + bh * L * E, q0, BQ, L, E, E_MAX);
  if (threadIdx.x < BQ) {{
    row_max[threadIdx.x] = neg_inf;
    row_sum[threadIdx.x] = 0;
  }}
  constexpr int PER = (BQ * E_MAX + THREADS - 1) / THREADS;
  A o[PER];  // o[u]: output entry threadIdx.x + u * THREADS of the tile, (row, column) of [BQ, Ev]
#pragma unroll
  for (int u = 0; u < PER; ++u) o[u] = 0;
  const long long kend = causal ? min_ll(S, q0 + BQ) : S;  // causal: later keys are masked for every row here
  for (long long k0 = 0; k0 < kend; k0 += BK) {{
    __syncthreads();  // the last tile is read (the first time round: qs and the row state are written)
    load_rows<T, A>(ks, kb, k0, BK, S, E, KSTRIDE);
    load_rows<T, A>(vs, vb, k0, BK, S, Ev, KSTRIDE);
    __syncthreads();
    for (int t = threadIdx.x; t < BQ * BK; t += THREADS) {{
      const int r = t / BK, c = t - r * BK;
      const long long i = q0 + r, j = k0 + c;
      ps[t] = (i < L && j < S) ? score<T, A>(qs + r * E_MAX, ks + c * KSTRIDE, i, j, bmask, fmask, moff, {names})
                               : neg_inf;
    }}
    __syncthreads();
    if (threadIdx.x < BQ) {{  // the online softmax, one thread per row
      const int r = threadIdx.x;
      A m = row_max[r];
      for (int c = 0; c < BK; ++c) m = nan_max(m, ps[r * BK + c]);
      A alpha = 1, sum = 0;
      if (m != neg_inf) {{  // some key of this row is unmasked so far
        alpha = exp(row_max[r] - m);  // 0 while the row had no key
        for (int c = 0; c < BK; ++c) {{
          const A p = exp(ps[r * BK + c] - m);
          ps[r * BK + c] = p;
          sum += p;
        }}
      }} else {{
        for (int c = 0; c < BK; ++c) ps[r * BK + c] = 0;
      }}
      row_alpha[r] = alpha;
      row_max[r] = m;
      row_sum[r] = row_sum[r] * alpha + sum;
    }}
    __syncthreads();
    if (drop_p > 0.f) {{  // the row sums are of the kept and dropped alike; the output takes the kept
      for (int t = threadIdx.x; t < BQ * BK; t += THREADS) {{
        const int r = t / BK, c = t - r * BK;
        if (q0 + r < L && k0 + c < S) ps[t] *= drop_factor<A>(bh, q0 + r, k0 + c, {names});
      }}
      __syncthreads();
    }}
#pragma unroll
    for (int u = 0; u < PER; ++u) {{
      const int t = threadIdx.x + u * THREADS;
      if (t < BQ * Ev) {{
        const int r = t / Ev, e = t - r * Ev;
        A a = o[u] * row_alpha[r];
        for (int c = 0; c < BK; ++c) a += ps[r * BK + c] * vs[c * KSTRIDE + e];
        o[u] = a;
      }}
    }}
  }}
  __syncthreads();  // the row state is final (also where no key tile ran)
#pragma unroll
  for (int u = 0; u < PER; ++u) {{
    const int t = threadIdx.x + u * THREADS;
    const int r = t / Ev, e = t - r * Ev;
    if (t < BQ * Ev && q0 + r < L) out[(bh * L + q0 + r) * Ev + e] = (T)(row_sum[r] == 0 ? A(0) : o[u] / row_sum[r]);
  }}
  if (threadIdx.x < BQ && q0 + threadIdx.x < L) {{
    const A l = row_sum[threadIdx.x];
    lse[bh * L + q0 + threadIdx.x] = l == 0 ? neg_inf : row_max[threadIdx.x] + log(l);
  }}
}}

// the (dropped) probabilities p and score gradients dS of one [BQ, BK] tile from the rows in shared
// memory: with Z the dropout multipliers, dS = P (Z dP - D) and dV takes (P Z)^T
template <typename T, typename A, int BQ, int BK>
__device__ __forceinline__ void tile_grads(const A* qs, const A* gs, const A* ks, const A* vs, const A* lse_s,
                                           const A* delta_s, A* ps, A* dss, long long bh, long long q0,
                                           long long k0, const bool* __restrict__ bmask,
                                           const T* __restrict__ fmask, long long moff, PROBLEM) {{
  for (int t = threadIdx.x; t < BQ * BK; t += THREADS) {{
    const int r = t / BK, c = t - r * BK;
    const long long i = q0 + r, j = k0 + c;
    A p = 0, ds = 0;
    if (i < L && j < S) {{
      p = prob<T, A>(score<T, A>(qs + r * E_MAX, ks + c * KSTRIDE, i, j, bmask, fmask, moff, {names}), lse_s[r]);
      A dp = 0;
      for (int e = 0; e < Ev; ++e) dp += gs[r * E_MAX + e] * vs[c * KSTRIDE + e];
      if (drop_p > 0.f) {{
        const A z = drop_factor<A>(bh, i, j, {names});
        ds = p * (dp * z - delta_s[r]);
        p *= z;
      }} else {{
        ds = p * (dp - delta_s[r]);
      }}
    }}
    if (ps != nullptr) ps[t] = p;
    dss[t] = ds;
  }}
}}

// the row statistics of query rows [q0, q0 + BQ): lse (-inf past L: no probability) and D
template <typename T, typename A, int BQ>
__device__ __forceinline__ void load_row_stats(A* lse_s, A* delta_s, const A* __restrict__ lse,
                                               const A* __restrict__ delta, long long row0, long long q0,
                                               long long L) {{
  if (threadIdx.x < BQ) {{
    const long long i = q0 + threadIdx.x;
    lse_s[threadIdx.x] = i < L ? lse[row0 + i] : acc<T>::neg_inf();
    delta_s[threadIdx.x] = i < L ? delta[row0 + i] : A(0);
  }}
}}

template <typename T, int BQ, int BK>
__device__ void attention_backward_kv(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                      const bool* __restrict__ bmask, const T* __restrict__ fmask,
                                      const T* __restrict__ g, const typename acc<T>::type* __restrict__ lse,
                                      const typename acc<T>::type* __restrict__ delta, T* __restrict__ dk,
                                      T* __restrict__ dv, PROBLEM) {{
  typedef typename acc<T>::type A;
  __shared__ A ks[BK * KSTRIDE], vs[BK * KSTRIDE], qs[BQ * E_MAX], gs[BQ * E_MAX], ps[BQ * BK], dss[BQ * BK];
  __shared__ A lse_s[BQ], delta_s[BQ];
  const long long tiles = (S + BK - 1) / BK;
  const long long bh = blockIdx.x / tiles, k0 = (blockIdx.x % tiles) * BK;
  const long long moff = (bh / heads) * msb + (bh % heads) * msh;
  const T* qb = q + bh * L * E;
  const T* gb = g + bh * L * Ev;
  load_rows<T, A>(ks, k + bh * S * E, k0, BK, S, E, KSTRIDE);
  load_rows<T, A>(vs, v + bh * S * Ev, k0, BK, S, Ev, KSTRIDE);
  constexpr int PER = (BK * E_MAX + THREADS - 1) / THREADS;
  A dk_acc[PER], dv_acc[PER];  // entry threadIdx.x + u * THREADS of [BK, E] and of [BK, Ev]
#pragma unroll
  for (int u = 0; u < PER; ++u) dk_acc[u] = dv_acc[u] = 0;
  const long long first = causal ? (k0 / BQ) * BQ : 0;  // causal: earlier query rows see none of these keys
  for (long long q0 = first; q0 < L; q0 += BQ) {{
    __syncthreads();  // the last tile is read (the first time round: ks and vs are written)
    load_rows<T, A>(qs, qb, q0, BQ, L, E, E_MAX);
    load_rows<T, A>(gs, gb, q0, BQ, L, Ev, E_MAX);
    load_row_stats<T, A, BQ>(lse_s, delta_s, lse, delta, bh * L, q0, L);
    __syncthreads();
    tile_grads<T, A, BQ, BK>(qs, gs, ks, vs, lse_s, delta_s, ps, dss, bh, q0, k0, bmask, fmask, moff, {names});
    __syncthreads();
#pragma unroll
    for (int u = 0; u < PER; ++u) {{
      const int t = threadIdx.x + u * THREADS;
      if (t < BK * Ev) {{
        const int c = t / Ev, e = t - c * Ev;
        A a = 0;
        for (int r = 0; r < BQ; ++r) a += ps[r * BK + c] * gs[r * E_MAX + e];
        dv_acc[u] += a;
      }}
      if (t < BK * E) {{
        const int c = t / E, e = t - c * E;
        A a = 0;
        for (int r = 0; r < BQ; ++r) a += dss[r * BK + c] * qs[r * E_MAX + e];
        dk_acc[u] += a;
      }}
    }}
  }}
#pragma unroll
  for (int u = 0; u < PER; ++u) {{
    const int t = threadIdx.x + u * THREADS;
    if (t < BK * Ev && k0 + t / Ev < S) dv[(bh * S + k0) * Ev + t] = (T)dv_acc[u];
    if (t < BK * E && k0 + t / E < S) dk[(bh * S + k0) * E + t] = (T)(dk_acc[u] * (A)scale);
  }}
}}

template <typename T, int BQ, int BK>
__device__ void attention_backward_q(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                     const bool* __restrict__ bmask, const T* __restrict__ fmask,
                                     const T* __restrict__ g, const typename acc<T>::type* __restrict__ lse,
                                     const typename acc<T>::type* __restrict__ delta, T* __restrict__ dq,
                                     T* __restrict__ ds_out, PROBLEM) {{
  typedef typename acc<T>::type A;
  __shared__ A qs[BQ * E_MAX], gs[BQ * E_MAX], ks[BK * KSTRIDE], vs[BK * KSTRIDE], dss[BQ * BK];
  __shared__ A lse_s[BQ], delta_s[BQ];
  const long long tiles = (L + BQ - 1) / BQ;
  const long long bh = blockIdx.x / tiles, q0 = (blockIdx.x % tiles) * BQ;
  const long long moff = (bh / heads) * msb + (bh % heads) * msh;
  const T* kb = k + bh * S * E;
  const T* vb = v + bh * S * Ev;
  load_rows<T, A>(qs, q + bh * L * E, q0, BQ, L, E, E_MAX);
  load_rows<T, A>(gs, g + bh * L * Ev, q0, BQ, L, Ev, E_MAX);
  load_row_stats<T, A, BQ>(lse_s, delta_s, lse, delta, bh * L, q0, L);
  constexpr int PER = (BQ * E_MAX + THREADS - 1) / THREADS;
  A dq_acc[PER];  // entry threadIdx.x + u * THREADS of [BQ, E]
#pragma unroll
  for (int u = 0; u < PER; ++u) dq_acc[u] = 0;
  const long long kend = causal ? min_ll(S, q0 + BQ) : S;
  for (long long k0 = 0; k0 < kend; k0 += BK) {{
    __syncthreads();  // the last tile is read (the first time round: the query rows are written)
    load_rows<T, A>(ks, kb, k0, BK, S, E, KSTRIDE);
    load_rows<T, A>(vs, vb, k0, BK, S, Ev, KSTRIDE);
    __syncthreads();
    tile_grads<T, A, BQ, BK>(qs, gs, ks, vs, lse_s, delta_s, nullptr, dss, bh, q0, k0, bmask, fmask, moff,
                             {names});
    __syncthreads();
    if (ds_out != nullptr) {{
      for (int t = threadIdx.x; t < BQ * BK; t += THREADS) {{
        const int r = t / BK, c = t - r * BK;
        if (q0 + r < L && k0 + c < S) ds_out[(bh * L + q0 + r) * S + k0 + c] = (T)dss[t];
      }}
    }}
#pragma unroll
    for (int u = 0; u < PER; ++u) {{
      const int t = threadIdx.x + u * THREADS;
      if (t < BQ * E) {{
        const int r = t / E, e = t - r * E;
        A a = 0;
        for (int c = 0; c < BK; ++c) a += dss[r * BK + c] * ks[c * KSTRIDE + e];
        dq_acc[u] += a;
      }}
    }}
  }}
#pragma unroll
  for (int u = 0; u < PER; ++u) {{
    const int t = threadIdx.x + u * THREADS;
    if (t < BQ * E && q0 + t / E < L) dq[(bh * L + q0) * E + t] = (T)(dq_acc[u] * (A)scale);
  }}
}}
"""

_ENTRY = r"""
extern "C" __global__ void attention_forward_{dtype}(const {t}* q, const {t}* k, const {t}* v, const bool* bmask,
                                                    const {t}* fmask, {t}* out, {a}* lse, {problem}) {{
  attention_forward<{t}, {bq}, {bk}>(q, k, v, bmask, fmask, out, lse, {names});
}}
extern "C" __global__ void attention_backward_kv_{dtype}(const {t}* q, const {t}* k, const {t}* v, const bool* bmask,
                                                        const {t}* fmask, const {t}* g, const {a}* lse,
                                                        const {a}* delta, {t}* dk, {t}* dv, {problem}) {{
  attention_backward_kv<{t}, {bq}, {bk}>(q, k, v, bmask, fmask, g, lse, delta, dk, dv, {names});
}}
extern "C" __global__ void attention_backward_q_{dtype}(const {t}* q, const {t}* k, const {t}* v, const bool* bmask,
                                                       const {t}* fmask, const {t}* g, const {a}* lse,
                                                       const {a}* delta, {t}* dq, {t}* ds, {problem}) {{
  attention_backward_q<{t}, {bq}, {bk}>(q, k, v, bmask, fmask, g, lse, delta, dq, ds, {names});
}}
"""

_KERNELS = ("attention_forward", "attention_backward_kv", "attention_backward_q")
NAMES = tuple(f"{kernel}_{dtype}" for kernel in _KERNELS for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + PHILOX + _TEMPLATES.replace("PROBLEM", _PROBLEM).format(
    e_max=E_MAX, kstride=_KSTRIDE, threads=THREADS, names=_PROBLEM_NAMES) + "".join(
    _ENTRY.format(dtype=dtype, t=t, a=ACC_CTYPES[dtype], bq=TILES[dtype][0], bk=TILES[dtype][1], problem=_PROBLEM,
                  names=_PROBLEM_NAMES)
    for dtype, t in CTYPES.items())


# ---- the Python side: shared-memory budget, broadcasting plan, guards --------------------

def shared_bytes(kernel: str, dtype: str) -> int:
    """The static shared memory one block of ``kernel`` (``forward``, ``backward_kv``,
    ``backward_q``) declares for ``dtype``, as the C declarations above size it."""
    bq, bk = TILES[dtype]
    rows = {"forward": bq * E_MAX + 2 * bk * _KSTRIDE + bq * bk + 3 * bq,
            "backward_kv": 2 * bk * _KSTRIDE + 2 * bq * E_MAX + 2 * bq * bk + 2 * bq,
            "backward_q": 2 * bq * E_MAX + 2 * bk * _KSTRIDE + bq * bk + 2 * bq}[kernel]
    return rows * acc_dtype(dtype).itemsize


def blocks(rows: int, tile: int, bh: int) -> int:
    """The grid of a kernel with one block per (bh, tile of ``tile`` rows): ``bh * ceil(rows / tile)``."""
    return bh * -(-rows // tile)


class Plan(NamedTuple):
    """How a call maps onto the kernels: the leading dims (at most two) that query, key,
    value and mask broadcast to, viewed as ``[batch, heads]``; the sizes; and the element
    strides over ``[batch, heads, L, S]`` of the mask made contiguous in its own shape
    (0 along the dims it broadcasts over; all 0 without a mask)."""
    lead: tuple
    batch: int
    heads: int
    L: int
    S: int
    E: int
    Ev: int
    mask_strides: tuple


def plan(qshape, kshape, vshape, mshape=None):
    """The ``Plan`` of query ``[..., L, E]``, key ``[..., S, E]``, value ``[..., S, Ev]`` and
    a mask broadcasting to ``[..., L, S]`` (or None); None where the kernels do not apply:
    shapes that do not broadcast, more than two leading dims, head dims outside
    ``[1, E_MAX]``."""
    if min(len(qshape), len(kshape), len(vshape)) < 2:
        return None
    L, E = qshape[-2:]
    S, Ev = kshape[-2], vshape[-1]
    if kshape[-1] != E or vshape[-2] != S or not (1 <= E <= E_MAX and 1 <= Ev <= E_MAX):
        return None
    leads = [tuple(qshape[:-2]), tuple(kshape[:-2]), tuple(vshape[:-2])]
    try:
        if mshape is not None:
            mshape = tuple(mshape)
            numpy.broadcast_shapes(mshape[-2:], (L, S))
            leads.append(mshape[:-2])
        lead = tuple(numpy.broadcast_shapes(*leads))
    except ValueError:
        return None
    if len(lead) > 2:
        return None
    batch, heads = ((1, 1) + lead)[-2:]
    strides = (0, 0, 0, 0)
    if mshape is not None:
        shape4 = (1,) * (4 - len(mshape)) + mshape
        contiguous = [int(numpy.prod(shape4[d + 1:])) for d in range(4)]
        strides = tuple(0 if n == 1 else st for n, st in zip(shape4, contiguous))
    return Plan(lead, batch, heads, L, S, E, Ev, strides)


def accepts(q, k, v, mask=None) -> bool:
    """Whether the kernels take these arrays: cupy query, key and value of one kernel dtype,
    a mask of none, bool or that dtype, and a ``plan``."""
    if not on_cupy(q, k, v):
        return False
    if mask is not None and not (is_cupy(mask) and (mask.dtype == numpy.bool_ or mask.dtype == q.dtype)):
        return False
    return plan(q.shape, k.shape, v.shape, None if mask is None else mask.shape) is not None


def _rows(a, lead, bh):
    """``a`` broadcast to ``lead`` and made ``[bh, n, width]`` C-contiguous (a copy only
    where it broadcasts or is not contiguous)."""
    import cupy
    a = cupy.broadcast_to(a, lead + a.shape[-2:])
    return cupy.ascontiguousarray(a).reshape((bh,) + a.shape[-2:])


def _args(p: Plan, causal: bool, scale: float, dropout_p: float, seed: int, offset: int) -> tuple:
    keep_scale = 0.0 if dropout_p >= 1.0 else 1.0 / (1.0 - dropout_p)
    return (numpy.int64(p.L), numpy.int64(p.S), numpy.int32(p.E), numpy.int32(p.Ev), numpy.int64(p.heads),
            *(numpy.int64(s) for s in p.mask_strides), numpy.int32(bool(causal)), numpy.float64(scale),
            numpy.float32(dropout_p), numpy.float64(keep_scale), *stream_args(seed, offset))


def dropout_shape(q, k, v, mask=None) -> tuple:
    """The shape ``[*lead, L, S]`` of the probabilities a dropout draws one number for, in
    this order (``accepts`` holds)."""
    p = plan(q.shape, k.shape, v.shape, None if mask is None else mask.shape)
    return p.lead + (p.L, p.S)


def _mask_pointers(mask):
    """(bool mask, float mask): the mask contiguous in its own shape as one of the two, null the other."""
    import cupy
    if mask is None:
        return pointer(None), pointer(None)
    mask = cupy.ascontiguousarray(mask)
    return (mask, pointer(None)) if mask.dtype == numpy.bool_ else (pointer(None), mask)


def forward(q, k, v, mask, causal: bool, scale: float, dropout_p: float = 0.0, seed: int = 0, offset: int = 0):
    """``(out, lse)``: attention of ``q`` ``[..., L, E]`` over ``k`` ``[..., S, E]`` and ``v``
    ``[..., S, Ev]`` (``accepts`` holds), ``out`` ``[*lead, L, Ev]`` and the per-row
    log-sum-exp of the scores ``[*lead, L]`` in the accumulation dtype (``-inf`` for a row
    with every key masked), ``lead`` the broadcast leading dims. ``mask``: bool (True takes
    part) or additive, or None; ``causal``: top-left aligned. ``dropout_p``: the probability
    of dropping each probability (the kept scaled by ``1 / (1 - dropout_p)``), drawn from the
    Philox stream ``(seed, offset)`` as ``dropout.mask`` of ``dropout_shape`` draws them."""
    import cupy

    from . import function
    p = plan(q.shape, k.shape, v.shape, None if mask is None else mask.shape)
    bh = p.batch * p.heads
    q3, k3, v3 = (_rows(a, p.lead, bh) for a in (q, k, v))
    bmask, fmask = _mask_pointers(mask)
    out = cupy.empty((bh, p.L, p.Ev), q3.dtype)
    lse = cupy.empty((bh, p.L), acc_dtype(q3.dtype))
    grid = blocks(p.L, TILES[q3.dtype.name][0], bh)
    if grid:
        function("attention", f"attention_forward_{q3.dtype.name}")((grid,), (THREADS,), (
            q3, k3, v3, bmask, fmask, out, lse, *_args(p, causal, scale, dropout_p, seed, offset)))
    return out.reshape(p.lead + (p.L, p.Ev)), lse.reshape(p.lead + (p.L,))


def backward(g, q, k, v, out, lse, mask, causal: bool, scale: float, mask_grad: bool = False, dropout_p: float = 0.0,
             seed: int = 0, offset: int = 0):
    """``(dq, dk, dv, ds)``: the gradients of ``forward`` for the output gradient ``g``
    ``[*lead, L, Ev]``, from its ``out`` and ``lse`` (and its dropout's ``dropout_p``,
    ``seed`` and ``offset``: the mask is drawn again); each in the broadcast shape
    ``[*lead, n, width]`` (the caller sums broadcast dims away), and ``ds`` the score
    gradient ``[*lead, L, S]`` (a float mask's gradient) when ``mask_grad``, else None."""
    import cupy

    from . import function
    p = plan(q.shape, k.shape, v.shape, None if mask is None else mask.shape)
    bh = p.batch * p.heads
    dtype = q.dtype
    q3, k3, v3 = (_rows(a, p.lead, bh) for a in (q, k, v))
    g3 = _rows(g.astype(dtype, copy=False), p.lead, bh)
    o3 = _rows(out, p.lead, bh)
    lse = cupy.ascontiguousarray(lse.reshape(bh, p.L))
    acc = acc_dtype(dtype)
    delta = cupy.ascontiguousarray((g3.astype(acc, copy=False) * o3).sum(axis=-1))  # D_i = rowsum(dO * O), [bh, L]
    bmask, fmask = _mask_pointers(mask)
    dq = cupy.empty((bh, p.L, p.E), dtype)
    dk = cupy.empty((bh, p.S, p.E), dtype)
    dv = cupy.empty((bh, p.S, p.Ev), dtype)
    ds = cupy.zeros((bh, p.L, p.S), dtype) if mask_grad else None
    bq, bk = TILES[dtype.name]
    args = _args(p, causal, scale, dropout_p, seed, offset)
    if blocks(p.S, bk, bh):
        function("attention", f"attention_backward_kv_{dtype.name}")((blocks(p.S, bk, bh),), (THREADS,), (
            q3, k3, v3, bmask, fmask, g3, lse, delta, dk, dv, *args))
    if blocks(p.L, bq, bh):
        function("attention", f"attention_backward_q_{dtype.name}")((blocks(p.L, bq, bh),), (THREADS,), (
            q3, k3, v3, bmask, fmask, g3, lse, delta, dq, pointer(ds), *args))
    lead = p.lead
    return (dq.reshape(lead + (p.L, p.E)), dk.reshape(lead + (p.S, p.E)), dv.reshape(lead + (p.S, p.Ev)),
            None if ds is None else ds.reshape(lead + (p.L, p.S)))
