"""Embedding, EmbeddingBag and Bilinear against torch: lookups, bag reductions and bilinear
forms (forward, gradients of weights and inputs, in-place max_norm renormalisation,
padding, from_pretrained, state_dict, repr, errors)."""

import math

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from conftest import assert_same, to_ember

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _weights(num=6, dim=3):
    tw = torch.randn(num, dim, dtype=torch.float64, requires_grad=True)
    return tw, to_ember(tw)


# ---- embedding ----------------------------------------------------------------------------

@pytest.mark.parametrize("indices", [[[1, 2, 2, 5], [0, 1, 3, 3]], [4, 0, 4], 3])
@pytest.mark.parametrize("padding_idx,scale", [(None, False), (2, False), (-3, True), (None, True)])
@pytest.mark.parametrize("itype", [torch.int64, torch.int32])
def test_embedding_forward_backward(indices, padding_idx, scale, itype):
    tw, ew = _weights()
    ti = torch.tensor(indices, dtype=itype)
    tout = TF.embedding(ti, tw, padding_idx=padding_idx, scale_grad_by_freq=scale)
    eout = F.embedding(to_ember(ti), ew, padding_idx=padding_idx, scale_grad_by_freq=scale)
    assert_same(eout, tout)
    g = torch.randn_like(tout)
    tout.backward(g)
    eout.backward(to_ember(g))
    assert_same(ew.grad, tw.grad)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_embedding_max_norm_renormalises_in_place(norm_type):
    tw, ew = _weights(6, 4)
    with torch.no_grad():
        tw.mul_(3)
    ew = to_ember(tw)
    ti = torch.tensor([[0, 2], [2, 5]])
    tout = TF.embedding(ti, tw, max_norm=1.5, norm_type=norm_type)
    eout = F.embedding(to_ember(ti), ew, max_norm=1.5, norm_type=norm_type)
    assert_same(eout, tout)
    assert_same(ew, tw)  # looked-up rows rescaled, the others untouched
    g = torch.randn_like(tout)
    tout.backward(g)
    eout.backward(to_ember(g))
    assert_same(ew.grad, tw.grad)


def test_embedding_module_layout_and_init():
    for args, kw in [((5, 3), {}), ((5, 3), dict(padding_idx=1, max_norm=1.0, scale_grad_by_freq=True)),
                     ((5, 3), dict(padding_idx=-1, norm_type=1.0, max_norm=2.0)), ((4, 2), dict(sparse=True))]:
        t, e = tnn.Embedding(*args, **kw), nn.Embedding(*args, **kw)
        assert repr(e) == repr(t)
        assert e.padding_idx == t.padding_idx
        assert list(e.state_dict()) == list(t.state_dict())
        assert tuple(e.weight.shape) == tuple(t.weight.shape) and e.weight.requires_grad
        if t.padding_idx is not None:
            assert_same(e.weight[t.padding_idx], t.weight[t.padding_idx])
    w = nn.Embedding(2000, 8).weight.detach().numpy()  # N(0, 1) initialisation
    assert abs(w.mean()) < 0.05 and abs(w.std() - 1) < 0.05


def test_embedding_module_matches_torch():
    t = tnn.Embedding(6, 3, padding_idx=0, dtype=torch.float64)
    e = nn.Embedding(6, 3, padding_idx=0, dtype=ember.float64)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    ti = torch.tensor([[0, 1, 5], [5, 5, 0]])
    tout, eout = t(ti), e(to_ember(ti))
    assert_same(eout, tout)
    tout.sum().backward()
    eout.sum().backward()
    assert_same(e.weight.grad, t.weight.grad)


@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_from_pretrained(freeze):
    tw = torch.randn(4, 3)
    t = tnn.Embedding.from_pretrained(tw, freeze=freeze, padding_idx=2)
    ew = to_ember(tw)
    e = nn.Embedding.from_pretrained(ew, freeze=freeze, padding_idx=2)
    assert e.weight.requires_grad == t.weight.requires_grad == (not freeze)
    assert repr(e) == repr(t)
    ti = torch.tensor([2, 0, 3])
    assert_same(e(to_ember(ti)), t(ti))
    with pytest.raises(AssertionError, match="2-dimensional"):
        nn.Embedding.from_pretrained(ember.randn(4))


def test_embedding_sparse_refused_for_gradients_only():
    e = nn.Embedding(4, 3, sparse=True)
    with pytest.raises(NotImplementedError, match="dense"):
        e(ember.tensor([1, 2]))
    with ember.no_grad():
        assert_same(e(ember.tensor([1, 2])), torch.tensor(e.weight.detach().numpy()[[1, 2]]))


def test_embedding_errors():
    w = ember.randn(5, 3)
    with pytest.raises(RuntimeError, match="Long, Int"):
        F.embedding(ember.tensor([1.0, 2.0]), w)
    for bad in ([1, 5], [1, -1]):
        with pytest.raises(IndexError, match="index out of range"):
            F.embedding(ember.tensor(bad), w)
        with pytest.raises(IndexError):
            TF.embedding(torch.tensor(bad), torch.randn(5, 3))
    with pytest.raises(AssertionError, match="Padding_idx"):
        F.embedding(ember.tensor([1]), w, padding_idx=5)
    with pytest.raises(AssertionError, match="Padding_idx"):
        nn.Embedding(5, 3, padding_idx=-6)
    with pytest.raises(RuntimeError, match="2-D"):
        F.embedding(ember.tensor([1]), ember.randn(5))


def test_embedding_gradcheck():
    w = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[0, 2, 2], [4, 1, 0]])

    def fn(w):  # padding and frequency scaling alter the gradient on purpose: checked against torch above
        return F.embedding(idx, w) ** 2
    assert gradcheck(fn, (w,))
    assert gradgradcheck(fn, (w,))


# ---- embedding bag -------------------------------------------------------------------------

FLAT = [1, 2, 2, 5, 0, 1, 3, 3]
LAYOUTS = [  # (input, offsets, include_last_offset)
    (FLAT, [0, 2, 2, 5], False),  # an empty bag
    (FLAT, [0, 1, 4, 8], True),
    ([[1, 2, 4], [0, 0, 3]], None, False),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_bag(mode, layout, padding_idx):
    indices, offsets, last = layout
    tw, ew = _weights()
    ti = torch.tensor(indices)
    to = None if offsets is None else torch.tensor(offsets)
    kw = dict(mode=mode, include_last_offset=last, padding_idx=padding_idx)
    tout = TF.embedding_bag(ti, tw, to, **kw)
    eout = F.embedding_bag(to_ember(ti), ew, None if to is None else to_ember(to), **kw)
    assert_same(eout, tout)
    g = torch.randn_like(tout)
    tout.backward(g)
    eout.backward(to_ember(g))
    assert_same(ew.grad, tw.grad)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_embedding_bag_per_sample_weights(layout):
    indices, offsets, last = layout
    tw, ew = _weights()
    ti = torch.tensor(indices)
    tp = torch.rand(ti.shape, dtype=torch.float64, requires_grad=True)
    ep = to_ember(tp)
    to = None if offsets is None else torch.tensor(offsets)
    tout = TF.embedding_bag(ti, tw, to, mode="sum", per_sample_weights=tp, include_last_offset=last)
    eout = F.embedding_bag(to_ember(ti), ew, None if to is None else to_ember(to), mode="sum",
                           per_sample_weights=ep, include_last_offset=last)
    assert_same(eout, tout)
    g = torch.randn_like(tout)
    tout.backward(g)
    eout.backward(to_ember(g))
    assert_same(ew.grad, tw.grad)
    assert_same(ep.grad, tp.grad)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_and_max_norm(mode):
    tw, ew = _weights()
    ti, to = torch.tensor(FLAT), torch.tensor([0, 3])
    tout = TF.embedding_bag(ti, tw, to, max_norm=0.8, mode=mode)
    eout = F.embedding_bag(to_ember(ti), ew, to_ember(to), max_norm=0.8, scale_grad_by_freq=True, mode=mode)
    assert_same(eout, tout)
    assert_same(ew, tw)  # renormalised in place
    # the documented gradient (each row's divided by its index's count), built from torch's
    # embedding: torch 2.13's embedding_bag kernel divides some rows by another index's count
    tw.grad = None
    rows = TF.embedding(ti, tw, scale_grad_by_freq=True)
    ref = torch.stack([rows[:3].sum(0), rows[3:].sum(0)]) / (torch.tensor([[3.0], [5.0]]) if mode == "mean" else 1)
    g = torch.randn_like(ref)
    ref.backward(g)
    eout.backward(to_ember(g))
    assert_same(ew.grad, tw.grad)


def test_embedding_bag_module():
    cases = [((5, 3), {}), ((5, 3), dict(mode="max", padding_idx=0, include_last_offset=True)),
             ((5, 3), dict(mode="sum", max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True))]
    for args, kw in cases:
        t, e = tnn.EmbeddingBag(*args, **kw), nn.EmbeddingBag(*args, **kw)
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())
    t = tnn.EmbeddingBag(6, 3, mode="sum", dtype=torch.float64)
    e = nn.EmbeddingBag(6, 3, mode="sum", dtype=ember.float64)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    ti, to, tp = torch.tensor(FLAT), torch.tensor([0, 4]), torch.rand(8, dtype=torch.float64)
    assert_same(e(to_ember(ti), to_ember(to), to_ember(tp)), t(ti, to, tp))


@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_bag_from_pretrained(freeze):
    tw = torch.randn(4, 3)
    t = tnn.EmbeddingBag.from_pretrained(tw, freeze=freeze, mode="max")
    e = nn.EmbeddingBag.from_pretrained(to_ember(tw), freeze=freeze, mode="max")
    assert e.weight.requires_grad == t.weight.requires_grad == (not freeze)
    assert repr(e) == repr(t)
    ti = torch.tensor([[2, 0], [3, 3]])
    assert_same(e(to_ember(ti)), t(ti))


def test_embedding_bag_errors():
    w = ember.randn(5, 3)
    i = ember.tensor([1, 2])
    cases = [
        (ValueError, "offsets has to be a 1D Tensor but got None", lambda: F.embedding_bag(i, w)),
        (ValueError, "offsets has to be None", lambda: F.embedding_bag(ember.tensor([[1, 2]]), w, ember.tensor([0]))),
        (NotImplementedError, "only supported for mode='sum'",
         lambda: F.embedding_bag(i, w, ember.tensor([0]), mode="max", per_sample_weights=ember.ones(2))),
        (ValueError, "same shape as the input",
         lambda: F.embedding_bag(i, w, ember.tensor([0]), mode="sum", per_sample_weights=ember.ones(3))),
        (ValueError, "mode has to be one of", lambda: F.embedding_bag(i, w, ember.tensor([0]), mode="foo")),
        (RuntimeError, "offsets\\[0\\] has to be 0", lambda: F.embedding_bag(i, w, ember.tensor([1]))),
        (ValueError, "1D Tensor", lambda: F.embedding_bag(i, w, ember.tensor([[0]]))),
        (ValueError, "1D or 2D", lambda: F.embedding_bag(ember.tensor([[[1, 2]]]), w)),
        (RuntimeError, "can not be greater", lambda: F.embedding_bag(i, w, ember.tensor([0, 3]))),
        (ValueError, "max mode does not support scaling",
         lambda: F.embedding_bag(i, w, ember.tensor([0]), mode="max", scale_grad_by_freq=True)),
        (ValueError, "weight has to be a 2D", lambda: F.embedding_bag(i, ember.randn(5), ember.tensor([0]))),
    ]
    for exc, msg, fn in cases:
        with pytest.raises(exc, match=msg):
            fn()


# ---- bilinear ------------------------------------------------------------------------------

@pytest.mark.parametrize("lead", [(4,), (2, 3), ()])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear(lead, bias):
    t = tnn.Bilinear(3, 2, 5, bias=bias, dtype=torch.float64)
    e = nn.Bilinear(3, 2, 5, bias=bias, dtype=ember.float64)
    assert repr(e) == repr(t)
    assert list(e.state_dict()) == list(t.state_dict())
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    t1 = torch.randn(*lead, 3, dtype=torch.float64, requires_grad=True)
    t2 = torch.randn(*lead, 2, dtype=torch.float64, requires_grad=True)
    e1, e2 = to_ember(t1), to_ember(t2)
    tout, eout = t(t1, t2), e(e1, e2)
    assert_same(eout, tout)
    g = torch.randn_like(tout)
    tout.backward(g)
    eout.backward(to_ember(g))
    for a, b in [(e1, t1), (e2, t2)] + list(zip(e.parameters(), t.parameters())):
        assert_same(a.grad, b.grad)


def test_bilinear_init_bounds_and_errors():
    e = nn.Bilinear(16, 4, 300)
    bound = 1 / math.sqrt(16)
    for p in (e.weight, e.bias):
        arr = p.detach().numpy()
        assert arr.min() >= -bound and arr.max() <= bound and arr.max() - arr.min() > 1.8 * bound
    x1, x2, w = ember.randn(2, 3), ember.randn(2, 4), ember.randn(5, 3, 4)
    cases = [(x1, ember.randn(2, 3), w, None), (x1, ember.randn(3, 4), w, None), (x1, x2, w, ember.randn(4)),
             (x1, ember.randn(2, 1, 4), w, None)]
    for a, b, ww, bb in cases:
        with pytest.raises(RuntimeError, match="bilinear"):
            F.bilinear(a, b, ww, bb)
        with pytest.raises(RuntimeError, match="bilinear"):
            TF.bilinear(*(None if v is None else torch.tensor(v.numpy()) for v in (a, b, ww, bb)))


def test_bilinear_gradcheck():
    x1 = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    x2 = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(5, 2, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(5, dtype=ember.float64, requires_grad=True)
    assert gradcheck(F.bilinear, (x1, x2, w, b))
    assert gradgradcheck(F.bilinear, (x1, x2, w, b))


def test_embedding_float32_dtype():
    w = np.random.randn(4, 3).astype(np.float32)
    assert_same(F.embedding(ember.tensor([1, 3]), ember.tensor(w)), TF.embedding(torch.tensor([1, 3]), torch.tensor(w)))
