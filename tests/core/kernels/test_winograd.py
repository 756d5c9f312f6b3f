"""The Winograd F(2x2, 3x3) kernels (ember/cpu/kernels/winograd.py) against PyTorch and
against ember's numpy path: forward, input, weight and bias gradients of dense 3x3 stride-1
2-d convolutions, with odd output sizes (partial edge tiles), every padding from 0 to 2 on
each side (also 'same'), batch 1, prime channel counts, channels-last and non-contiguous
inputs, float32 and float64; which convolutions take them; calls from several threads."""

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cpu import kernels
from ember.cpu.kernels import winograd

DTYPES = {"float32": np.float32, "float64": np.float64}


@pytest.fixture
def calls(monkeypatch):
    """The names of the Winograd entry points each convolution ran through."""
    seen = []
    for name in ("forward", "input_grad", "weight_grad"):
        real = getattr(winograd, name)

        def spy(*args, _real=real, _name=name, **kw):
            seen.append(_name)
            return _real(*args, **kw)
        monkeypatch.setattr(winograd, name, spy)
    return seen


def _tol(dtype, terms):
    # sums of ``terms`` products of unit-sized values: the direct kernels' tolerances
    if dtype == "float64":
        return dict(rtol=1e-10, atol=1e-10 * terms)
    return dict(rtol=1e-5, atol=2e-6 * terms)


def _close(e, t, **tol):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **tol)


def _ember_run(xa, wa, ba, g, kw, layout):
    x = ember.tensor(xa, requires_grad=True)
    w = ember.tensor(wa, requires_grad=True)
    b = None if ba is None else ember.tensor(ba, requires_grad=True)
    y = F.conv2d(layout(x), w, b, **kw)
    y.backward(ember.tensor(g))
    return y, x.grad, w.grad, None if b is None else b.grad


def _check(n, c, o, size, dtype="float32", bias=True, seed=0, layout=lambda t: t, **kw):
    rng = np.random.default_rng(seed)
    dt = DTYPES[dtype]
    xa = rng.standard_normal((n, c) + size).astype(dt)
    wa = rng.standard_normal((o, c, 3, 3)).astype(dt)
    ba = rng.standard_normal(o).astype(dt) if bias else None
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    tb = None if ba is None else torch.tensor(ba, requires_grad=True)
    ty = TF.conv2d(layout(tx), tw, tb, **kw)
    g = rng.standard_normal(tuple(ty.shape)).astype(dt)
    ty.backward(torch.tensor(g))
    got = _ember_run(xa, wa, ba, g, kw, layout)
    with kernels.disabled():
        ref = _ember_run(xa, wa, ba, g, kw, layout)
    assert got[0].shape == tuple(ty.shape) and got[0].dtype == ref[0].dtype
    want = (ty, tx.grad, tw.grad, None if tb is None else tb.grad)
    terms = (c * 9, o * 9, n * ty.shape[2] * ty.shape[3], n * ty.shape[2] * ty.shape[3])
    for e, r, t, k in zip(got, ref, want, terms):
        if t is None:
            continue
        _close(e, t, **_tol(dtype, k))
        _close(e, r, **_tol(dtype, k))


CASES = [
    # n, c, o, size, options: each has at least MIN_TILES output tiles
    (4, 16, 16, (14, 14), dict(padding=1)),
    (2, 17, 19, (21, 23), dict(padding=1)),            # primes: odd outputs, partial tiles
    (1, 16, 24, (40, 30), dict()),                     # batch 1, no padding
    (3, 20, 16, (17, 15), dict(padding=2)),            # padding 2: outputs larger than inputs
    (2, 16, 18, (25, 27), dict(padding=(0, 2))),
    (2, 18, 16, (23, 26), dict(padding="same")),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[3]}-{c[4]}")
def test_matches_torch_and_the_numpy_path(case, dtype, calls):
    n, c, o, size, kw = case
    _check(n, c, o, size, dtype, **kw)
    assert set(calls) == ({"forward", "input_grad", "weight_grad"} if kernels.enabled() else set())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_channels_last_and_sliced_inputs(dtype, calls):
    _check(2, 16, 16, (20, 22), dtype, padding=1, layout=lambda t: t.contiguous(memory_format=_cl(t)))
    _check(2, 16, 16, (20, 44), dtype, bias=False, padding=1, layout=lambda t: t[:, :, :, ::2])
    assert calls.count("weight_grad") == (2 if kernels.enabled() else 0)


def _cl(t):
    return (torch if isinstance(t, torch.Tensor) else ember).channels_last


def test_asymmetric_padding_through_the_kernel():
    # ops pad symmetrically; the kernel also takes (low, high) pairs up to 2 on each side
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 16, 9, 11))
    w = rng.standard_normal((17, 16, 3, 3))
    for pad in (((2, 0), (0, 1)), ((1, 2), (2, 2)), ((0, 0), (1, 0))):
        want = TF.conv2d(TF.pad(torch.tensor(x), (*pad[1], *pad[0])), torch.tensor(w)).numpy()
        np.testing.assert_allclose(winograd.forward(x, w, None, pad), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, weight, kw", [
    ((2, 16, 5, 5), (16, 16, 3, 3), dict(padding=1)),        # 2 x 9 tiles: too few
    ((4, 8, 14, 14), (16, 8, 3, 3), dict(padding=1)),        # 8 input channels
    ((4, 16, 14, 14), (16, 16, 3, 3), dict(stride=2)),
    ((4, 16, 14, 14), (16, 16, 3, 3), dict(dilation=2)),
    ((4, 16, 14, 14), (16, 8, 3, 3), dict(groups=2)),
    ((4, 16, 14, 14), (16, 16, 3, 3), dict(padding=3)),      # its input gradient would need padding -1
    ((4, 16, 14, 14), (16, 16, 5, 5), dict(padding=2)),
])
def test_other_convolutions_take_the_other_kernels(shape, weight, kw, calls):
    rng = np.random.default_rng(4)
    xa, wa = rng.standard_normal(shape), rng.standard_normal(weight)
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    TF.conv2d(tx, tw, **kw).square().sum().backward()
    F.conv2d(ex, ew, **kw).square().sum().backward()
    _close(ex.grad, tx.grad, rtol=1e-10, atol=1e-9)
    _close(ew.grad, tw.grad, rtol=1e-10, atol=1e-9)
    assert calls == []


def test_double_backward(calls):
    # the gradient rules are the convolution's own ops, so second derivatives go through too
    rng = np.random.default_rng(5)
    xa, wa = rng.standard_normal((2, 16, 28, 28)), rng.standard_normal((16, 16, 3, 3))
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    (tgx, tgw) = torch.autograd.grad((TF.conv2d(tx, tw, padding=1) ** 2).sum(), (tx, tw), create_graph=True)
    (egx, egw) = ember.autograd.grad((F.conv2d(ex, ew, padding=1) ** 2).sum(), (ex, ew), create_graph=True)
    (tgx.sum() + (tgw ** 2).sum()).backward()
    (egx.sum() + (egw ** 2).sum()).backward()
    _close(ex.grad, tx.grad, rtol=1e-9, atol=1e-7)
    _close(ew.grad, tw.grad, rtol=1e-9, atol=1e-7)
    assert ("forward" in calls) == kernels.enabled()


def test_from_several_threads_at_once():
    # model servers call the kernels from several threads: each call's buffers are its own
    rng = np.random.default_rng(6)
    jobs = []
    for i in range(12):
        c, o = 16 + i % 3, 16 + (i * 5) % 7
        xa, wa = rng.standard_normal((2, c, 15 + i % 4, 16)), rng.standard_normal((o, c, 3, 3))
        tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
        ty = TF.conv2d(tx, tw, padding=1)
        g = rng.standard_normal(tuple(ty.shape))
        ty.backward(torch.tensor(g))
        jobs.append((xa, wa, g, (ty, tx.grad, tw.grad)))
    results, errors = [None] * len(jobs), []

    def work(indices):
        try:
            for i in indices:
                xa, wa, g, _ = jobs[i]
                ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
                ey = F.conv2d(ex, ew, padding=1)
                ey.backward(ember.tensor(g))
                results[i] = (ey, ex.grad, ew.grad)
        except Exception as e:  # noqa: BLE001 - reported below, on the test's thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(range(t, len(jobs), 4),)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for got, (*_, want) in zip(results, jobs):
        for e, t in zip(got, want):
            _close(e, t, rtol=1e-10, atol=1e-9)


def test_empty_batch_and_zero_channels():
    x = np.zeros((0, 16, 9, 9), dtype=np.float32)
    w = np.ones((16, 16, 3, 3), dtype=np.float32)
    assert winograd.forward(x, w, None, ((1, 1), (1, 1))).shape == (0, 16, 9, 9)
    g = np.zeros((0, 16, 9, 9), dtype=np.float32)
    np.testing.assert_array_equal(winograd.weight_grad(x, g, ((1, 1), (1, 1))), np.zeros((16, 16, 3, 3)))
