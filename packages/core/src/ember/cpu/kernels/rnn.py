"""Per-step gate arithmetic of LSTM and GRU layers, forward and backward, as single passes.

The recurrent layer (``ops.rnn``) keeps its loop over time steps and its matrix products
(one input projection for all steps, one ``h @ W_hh^T`` per step, one product per weight
after the loop); these kernels replace the element-wise work between the products: per
step one pass from the pre-activations to the activations, the new cell state and the
output, and one pass from the output gradients to the pre-activation gradients.

Layouts are torch's (torch.nn.LSTM, torch.nn.GRU docs): LSTM gate columns ``i, f, g, o``
of ``[B, 4H]`` rows, ``c' = f*c + i*g``, ``h' = o*tanh(c')``; GRU columns ``r, z, n`` of
``[B, 3H]`` rows, ``n = tanh(x_n + r*(W_hn h + b_hn))``, ``h' = (1-z)*n + z*h``.

Every kernel works on rows ``[start, stop)`` (one batch row after another), so
``parallel_for`` can split a large batch; all arrays are C-contiguous 2-d row blocks of
one float dtype, and ``one`` is 1 in that dtype (float literals would promote float32
arithmetic to float64).
"""

from __future__ import annotations

from . import _math as M
from ._runtime import jit, parallel_for

# Each step's kernel follows a BLAS product whose worker threads are still spinning; handing
# half of the rows to ember's pool then waits for a core (LSTM(128, 256), batch 32, two
# threads: no faster with the split, first quartile 230 against 189 ms a training step on
# a loaded machine), so a step is split only when its gates are large enough to outlast it
SPLIT_MIN = 1 << 21  # gate elements per step

__all__ = ["lstm_forward_step", "lstm_backward_step", "gru_forward_step", "gru_backward_step"]


# the forward passes are bound by their exp/tanh polynomials: fused multiply-adds take 11%
# off (LSTM step [32, 1024] gates: 78 -> 70 us)
@jit(fastmath={"contract"})
def _lstm_fwd(start, stop, pre, proj, bias, c_prev, c, tanh_c, h):
    # pre: [B, 4H] recurrent products in, activations out; bias: [1, 4H] (b_ih + b_hh)
    hid = c.shape[1]
    for b in range(start, stop):
        for j in range(hid):
            i = M.sigmoid(pre[b, j] + proj[b, j] + bias[0, j])
            f = M.sigmoid(pre[b, hid + j] + proj[b, hid + j] + bias[0, hid + j])
            g = M.tanh(pre[b, 2 * hid + j] + proj[b, 2 * hid + j] + bias[0, 2 * hid + j])
            o = M.sigmoid(pre[b, 3 * hid + j] + proj[b, 3 * hid + j] + bias[0, 3 * hid + j])
            cn = f * c_prev[b, j] + i * g
            tc = M.tanh(cn)
            pre[b, j] = i
            pre[b, hid + j] = f
            pre[b, 2 * hid + j] = g
            pre[b, 3 * hid + j] = o
            c[b, j] = cn
            tanh_c[b, j] = tc
            h[b, j] = o * tc


@jit
def _lstm_bwd(start, stop, dh_a, dh_b, dc_carry, acts, c_prev, tanh_c, d_gates, one):
    # dh = dh_a + dh_b (the output's gradient plus the next step's); dc_carry: the next
    # step's cell gradient in, this step's c_prev gradient out
    hid = c_prev.shape[1]
    for b in range(start, stop):
        for j in range(hid):
            i = acts[b, j]
            f = acts[b, hid + j]
            g = acts[b, 2 * hid + j]
            o = acts[b, 3 * hid + j]
            tc = tanh_c[b, j]
            dh = dh_a[b, j] + dh_b[b, j]
            dc = dh * o * (one - tc * tc) + dc_carry[b, j]
            d_gates[b, j] = dc * g * (i - i * i)
            d_gates[b, hid + j] = dc * c_prev[b, j] * (f - f * f)
            d_gates[b, 2 * hid + j] = dc * i * (one - g * g)
            d_gates[b, 3 * hid + j] = dh * tc * (o - o * o)
            dc_carry[b, j] = dc * f


@jit(fastmath={"contract"})
def _gru_fwd(start, stop, rec, b_ih, b_hh, proj, h_prev, rz, n, hn, h, one):
    # rec: [B, 3H] recurrent products; proj: [B, 3H] input projections; biases [1, 3H]
    hid = h.shape[1]
    for b in range(start, stop):
        for j in range(hid):
            r = M.sigmoid(proj[b, j] + b_ih[0, j] + rec[b, j] + b_hh[0, j])
            z = M.sigmoid(proj[b, hid + j] + b_ih[0, hid + j] + rec[b, hid + j] + b_hh[0, hid + j])
            q = rec[b, 2 * hid + j] + b_hh[0, 2 * hid + j]
            nt = M.tanh(proj[b, 2 * hid + j] + b_ih[0, 2 * hid + j] + r * q)
            rz[b, j] = r
            rz[b, hid + j] = z
            hn[b, j] = q
            n[b, j] = nt
            h[b, j] = (one - z) * nt + z * h_prev[b, j]


@jit
def _gru_bwd(start, stop, dh_out, dh_w, dh_z, rz, n, hn, h_prev, d_proj, d_rec, one):
    # dh = dh_out + dh_w + dh_z: the output's gradient and the next step's two parts of
    # its h_prev gradient (the product with W_hh, and z*dh); dh_z gets this step's z*dh
    hid = n.shape[1]
    for b in range(start, stop):
        for j in range(hid):
            r = rz[b, j]
            z = rz[b, hid + j]
            nt = n[b, j]
            dh = dh_out[b, j] + dh_w[b, j] + dh_z[b, j]
            dn = dh * (one - z) * (one - nt * nt)
            dr = dn * hn[b, j] * (r - r * r)
            dz = dh * (h_prev[b, j] - nt) * (z - z * z)
            d_proj[b, j] = dr
            d_proj[b, hid + j] = dz
            d_proj[b, 2 * hid + j] = dn
            d_rec[b, j] = dr
            d_rec[b, hid + j] = dz
            d_rec[b, 2 * hid + j] = dn * r
            dh_z[b, j] = dh * z


def _one(a):
    return a.dtype.type(1)


def _run(kernel, n, size, *args):
    if size < SPLIT_MIN:
        kernel(0, n, *args)
    else:
        parallel_for(kernel, n, *args, work_per_item=size // max(n, 1))


def lstm_forward_step(pre, proj, bias, c_prev, c, tanh_c, h):
    """One LSTM step's gates: ``pre`` ``[B, 4H]`` holds ``h_prev @ W_hh^T`` and is overwritten
    with the activations ``i, f, g, o``; ``proj`` ``[B, 4H]`` the input projection,
    ``bias`` ``[1, 4H]`` the sum of both biases; writes ``c`` (``f*c_prev + i*g``),
    ``tanh_c`` and ``h`` (``o*tanh(c)``), each ``[B, H]``."""
    _run(_lstm_fwd, pre.shape[0], pre.size, pre, proj, bias, c_prev, c, tanh_c, h)


def lstm_backward_step(dh_a, dh_b, dc_carry, acts, c_prev, tanh_c, d_gates):
    """One LSTM step backward: ``dh = dh_a + dh_b`` ``[B, H]`` is the gradient of the step's
    ``h``, ``dc_carry`` ``[B, H]`` that of its ``c`` (overwritten with the gradient of
    ``c_prev``); writes the pre-activation gradients ``d_gates`` ``[B, 4H]``."""
    _run(_lstm_bwd, acts.shape[0], acts.size, dh_a, dh_b, dc_carry, acts, c_prev, tanh_c, d_gates, _one(acts))


def gru_forward_step(rec, b_ih, b_hh, proj, h_prev, rz, n, hn, h):
    """One GRU step's gates: ``rec`` ``[B, 3H]`` is ``h_prev @ W_hh^T``, ``proj`` ``[B, 3H]``
    ``x @ W_ih^T``, ``b_ih``, ``b_hh`` ``[1, 3H]``; writes ``rz`` ``[B, 2H]`` (the
    sigmoids), ``n`` and ``hn`` (``W_hn h + b_hn``) ``[B, H]`` and ``h`` ``[B, H]``."""
    _run(_gru_fwd, rec.shape[0], rec.size, rec, b_ih, b_hh, proj, h_prev, rz, n, hn, h, _one(rec))


def gru_backward_step(dh_out, dh_w, dh_z, rz, n, hn, h_prev, d_proj, d_rec):
    """One GRU step backward: ``dh = dh_out + dh_w + dh_z`` ``[B, H]`` is the gradient of the
    step's ``h``; writes ``d_proj`` (gradient of the input projection), ``d_rec`` (of the
    recurrent product ``W_hh h + b_hh``), both ``[B, 3H]``, and overwrites ``dh_z`` with
    ``z*dh``, the part of ``h_prev``'s gradient that does not pass through ``W_hh``."""
    _run(_gru_bwd, rz.shape[0], d_proj.size, dh_out, dh_w, dh_z, rz, n, hn, h_prev, d_proj, d_rec, _one(rz))
