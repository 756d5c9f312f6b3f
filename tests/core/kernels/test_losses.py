"""cross_entropy and nll_loss on the compiled kernels (log_softmax's and nll_loss's
gradient) against the numpy path (``kernels.disabled()``) and torch: values, input
gradients, node names, with every option (weights, ignore_index, label smoothing, the
three reductions), 1-d, 2-d and spatial inputs, int64 and uint8 targets."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cpu import kernels

TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
# [C], batch 1, odd and prime sizes, spatial inputs of 3, 4 and 5 dims, an empty batch
SHAPES = [(7,), (1, 5), (13, 97), (4, 3, 5), (2, 5, 3, 4), (2, 3, 2, 2, 3), (0, 4)]
OPTIONS = [dict(), dict(reduction="sum"), dict(reduction="none"), dict(weight=True),
           dict(weight=True, reduction="none"), dict(ignore_index=1), dict(label_smoothing=0.2),
           dict(label_smoothing=0.1, weight=True, reduction="sum"), dict(label_smoothing=0.3, reduction="none"),
           dict(label_smoothing=0.15, weight=True, ignore_index=2)]


def _inputs(shape, dtype, seed, ignore_index):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    c = shape[0] if len(shape) == 1 else shape[1]
    t = rng.integers(0, c, () if len(shape) == 1 else (shape[0],) + shape[2:])
    if t.size > 1:
        t.reshape(-1)[1] = ignore_index  # one ignored target
    w = rng.random(c).astype(dtype) + 0.5
    return x, t, w


def _loss(lib, fn, x, t, w, opts, upstream, log_probs=False):
    mod = ember if lib == "ember" else torch
    functional = F if lib == "ember" else TF
    kw = dict(opts)
    if kw.pop("weight", False):
        kw["weight"] = mod.tensor(w)
    xs = mod.tensor(x, requires_grad=True)
    inp = functional.log_softmax(xs, 0 if x.ndim == 1 else 1) if log_probs else xs
    out = getattr(functional, fn)(inp, mod.tensor(t), **kw)
    out.backward(mod.tensor(upstream if out.ndim else upstream.reshape(())))
    return out.detach().numpy(), xs.grad.numpy(), out.grad_fn


def _names(fn):
    """The node names of a graph, depth first."""
    out, stack = [], [fn]
    while stack:
        f = stack.pop()
        if f is not None:
            out.append(type(f).__name__)
            stack.extend(g for g, _ in f.next_functions)
    return out


def _check(fn, shape, opts, dtype, seed, log_probs=False):
    ignore = opts.get("ignore_index", -100)
    x, t, w = _inputs(shape, dtype, seed, ignore)
    out_shape = t.shape if opts.get("reduction") == "none" else ()
    up = np.random.default_rng(seed + 1).standard_normal(out_shape).astype(dtype) + 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a mean over no target is 0/0
        got = _loss("ember", fn, x, t, w, opts, up, log_probs)
        with kernels.disabled():
            ref = _loss("ember", fn, x, t, w, opts, up, log_probs)
        want = _loss("torch", fn, x, t, w, opts, up, log_probs)
    for a, b, c in zip(got[:2], ref[:2], want[:2]):
        assert a.shape == c.shape and a.dtype == c.dtype
        np.testing.assert_allclose(a, b, equal_nan=True, **TOL[dtype])
        np.testing.assert_allclose(a, c, equal_nan=True, **TOL[dtype])
    assert _names(got[2]) == _names(ref[2])
    return got, want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cross_entropy(shape, opts, dtype):
    got, want = _check("cross_entropy", shape, opts, dtype, 1)
    assert _names(got[2]) == _names(want[2])  # torch's graph, node for node


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opts", [o for o in OPTIONS if "label_smoothing" not in o],
                         ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "default")
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_nll_loss(shape, opts, dtype):
    got, want = _check("nll_loss", shape, opts, dtype, 2, log_probs=True)
    assert _names(got[2]) == _names(want[2])


def test_graph_is_torchs():
    x = ember.randn(4, 5, requires_grad=True)
    loss = F.cross_entropy(x, ember.tensor([0, 1, 2, 3]))
    assert _names(loss.grad_fn) == ["NllLossBackward0", "LogSoftmaxBackward0", "AccumulateGrad"]
    loss = F.cross_entropy(ember.randn(2, 5, 3, requires_grad=True), ember.tensor([[0, 1, 2], [3, 4, 0]]))
    assert _names(loss.grad_fn) == ["NllLoss2DBackward0", "ViewBackward0", "LogSoftmaxBackward0", "AccumulateGrad"]


def test_uint8_targets_and_all_ignored():
    x = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    t = np.array([0, 3, 1, 2, 2, 0], np.uint8)
    for lib, fn in ((ember, F), (torch, TF)):
        xs = lib.tensor(x, requires_grad=True)
        loss = fn.cross_entropy(xs, lib.tensor(t))
        loss.backward()
        if lib is ember:
            e = (loss.item(), xs.grad.numpy())
        else:
            np.testing.assert_allclose(e[0], loss.item(), rtol=1e-6)
            np.testing.assert_allclose(e[1], xs.grad.numpy(), **TOL["float32"])
    # every target ignored: the mean is 0/0 = nan and the gradient 0 (torch's values)
    for lib, fn in ((ember, F), (torch, TF)):
        xs = lib.tensor(x, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            loss = fn.cross_entropy(xs, lib.tensor(np.full(6, -100)))
            loss.backward()
        assert np.isnan(loss.item()) and not np.any(xs.grad.numpy())


def test_target_out_of_range():
    x = ember.randn(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, ember.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.nll_loss(x, ember.tensor([0, -1, 1]))
    with pytest.raises(IndexError):
        TF.cross_entropy(torch.randn(3, 4), torch.tensor([0, 4, 1]))


def test_double_backward():
    rng = np.random.default_rng(4)
    x, t, w = rng.standard_normal((5, 6)), rng.integers(0, 6, 5), rng.random(6)
    t[0] = -100
    for opts in (dict(), dict(weight=True, label_smoothing=0.1, reduction="none")):
        res = []
        for lib, fn in ((ember, F), (torch, TF)):
            kw = dict(opts)
            if kw.pop("weight", False):
                kw["weight"] = lib.tensor(w)
            xs = lib.tensor(x, requires_grad=True)
            g, = lib.autograd.grad((fn.cross_entropy(xs, lib.tensor(t), **kw) ** 2).sum(), xs, create_graph=True)
            h, = lib.autograd.grad((g * g).sum(), xs)
            res.append((g.detach().numpy(), h.numpy()))
        for a, b in zip(*res):
            np.testing.assert_allclose(a, b, **TOL["float64"])


def test_probability_targets():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    p = rng.random((4, 5, 3)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    res = []
    for lib, fn in ((ember, F), (torch, TF)):
        xs = lib.tensor(x, requires_grad=True)
        loss = fn.cross_entropy(xs, lib.tensor(p), label_smoothing=0.1)
        loss.backward()
        res.append((loss.item(), xs.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5)
    np.testing.assert_allclose(res[0][1], res[1][1], **TOL["float32"])


def test_kernel_path_runs(monkeypatch):
    calls = {"log_softmax": 0, "log_softmax_backward": 0, "nll_grad": 0}
    for name in calls:
        fn = getattr(kernels.softmax, name)

        def wrapper(*a, _fn=fn, _n=name, **k):
            calls[_n] += 1
            return _fn(*a, **k)
        monkeypatch.setattr(kernels.softmax, name, wrapper)
    x = ember.randn(16, 10, requires_grad=True)
    F.cross_entropy(x, ember.randint(0, 10, (16,))).backward()
    n = int(kernels.enabled())
    assert calls == {"log_softmax": n, "log_softmax_backward": n, "nll_grad": n}
    with kernels.disabled():
        F.cross_entropy(x, ember.randint(0, 10, (16,))).backward()
    n = int(kernels.enabled())
    assert calls == {"log_softmax": n, "log_softmax_backward": n, "nll_grad": n}
