"""Per-step gate arithmetic of LSTM and GRU layers, forward and backward: the CPU kernels'
functions (``ember/cpu/kernels/rnn.py``: ``lstm_forward_step``, ``lstm_backward_step``,
``gru_forward_step``, ``gru_backward_step``), same arguments and layouts, on cupy arrays.

The layer (``ops.rnn``) keeps its loop over time steps and its matrix products; these
kernels replace the element-wise work between them, one launch per step each way. Layouts
are torch's (torch.nn.LSTM, torch.nn.GRU): LSTM gate columns ``i, f, g, o`` of ``[B, 4H]``
rows, ``c' = f*c + i*g``, ``h' = o*tanh(c')``; GRU columns ``r, z, n`` of ``[B, 3H]`` rows,
``n = tanh(x_n + b_in + r*(W_hn h + b_hn))``, ``h' = (1-z)*n + z*h``. Backward: the
derivatives from the activations' values (``s' = s(1-s)``, ``tanh' = 1 - tanh^2``), as
the CPU kernels. All arrays are C-contiguous 2-d row blocks of one float dtype (slices of
whole rows of the layer's buffers); biases are ``[1, G*H]`` rows. The arithmetic runs in
the accumulation type (float32 for float16 and bfloat16, each value rounded once, on its
store).

Launch: a grid-stride loop over the ``B * H`` (row, unit) pairs, one pair per thread.
"""

import numpy

from ._common import BLOCK, CTYPES, GRID_LOOP, KERNEL_PRELUDE, grid, on_cupy

_TEMPLATES = r"""
template <typename A> __device__ __forceinline__ A sigmoid(A v) { return A(1) / (A(1) + exp(-v)); }

// the arithmetic runs in A, acc<T>'s type; each array is read into A and written back as T

// pre: [B, 4H] recurrent products in, the activations i, f, g, o out; bias: [1, 4H] (b_ih + b_hh)
template <typename T>
__device__ void lstm_forward(T* __restrict__ pre, const T* __restrict__ proj, const T* __restrict__ bias,
                             const T* __restrict__ c_prev, T* __restrict__ c, T* __restrict__ tanh_c,
                             T* __restrict__ h, long long rows, long long hid) {
  typedef typename acc<T>::type A;
  GRID_LOOP(e, rows * hid) {
    const long long b = e / hid, j = e - b * hid, r = b * 4 * hid;
    const A i = sigmoid((A)pre[r + j] + (A)proj[r + j] + (A)bias[j]);
    const A f = sigmoid((A)pre[r + hid + j] + (A)proj[r + hid + j] + (A)bias[hid + j]);
    const A g = tanh((A)pre[r + 2 * hid + j] + (A)proj[r + 2 * hid + j] + (A)bias[2 * hid + j]);
    const A o = sigmoid((A)pre[r + 3 * hid + j] + (A)proj[r + 3 * hid + j] + (A)bias[3 * hid + j]);
    const A cn = f * (A)c_prev[e] + i * g;
    const A tc = tanh(cn);
    pre[r + j] = (T)i;
    pre[r + hid + j] = (T)f;
    pre[r + 2 * hid + j] = (T)g;
    pre[r + 3 * hid + j] = (T)o;
    c[e] = (T)cn;
    tanh_c[e] = (T)tc;
    h[e] = (T)(o * tc);
  }
}

// dh = dh_a + dh_b; dc_carry: the next step's cell gradient in, this step's c_prev gradient out
template <typename T>
__device__ void lstm_backward(const T* __restrict__ dh_a, const T* __restrict__ dh_b, T* __restrict__ dc_carry,
                              const T* __restrict__ acts, const T* __restrict__ c_prev, const T* __restrict__ tanh_c,
                              T* __restrict__ d_gates, long long rows, long long hid) {
  typedef typename acc<T>::type A;
  const A one = 1;
  GRID_LOOP(e, rows * hid) {
    const long long b = e / hid, j = e - b * hid, r = b * 4 * hid;
    const A i = acts[r + j], f = acts[r + hid + j], g = acts[r + 2 * hid + j], o = acts[r + 3 * hid + j];
    const A tc = tanh_c[e];
    const A dh = (A)dh_a[e] + (A)dh_b[e];
    const A dc = dh * o * (one - tc * tc) + (A)dc_carry[e];
    d_gates[r + j] = (T)(dc * g * (i - i * i));
    d_gates[r + hid + j] = (T)(dc * (A)c_prev[e] * (f - f * f));
    d_gates[r + 2 * hid + j] = (T)(dc * i * (one - g * g));
    d_gates[r + 3 * hid + j] = (T)(dh * tc * (o - o * o));
    dc_carry[e] = (T)(dc * f);
  }
}

// rec: [B, 3H] recurrent products h_prev W_hh^T; proj: [B, 3H] input projections; biases [1, 3H]
template <typename T>
__device__ void gru_forward(const T* __restrict__ rec, const T* __restrict__ b_ih, const T* __restrict__ b_hh,
                            const T* __restrict__ proj, const T* __restrict__ h_prev, T* __restrict__ rz,
                            T* __restrict__ n, T* __restrict__ hn, T* __restrict__ h, long long rows, long long hid) {
  typedef typename acc<T>::type A;
  const A one = 1;
  GRID_LOOP(e, rows * hid) {
    const long long b = e / hid, j = e - b * hid, r3 = b * 3 * hid, r2 = b * 2 * hid;
    const A r = sigmoid((A)proj[r3 + j] + (A)b_ih[j] + (A)rec[r3 + j] + (A)b_hh[j]);
    const A z = sigmoid((A)proj[r3 + hid + j] + (A)b_ih[hid + j] + (A)rec[r3 + hid + j] + (A)b_hh[hid + j]);
    const A q = (A)rec[r3 + 2 * hid + j] + (A)b_hh[2 * hid + j];
    const A nt = tanh((A)proj[r3 + 2 * hid + j] + (A)b_ih[2 * hid + j] + r * q);
    rz[r2 + j] = (T)r;
    rz[r2 + hid + j] = (T)z;
    hn[e] = (T)q;
    n[e] = (T)nt;
    h[e] = (T)((one - z) * nt + z * (A)h_prev[e]);
  }
}

// dh = dh_out + dh_w + dh_z; dh_z gets this step's z * dh (h_prev's gradient outside W_hh)
template <typename T>
__device__ void gru_backward(const T* __restrict__ dh_out, const T* __restrict__ dh_w, T* __restrict__ dh_z,
                             const T* __restrict__ rz, const T* __restrict__ n, const T* __restrict__ hn,
                             const T* __restrict__ h_prev, T* __restrict__ d_proj, T* __restrict__ d_rec,
                             long long rows, long long hid) {
  typedef typename acc<T>::type A;
  const A one = 1;
  GRID_LOOP(e, rows * hid) {
    const long long b = e / hid, j = e - b * hid, r3 = b * 3 * hid, r2 = b * 2 * hid;
    const A r = rz[r2 + j], z = rz[r2 + hid + j], nt = n[e];
    const A dh = (A)dh_out[e] + (A)dh_w[e] + (A)dh_z[e];
    const A dn = dh * (one - z) * (one - nt * nt);
    const A dr = dn * (A)hn[e] * (r - r * r);
    const A dz = dh * ((A)h_prev[e] - nt) * (z - z * z);
    d_proj[r3 + j] = (T)dr;
    d_proj[r3 + hid + j] = (T)dz;
    d_proj[r3 + 2 * hid + j] = (T)dn;
    d_rec[r3 + j] = (T)dr;
    d_rec[r3 + hid + j] = (T)dz;
    d_rec[r3 + 2 * hid + j] = (T)(dn * r);
    dh_z[e] = (T)(dh * z);
  }
}
"""

_ENTRY = r"""
extern "C" __global__ void lstm_forward_{dtype}({t}* pre, const {t}* proj, const {t}* bias, const {t}* c_prev,
                                               {t}* c, {t}* tanh_c, {t}* h, long long rows, long long hid) {{
  lstm_forward<{t}>(pre, proj, bias, c_prev, c, tanh_c, h, rows, hid);
}}
extern "C" __global__ void lstm_backward_{dtype}(const {t}* dh_a, const {t}* dh_b, {t}* dc_carry, const {t}* acts,
                                                const {t}* c_prev, const {t}* tanh_c, {t}* d_gates, long long rows,
                                                long long hid) {{
  lstm_backward<{t}>(dh_a, dh_b, dc_carry, acts, c_prev, tanh_c, d_gates, rows, hid);
}}
extern "C" __global__ void gru_forward_{dtype}(const {t}* rec, const {t}* b_ih, const {t}* b_hh, const {t}* proj,
                                              const {t}* h_prev, {t}* rz, {t}* n, {t}* hn, {t}* h, long long rows,
                                              long long hid) {{
  gru_forward<{t}>(rec, b_ih, b_hh, proj, h_prev, rz, n, hn, h, rows, hid);
}}
extern "C" __global__ void gru_backward_{dtype}(const {t}* dh_out, const {t}* dh_w, {t}* dh_z, const {t}* rz,
                                               const {t}* n, const {t}* hn, const {t}* h_prev, {t}* d_proj,
                                               {t}* d_rec, long long rows, long long hid) {{
  gru_backward<{t}>(dh_out, dh_w, dh_z, rz, n, hn, h_prev, d_proj, d_rec, rows, hid);
}}
"""

NAMES = tuple(f"{cell}_{direction}_{dtype}" for cell in ("lstm", "gru") for direction in ("forward", "backward")
              for dtype in CTYPES)
SOURCE = KERNEL_PRELUDE + GRID_LOOP + _TEMPLATES + "".join(_ENTRY.format(dtype=dtype, t=t)
                                                           for dtype, t in CTYPES.items())


def accepts(*arrays) -> bool:
    """Whether the kernels take these arrays (None skipped): cupy arrays of one kernel dtype."""
    return on_cupy(*arrays)


def _run(name, rows, hid, *arrays):
    from . import function
    if rows * hid:
        function("rnn", f"{name}_{arrays[0].dtype.name}")(grid(rows * hid), (BLOCK,),
                                                          (*arrays, numpy.int64(rows), numpy.int64(hid)))


def lstm_forward_step(pre, proj, bias, c_prev, c, tanh_c, h):
    """One LSTM step's gates: ``pre`` ``[B, 4H]`` holds ``h_prev @ W_hh^T`` and is overwritten
    with the activations ``i, f, g, o``; ``proj`` ``[B, 4H]`` the input projection, ``bias``
    ``[1, 4H]`` the sum of both biases; writes ``c`` (``f*c_prev + i*g``), ``tanh_c`` and
    ``h`` (``o*tanh(c)``), each ``[B, H]``."""
    _run("lstm_forward", c.shape[0], c.shape[1], pre, proj, bias, c_prev, c, tanh_c, h)


def lstm_backward_step(dh_a, dh_b, dc_carry, acts, c_prev, tanh_c, d_gates):
    """One LSTM step backward: ``dh = dh_a + dh_b`` ``[B, H]`` is the gradient of the step's
    ``h``, ``dc_carry`` ``[B, H]`` that of its ``c`` (overwritten with the gradient of
    ``c_prev``); writes the pre-activation gradients ``d_gates`` ``[B, 4H]``."""
    _run("lstm_backward", c_prev.shape[0], c_prev.shape[1], dh_a, dh_b, dc_carry, acts, c_prev, tanh_c, d_gates)


def gru_forward_step(rec, b_ih, b_hh, proj, h_prev, rz, n, hn, h):
    """One GRU step's gates: ``rec`` ``[B, 3H]`` is ``h_prev @ W_hh^T``, ``proj`` ``[B, 3H]``
    ``x @ W_ih^T``, ``b_ih``, ``b_hh`` ``[1, 3H]``; writes ``rz`` ``[B, 2H]`` (the sigmoids),
    ``n`` and ``hn`` (``W_hn h + b_hn``) ``[B, H]`` and ``h`` ``[B, H]``."""
    _run("gru_forward", h.shape[0], h.shape[1], rec, b_ih, b_hh, proj, h_prev, rz, n, hn, h)


def gru_backward_step(dh_out, dh_w, dh_z, rz, n, hn, h_prev, d_proj, d_rec):
    """One GRU step backward: ``dh = dh_out + dh_w + dh_z`` ``[B, H]`` is the gradient of the
    step's ``h``; writes ``d_proj`` and ``d_rec`` ``[B, 3H]`` and overwrites ``dh_z`` with
    ``z*dh``, the part of ``h_prev``'s gradient that does not pass through ``W_hh``."""
    _run("gru_backward", n.shape[0], n.shape[1], dh_out, dh_w, dh_z, rz, n, hn, h_prev, d_proj, d_rec)
