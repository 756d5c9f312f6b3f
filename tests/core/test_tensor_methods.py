"""Tensor attributes, conversions, printing, views and in-place semantics against torch."""


import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember

import ember


def pair(data, dtype="float32"):
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    return to_ember(t), t


def test_metadata():
    e, t = pair(np.arange(24.0).reshape(2, 3, 4))
    assert e.shape == t.shape and isinstance(e.shape, tuple) and repr(e.shape) == "ember.Size([2, 3, 4])"
    assert e.size() == t.size() and e.size(1) == t.size(1) and e.size(-1) == 4
    assert e.dim() == e.ndim == 3 and e.numel() == 24 and len(e) == 2
    assert e.dtype is ember.float32 and e.device == ember.device("cpu") and str(e.device) == "cpu"
    assert e.stride() == t.stride() and e.stride(1) == t.stride(1)
    assert e.is_contiguous() and e.storage_offset() == 0
    for view in (lambda x: x.transpose(0, 2), lambda x: x[:, 1:, ::2], lambda x: x[1], lambda x: x.permute(1, 0, 2),
                 lambda x: x[..., 2:3], lambda x: x.unsqueeze(1), lambda x: x[0, 0, 1:].expand(2, 3)):
        ev, tv = view(e), view(t)
        assert ev.stride() == tv.stride(), (ev.stride(), tv.stride())
        assert ev.storage_offset() == tv.storage_offset()
        assert ev.is_contiguous() == tv.is_contiguous()
    with pytest.raises(IndexError):
        e.size(3)
    with pytest.raises(TypeError):
        len(ember.tensor(1.0))


@pytest.mark.parametrize("data,dtype", [(3.5, "float32"), ([1, 2], "int64"), ([[True, False]], "bool"),
                                        ([1.5, -2], "float64"), (7, "int32"), ([0.1, 0.2], "bfloat16"),
                                        ([0.1, 0.2], "float16")])
def test_item_tolist_numpy(data, dtype):
    e, t = pair(data, dtype)
    assert e.tolist() == t.tolist()
    if e.numel() == 1:
        assert e.item() == t.item() and type(e.item()) is type(t.item())
        assert float(e) == float(t) and int(e) == int(t) and bool(e) == bool(t)
    if dtype != "bfloat16":
        assert e.numpy().dtype == t.numpy().dtype and np.array_equal(e.numpy(), t.numpy())
    with pytest.raises(RuntimeError):
        ember.ones(2).item()
    with pytest.raises(RuntimeError):
        bool(ember.ones(2))


def test_numpy_shares_memory_and_requires_grad_error():
    e = ember.zeros(3)
    e.numpy()[1] = 5
    assert e[1].item() == 5
    w = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError):
        w.numpy()
    assert w.detach().numpy().tolist() == [1.0, 1.0]
    assert np.asarray(e).tolist() == [0.0, 5.0, 0.0]
    r = np.ones(3, np.float32) * ember.ones(3)
    assert isinstance(r, ember.Tensor)  # __array_ufunc__ = None hands the op to ember


def test_detach_clone_requires_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d._version == y._version
    d[0] = 10  # shares memory (and version counter) with y
    assert y[0].item() == 10 and y._version == d._version
    c = x.clone()
    assert c.requires_grad and type(c.grad_fn).__name__ == "CloneBackward0"
    c.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    z = ember.zeros(2)
    assert z.requires_grad_() is z and z.requires_grad and z.is_leaf
    with pytest.raises(RuntimeError):
        ember.zeros(2, dtype=ember.int64).requires_grad_()
    with pytest.raises(RuntimeError):
        y.requires_grad = False
    assert not y.is_leaf and x.is_leaf


def test_data_attribute():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d[0] = 5.0  # allowed: .data is outside autograd
    assert x[0].item() == 5.0
    x.data = ember.tensor([7.0, 8.0])
    assert x.tolist() == [7.0, 8.0] and x.requires_grad
    y = (x * x).sum()
    x.data.mul_(2)
    y.backward()  # .data changes do not bump the version autograd checks
    assert x.grad.tolist() == [28.0, 32.0]


# ---- printing ---------------------------------------------------------------------

REPR_CASES = [
    ([1, 2, 3], None), ([1.0, 2.5, -3.0], None), ([1e-5, 1.0, 100.0], None), ([1e10, 1.0], None),
    ([123456789.0, 1.0], None), ([0.1, 0.25], "float64"), ([True, False], None), (3.0, None), (7, None),
    ([], None), ([[1.0, 2.0], [3.0, 4.0]], None), ([[[1, 2]], [[3, 4]]], None),
    ([1.0, float("nan"), float("inf")], None),
    ([1, 2], "int32"), ([1.5], "float16"), ([-1.0, 0.0, 2.0], None), ([100.0, 200.0], None), ([0.001, 0.002], None),
    ([1, 2], "uint8"), ([1e-10, 1e-12], None), (list(range(2000)), None), (np.linspace(0, 1, 1500).tolist(), None),
    (np.arange(60).reshape(3, 4, 5).tolist(), None), (np.zeros((0, 3)), None), (np.arange(1200.).reshape(40, 30), None),
    (-0.5, "float64"), ([12345.678, 0.5], None),
]


@pytest.mark.parametrize("data,dtype", REPR_CASES, ids=[str(i) for i in range(len(REPR_CASES))])
def test_repr_matches_torch(data, dtype):
    t = torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)
    e = to_ember(t)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert str(e) == str(t).replace("torch.", "ember.")


def test_repr_autograd_suffixes():
    for L in (torch, ember):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x + 1
        z = (x * 2).sum()
        if L is torch:
            expected = [repr(x), repr(y), repr(z), repr(x.detach())]
        else:
            got = [repr(x), repr(y), repr(z), repr(x.detach())]
    assert got == [s.replace("torch.", "ember.") for s in expected]
    assert "AddBackward0" in got[1]


# ---- views and in-place -------------------------------------------------------------

def test_views_share_memory_and_version_counter():
    base = ember.arange(12.0).reshape(3, 4)
    for make in (lambda b: b.view(4, 3), lambda b: b[1], lambda b: b[:, 1:3], lambda b: b.t(),
                 lambda b: b.transpose(0, 1),
                 lambda b: b.permute(1, 0), lambda b: b[0].expand(2, 4), lambda b: b.narrow(1, 1, 2),
                 lambda b: b.unbind(0)[2], lambda b: b.split(2, 1)[1], lambda b: b.unsqueeze(0),
                 lambda b: b[None, ..., 0],
                 lambda b: b.flatten(), lambda b: b.squeeze(), lambda b: b.chunk(2, 0)[1]):
        b = base.clone()
        v = make(b)
        before = b._version
        assert v._version == before
        v.mul_(1) if not v.shape == (2, 4) else b.add_(0)
        assert b._version == v._version == before + 1
        assert np.shares_memory(v.numpy(), b.numpy())
    b = ember.zeros(3, 4)
    b[1].fill_(2)
    b[:, 0] = 7
    b.view(12)[11] = 9
    tb = torch.zeros(3, 4)
    tb[1].fill_(2)
    tb[:, 0] = 7
    tb.view(12)[11] = 9
    assert_same(b, tb)


def test_copies_do_not_share():
    b = ember.arange(6.0).reshape(2, 3)
    for make in (lambda x: x[[0, 1]], lambda x: x[x > 2], lambda x: x.t().reshape(6), lambda x: x.repeat(1, 1),
                 lambda x: ember.cat([x, x]), lambda x: x.flip(0), lambda x: x.clone(), lambda x: x.t().contiguous()):
        c = make(b)
        assert not np.shares_memory(c.numpy(), b.numpy())


def test_setitem_forms_match_torch():
    def run(L):
        x = L.zeros(4, 5)
        x[0] = 1
        x[1, 2:] = L.tensor([1.0, 2.0, 3.0])
        x[:, 0] += 5
        x[x > 4] = -1
        x[L.tensor([2, 3]), L.tensor([1, 1])] = L.tensor([8.0, 9.0])
        x[..., -1] = L.arange(4.0)
        x[[0, 3]] *= 2
        x[None, 2, 3] = 0.5
        return x
    assert_same(run(ember), run(torch))
    with pytest.raises(RuntimeError):
        ember.zeros(4)[:2] = ember.ones(3)
    with pytest.raises(IndexError):
        ember.zeros(4)[5] = 1


def test_setitem_on_non_leaf_is_differentiable():
    def run(L):
        x = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        v = L.tensor([10.0, 20.0], requires_grad=True)
        y = x * 2
        y[:, 1] = v * 3
        y[0, 0] = y[1, 2].clone() * v[0]
        (y * L.tensor([[1.0, 2.0, 3.0]])).sum().backward()
        return x.grad, v.grad, type(y.grad_fn).__name__
    assert_same(run(ember)[:2], run(torch)[:2])
    assert run(ember)[2] == run(torch)[2] == "CopySlices"


def test_inplace_on_view_of_non_leaf():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        y = x * 1
        v = y[1:3]
        v.mul_(x[:2])
        v.exp_()
        y.sum().backward()
        return x.grad, y
    assert_same(run(ember), run(torch))


def test_inplace_on_leaf_requiring_grad_raises():
    for L in (torch, ember):
        x = L.ones(3, requires_grad=True)
        for f in (lambda x: x.add_(1), lambda x: x.mul_(2), lambda x: x.__setitem__(0, 2.0),
                  lambda x: x[0].fill_(1), lambda x: x.zero_(), lambda x: x.exp_()):
            with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
                f(x)
        with L.no_grad():
            x.add_(1)  # allowed outside autograd
        assert x.sum().item() == 6


def test_modified_saved_tensor_raises_at_backward():
    for L in (torch, ember):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        z = y.exp()  # saves its output
        w = y * y  # saves y
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            w.sum().backward(retain_graph=True)
        z.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


def test_inplace_keeps_version_and_identity():
    x = ember.ones(3)
    v0 = x._version
    y = x.add_(1)
    assert y is x and x._version == v0 + 1
    x += 1
    assert x._version == v0 + 2
    x[0] = 3
    assert x._version == v0 + 3
    t = torch.ones(3)
    t.add_(1)
    t += 1
    t[0] = 3
    assert t._version == x._version


def test_return_types_repr_and_fields():
    t = torch.tensor([[3.0, 1.0], [0.5, 2.0]])
    e = to_ember(t)
    for f in (lambda L, x: L.max(x, 1), lambda L, x: L.min(x, 0), lambda L, x: L.sort(x), lambda L, x: L.topk(x, 1)):
        r, tr = f(ember, e), f(torch, t)
        assert repr(r) == repr(tr).replace("torch.", "ember.")
        v, i = r
        assert r.values is v and r.indices is i
