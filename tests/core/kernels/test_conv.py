"""The compiled convolution kernels (ember/cpu/kernels/conv.py) against PyTorch and against
ember's numpy path: conv1d/2d/3d forward, input, weight and bias gradients, with groups,
depthwise (with and without a channel multiplier), stride, padding (also 'same'),
dilation, odd sizes, batch 1 and 0, channels-last and non-contiguous inputs,
transposed convolutions, float32 and float64."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cpu import kernels

FUNCS = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}
DTYPES = {"float32": (np.float32, ember.float32), "float64": (np.float64, ember.float64)}



@pytest.fixture(autouse=True)
def kernels_at_every_size(monkeypatch):
    """These small cases would take the numpy path (ops.conv.KERNEL_MIN_MACS): send them
    through the kernels so that the two paths are compared."""
    import ember.ops.conv
    monkeypatch.setattr(ember.ops.conv, "KERNEL_MIN_MACS", 0)

def _tol(dtype, terms):
    # float32 sums of ``terms`` products of unit-sized values: error grows with the count
    if dtype == "float64":
        return dict(rtol=1e-10, atol=1e-10 * terms)
    return dict(rtol=1e-5, atol=2e-6 * terms)


def _close(e, t, **tol):
    np.testing.assert_allclose(np.asarray(e.detach().numpy() if isinstance(e, ember.Tensor) else e),
                               t.detach().numpy(), **tol)


def _run_ember(f, xa, wa, ba, g, kw, dtype, layout=None):
    """Forward and gradients of input, weight and bias on ember tensors made from arrays."""
    x = ember.tensor(xa, requires_grad=True)
    w = ember.tensor(wa, requires_grad=True)
    b = None if ba is None else ember.tensor(ba, requires_grad=True)
    y = f(x if layout is None else layout(x, ember), w, b, **kw)
    y.backward(ember.tensor(g))
    return y, x, w, b


def _case(rng, nd, n, c, o, size, k, groups, dtype, bias=True):
    np_dt = DTYPES[dtype][0]
    xa = rng.standard_normal((n, c) + size).astype(np_dt)
    wa = rng.standard_normal((o, c // groups) + k).astype(np_dt)
    ba = rng.standard_normal(o).astype(np_dt) if bias else None
    return xa, wa, ba


def _check(nd, n, c, o, size, k, dtype="float32", bias=True, seed=0, layout=None, **kw):
    """ember (kernels on and off) against torch: output and all three gradients."""
    rng = np.random.default_rng(seed)
    groups = kw.get("groups", 1)
    xa, wa, ba = _case(rng, nd, n, c, o, size, k, groups, dtype, bias)
    fe, ft = FUNCS[nd]
    tx = torch.tensor(xa, requires_grad=True)
    tw = torch.tensor(wa, requires_grad=True)
    tb = None if ba is None else torch.tensor(ba, requires_grad=True)
    ty = ft(tx if layout is None else layout(tx, torch), tw, tb, **kw)
    g = rng.standard_normal(tuple(ty.shape)).astype(xa.dtype)
    ty.backward(torch.tensor(g))
    terms = (c // groups) * math.prod(k)
    tol = _tol(dtype, terms)
    y, x, w, b = _run_ember(fe, xa, wa, ba, g, kw, dtype, layout)
    with kernels.disabled():
        y0, x0, w0, b0 = _run_ember(fe, xa, wa, ba, g, kw, dtype, layout)
    assert y.shape == tuple(ty.shape) and y.dtype is DTYPES[dtype][1]
    _close(y, ty, **tol)
    _close(y, y0.detach(), **tol)
    tol_w = _tol(dtype, n * math.prod(ty.shape[2:]))
    _close(x.grad, tx.grad, **tol_w)
    _close(w.grad, tw.grad, **tol_w)
    _close(w.grad, w0.grad, **tol_w)
    _close(x.grad, x0.grad, **tol_w)
    if bias:
        _close(b.grad, tb.grad, **tol_w)
    # same memory layout as the numpy path gives (a unit dim's stride means nothing)
    assert [s for s, d in zip(y._data.strides, y.shape) if d > 1] == \
        [s for s, d in zip(y0._data.strides, y.shape) if d > 1]
    return y


CASES = [
    # nd, n, c, o, size, kernel, options
    (2, 2, 3, 5, (7, 9), (3, 3), dict()),
    (2, 1, 4, 6, (11, 13), (3, 3), dict(padding=1)),
    (2, 3, 6, 4, (10, 9), (3, 2), dict(stride=2, padding=1, dilation=2)),
    (2, 2, 6, 9, (8, 7), (3, 3), dict(groups=3, stride=(2, 1), padding=(0, 2))),
    (2, 2, 5, 7, (9, 8), (4, 3), dict(padding="same")),
    (2, 2, 5, 7, (9, 8), (3, 3), dict(padding="same", dilation=(2, 3))),
    (2, 2, 4, 3, (5, 6), (1, 1), dict()),
    (2, 2, 4, 3, (9, 7), (1, 1), dict(stride=2)),
    (2, 3, 4, 6, (5, 7), (1, 1), dict(groups=2)),
    # small images: several to a block, side by side
    (2, 8, 6, 5, (6, 5), (1, 1), dict()),
    (2, 9, 6, 4, (7, 6), (3, 3), dict(padding=1, groups=2)),
    (2, 7, 5, 3, (8, 9), (3, 3), dict(stride=2, padding=1)),
    (2, 3, 3, 2, (17, 19), (7, 7), dict(stride=3, padding=3)),
    (2, 2, 3, 4, (6, 6), (3, 3), dict(padding=(3, 1))),  # padding beyond the kernel's reach
    (1, 3, 4, 5, (23,), (5,), dict(stride=2, padding=2)),
    (1, 1, 6, 6, (17,), (3,), dict(groups=2, dilation=3, padding="same")),
    (3, 2, 3, 4, (5, 6, 7), (3, 2, 2), dict(stride=(2, 1, 2), padding=(1, 0, 1))),
    (3, 1, 4, 4, (6, 5, 4), (3, 3, 3), dict(padding="same", groups=2)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}d-{c[4]}-{c[5]}-{c[6]}")
def test_dense_and_grouped_match_torch(case, dtype):
    nd, n, c, o, size, k, kw = case
    _check(nd, n, c, o, size, k, dtype, **kw)


DEPTHWISE = [
    (2, 2, 6, 6, (13, 11), (3, 3), dict(groups=6, padding=1)),
    (2, 2, 6, 6, (13, 11), (3, 3), dict(groups=6, padding=1, stride=2)),
    (2, 1, 5, 10, (9, 12), (5, 5), dict(groups=5, padding=2, stride=(2, 1))),  # channel multiplier 2
    (2, 3, 4, 4, (10, 10), (3, 3), dict(groups=4, dilation=2, padding="same")),
    (2, 2, 7, 7, (8, 9), (3, 3), dict(groups=7)),
    (1, 2, 6, 12, (19,), (3,), dict(groups=6, stride=2, padding=1)),
    (3, 2, 3, 3, (5, 7, 6), (3, 3, 3), dict(groups=3, padding=1, stride=(1, 2, 2))),
    (2, 2, 8, 8, (15, 14), (5, 5), dict(groups=8, padding=2, stride=2)),        # MobileNet's 5x5 stride 2
    (2, 3, 6, 6, (7, 7), (5, 5), dict(groups=6, padding=2)),                    # 7x7 planes
    (2, 2, 3, 6, (9, 10), (3, 3), dict(groups=3, padding=1, stride=2)),         # multiplier 2, stride 2
    (2, 2, 4, 4, (6, 9), (1, 3), dict(groups=4, padding=(0, 1))),               # fewer than four taps
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", DEPTHWISE, ids=lambda c: f"{c[0]}d-{c[4]}-{c[6]}")
def test_depthwise_matches_torch(case, dtype):
    nd, n, c, o, size, k, kw = case
    _check(nd, n, c, o, size, k, dtype, **kw)


@pytest.mark.parametrize("depthwise", [False, True])
def test_without_bias_and_batch_one(depthwise):
    if depthwise:
        _check(2, 1, 5, 5, (7, 8), (3, 3), bias=False, groups=5, padding=1)
    else:
        _check(2, 1, 5, 3, (7, 8), (3, 3), bias=False, padding=1)


def test_large_sums_keep_float32_accuracy():
    # weight and bias gradients sum over N*H*W = 14112 products per entry
    _check(2, 8, 8, 8, (42, 42), (3, 3), padding=1, seed=3)
    _check(2, 8, 8, 8, (42, 42), (3, 3), padding=1, groups=8, seed=4)


@pytest.mark.parametrize("depthwise", [False, True])
@pytest.mark.parametrize("nd", [2, 3])
def test_channels_last_input(nd, depthwise):
    fmt = "channels_last" if nd == 2 else "channels_last_3d"
    size = (9, 10) if nd == 2 else (5, 6, 7)
    k = (3,) * nd
    groups = 4 if depthwise else 1
    y = _check(nd, 2, 4, 4, size, k, groups=groups, padding=1,
               layout=lambda t, m: t.contiguous(memory_format=getattr(m, fmt)))
    assert y.is_contiguous(memory_format=getattr(ember, fmt))


def test_non_contiguous_input():
    # a transposed view: spatial axes swapped
    y = _check(2, 2, 3, 4, (8, 11), (3, 3), padding=1, layout=lambda t, m: t.transpose(2, 3))
    assert y.shape == (2, 4, 11, 8)


def test_empty_batch():
    x = ember.zeros(0, 3, 8, 8, requires_grad=True)
    w = ember.ones(4, 3, 3, 3, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert y.shape == (0, 4, 8, 8)
    y.sum().backward()
    assert x.grad.shape == (0, 3, 8, 8)
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros((4, 3, 3, 3), np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1), dict(groups=2, dilation=2),
                                dict(groups=4, stride=2)])
def test_transposed_convolution(kw, dtype):
    rng = np.random.default_rng(5)
    np_dt = DTYPES[dtype][0]
    groups = kw.get("groups", 1)
    xa = rng.standard_normal((2, 4, 7, 6)).astype(np_dt)
    wa = rng.standard_normal((4, 8 // groups if groups < 4 else 1, 3, 3)).astype(np_dt)
    ba = rng.standard_normal(wa.shape[1] * groups).astype(np_dt)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    ty = TF.conv_transpose2d(tx, tw, tb, **kw)
    g = rng.standard_normal(tuple(ty.shape)).astype(np_dt)
    ty.backward(torch.tensor(g))
    y, x, w, b = _run_ember(F.conv_transpose2d, xa, wa, ba, g, kw, dtype)
    tol = _tol(dtype, 60)
    _close(y, ty, **tol)
    for e, t in ((x, tx), (w, tw), (b, tb)):
        _close(e.grad, t.grad, **tol)


def test_double_backward_through_kernels():
    rng = np.random.default_rng(6)
    xa = rng.standard_normal((2, 3, 6, 7))
    wa = rng.standard_normal((4, 3, 3, 3))
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    (tgx,) = torch.autograd.grad((TF.conv2d(tx, tw, stride=2, padding=1) ** 2).sum(), tx, create_graph=True)
    (egx,) = ember.autograd.grad((F.conv2d(ex, ew, stride=2, padding=1) ** 2).sum(), ex, create_graph=True)
    _close(egx, tgx, rtol=1e-10, atol=1e-10)
    tgx.sum().backward()
    egx.sum().backward()
    _close(ew.grad, tw.grad, rtol=1e-10, atol=1e-9)


def test_the_kernels_run(monkeypatch):
    from ember.cpu.kernels import conv as K
    calls = []
    for name in ("forward", "input_grad", "weight_grad", "bias_grad"):
        real = getattr(K, name)

        def counted(*a, _real=real, _name=name, **k):
            calls.append(_name)
            return _real(*a, **k)
        monkeypatch.setattr(K, name, counted)
    x = ember.randn(2, 4, 9, 9, requires_grad=True)
    for groups in (1, 4):
        w = ember.randn(4, 4 // groups, 3, 3, requires_grad=True)
        b = ember.randn(4, requires_grad=True)
        F.conv2d(x, w, b, padding=1, groups=groups).sum().backward()
    assert calls == (["forward", "input_grad", "weight_grad", "bias_grad"] * 2 if kernels.enabled() else [])
    calls.clear()
    with kernels.disabled():
        F.conv2d(x, w, b, padding=1, groups=4).sum().backward()
    assert calls == []


@pytest.mark.parametrize("groups", [1, 6])
def test_gradients_of_a_sum(groups):
    # y.sum().backward() hands the rule a broadcast (zero-stride) gradient
    rng = np.random.default_rng(7)
    xa = rng.standard_normal((3, 6, 11, 10)).astype(np.float32)
    wa = rng.standard_normal((6, 6 // groups, 3, 3)).astype(np.float32)
    ba = rng.standard_normal(6).astype(np.float32)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    for stride in (1, 2):
        for t in (tx, tw, tb, ex, ew, eb):
            t.grad = None
        TF.conv2d(tx, tw, tb, stride=stride, padding=1, groups=groups).sum().backward()
        F.conv2d(ex, ew, eb, stride=stride, padding=1, groups=groups).sum().backward()
        for e, t in ((ex, tx), (ew, tw), (eb, tb)):
            _close(e.grad, t.grad, rtol=1e-5, atol=1e-4)


# ---- small dense convolutions: one column matrix, one product (kernels.conv.forward_whole) ----

WHOLE = CASES + [
    (2, 1, 3, 8, (23, 21), (7, 7), dict(stride=2, padding=3)),      # a ResNet stem, odd sizes
    (2, 3, 5, 6, (15, 14), (3, 3), dict(stride=2, padding=1)),
    (2, 2, 4, 5, (13, 17), (3, 2), dict(stride=(3, 2), padding=(1, 0), dilation=(1, 2))),
    (2, 1, 6, 4, (7, 7), (3, 3), dict(padding=1)),                   # 7x7 planes, batch 1
    (2, 1, 4, 6, (9, 8), (1, 1), dict()),                            # 1x1 at batch 1: no columns
    (2, 2, 6, 4, (9, 8), (1, 1), dict(groups=2)),
    (2, 1, 4, 4, (5, 6), (3, 3), dict(padding=(0, 3))),              # padding beyond the kernel's reach
]


def _check_whole(nd, n, c, o, size, k, dtype, layout=None, bias=True, seed=1, **kw):
    """Inference and the input gradient alone (the weight takes no gradient, so no columns
    are kept) against torch and the numpy path."""
    rng = np.random.default_rng(seed)
    xa, wa, ba = _case(rng, nd, n, c, o, size, k, kw.get("groups", 1), dtype, bias)
    fe, ft = FUNCS[nd]
    tx = torch.tensor(xa, requires_grad=True)
    ty = ft(tx if layout is None else layout(tx, torch), torch.tensor(wa), None if ba is None else torch.tensor(ba),
            **kw)
    g = rng.standard_normal(tuple(ty.shape)).astype(xa.dtype)
    ty.backward(torch.tensor(g))
    tol = _tol(dtype, (c // kw.get("groups", 1)) * math.prod(k))

    def run():
        x = ember.tensor(xa, requires_grad=True)
        xin = x if layout is None else layout(x, ember)
        args = (ember.tensor(wa), None if ba is None else ember.tensor(ba))
        with ember.no_grad():
            y_inf = fe(xin, *args, **kw)
        y = fe(xin, *args, **kw)
        y.backward(ember.tensor(g))
        return y_inf, y, x.grad
    y_inf, y, gx = run()
    with kernels.disabled():
        y_inf0, y0, gx0 = run()
    for e in (y_inf, y):
        assert e.shape == tuple(ty.shape) and e.dtype is DTYPES[dtype][1]
        _close(e, ty, **tol)
        _close(e, y0.detach(), **tol)
        assert [s for s, d in zip(e._data.strides, e.shape) if d > 1] == \
            [s for s, d in zip(y_inf0._data.strides, e.shape) if d > 1]
    _close(gx, tx.grad, **_tol(dtype, n * math.prod(ty.shape[2:])))
    _close(gx, gx0, **_tol(dtype, n * math.prod(ty.shape[2:])))


@pytest.fixture
def whole_path(monkeypatch):
    """Below the blocked kernels' gate; records which forward kernel ran ("whole" or
    "direct")."""
    import ember.ops.conv
    from ember.cpu.kernels import conv as K
    monkeypatch.setattr(ember.ops.conv, "KERNEL_MIN_MACS", 1 << 62)
    calls = []
    for name, tag in (("forward_whole", "whole"), ("forward_direct", "direct")):
        real = getattr(K, name)

        def counted(*a, _real=real, _tag=tag, **k):
            calls.append(_tag)
            return _real(*a, **k)
        monkeypatch.setattr(K, name, counted)
    return calls


def _expected(nd, c, o, k, kw):
    from ember.cpu.kernels import conv as K
    groups = kw.get("groups", 1)
    return "direct" if K.direct_pays(nd + 2, (o, c // groups) + k, groups) else "whole"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", WHOLE, ids=lambda c: f"{c[0]}d-{c[1]}-{c[4]}-{c[5]}-{c[6]}")
def test_whole_batch_forward_matches_torch(case, dtype, whole_path):
    nd, n, c, o, size, k, kw = case
    _check_whole(nd, n, c, o, size, k, dtype, **kw)
    assert whole_path == ([_expected(nd, c, o, k, kw)] * 2 if kernels.enabled() else [])


# few channels per group (a resampling filter bank, an RGB stem): direct multiply-add passes
DIRECT = [
    (1, 1, 1, 1, (101,), (28,), dict(stride=2)),                      # resample 16 kHz -> 8 kHz
    (1, 3, 1, 2, (57,), (15,), dict()),                               # 8 kHz -> 16 kHz, batch 3
    (1, 2, 1, 1, (2600,), (41,), dict(stride=3, padding=7)),          # several chunks of cells
    (1, 2, 2, 3, (40,), (5,), dict(stride=2, dilation=3, padding=9)),  # padding beyond the kernel's reach
    (1, 2, 4, 6, (31,), (3,), dict(groups=2, stride=3, padding="valid")),
    (2, 2, 3, 16, (31, 29), (3, 3), dict(stride=2, padding=1)),       # a MobileNet stem
    (2, 1, 1, 6, (28, 28), (5, 5), dict()),                           # LeNet's first layer, batch 1
    (2, 3, 1, 32, (13, 12), (3, 3), dict(padding=1)),                 # 32 filters
    (2, 3, 1, 4, (17, 19), (3, 5), dict(stride=(3, 2), padding=(2, 1), dilation=(2, 1))),
    (2, 2, 4, 6, (12, 11), (2, 3), dict(groups=2, padding=(0, 4))),
    (2, 2, 2, 3, (9, 10), (4, 4), dict(padding="same")),
    (2, 1, 3, 2, (1, 40), (1, 5), dict(stride=2)),                    # one output row
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", DIRECT, ids=lambda c: f"{c[0]}d-{c[1]}-{c[4]}-{c[5]}-{c[6]}")
def test_direct_forward_matches_torch(case, dtype, whole_path):
    nd, n, c, o, size, k, kw = case
    assert _expected(nd, c, o, k, kw) == "direct"
    _check_whole(nd, n, c, o, size, k, dtype, **kw)
    _check_whole(nd, n, c, o, size, k, dtype, bias=False, seed=3, **kw)
    assert whole_path == (["direct"] * 4 if kernels.enabled() else [])


@pytest.mark.parametrize("stride", [1, 2])
def test_whole_batch_forward_channels_last_and_strided_input(stride, whole_path):
    def channels_last(t, lib):
        return t.contiguous(memory_format=lib.channels_last)

    def every_other_column(t, lib):
        return t[..., ::2]
    for layout in (channels_last, every_other_column):
        for n in (1, 3):
            for c in (5, 2):  # columns and one product; direct passes
                _check_whole(2, n, c, 6, (11, 18), (3, 3), "float32", layout=layout, stride=stride, padding=1)
                _check_whole(2, n, c, 6, (11, 18), (3, 3), "float64", layout=layout, stride=stride, padding=1,
                             bias=False)
    assert set(whole_path) == ({"whole", "direct"} if kernels.enabled() else set())


@pytest.mark.parametrize("c", [3, 8])
def test_whole_batch_forward_empty_batch(c, whole_path):
    x = ember.zeros(0, c, 8, 8)
    w = ember.ones(4, c, 3, 3)
    with ember.no_grad():
        y = F.conv2d(x, w, padding=1)
    assert y.shape == (0, 4, 8, 8)
    with ember.no_grad():
        y = F.conv1d(ember.zeros(0, 1, 30), ember.ones(1, 1, 28), stride=2)
    assert y.shape == (0, 1, 2)


@pytest.mark.parametrize("case", [
    (2, 5, 6, 7, (9, 11), (3, 3), dict(padding=1)),                       # flat rows
    (2, 5, 12, 8, (9, 11), (3, 3), dict(stride=2, padding=1, groups=2)),  # stride phases
    (2, 5, 40, 7, (9, 11), (1, 1), dict(stride=2)),                       # a strided slice
    (2, 5, 6, 7, (9, 11), (3, 3), dict()),                                # stride 1, narrower output
    (3, 5, 6, 7, (4, 5, 6), (2, 2, 2), dict(stride=(1, 2, 1))),           # the generic builder
], ids=lambda c: f"{c[0]}d-{c[5]}-{c[6]}")
def test_whole_batch_forward_in_chunks_of_images(case, whole_path, monkeypatch):
    from ember.cpu.kernels import conv as K
    monkeypatch.setattr(K, "_WHOLE_BYTES", 1)  # one image per chunk
    nd, n, c, o, size, k, kw = case
    _check_whole(nd, n, c, o, size, k, "float32", **kw)
    stride = kw.get("stride", 1)
    stride = stride if isinstance(stride, tuple) else (stride,) * nd
    pad = ((kw.get("padding", 0),) * 2,) * nd
    npos = math.prod(K._osize((n, c) + size, k, stride, pad, (1,) * nd))
    cg = c // kw.get("groups", 1)
    monkeypatch.setattr(K, "_WHOLE_BYTES", 2 * cg * math.prod(k) * npos * 8)  # two images a chunk, one in the last
    _check_whole(nd, n, c, o, size, k, "float64", **kw)
    assert whole_path == (["whole"] * 4 if kernels.enabled() else [])


# ---- small dense convolutions in training: kept columns, flat col2im ------------------------
# (kernels.conv.forward_whole_kept, weight_grad_kept, input_grad_flat)

@pytest.fixture
def small_training_path(monkeypatch):
    """Below the blocked kernels' gate; records which small-convolution kernels ran."""
    import ember.ops.conv
    from ember.cpu.kernels import conv as K
    monkeypatch.setattr(ember.ops.conv, "KERNEL_MIN_MACS", 1 << 62)
    calls = []
    for name in ("forward_whole_kept", "weight_grad_kept", "input_grad_flat"):
        real = getattr(K, name)

        def counted(*a, _real=real, _name=name, **k):
            calls.append(_name)
            return _real(*a, **k)
        monkeypatch.setattr(K, name, counted)
    return calls


SMALL_TRAINING = [
    (2, 5, 4, 8, (13, 13), (3, 3), dict()),                          # LeNet's second layer, smaller
    (2, 3, 4, 8, (14, 14), (3, 3), dict(padding=1)),                 # the demo's
    (2, 1, 3, 7, (11, 13), (3, 3), dict(padding=1)),                 # batch 1, odd sizes
    (2, 3, 1, 5, (17, 19), (5, 5), dict()),                          # one input channel (LeNet's first layer)
    (2, 2, 3, 5, (7, 11), (2, 3), dict(padding=(1, 2), dilation=(2, 1))),
    (2, 2, 3, 5, (9, 8), (4, 4), dict(padding="same")),              # uneven padding (one more at the end)
    (2, 2, 4, 6, (6, 6), (3, 3), dict(padding=(3, 1))),              # padding beyond the kernel's reach
    (2, 3, 4, 6, (8, 7), (3, 3), dict(groups=2, padding=1)),
    (2, 3, 2, 7, (5, 9), (1, 1), dict()),                            # 1x1: the columns are a copy
    (1, 3, 3, 7, (23,), (5,), dict(padding=2)),
    (1, 2, 2, 5, (17,), (3,), dict(dilation=3, padding="same")),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SMALL_TRAINING, ids=lambda c: f"{c[0]}d-{c[1]}-{c[4]}-{c[5]}-{c[6]}")
def test_small_training_path_matches_torch(case, dtype, small_training_path):
    nd, n, c, o, size, k, kw = case
    _check(nd, n, c, o, size, k, dtype, **kw)
    _check(nd, n, c, o, size, k, dtype, bias=False, seed=2, **kw)
    # the forward keeps its columns, the weight gradient uses them; the input gradient
    # (fewer input than output channels) is the flat col2im
    each = ["forward_whole_kept", "input_grad_flat", "weight_grad_kept"]
    assert small_training_path == (each * 2 if kernels.enabled() else [])


@pytest.mark.parametrize("layout", ["channels_last", "transposed"])
def test_small_training_path_layouts(layout, small_training_path):
    def fmt(t, lib):
        if layout == "channels_last":
            return t.contiguous(memory_format=lib.channels_last)
        return t.transpose(2, 3)
    for dtype in ("float32", "float64"):
        _check(2, 3, 3, 6, (9, 10), (3, 3), dtype, padding=1, layout=fmt)
    assert set(small_training_path) == ({"forward_whole_kept", "input_grad_flat", "weight_grad_kept"}
                                        if kernels.enabled() else set())


def test_small_training_path_in_chunks_of_images(small_training_path, monkeypatch):
    from ember.cpu.kernels import conv as K
    # one image per chunk; then two a chunk and one in the last for the float64 case (its
    # 27 column rows of 7x11 positions, 7x13 on the input gradient's wide rows)
    for limit in (1, 2 * 27 * 100 * 8):
        monkeypatch.setattr(K, "_WHOLE_BYTES", limit)
        _check(2, 5, 3, 6, (9, 11), (3, 3), "float64", padding=(0, 1))
        _check(2, 5, 6, 9, (9, 11), (3, 3), "float32", groups=3, padding=1)
    assert len(small_training_path) == (12 if kernels.enabled() else 0)


def test_small_training_path_gradients_of_a_sum_and_double_backward(small_training_path):
    rng = np.random.default_rng(11)
    xa = rng.standard_normal((3, 2, 9, 8))
    wa = rng.standard_normal((5, 2, 3, 3))
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    TF.conv2d(tx, tw, padding=1).sum().backward()   # a broadcast gradient
    F.conv2d(ex, ew, padding=1).sum().backward()
    _close(ex.grad, tx.grad, rtol=1e-10, atol=1e-10)
    _close(ew.grad, tw.grad, rtol=1e-10, atol=1e-9)
    for t in (tx, tw, ex, ew):
        t.grad = None
    (tgx, tgw) = torch.autograd.grad((TF.conv2d(tx, tw, padding=1) ** 2).sum(), (tx, tw), create_graph=True)
    (egx, egw) = ember.autograd.grad((F.conv2d(ex, ew, padding=1) ** 2).sum(), (ex, ew), create_graph=True)
    _close(egx, tgx, rtol=1e-10, atol=1e-9)
    _close(egw, tgw, rtol=1e-10, atol=1e-9)
    (tgx.sum() + (tgw ** 2).sum()).backward()
    (egx.sum() + (egw ** 2).sum()).backward()
    _close(ex.grad, tx.grad, rtol=1e-10, atol=1e-8)
    _close(ew.grad, tw.grad, rtol=1e-10, atol=1e-8)
    assert ("forward_whole_kept" in small_training_path) == kernels.enabled()


def test_kept_columns_when_the_kernels_are_switched_off_before_backward(small_training_path):
    # the forward kept the kernel's columns; the numpy path then builds its own
    rng = np.random.default_rng(12)
    xa, wa = rng.standard_normal((2, 3, 7, 8)), rng.standard_normal((6, 3, 3, 3))
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    ty, ey = TF.conv2d(tx, tw), F.conv2d(ex, ew)
    g = rng.standard_normal(tuple(ty.shape))
    ty.backward(torch.tensor(g))
    with kernels.disabled():
        ey.backward(ember.tensor(g))
    _close(ex.grad, tx.grad, rtol=1e-10, atol=1e-10)
    _close(ew.grad, tw.grad, rtol=1e-10, atol=1e-10)
    assert small_training_path == (["forward_whole_kept"] if kernels.enabled() else [])


def test_small_training_and_depthwise_paths_from_several_threads(small_training_path):
    # model servers call the kernels from several threads at once: each call's buffers
    # (kept columns, wide rows, padded planes) are its own, so every thread gets torch's values
    import threading
    cases = [((3, 4, 13, 13), (8, 4, 3, 3), dict(padding=1)),
             ((2, 6, 11, 10), (9, 2, 3, 3), dict(groups=3, padding=(0, 1))),
             ((2, 6, 15, 14), (6, 1, 5, 5), dict(groups=6, padding=2, stride=2)),
             ((2, 6, 15, 14), (12, 1, 3, 3), dict(groups=6, padding=1))]
    rng = np.random.default_rng(13)
    jobs = []
    for i in range(16):
        xs, ws, kw = cases[i % len(cases)]
        xa, wa = rng.standard_normal(xs), rng.standard_normal(ws)
        tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
        ty = TF.conv2d(tx, tw, **kw)
        g = rng.standard_normal(tuple(ty.shape))
        ty.backward(torch.tensor(g))
        jobs.append((xa, wa, g, kw, (ty, tx.grad, tw.grad)))
    results, errors = [None] * len(jobs), []

    def work(indices):
        try:
            for i in indices:
                xa, wa, g, kw, _ = jobs[i]
                ex, ew = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
                ey = F.conv2d(ex, ew, **kw)
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
    # the dense cases took the small-convolution kernels (8 of the 16 calls)
    assert small_training_path.count("forward_whole_kept") == (8 if kernels.enabled() else 0)
