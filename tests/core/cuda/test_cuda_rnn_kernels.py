"""The LSTM/GRU gate kernels on a GPU: each step function against its equations in float64
numpy on awkward sizes, and the recurrent layers on cuda (which run them every step)
against torch on the CPU and ember's CPU path: outputs, final states and every gradient,
stacked, bidirectional, batch-first, without biases, with a projection, batch 1 and packed
sequences. Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as tru

import ember
from ember.cuda.kernels import rnn as cuda_rnn
from ember.nn.utils import rnn as eru

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
GRAD_TOL = {"float32": dict(rtol=5e-5, atol=2e-5), "float64": dict(rtol=1e-10, atol=1e-11)}
STEP_TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-13, atol=1e-13)}
STEP_SIZES = [(1, 1), (3, 5), (37, 129), (2, 300)]  # (rows, hidden)


def _sig(v):
    return 1 / (1 + np.exp(-v))


@pytest.fixture
def calls(monkeypatch):
    """Counts the calls of each step function (the layer really ran the kernels)."""
    counts = {}
    for name in ("lstm_forward_step", "lstm_backward_step", "gru_forward_step", "gru_backward_step"):
        fn = getattr(cuda_rnn, name)

        def counting(*args, _fn=fn, _name=name):
            counts[_name] = counts.get(_name, 0) + 1
            return _fn(*args)
        monkeypatch.setattr(cuda_rnn, name, counting)
    return counts


def _arrays(rng, dtype, *shapes):
    import cupy
    host = [rng.uniform(-2, 2, s).astype(dtype) for s in shapes]
    return host, [cupy.asarray(a) for a in host]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows,hid", STEP_SIZES)
def test_lstm_steps_match_their_equations(rows, hid, dtype):
    import cupy
    rng = np.random.default_rng(rows + hid)
    (pre, proj, bias, c_prev), (d_pre, d_proj, d_bias, d_cprev) = _arrays(
        rng, dtype, (rows, 4 * hid), (rows, 4 * hid), (1, 4 * hid), (rows, hid))
    c, tanh_c, h = (cupy.empty((rows, hid), dtype) for _ in range(3))
    cuda_rnn.lstm_forward_step(d_pre, d_proj, d_bias, d_cprev, c, tanh_c, h)
    z = (pre + proj + bias).astype(np.float64)
    i, f, g, o = _sig(z[:, :hid]), _sig(z[:, hid:2 * hid]), np.tanh(z[:, 2 * hid:3 * hid]), _sig(z[:, 3 * hid:])
    cn = f * c_prev + i * g
    for got, want in ((d_pre, np.concatenate([i, f, g, o], 1)), (c, cn), (tanh_c, np.tanh(cn)),
                      (h, o * np.tanh(cn))):
        np.testing.assert_allclose(cupy.asnumpy(got), want, **STEP_TOL[dtype])
    (dh_a, dh_b, dc), (e_dh_a, e_dh_b, e_dc) = _arrays(rng, dtype, (rows, hid), (rows, hid), (rows, hid))
    d_gates = cupy.empty((rows, 4 * hid), dtype)
    acts, tc = cupy.asnumpy(d_pre).astype(np.float64), cupy.asnumpy(tanh_c).astype(np.float64)
    cuda_rnn.lstm_backward_step(e_dh_a, e_dh_b, e_dc, d_pre, d_cprev, tanh_c, d_gates)
    i, f, g, o = acts[:, :hid], acts[:, hid:2 * hid], acts[:, 2 * hid:3 * hid], acts[:, 3 * hid:]
    dh = dh_a + dh_b
    dcn = dh * o * (1 - tc * tc) + dc
    want = np.concatenate([dcn * g * i * (1 - i), dcn * c_prev * f * (1 - f), dcn * i * (1 - g * g),
                           dh * tc * o * (1 - o)], 1)
    np.testing.assert_allclose(cupy.asnumpy(d_gates), want, **STEP_TOL[dtype])
    np.testing.assert_allclose(cupy.asnumpy(e_dc), dcn * f, **STEP_TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows,hid", STEP_SIZES)
def test_gru_steps_match_their_equations(rows, hid, dtype):
    import cupy
    rng = np.random.default_rng(rows * hid)
    (rec, b_ih, b_hh, proj, h_prev), dev = _arrays(rng, dtype, (rows, 3 * hid), (1, 3 * hid), (1, 3 * hid),
                                                   (rows, 3 * hid), (rows, hid))
    rz = cupy.empty((rows, 2 * hid), dtype)
    n, hn, h = (cupy.empty((rows, hid), dtype) for _ in range(3))
    cuda_rnn.gru_forward_step(*dev, rz, n, hn, h)
    a, b = (proj + b_ih).astype(np.float64), (rec + b_hh).astype(np.float64)
    r, z = _sig(a[:, :hid] + b[:, :hid]), _sig(a[:, hid:2 * hid] + b[:, hid:2 * hid])
    q = b[:, 2 * hid:]
    nt = np.tanh(a[:, 2 * hid:] + r * q)
    for got, want in ((rz, np.concatenate([r, z], 1)), (n, nt), (hn, q), (h, (1 - z) * nt + z * h_prev)):
        np.testing.assert_allclose(cupy.asnumpy(got), want, **STEP_TOL[dtype])
    (dh_out, dh_w, dh_z), (e_out, e_w, e_z) = _arrays(rng, dtype, (rows, hid), (rows, hid), (rows, hid))
    d_proj, d_rec = cupy.empty((rows, 3 * hid), dtype), cupy.empty((rows, 3 * hid), dtype)
    r, z = cupy.asnumpy(rz)[:, :hid].astype(np.float64), cupy.asnumpy(rz)[:, hid:].astype(np.float64)
    nt, q = cupy.asnumpy(n).astype(np.float64), cupy.asnumpy(hn).astype(np.float64)
    cuda_rnn.gru_backward_step(e_out, e_w, e_z, rz, n, hn, dev[4], d_proj, d_rec)
    dh = dh_out + dh_w + dh_z
    dn = dh * (1 - z) * (1 - nt * nt)
    dr = dn * q * r * (1 - r)
    dz = dh * (h_prev - nt) * z * (1 - z)
    np.testing.assert_allclose(cupy.asnumpy(d_proj), np.concatenate([dr, dz, dn], 1), **STEP_TOL[dtype])
    np.testing.assert_allclose(cupy.asnumpy(d_rec), np.concatenate([dr, dz, dn * r], 1), **STEP_TOL[dtype])
    np.testing.assert_allclose(cupy.asnumpy(e_z), dh * z, **STEP_TOL[dtype])


def _pair(cls, dtype, *args, **kwargs):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls)(*args, **kwargs).to(getattr(torch, dtype))
    e = getattr(ember.nn, cls)(*args, **kwargs).to(getattr(ember, dtype))
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, e


def _np(t):
    return t.detach().cpu().numpy()


def _forward_backward(mod, x, weights):
    """Forward, then backward of a weighted sum of the output and final states."""
    o, s = mod(x)
    states = list(s) if isinstance(s, tuple) else [s]
    o_data = o.data if isinstance(o, (tru.PackedSequence, eru.PackedSequence)) else o
    loss = (o_data * weights[0]).sum()
    for st, w in zip(states, weights[1:]):
        loss = loss + (st * w).sum()
    loss.backward()
    return [o_data] + states


LAYERS = [("LSTM", {}), ("GRU", {}), ("LSTM", {"proj_size": 4})]
CONFIGS = [({}, (5, 3, 7)), ({"num_layers": 2, "bidirectional": True}, (6, 3, 7)),
           ({"batch_first": True, "bias": False}, (3, 5, 7)), ({}, (4, 1, 7)), ({"bidirectional": True}, (1, 5, 7))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls,kw", LAYERS)
@pytest.mark.parametrize("cfg,shape", CONFIGS)
def test_layer_on_cuda_matches_torch_and_the_cpu_path(cls, kw, cfg, shape, dtype, calls):
    import cupy
    rng = np.random.default_rng(7)
    t_mod, e_mod = _pair(cls, dtype, shape[-1], 13, **kw, **cfg)
    x = rng.standard_normal(shape).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    to = t_mod(tx)
    weights = [rng.standard_normal(tuple(a.shape)).astype(dtype)
               for a in [to[0]] + (list(to[1]) if isinstance(to[1], tuple) else [to[1]])]
    t_res = _forward_backward(t_mod, tx, [torch.tensor(w) for w in weights])
    results = {}
    for device in ("cpu", "cuda"):
        mod = e_mod if device == "cpu" else _pair(cls, dtype, shape[-1], 13, **kw, **cfg)[1].to("cuda")
        ex = ember.tensor(x, device=device, requires_grad=True)
        calls.clear()
        res = _forward_backward(mod, ex, [ember.tensor(w, device=device) for w in weights])
        if device == "cuda":
            assert isinstance(res[0]._data, cupy.ndarray)
            steps = (cfg.get("num_layers", 1) * (2 if cfg.get("bidirectional") else 1) *
                     (shape[1] if cfg.get("batch_first") else shape[0]))
            lower = cls.lower()
            assert calls.get(f"{lower}_forward_step") == calls.get(f"{lower}_backward_step") == steps, calls
        grads = {n: _np(p.grad) for n, p in mod.named_parameters()}
        results[device] = ([_np(r) for r in res], grads, _np(ex.grad))
    for device in ("cuda", "cpu"):
        outs, grads, x_grad = results[device]
        for got, want in zip(outs, t_res):
            np.testing.assert_allclose(got, _np(want), **TOL[dtype])
        for name, p in t_mod.named_parameters():
            np.testing.assert_allclose(grads[name], _np(p.grad), **GRAD_TOL[dtype])
        np.testing.assert_allclose(x_grad, _np(tx.grad), **GRAD_TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls,kw", LAYERS)
def test_packed_sequence_on_cuda_matches_torch(cls, kw, dtype, calls):
    rng = np.random.default_rng(3)
    t_mod, e_mod = _pair(cls, dtype, 5, 9, bidirectional=True, **kw)
    e_mod = e_mod.to("cuda")
    lengths = [6, 4, 4, 1]
    x = rng.standard_normal((6, 4, 5)).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    ex = ember.tensor(x, device="cuda", requires_grad=True)
    tp, ep = tru.pack_padded_sequence(tx, lengths), eru.pack_padded_sequence(ex, lengths)
    out_h = kw.get("proj_size") or 9
    shapes = [(int(tp.data.shape[0]), 2 * out_h), (2, 4, out_h)] + ([(2, 4, 9)] if cls == "LSTM" else [])
    weights = [rng.standard_normal(s).astype(dtype) for s in shapes]
    t_res = _forward_backward(t_mod, tp, [torch.tensor(w) for w in weights])
    e_res = _forward_backward(e_mod, ep, [ember.tensor(w, device="cuda") for w in weights])
    assert calls.get(f"{cls.lower()}_forward_step") == 2 * max(lengths)
    for got, want in zip(e_res, t_res):
        np.testing.assert_allclose(_np(got), _np(want), **TOL[dtype])
    grads = {n: _np(p.grad) for n, p in e_mod.named_parameters()}
    for name, p in t_mod.named_parameters():
        np.testing.assert_allclose(grads[name], _np(p.grad), **GRAD_TOL[dtype])
    np.testing.assert_allclose(_np(ex.grad), _np(tx.grad), **GRAD_TOL[dtype])
