"""The compiled LSTM/GRU gate kernels (ember.cpu.kernels.rnn) inside the recurrent layers,
against torch.nn.LSTM / torch.nn.GRU with the same weights and against ember's numpy path
(the same call under ``kernels.disabled()``): outputs, final states and every gradient."""

import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember
from torch.nn.utils import rnn as tru

import ember
from ember.cpu import kernels
from ember.cpu.kernels import rnn as krnn
from ember.nn.utils import rnn as eru

TOL = {"float32": {"rtol": 2e-5, "atol": 2e-6}, "float64": {"rtol": 1e-10, "atol": 1e-12}}
# weight gradients are sums over every step and row (hundreds of terms of size ~1)
GRAD_TOL = {"float32": {"rtol": 2e-5, "atol": 1e-5}, "float64": {"rtol": 1e-10, "atol": 1e-11}}
# the two ember paths differ only in rounding of the gate arithmetic
SELF_TOL = {"float32": {"rtol": 1e-5, "atol": 1e-6}, "float64": {"rtol": 1e-12, "atol": 1e-13}}


@pytest.fixture
def calls(monkeypatch):
    """Counts the kernel calls per name (the kernel path really ran)."""
    counts = {}
    for name in krnn.__all__:
        fn = getattr(krnn, name)

        def counting(*args, _fn=fn, _name=name):
            counts[_name] = counts.get(_name, 0) + 1
            return _fn(*args)
        monkeypatch.setattr(krnn, name, counting)
    return counts


def _pair(cls, dtype, *args, **kwargs):
    torch.manual_seed(0)
    t = getattr(torch.nn, cls)(*args, **kwargs).to(getattr(torch, dtype))
    e = getattr(ember.nn, cls)(*args, **kwargs).to(getattr(ember, dtype))
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    return t, e


def _leaf(rng, shape, dtype):
    t = torch.from_numpy(rng.standard_normal(shape).astype(dtype)).requires_grad_()
    return t, to_ember(t, True)


def _run(lib_mod, x, hx, weights):
    """Forward, then backward of a weighted sum of output and final states (so that every
    output element has its own gradient); returns (output, [states])."""
    o, s = lib_mod(x) if hx is None else lib_mod(x, hx)
    states = list(s) if isinstance(s, tuple) else [s]
    o_data = o.data if isinstance(o, (tru.PackedSequence, eru.PackedSequence)) else o
    loss = (o_data * weights[0]).sum()
    for st, w in zip(states, weights[1:]):
        loss = loss + (st * w).sum()
    loss.backward()
    return o_data, states


def _check(cls, dtype, in_size, hidden, x_shape, calls, h0=False, **kw):
    rng = np.random.default_rng(7)
    t_mod, e_mod = _pair(cls, dtype, in_size, hidden, **kw)
    tx, ex = _leaf(rng, x_shape, dtype)
    layers, dirs = kw.get("num_layers", 1), 2 if kw.get("bidirectional") else 1
    batch = x_shape[0] if kw.get("batch_first") else x_shape[1]
    out_h = kw.get("proj_size") or hidden
    state_shapes = [(layers * dirs, batch, out_h)] + ([(layers * dirs, batch, hidden)] if cls == "LSTM" else [])
    hs = [_leaf(rng, s, dtype) for s in state_shapes] if h0 else []
    th = None if not hs else (hs[0][0] if cls == "GRU" else (hs[0][0], hs[1][0]))
    eh = None if not hs else (hs[0][1] if cls == "GRU" else (hs[0][1], hs[1][1]))
    t_seq = x_shape[1] if kw.get("batch_first") else x_shape[0]
    out_shape = (x_shape[0], x_shape[1], dirs * out_h)
    w_np = [rng.standard_normal(out_shape).astype(dtype)] + [rng.standard_normal(s).astype(dtype)
                                                             for s in state_shapes]
    to, ts = _run(t_mod, tx, th, [torch.from_numpy(w) for w in w_np])
    calls.clear()
    eo, es = _run(e_mod, ex, eh, [ember.tensor(w) for w in w_np])
    # every layer and direction ran its steps through the kernels, forward and backward
    fwd, bwd = f"{cls.lower()}_forward_step", f"{cls.lower()}_backward_step"
    assert calls.get(fwd) == calls.get(bwd) == (layers * dirs * t_seq if kernels.enabled() else None), calls
    tol = TOL[dtype]
    assert_same(eo, to, **tol)
    assert_same(es, ts, **tol)
    grads = {n: p.grad for n, p in e_mod.named_parameters()}
    for name, p in t_mod.named_parameters():
        assert_same(grads[name], p.grad, **GRAD_TOL[dtype])
    for t, e in [(tx, ex)] + hs:
        assert_same(e.grad, t.grad, **GRAD_TOL[dtype])

    # the numpy path on the same module and inputs
    kept = [grads[n] for n in grads] + [e.grad for _, e in [(tx, ex)] + hs]
    e_mod.zero_grad()
    for _, e in [(tx, ex)] + hs:
        e.grad = None
    calls.clear()
    with kernels.disabled():
        no, ns = _run(e_mod, ex, eh, [ember.tensor(w) for w in w_np])
    assert not calls
    np.testing.assert_allclose(eo.detach().numpy(), no.detach().numpy(), **SELF_TOL[dtype])
    for a, b in zip(es, ns):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **SELF_TOL[dtype])
    again = [p.grad for p in e_mod.parameters()] + [e.grad for _, e in [(tx, ex)] + hs]
    for a, b in zip(kept, again):
        np.testing.assert_allclose(a.numpy(), b.numpy(), **GRAD_TOL[dtype])


LAYERS = [("LSTM", {}), ("GRU", {}), ("LSTM", {"proj_size": 4})]
CONFIGS = [
    ({}, (5, 3, 7)),                                                  # one layer
    ({"num_layers": 2, "bidirectional": True}, (6, 3, 7)),            # stacked, both directions
    ({"batch_first": True, "bias": False}, (3, 5, 7)),                # [B, T, I], no biases
    ({"num_layers": 2, "bidirectional": True, "batch_first": True}, (2, 4, 7)),
    ({}, (4, 1, 7)),                                                  # batch 1
    ({"bidirectional": True}, (1, 5, 7)),                             # sequence of 1
    ({}, (3, 0, 7)),                                                  # empty batch
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls,kw", LAYERS)
@pytest.mark.parametrize("cfg,shape", CONFIGS)
@pytest.mark.parametrize("h0", [False, True])
def test_layer_matches_torch_and_numpy_path(dtype, cls, kw, cfg, shape, h0, calls):
    _check(cls, dtype, shape[-1], 13, shape, calls, h0=h0, **kw, **cfg)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_wider_layer_matches_torch(dtype, cls, calls):
    # hidden sizes past one SIMD vector and odd: 37 and 67 (vector loop and its remainder)
    _check(cls, dtype, 37, 67, (9, 5, 37), calls, h0=True, num_layers=2, bidirectional=True)


def test_split_over_threads_matches_torch(calls, monkeypatch):
    # steps split over two threads (the split threshold lowered so that 130 rows x 4*256
    # gate columns pass parallel_for's own minimum): rows [0, 65) and [65, 130)
    from ember.cpu.kernels import _runtime
    monkeypatch.setattr(krnn, "SPLIT_MIN", 0)
    parts = []
    real = _runtime.parallel_for

    def recording(kernel, n, *args, work_per_item=1):
        parts.append(min(_runtime.threads(), n, max(1, n * work_per_item // _runtime.PARALLEL_MIN_WORK)))
        return real(kernel, n, *args, work_per_item=work_per_item)
    monkeypatch.setattr(krnn, "parallel_for", recording)
    saved = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        _check("LSTM", "float32", 16, 256, (3, 130, 16), calls, h0=True)
        _check("GRU", "float64", 16, 256, (3, 130, 16), calls, h0=True)
    finally:
        ember.set_num_threads(saved)
    assert (parts.count(2) >= 6) == kernels.enabled()  # the LSTM's three steps forward and backward


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls,kw", LAYERS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_sequence_matches_torch(dtype, cls, kw, bidirectional, calls):
    # sequences of lengths 6, 4, 4, 1: batch sizes shrink along time (and grow in the reverse
    # direction), so rows stop and start between steps
    rng = np.random.default_rng(3)
    t_mod, e_mod = _pair(cls, dtype, 5, 9, bidirectional=bidirectional, **kw)
    lengths = [6, 4, 4, 1]
    tx, ex = _leaf(rng, (6, 4, 5), dtype)
    tp = tru.pack_padded_sequence(tx, lengths)
    ep = eru.pack_padded_sequence(ex, lengths)
    dirs = 2 if bidirectional else 1
    out_h = kw.get("proj_size") or 9
    shapes = [(int(tp.data.shape[0]), dirs * out_h), (dirs, 4, out_h)] + ([(dirs, 4, 9)] if cls == "LSTM" else [])
    w_np = [rng.standard_normal(s).astype(dtype) for s in shapes]
    to, ts = _run(t_mod, tp, None, [torch.from_numpy(w) for w in w_np])
    calls.clear()
    eo, es = _run(e_mod, ep, None, [ember.tensor(w) for w in w_np])
    steps = dirs * max(lengths)
    expected = steps if kernels.enabled() else None
    assert calls.get(f"{cls.lower()}_forward_step") == calls.get(f"{cls.lower()}_backward_step") == expected, calls
    tol = TOL[dtype]
    assert_same(eo, to, **tol)
    assert_same(es, ts, **tol)
    grads = {n: p.grad for n, p in e_mod.named_parameters()}
    for name, p in t_mod.named_parameters():
        assert_same(grads[name], p.grad, **GRAD_TOL[dtype])
    assert_same(ex.grad, tx.grad, **GRAD_TOL[dtype])


def test_other_dtypes_and_switch_take_numpy_path(calls):
    # float16 is not the kernels' domain; EMBER_NUMBA's switch (kernels.disabled) neither
    t_mod, e_mod = _pair("LSTM", "float32", 3, 4)
    x = ember.randn(2, 2, 3)
    with kernels.disabled():
        e_mod(x)[0].sum().backward()
    assert not calls
    e_mod(x)[0].sum().backward()
    n = 2 if kernels.enabled() else None
    assert calls.get("lstm_forward_step") == n and calls.get("lstm_backward_step") == n


def test_double_backward_keeps_composed_rule(calls):
    # create_graph=True differentiates the layer replayed with ember ops: same as torch
    rng = np.random.default_rng(5)
    t_mod, e_mod = _pair("GRU", "float64", 3, 4)
    tx, ex = _leaf(rng, (3, 2, 3), "float64")
    (tg,) = torch.autograd.grad(t_mod(tx)[0].pow(2).sum(), tx, create_graph=True)
    (eg,) = ember.autograd.grad(e_mod(ex)[0].pow(2).sum(), ex, create_graph=True)
    assert_same(eg, tg, **TOL["float64"])
    tg.sum().backward()
    eg.sum().backward()
    assert_same(ex.grad, tx.grad, **TOL["float64"])
    for name, p in t_mod.named_parameters():
        assert_same(dict(e_mod.named_parameters())[name].grad, p.grad, **TOL["float64"])


@pytest.mark.parametrize("cls,kw", LAYERS)
def test_forward_and_backward_paths_mix(cls, kw, calls):
    # both paths save the same arrays (true activations), so a forward on one path and the
    # backward on the other give torch's gradients
    rng = np.random.default_rng(11)
    t_mod, e_mod = _pair(cls, "float64", 4, 6, bidirectional=True, **kw)
    tx, ex = _leaf(rng, (5, 3, 4), "float64")
    t_mod(tx)[0].pow(2).sum().backward()
    for forward_on in (True, False):
        e_mod.zero_grad()
        ex.grad = None
        calls.clear()
        if forward_on:
            out = e_mod(ex)[0]
            with kernels.disabled():
                out.pow(2).sum().backward()
        else:
            with kernels.disabled():
                out = e_mod(ex)[0]
            out.pow(2).sum().backward()
        side = "forward" if forward_on else "backward"
        assert set(calls) == ({f"{cls.lower()}_{side}_step"} if kernels.enabled() else set()), calls
        assert_same(ex.grad, tx.grad, **GRAD_TOL["float64"])
        for name, p in t_mod.named_parameters():
            assert_same(dict(e_mod.named_parameters())[name].grad, p.grad, **GRAD_TOL["float64"])
