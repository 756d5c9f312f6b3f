"""Recurrent layers, cells and packed sequences, checked against torch on the same inputs
and weights (copied from torch)."""

import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember, to_torch
from torch.nn.utils import rnn as tru

import ember
from ember.nn.utils import rnn as eru
from ember.ops.rnn import composed_layer, rnn_layer


def _pair(cls_name, *args, **kwargs):
    """The same layer in torch and ember, ember's weights copied from torch's, float64."""
    torch.manual_seed(0)
    t = getattr(torch.nn, cls_name)(*args, **kwargs).double()
    e = getattr(ember.nn, cls_name)(*args, **kwargs).double()
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    return t, e


def _rand(*shape, grad=True):
    t = torch.randn(*shape, dtype=torch.float64)
    return t.requires_grad_(grad), to_ember(t, grad)


def _check_grads(t_mod, e_mod, pairs):
    for name, p in t_mod.named_parameters():
        assert_same(dict(e_mod.named_parameters())[name].grad, p.grad)
    for te, ee in pairs:
        assert_same(ee.grad, te.grad)


def _states(out):
    """(output, [state tensors]) of an RNN/GRU/LSTM result."""
    o, s = out
    return o, list(s) if isinstance(s, tuple) else [s]


LAYERS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("GRU", {}), ("LSTM", {}), ("LSTM", {"proj_size": 3})]
CONFIGS = [{}, {"num_layers": 2, "bidirectional": True}, {"batch_first": True, "bias": False},
           {"num_layers": 2, "batch_first": True, "bidirectional": True}]


def _h0(cls, kw, layers, dirs, batch, hidden=5):
    out_h = kw.get("proj_size") or hidden
    shapes = [(layers * dirs, batch, out_h)] + ([(layers * dirs, batch, hidden)] if cls == "LSTM" else [])
    return [_rand(*s) for s in shapes]


@pytest.mark.parametrize("cls,kw", LAYERS)
@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("with_h0", [False, True])
def test_layer_matches_torch(cls, kw, cfg, with_h0):
    t_mod, e_mod = _pair(cls, 4, 5, **kw, **cfg)
    tx, ex = _rand(*((3, 6, 4) if cfg.get("batch_first") else (6, 3, 4)))
    layers, dirs = cfg.get("num_layers", 1), 2 if cfg.get("bidirectional") else 1
    hs = _h0(cls, kw, layers, dirs, 3) if with_h0 else []
    th = None if not hs else (hs[0][0] if cls != "LSTM" else (hs[0][0], hs[1][0]))
    eh = None if not hs else (hs[0][1] if cls != "LSTM" else (hs[0][1], hs[1][1]))
    to, ts = _states(t_mod(tx, th))
    eo, es = _states(e_mod(ex, eh))
    assert_same(eo, to)
    assert_same(es, ts)
    (to.pow(2).sum() + sum((s * s.cos()).sum() for s in ts)).backward()
    (eo.pow(2).sum() + sum((s * s.cos()).sum() for s in es)).backward()
    _check_grads(t_mod, e_mod, [(tx, ex)] + hs)


@pytest.mark.parametrize("cls,kw", LAYERS)
def test_state_dict_and_parameter_order(cls, kw):
    t_mod, e_mod = _pair(cls, 4, 5, num_layers=2, bidirectional=True, **kw)
    assert list(e_mod.state_dict()) == list(t_mod.state_dict())
    assert [tuple(p.shape) for p in e_mod.parameters()] == [tuple(p.shape) for p in t_mod.parameters()]
    assert repr(e_mod) == repr(t_mod)
    e_mod.flatten_parameters()


def test_init_range_and_reprs():
    m = ember.nn.LSTM(3, 16, num_layers=2)
    bound = 1 / 4
    vals = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert vals.min() >= -bound and vals.max() <= bound and vals.std() > bound / 3
    for args, kw in [((3, 4), {"proj_size": 2, "num_layers": 2, "dropout": 0.5, "bidirectional": True,
                               "batch_first": True, "bias": False}), ((3, 4), {})]:
        assert repr(ember.nn.LSTM(*args, **kw)) == repr(torch.nn.LSTM(*args, **kw))
    assert repr(ember.nn.RNN(3, 4, nonlinearity="relu")) == repr(torch.nn.RNN(3, 4, nonlinearity="relu"))
    assert repr(ember.nn.GRU(3, 4, 2)) == repr(torch.nn.GRU(3, 4, 2))
    for cls, kw in [("RNNCell", {"nonlinearity": "relu", "bias": False}), ("LSTMCell", {}), ("GRUCell", {})]:
        assert repr(getattr(ember.nn, cls)(3, 4, **kw)) == repr(getattr(torch.nn, cls)(3, 4, **kw))


@pytest.mark.parametrize("cls,kw", LAYERS)
def test_unbatched_input(cls, kw):
    t_mod, e_mod = _pair(cls, 4, 5, num_layers=2, bidirectional=True, **kw)
    tx, ex = _rand(6, 4)
    hs = [(th[:, 0].detach().requires_grad_(), to_ember(th[:, 0], True)) for th, _ in _h0(cls, kw, 2, 2, 1)]
    th = hs[0][0] if cls != "LSTM" else (hs[0][0], hs[1][0])
    eh = hs[0][1] if cls != "LSTM" else (hs[0][1], hs[1][1])
    to, ts = _states(t_mod(tx, th))
    eo, es = _states(e_mod(ex, eh))
    assert_same(eo, to)
    assert_same(es, ts)
    (to.sum() + sum(s.sum() for s in ts)).backward()
    (eo.sum() + sum(s.sum() for s in es)).backward()
    _check_grads(t_mod, e_mod, [(tx, ex)] + hs)


def test_dropout_between_layers():
    t_mod, e_mod = _pair("LSTM", 4, 5, num_layers=2, dropout=1.0)
    tx, ex = _rand(6, 3, 4, grad=False)
    # p = 1 drops every input of layer 2: deterministic, so comparable with torch
    assert_same(e_mod(ex)[0], t_mod(tx)[0])
    t_mod.eval()
    e_mod.eval()
    assert_same(e_mod(ex)[0], t_mod(tx)[0])
    t_mod, e_mod = _pair("GRU", 4, 5, num_layers=2, dropout=0.5)
    e_mod.train()
    a, b = e_mod(ex)[0], e_mod(ex)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # random masks in training


@pytest.mark.parametrize("cls,kw", LAYERS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_packed_sequence_through_layer(cls, kw, bidirectional):
    t_mod, e_mod = _pair(cls, 4, 5, num_layers=2, bidirectional=bidirectional, **kw)
    tx, ex = _rand(6, 4, 4)
    lengths = [3, 6, 1, 4]
    tp = tru.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    ep = eru.pack_padded_sequence(ex, lengths, enforce_sorted=False)
    hs = _h0(cls, kw, 2, 2 if bidirectional else 1, 4)
    th = hs[0][0] if cls != "LSTM" else (hs[0][0], hs[1][0])
    eh = hs[0][1] if cls != "LSTM" else (hs[0][1], hs[1][1])
    to, ts = _states(t_mod(tp, th))
    eo, es = _states(e_mod(ep, eh))
    assert isinstance(eo, eru.PackedSequence)
    assert_same(eo.data, to.data)
    assert_same(eo.batch_sizes, to.batch_sizes)
    assert_same(eo.sorted_indices, to.sorted_indices)
    assert_same(es, ts)  # final states in the original batch order
    tpad, tl = tru.pad_packed_sequence(to, batch_first=True)
    epad, el = eru.pad_packed_sequence(eo, batch_first=True)
    assert_same(epad, tpad)
    assert_same(el, tl)
    ((tpad * tpad.sin()).sum() + sum((s * s).sum() for s in ts)).backward()
    ((epad * epad.sin()).sum() + sum((s * s).sum() for s in es)).backward()
    _check_grads(t_mod, e_mod, [(tx, ex)] + hs)


def test_layer_input_errors():
    t_mod, e_mod = _pair("LSTM", 3, 4)
    cases = [(torch.randn(2, 3, 5), None), (torch.randn(2, 3, 3), (torch.randn(1, 3, 4), torch.randn(1, 2, 4))),
             (torch.randn(2, 3, 3), (torch.randn(1, 2, 4), torch.randn(1, 3, 4))),
             (torch.randn(2, 3, 3), (torch.randn(1, 3, 4), torch.randn(3, 4))),
             (torch.randn(3, 3), (torch.randn(1, 1, 4), torch.randn(1, 1, 4))),
             (torch.randn(2, 3, 3, 1), None), (torch.randn(2, 3, 3).float(), None)]
    t_mod.double()
    for tx, th in cases:
        tx = tx.double() if tx.shape[-1] != 1 and tx.dtype != torch.float32 else tx
        eh = None if th is None else tuple(to_ember(h.double()) for h in th)
        th = None if th is None else tuple(h.double() for h in th)
        with pytest.raises(Exception) as te:
            t_mod(tx, th)
        with pytest.raises(type(te.value), match=_escape(str(te.value))):
            e_mod(to_ember(tx), eh)
    t_gru, e_gru = _pair("GRU", 3, 4)
    for tx, th in [(torch.randn(2, 3, 3), torch.randn(1, 2, 4)), (torch.randn(2, 3, 3), torch.randn(3, 4)),
                   (torch.randn(2, 3), torch.randn(1, 1, 4))]:
        with pytest.raises(Exception) as te:
            t_gru(tx.double(), th.double())
        with pytest.raises(type(te.value), match=_escape(str(te.value))):
            e_gru(to_ember(tx.double()), to_ember(th.double()))


def _escape(msg):
    """torch's message as a pattern for ember's (dtypes print as ember.float32 there)."""
    import re
    return re.escape(msg.replace("torch.", "ember."))


@pytest.mark.parametrize("kwargs", [{"dropout": 2.0}, {"proj_size": 5}, {"proj_size": -1}, {"num_layers": 0},
                                    {"bias": 1}, {"batch_first": None}])
def test_constructor_errors(kwargs):
    with pytest.raises(Exception) as te:
        torch.nn.LSTM(3, 5, **kwargs)
    with pytest.raises(type(te.value), match=_escape(str(te.value))):
        ember.nn.LSTM(3, 5, **kwargs)


def test_rnn_constructor_errors():
    for cls, kw in [("RNN", {"nonlinearity": "gelu"}), ("GRU", {"proj_size": 2}), ("RNN", {"proj_size": 2})]:
        with pytest.raises(ValueError) as te:
            getattr(torch.nn, cls)(3, 4, **kw)
        with pytest.raises(ValueError, match=_escape(str(te.value))):
            getattr(ember.nn, cls)(3, 4, **kw)
    with pytest.warns(UserWarning, match="dropout option adds dropout"):
        ember.nn.GRU(3, 4, dropout=0.3)


# ---- cells -------------------------------------------------------------------------

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("GRUCell", {}), ("LSTMCell", {}),
         ("LSTMCell", {"bias": False})]


@pytest.mark.parametrize("cls,kw", CELLS)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_h", [True, False])
def test_cell_matches_torch(cls, kw, batched, with_h):
    t_mod, e_mod = _pair(cls, 4, 5, **kw)
    lead = (3,) if batched else ()
    tx, ex = _rand(*lead, 4)
    hs = [_rand(*lead, 5) for _ in range(2 if cls == "LSTMCell" else 1)] if with_h else []
    th = None if not hs else (hs[0][0] if cls != "LSTMCell" else (hs[0][0], hs[1][0]))
    eh = None if not hs else (hs[0][1] if cls != "LSTMCell" else (hs[0][1], hs[1][1]))
    tr, er = t_mod(tx, th), e_mod(ex, eh)
    assert_same(er, tr)
    tl = sum((r * r).sum() for r in (tr if isinstance(tr, tuple) else (tr,)))
    el = sum((r * r).sum() for r in (er if isinstance(er, tuple) else (er,)))
    tl.backward()
    el.backward()
    _check_grads(t_mod, e_mod, [(tx, ex)] + hs)


def test_cell_errors():
    for cls, x, h in [("LSTMCell", torch.randn(2, 5), None), ("LSTMCell", torch.randn(2, 3, 3), None),
                      ("GRUCell", torch.randn(2, 3), torch.randn(3, 4)), ("RNNCell", torch.randn(2, 3, 1), None),
                      ("RNNCell", torch.randn(2, 3), torch.randn(2, 4, 1)),
                      ("LSTMCell", torch.randn(2, 3), (torch.randn(3, 4), torch.randn(2, 4)))]:
        t_mod, e_mod = _pair(cls, 3, 4)
        th = None if h is None else (tuple(v.double() for v in h) if isinstance(h, tuple) else h.double())
        eh = None if h is None else (tuple(to_ember(v) for v in th) if isinstance(th, tuple) else to_ember(th))
        with pytest.raises(Exception) as te:
            t_mod(x.double(), th)
        with pytest.raises(type(te.value), match=_escape(str(te.value))):
            e_mod(to_ember(x.double()), eh)


# ---- the layer op: gradcheck and double backward ---------------------------------------

@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_layer_op_gradcheck_and_composed_form(mode, reverse):
    g = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    rng = np.random.default_rng(1)

    def t(*shape):
        return ember.tensor(rng.standard_normal(shape) * 0.5, dtype=ember.float64, requires_grad=True)
    bs = (3, 3, 2, 1)
    x, h = t(sum(bs), 2), t(3, 3)
    c = t(3, 3) if mode == "LSTM" else None
    ws = [t(g * 3, 2), t(g * 3, 3), t(g * 3), t(g * 3)]
    inputs = [v for v in (x, h, c, *ws) if v is not None]

    def run(fn):
        def f(*args):
            it = iter(args)
            xx, hh = next(it), next(it)
            cc = next(it) if mode == "LSTM" else None
            out = fn(mode, xx, bs, hh, cc, *it, reverse=reverse)
            return tuple(o for o in out if o is not None)
        return f
    for a, b in zip(run(rnn_layer)(*inputs), run(composed_layer)(*inputs)):
        assert np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-12)
    assert ember.autograd.gradcheck(run(rnn_layer), inputs)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_double_backward_matches_torch(cls):
    t_mod, e_mod = _pair(cls, 2, 3)
    tx, ex = _rand(3, 2, 2)
    (tg,) = torch.autograd.grad(t_mod(tx)[0].pow(2).sum(), tx, create_graph=True)
    (eg,) = ember.autograd.grad(e_mod(ex)[0].pow(2).sum(), ex, create_graph=True)
    assert_same(eg, tg)
    (tg * tg.cos()).sum().backward()
    (eg * eg.cos()).sum().backward()
    _check_grads(t_mod, e_mod, [(tx, ex)])


def test_float32_layer_matches_torch():
    torch.manual_seed(0)
    t_mod = torch.nn.LSTM(8, 16, batch_first=True)
    e_mod = ember.nn.LSTM(8, 16, batch_first=True)
    e_mod.load_state_dict({k: to_ember(v) for k, v in t_mod.state_dict().items()})
    tx = torch.randn(4, 7, 8, requires_grad=True)
    ex = to_ember(tx, True)
    to, eo = t_mod(tx)[0], e_mod(ex)[0]
    assert_same(eo, to)
    to.sum().backward()
    eo.sum().backward()
    assert_same(ex.grad, tx.grad)
    assert_same(e_mod.weight_hh_l0.grad, t_mod.weight_hh_l0.grad, rtol=1e-4, atol=1e-5)


# ---- nn.utils.rnn ------------------------------------------------------------------

def _seqs(lengths, trailing=(3,)):
    ts = [torch.randn(n, *trailing, dtype=torch.float64, requires_grad=True) for n in lengths]
    return ts, [to_ember(t, True) for t in ts]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("trailing", [(), (2, 3)])
def test_pad_sequence(batch_first, padding_side, trailing):
    ts, es = _seqs([2, 5, 3], trailing)
    tp = tru.pad_sequence(ts, batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    ep = eru.pad_sequence(es, batch_first=batch_first, padding_value=-1.5, padding_side=padding_side)
    assert_same(ep, tp)
    w = torch.randn(tp.shape, dtype=torch.float64)
    (tp * w).sum().backward()
    (ep * to_ember(w)).sum().backward()
    for t, e in zip(ts, es):
        assert_same(e.grad, t.grad)


def test_pad_sequence_errors():
    for args, kw in [([torch.ones(2)], {"padding_side": "middle"}), ([], {}),
                     ([torch.ones(2, 3), torch.ones(2, 4)], {})]:
        with pytest.raises(RuntimeError) as te:
            tru.pad_sequence(args, **kw)
        with pytest.raises(RuntimeError, match=_escape(str(te.value))):
            eru.pad_sequence([to_ember(a) for a in args], **kw)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("total_length", [None, 7])
def test_pack_and_pad_round_trip(batch_first, enforce_sorted, total_length):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    tx, ex = _rand(*((4, 5, 2) if batch_first else (5, 4, 2)))
    tp = tru.pack_padded_sequence(tx, torch.tensor(lengths), batch_first, enforce_sorted)
    ep = eru.pack_padded_sequence(ex, ember.tensor(lengths), batch_first, enforce_sorted)
    for a, b in zip(ep, tp):
        assert (a is None) == (b is None)
        if b is not None:
            assert_same(a, b)
    tpad, tl = tru.pad_packed_sequence(tp, batch_first, padding_value=0.5, total_length=total_length)
    epad, el = eru.pad_packed_sequence(ep, batch_first, padding_value=0.5, total_length=total_length)
    assert_same(epad, tpad)
    assert_same(el, tl)
    w = torch.randn(tpad.shape, dtype=torch.float64)
    (tpad * w).sum().backward()
    (epad * to_ember(w)).sum().backward()
    assert_same(ex.grad, tx.grad)
    for t, e in zip(tru.unpad_sequence(tpad.detach(), tl, batch_first),
                    eru.unpad_sequence(epad.detach(), el, batch_first)):
        assert_same(e, t)


def test_pack_errors():
    x = torch.randn(4, 3, 2)
    for lengths, kw in [([2, 3, 1], {}), ([3, 0, 1], {}), ([2, 3, 0], {"enforce_sorted": False})]:
        with pytest.raises(RuntimeError) as te:
            tru.pack_padded_sequence(x, lengths, **kw)
        with pytest.raises(RuntimeError, match=_escape(str(te.value))):
            eru.pack_padded_sequence(to_ember(x), lengths, **kw)
    tp = tru.pack_sequence([torch.ones(3), torch.ones(2)])
    ep = eru.pack_sequence([ember.ones(3), ember.ones(2)])
    with pytest.raises(ValueError) as te:
        tru.pad_packed_sequence(tp, total_length=2)
    with pytest.raises(ValueError, match=_escape(str(te.value))):
        eru.pad_packed_sequence(ep, total_length=2)


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_unpack_sequence(enforce_sorted):
    lengths = [4, 2, 2, 1] if enforce_sorted else [2, 4, 1, 2]
    ts, es = _seqs(lengths)
    tp, ep = tru.pack_sequence(ts, enforce_sorted), eru.pack_sequence(es, enforce_sorted)
    assert_same(ep.data, tp.data)
    assert_same(ep.batch_sizes, tp.batch_sizes)
    if not enforce_sorted:
        assert_same(ep.sorted_indices, tp.sorted_indices)
        assert_same(ep.unsorted_indices, tp.unsorted_indices)
    for e, t in zip(eru.unpack_sequence(ep), tru.unpack_sequence(tp)):
        assert_same(e, t)


def test_packed_sequence_to_and_constructor():
    ep = eru.pack_sequence([ember.ones(3, 2), ember.ones(2, 2)], enforce_sorted=False)
    assert ep.to(ember.float32) is ep
    d = ep.double()
    assert d.data.dtype == ember.float64 and d.batch_sizes.dtype == ember.int64
    assert d.sorted_indices is not None and not d.is_cuda
    p = eru.PackedSequence(ep.data, ep.batch_sizes, ember.tensor([1, 0]))
    assert p.unsorted_indices.tolist() == tru.invert_permutation(torch.tensor([1, 0])).tolist()
    q = eru.PackedSequence((ep.data, ep.batch_sizes))
    assert q.sorted_indices is None and q.data is ep.data
    assert to_torch(q.batch_sizes).tolist() == [2, 2, 1]
