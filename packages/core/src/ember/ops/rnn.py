"""One recurrent layer in one direction (the building block of torch.nn.RNN, LSTM, GRU) as
one graph node.

The sequence is held in the packed layout of torch.nn.utils.rnn.PackedSequence: ``x`` is
``[N, I]``, the rows of time step ``t`` are ``batch_sizes[t]`` consecutive rows (batch
sizes never grow with ``t``); a padded ``[T, B, I]`` input is the special case of ``T``
steps of ``B`` rows.  Sequence ``b`` is active at step ``t`` when ``b < batch_sizes[t]``.

The forward runs on raw arrays: one matrix product gives the input projections of every
step, then each step does one ``h @ W_hh^T`` and the gate arithmetic.  The gradient rule
is backpropagation through time on arrays, ending in one product per weight over all
steps.  When a graph of the gradient is wanted (``create_graph=True``) the rule instead
replays the layer with ember ops (``composed_layer``) and differentiates that, so higher
derivatives are exact.

Gate layouts and equations are torch's (torch.nn.LSTM, GRU, RNN docs): LSTM rows
``i, f, g, o``, ``c' = f*c + i*g``, ``h' = o*tanh(c')`` (then ``h' @ W_hr^T`` with a
projection); GRU rows ``r, z, n``, ``n = tanh(x_n + b_in + r*(W_hn h + b_hn))``,
``h' = (1-z)*n + z*h``; RNN ``h' = act(W_ih x + b_ih + W_hh h + b_hh)``.
"""

from __future__ import annotations

from .._autocast import cast_inputs
from .._blas import matmul as blas_matmul
from .._blas import native_threads
from .._tensor import _make
from ..autograd import grad_mode
from ..cpu import kernels
from ..cuda.kernels import rnn as cuda_rnn
from ._helpers import _STATE, be, needs_grad, record

__all__ = ["rnn_layer", "composed_layer"]

_MODES = ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")


def rnn_layer(mode, x, batch_sizes, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    """Run one layer of ``mode`` ('LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU') over a sequence.

    ``x`` ``[N, I]`` in packed layout with ``batch_sizes`` (Python ints, non-increasing,
    summing to N); ``hx`` ``[B, H_out]``; ``cx`` ``[B, H]`` (LSTM only, else None);
    weights as torch's ``weight_ih_l0`` ``[G*H, I]``, ``weight_hh_l0`` ``[G*H, H_out]``,
    biases ``[G*H]``, ``w_hr`` ``[H_out, H]`` (LSTM projection).  ``reverse`` runs from
    the last step to the first.  Returns ``(out [N, H_out], h_n [B, H_out], c_n)``, with
    ``c_n`` ``[B, H]`` for LSTM and None otherwise."""
    if mode not in _MODES:
        raise ValueError(f"Unrecognized RNN mode: {mode}")
    if mode != "GRU":  # torch's autocast runs its LSTM and Elman layers in the lower dtype, not GRU
        x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr = cast_inputs("lower", x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    batch_sizes = tuple(int(b) for b in batch_sizes)
    arrays = [None if t is None else t._data for t in (x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)]
    xp = be(x).xp
    with native_threads():  # a product per step: OpenBLAS's own threads hand off faster
        out, hn, cn, saved = _FORWARD[mode](xp, batch_sizes, reverse, *arrays, fused=_fused(mode, *arrays))
    dt = x.dtype
    r_out, r_hn = _make(out, dt), _make(hn, dt)
    r_cn = None if cn is None else _make(cn, dt)
    inputs = (x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    if needs_grad(*[t for t in inputs if t is not None]):
        outs = (r_out, r_hn) if r_cn is None else (r_out, r_hn, r_cn)
        name = {"LSTM": "MkldnnRnnLayerBackward0"}.get(mode, "RnnLayerBackward0")
        record(name, _layer_rule, inputs, outs, (mode, batch_sizes, reverse) + inputs + (saved,))
    return r_out, r_hn, r_cn


def _fused(mode, *arrays):
    """The gate kernels when they take these arrays: the compiled CPU ones (``cpu.kernels.rnn``)
    for numpy arrays, the CUDA ones (``cuda.kernels.rnn``, the same functions) for cupy
    arrays; else None (the array module's gate arithmetic runs)."""
    if mode not in ("LSTM", "GRU"):
        return None
    present = [a for a in arrays if a is not None]
    if kernels.accepts(*present):
        return kernels.rnn
    if cuda_rnn.accepts(*present):
        return cuda_rnn
    return None


# ---- step schedule -----------------------------------------------------------------

def _schedule(batch_sizes, reverse):
    """(row offset, batch size) of each step in the order the layer visits them."""
    offs, o = [], 0
    for b in batch_sizes:
        offs.append(o)
        o += b
    steps = list(zip(offs, batch_sizes))
    return steps[::-1] if reverse else steps


def _carry_in(prev, init, prev_bs, bs, dst, finals):
    """Write the state entering a step into ``dst`` ([bs, ...]): rows still running come
    from the previous step, rows starting now (reverse direction) from ``init``; rows
    that stopped (forward direction) leave their last state in ``finals``."""
    if prev is None:
        dst[...] = init[:bs]
        return
    m = min(prev_bs, bs)
    dst[:m] = prev[:m]
    if bs > prev_bs:
        dst[prev_bs:] = init[prev_bs:bs]
    elif bs < prev_bs:
        finals[bs:prev_bs] = prev[bs:prev_bs]


def _input_projection(xp, x, w_ih, *biases):
    proj = blas_matmul(x, w_ih.T)
    for b in biases:
        if b is not None:
            proj += b
    return proj


def _bias_row(xp, width, dt, *biases):
    """The sum of the given biases (None: absent) as a ``[1, width]`` row, for the kernels."""
    row = xp.zeros((1, width), dtype=dt)
    for b in biases:
        if b is not None:
            row += b
    return row


# ---- forward on arrays ---------------------------------------------------------------

def _lstm_forward(xp, batch_sizes, reverse, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, fused=None):
    n, hid = x.shape[0], w_hh.shape[0] // 4
    dt = x.dtype
    # the kernels add the biases as they read the projection (one pass over [N, 4H] less)
    proj = _input_projection(xp, x, w_ih, *((b_ih, b_hh) if fused is None else ()))
    if fused is None:
        # sigmoid(v) = 0.5 + 0.5*tanh(v/2): one tanh over all four gates, with the halving
        # folded into the input projection and the recurrent weight
        scale = xp.full((4 * hid,), 0.5, dtype=dt)
        scale[2 * hid:3 * hid] = 1
        shift = xp.full((4 * hid,), 0.5, dtype=dt)
        shift[2 * hid:3 * hid] = 0
        proj *= scale
        whh_t = xp.ascontiguousarray((w_hh * scale[:, None]).T)  # BLAS is faster on a contiguous right operand
    else:
        whh_t = xp.ascontiguousarray(w_hh.T)
        bias = _bias_row(xp, 4 * hid, dt, b_ih, b_hh)
    acts = xp.empty((n, 4 * hid), dtype=dt)
    hprev = xp.empty((n, h0.shape[1]), dtype=dt)
    cprev, cs, tcs = (xp.empty((n, hid), dtype=dt) for _ in range(3))
    hpre = xp.empty((n, hid), dtype=dt) if w_hr is not None else None
    out = xp.empty((n, h0.shape[1]), dtype=dt)
    hn, cn = xp.empty_like(h0), xp.empty_like(c0)
    prev_h = prev_c = None
    prev_bs = 0
    for o0, bs in _schedule(batch_sizes, reverse):
        rows = slice(o0, o0 + bs)
        hp, cp = hprev[rows], cprev[rows]
        _carry_in(prev_h, h0, prev_bs, bs, hp, hn)
        _carry_in(prev_c, c0, prev_bs, bs, cp, cn)
        a, c, tc = acts[rows], cs[rows], tcs[rows]
        h = out[rows] if w_hr is None else hpre[rows]
        blas_matmul(hp, whh_t, out=a)
        if fused is not None:
            fused.lstm_forward_step(a, proj[rows], bias, cp, c, tc, h)
        else:
            a += proj[rows]
            xp.tanh(a, out=a)
            a *= scale
            a += shift
            xp.multiply(a[:, hid:2 * hid], cp, out=c)
            c += a[:, :hid] * a[:, 2 * hid:3 * hid]
            xp.tanh(c, out=tc)
            xp.multiply(a[:, 3 * hid:], tc, out=h)
        if w_hr is not None:
            blas_matmul(h, w_hr.T, out=out[rows])
        prev_h, prev_c, prev_bs = out[rows], c, bs
    hn[:prev_bs] = prev_h
    cn[:prev_bs] = prev_c
    return out, hn, cn, (acts, hprev, cprev, tcs, hpre)


def _gru_forward(xp, batch_sizes, reverse, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, fused=None):
    n, hid = x.shape[0], w_hh.shape[0] // 3
    dt = x.dtype
    proj = _input_projection(xp, x, w_ih, *((b_ih,) if fused is None else ()))
    whh_t = xp.ascontiguousarray(w_hh.T)
    rz, ns, hns = xp.empty((n, 2 * hid), dtype=dt), xp.empty((n, hid), dtype=dt), xp.empty((n, hid), dtype=dt)
    hprev, out = xp.empty((n, hid), dtype=dt), xp.empty((n, hid), dtype=dt)
    hn = xp.empty_like(h0)
    if fused is not None:
        rec = xp.empty((max(batch_sizes, default=0), 3 * hid), dtype=dt)
        bias_x, bias_h = _bias_row(xp, 3 * hid, dt, b_ih), _bias_row(xp, 3 * hid, dt, b_hh)
    prev_h, prev_bs = None, 0
    for o0, bs in _schedule(batch_sizes, reverse):
        rows = slice(o0, o0 + bs)
        hp = hprev[rows]
        _carry_in(prev_h, h0, prev_bs, bs, hp, hn)
        h = out[rows]
        if fused is not None:
            blas_matmul(hp, whh_t, out=rec[:bs])
            fused.gru_forward_step(rec[:bs], bias_x, bias_h, proj[rows], hp, rz[rows], ns[rows], hns[rows], h)
            prev_h, prev_bs = h, bs
            continue
        hh = blas_matmul(hp, whh_t)
        if b_hh is not None:
            hh += b_hh
        p = proj[rows]
        g = rz[rows]
        xp.add(p[:, :2 * hid], hh[:, :2 * hid], out=g)
        g *= 0.5
        xp.tanh(g, out=g)
        g *= 0.5
        g += 0.5
        hns[rows] = hh[:, 2 * hid:]
        nt = ns[rows]
        xp.multiply(g[:, :hid], hh[:, 2 * hid:], out=nt)
        nt += p[:, 2 * hid:]
        xp.tanh(nt, out=nt)
        xp.subtract(hp, nt, out=h)
        h *= g[:, hid:]
        h += nt
        prev_h, prev_bs = h, bs
    hn[:prev_bs] = prev_h
    return out, hn, None, (rz, ns, hns, hprev)


def _elman_forward(relu):
    def forward(xp, batch_sizes, reverse, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, fused=None):
        n, hid = x.shape[0], w_hh.shape[0]
        proj = _input_projection(xp, x, w_ih, b_ih, b_hh)
        whh_t = xp.ascontiguousarray(w_hh.T)
        hprev, out = xp.empty((n, hid), dtype=x.dtype), xp.empty((n, hid), dtype=x.dtype)
        hn = xp.empty_like(h0)
        prev_h, prev_bs = None, 0
        for o0, bs in _schedule(batch_sizes, reverse):
            rows = slice(o0, o0 + bs)
            hp = hprev[rows]
            _carry_in(prev_h, h0, prev_bs, bs, hp, hn)
            h = out[rows]
            blas_matmul(hp, whh_t, out=h)
            h += proj[rows]
            if relu:
                xp.maximum(h, 0, out=h)
            else:
                xp.tanh(h, out=h)
            prev_h, prev_bs = h, bs
        hn[:prev_bs] = prev_h
        # the activation's derivative from its value, for the gradient rule
        deriv = (out > 0).astype(out.dtype) if relu else 1 - out * out
        return out, hn, None, (hprev, deriv)
    return forward


_FORWARD = {"LSTM": _lstm_forward, "GRU": _gru_forward, "RNN_TANH": _elman_forward(False),
            "RNN_RELU": _elman_forward(True)}


# ---- backpropagation through time on arrays ------------------------------------------

def _lstm_backward(xp, batch_sizes, reverse, d_out, d_hn, d_cn, x, w_hh, w_hr, saved, fused=None):
    acts, hprev, cprev, tcs, hpre = saved
    if fused is not None:
        return _lstm_backward_fused(fused, xp, batch_sizes, reverse, d_out, d_hn, d_cn, w_hh, w_hr, saved)
    hid = w_hh.shape[0] // 4
    d_gates = xp.empty_like(acts)
    # each step's activation derivatives, from the activations' values (computed step by
    # step: the [bs, 4H] slices stay in cache): a(1-a) for the sigmoids, 1-g^2 for g
    deriv = xp.empty((max(batch_sizes, default=0), 4 * hid), dtype=acts.dtype)
    one_minus = xp.empty((deriv.shape[0], hid), dtype=acts.dtype)
    dh_carry, dc_carry = d_hn.copy(), d_cn.copy()
    d_h = xp.empty_like(d_out) if w_hr is not None else None
    for o0, bs in reversed(_schedule(batch_sizes, reverse)):
        rows = slice(o0, o0 + bs)
        dh = d_out[rows] + dh_carry[:bs]
        if w_hr is not None:
            d_h[rows] = dh
            dh = blas_matmul(dh, w_hr)
        a, dg, dv, om = acts[rows], d_gates[rows], deriv[:bs], one_minus[:bs]
        xp.subtract(1, a, out=dv)
        dv *= a
        gate = a[:, 2 * hid:3 * hid]
        xp.multiply(gate, gate, out=dv[:, 2 * hid:3 * hid])
        xp.subtract(1, dv[:, 2 * hid:3 * hid], out=dv[:, 2 * hid:3 * hid])
        tc = tcs[rows]
        xp.multiply(tc, tc, out=om)
        xp.subtract(1, om, out=om)
        om *= a[:, 3 * hid:]  # o * tanh'(c)
        dc = dh * om
        dc += dc_carry[:bs]
        xp.multiply(dc, a[:, 2 * hid:3 * hid], out=dg[:, :hid])
        xp.multiply(dc, cprev[rows], out=dg[:, hid:2 * hid])
        xp.multiply(dc, a[:, :hid], out=dg[:, 2 * hid:3 * hid])
        xp.multiply(dh, tc, out=dg[:, 3 * hid:])
        dg *= dv
        xp.multiply(dc, a[:, hid:2 * hid], out=dc_carry[:bs])
        blas_matmul(dg, w_hh, out=dh_carry[:bs])
    d_whr = None if w_hr is None else blas_matmul(d_h.T, hpre)
    return d_gates, d_gates, hprev, dh_carry, dc_carry, d_whr


def _lstm_backward_fused(fused, xp, batch_sizes, reverse, d_out, d_hn, d_cn, w_hh, w_hr, saved):
    """``_lstm_backward`` with each step's gate arithmetic as one compiled pass."""
    acts, hprev, cprev, tcs, hpre = saved
    d_out = xp.ascontiguousarray(d_out)  # a broadcast gradient (of a sum) is read row by row
    d_gates = xp.empty_like(acts)
    dh_carry, dc_carry = d_hn.copy(), d_cn.copy()
    if w_hr is not None:
        d_h = xp.empty_like(d_out)
        no_carry = xp.zeros((max(batch_sizes, default=0), w_hh.shape[0] // 4), dtype=acts.dtype)
    for o0, bs in reversed(_schedule(batch_sizes, reverse)):
        rows = slice(o0, o0 + bs)
        if w_hr is None:
            dh_a, dh_b = d_out[rows], dh_carry[:bs]
        else:
            dh = xp.add(d_out[rows], dh_carry[:bs], out=d_h[rows])
            dh_a, dh_b = blas_matmul(dh, w_hr), no_carry[:bs]
        fused.lstm_backward_step(dh_a, dh_b, dc_carry[:bs], acts[rows], cprev[rows], tcs[rows], d_gates[rows])
        blas_matmul(d_gates[rows], w_hh, out=dh_carry[:bs])
    d_whr = None if w_hr is None else blas_matmul(d_h.T, hpre)
    return d_gates, d_gates, hprev, dh_carry, dc_carry, d_whr


def _gru_backward(xp, batch_sizes, reverse, d_out, d_hn, d_cn, x, w_hh, w_hr, saved, fused=None):
    rz, ns, hns, hprev = saved
    hid = w_hh.shape[0] // 3
    d_proj = xp.empty((x.shape[0], 3 * hid), dtype=x.dtype)
    d_hh = xp.empty_like(d_proj)
    if fused is not None:
        # h_prev's gradient in two parts: z*dh (the kernel's) and the product with W_hh
        d_out = xp.ascontiguousarray(d_out)
        dh_z = d_hn.copy()
        dh_w = xp.zeros_like(dh_z)
        for o0, bs in reversed(_schedule(batch_sizes, reverse)):
            rows = slice(o0, o0 + bs)
            fused.gru_backward_step(d_out[rows], dh_w[:bs], dh_z[:bs], rz[rows], ns[rows], hns[rows], hprev[rows],
                                    d_proj[rows], d_hh[rows])
            blas_matmul(d_hh[rows], w_hh, out=dh_w[:bs])
        dh_z += dh_w
        return d_proj, d_hh, hprev, dh_z, None, None
    rz_deriv = rz - rz * rz
    n_deriv = 1 - ns * ns
    dh_carry = d_hn.copy()
    for o0, bs in reversed(_schedule(batch_sizes, reverse)):
        rows = slice(o0, o0 + bs)
        dh = d_out[rows] + dh_carry[:bs]
        z, nt, hp = rz[rows, hid:], ns[rows], hprev[rows]
        dp, dq = d_proj[rows], d_hh[rows]
        dn = dp[:, 2 * hid:]
        xp.multiply(dh, 1 - z, out=dn)
        dn *= n_deriv[rows]
        xp.multiply(dn, hns[rows], out=dp[:, :hid])
        xp.multiply(dh, hp - nt, out=dp[:, hid:2 * hid])
        dp[:, :2 * hid] *= rz_deriv[rows]
        dq[:, :2 * hid] = dp[:, :2 * hid]
        xp.multiply(dn, rz[rows, :hid], out=dq[:, 2 * hid:])
        carry = dh * z
        carry += blas_matmul(dq, w_hh)
        dh_carry[:bs] = carry
    return d_proj, d_hh, hprev, dh_carry, None, None


def _elman_backward(xp, batch_sizes, reverse, d_out, d_hn, d_cn, x, w_hh, w_hr, saved, fused=None):
    hprev, deriv = saved
    d_pre = xp.empty_like(deriv)
    dh_carry = d_hn.copy()
    for o0, bs in reversed(_schedule(batch_sizes, reverse)):
        rows = slice(o0, o0 + bs)
        dp = d_pre[rows]
        xp.add(d_out[rows], dh_carry[:bs], out=dp)
        dp *= deriv[rows]
        blas_matmul(dp, w_hh, out=dh_carry[:bs])
    return d_pre, d_pre, hprev, dh_carry, None, None


_BACKWARD = {"LSTM": _lstm_backward, "GRU": _gru_backward, "RNN_TANH": _elman_backward,
             "RNN_RELU": _elman_backward}


def _layer_rule(grads, mode, batch_sizes, reverse, x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, saved):
    inputs = (x, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr)
    if _STATE.enabled:
        return _layer_rule_composed(grads, mode, batch_sizes, reverse, inputs)
    xp = be(x).xp
    outs = list(grads)
    shapes = [(x.shape[0], hx.shape[1]), tuple(hx.shape), None if cx is None else tuple(cx.shape)]
    arrs = []
    for i, shape in enumerate(shapes):
        g = outs[i] if i < len(outs) else None
        arrs.append(None if shape is None else xp.zeros(shape, dtype=x._data.dtype) if g is None else g._data)
    d_out, d_hn, d_cn = arrs
    w_hr_a = None if w_hr is None else w_hr._data
    fused = _fused(mode, d_out, d_hn, d_cn, x._data, w_hh._data, w_hr_a, *saved)
    with native_threads():
        d_proj, d_rec, hprev, dh0, dc0, d_whr = _BACKWARD[mode](
            xp, batch_sizes, reverse, d_out, d_hn, d_cn, x._data, w_hh._data, w_hr_a, saved, fused=fused)
    dt = x.dtype

    def wrap(a, t):
        return None if a is None or t is None or not t._requires_grad else _make(a, dt)
    d_bih = d_proj.sum(0) if _req(b_ih) or (d_rec is d_proj and _req(b_hh)) else None
    if _req(b_hh):
        # both biases enter the same pre-activations in LSTM and Elman layers (one sum)
        d_bhh = d_rec.sum(0) if d_rec is not d_proj else d_bih.copy()
    else:
        d_bhh = None
    d_wih = d_whh = None
    if d_rec is d_proj and w_ih._requires_grad and w_hh._requires_grad:
        # LSTM and Elman layers: one [G*H, N] x [N, I + H] product is faster than two
        both = blas_matmul(d_proj.T, xp.concatenate((x._data, hprev), axis=1))
        d_wih, d_whh = xp.ascontiguousarray(both[:, :x.shape[1]]), xp.ascontiguousarray(both[:, x.shape[1]:])
    else:
        d_wih = blas_matmul(d_proj.T, x._data) if w_ih._requires_grad else None
        d_whh = blas_matmul(d_rec.T, hprev) if w_hh._requires_grad else None
    return (wrap(blas_matmul(d_proj, w_ih._data) if x._requires_grad else None, x), wrap(dh0, hx), wrap(dc0, cx),
            wrap(d_wih, w_ih), wrap(d_whh, w_hh), wrap(d_bih, b_ih), wrap(d_bhh, b_hh), wrap(d_whr, w_hr))


def _req(t):
    return t is not None and t._requires_grad


def _layer_rule_composed(grads, mode, batch_sizes, reverse, inputs):
    """The gradient as a graph: replay the layer with ember ops on aliases of the inputs
    (so the replay's gradient flows back to the inputs' own history) and differentiate."""
    from ..autograd import grad as _grad
    aliases = [None if t is None else t.view_as(t) for t in inputs]
    with grad_mode.enable_grad():
        outs = composed_layer(mode, aliases[0], batch_sizes, *aliases[1:], reverse=reverse)
    pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None]
    wanted = [a for a in aliases if a is not None and a.requires_grad]
    got = _grad([o for o, _ in pairs], wanted, [g for _, g in pairs], create_graph=True, allow_unused=True)
    it = iter(got)
    return tuple(None if a is None or not a.requires_grad else next(it) for a in aliases)


# ---- the same layer composed of ember ops ----------------------------------------------

def lstm_cell(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
    """One LSTM step with ember ops: x ``[B, I]``, h ``[B, H_out]``, c ``[B, H]``;
    returns ``(h', c')`` (torch.nn.LSTMCell's equations, plus the projection)."""
    from .activation import linear
    gates = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    c2 = i.sigmoid() * g.tanh() + f.sigmoid() * c
    h2 = o.sigmoid() * c2.tanh()
    return (h2 if w_hr is None else linear(h2, w_hr)), c2


def gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step with ember ops: x ``[B, I]``, h ``[B, H]``; returns h' (torch.nn.GRUCell)."""
    from .activation import linear
    xr, xz, xn = linear(x, w_ih, b_ih).chunk(3, 1)
    hr, hz, hn = linear(h, w_hh, b_hh).chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return n + z * (h - n)


def rnn_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None, relu=False):
    """One Elman step with ember ops: ``act(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (torch.nn.RNNCell)."""
    from .activation import linear
    pre = linear(x, w_ih, b_ih) + linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def composed_layer(mode, x, batch_sizes, hx, cx, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None, reverse=False):
    """``rnn_layer`` written step by step with ember ops (differentiable to any order)."""
    from .shape import cat
    steps = _schedule(tuple(int(b) for b in batch_sizes), reverse)
    h, c = hx, cx
    outs, h_final, c_final = {}, [None] * hx.shape[0], [None] * hx.shape[0]
    prev_bs = None
    for o0, bs in steps:
        if prev_bs is not None and bs != prev_bs:
            if bs < prev_bs:  # forward direction: rows bs.. stop here
                for b in range(bs, prev_bs):
                    h_final[b] = h[b:b + 1]
                    c_final[b] = None if c is None else c[b:b + 1]
                h, c = h[:bs], None if c is None else c[:bs]
            else:  # reverse direction: rows prev_bs.. start from the initial state
                h = cat([h, hx[prev_bs:bs]], 0)
                c = None if c is None else cat([c, cx[prev_bs:bs]], 0)
        elif prev_bs is None:
            h, c = hx[:bs], None if cx is None else cx[:bs]
        xt = x[o0:o0 + bs]
        if mode == "LSTM":
            h, c = lstm_cell(xt, h, c, w_ih, w_hh, b_ih, b_hh, w_hr)
        elif mode == "GRU":
            h = gru_cell(xt, h, w_ih, w_hh, b_ih, b_hh)
        else:
            h = rnn_cell(xt, h, w_ih, w_hh, b_ih, b_hh, relu=mode == "RNN_RELU")
        outs[o0] = h
        prev_bs = bs
    for b in range(prev_bs):
        h_final[b] = h[b:b + 1]
        c_final[b] = None if c is None else c[b:b + 1]
    out = cat([outs[o0] for o0, _ in sorted(steps)], 0)
    hn = cat(h_final, 0)
    cn = None if cx is None else cat(c_final, 0)
    return out, hn, cn
