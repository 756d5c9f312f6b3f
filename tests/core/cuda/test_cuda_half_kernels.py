"""The kernels' float16 and bfloat16 instantiations on a GPU, through ember's ops: each op on
half-precision cuda tensors against the same op on float32 cuda tensors holding the same
values (exactly), its results rounded to the half type. The half kernels load into float32,
compute as the float32 kernels do and round on the store, so the two differ by a few
roundings of the half type at most (the float32 kernels are checked against float64 and
torch in the other files). Each test also checks that the half-precision kernel ran, not
the generic cupy path. Run where ``ember.cuda.is_available()``."""

import copy

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.cuda import kernels

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

HALF = ["float16", "bfloat16"]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}  # machine epsilon: torch.finfo(dtype).eps


@pytest.fixture
def launched(monkeypatch):
    """The names of the kernels launched during the test."""
    names = []
    real = kernels.function

    def recording(family, name):
        names.append(name)
        return real(family, name)
    monkeypatch.setattr(kernels, "function", recording)
    return names


def _leaves(shape, dtype, seed, scale=1.0):
    """``(half, single)``: a random cuda tensor of ``shape`` in ``dtype`` and the same values
    in float32, both leaves that require grad."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale
    half = ember.tensor(values, device="cuda").to(getattr(ember, dtype)).requires_grad_()
    return half, half.detach().float().requires_grad_()


def _close(half, single, dtype, ulps=4):
    """``half`` against ``single`` rounded to ``dtype``: within ``ulps`` roundings of each
    value, or of the result's largest magnitude (at least 1) near zero."""
    assert half.dtype == getattr(ember, dtype) and half.shape == single.shape
    want = single.detach().to(half.dtype).float().cpu().numpy()
    got = half.detach().float().cpu().numpy()
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=ulps * EPS[dtype], atol=ulps * EPS[dtype] * scale)


def _compare(fn, shapes, dtype, ulps=4, scale=1.0):
    """``fn`` of half leaves against ``fn`` of their float32 copies, forward and every
    input's gradient for one random output gradient."""
    pairs = [_leaves(shape, dtype, seed, scale) for seed, shape in enumerate(shapes)]
    out_h, out_f = fn(*(h for h, _ in pairs)), fn(*(f for _, f in pairs))
    _close(out_h, out_f, dtype, ulps)
    g = _leaves(tuple(out_h.shape), dtype, 99)[0].detach()
    out_h.backward(g)
    out_f.backward(g.float())
    for h, f in pairs:
        _close(h.grad, f.grad, dtype, ulps)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax(launched, op, dim, dtype):
    _compare(lambda x: getattr(F, op)(x, dim), [(7, 1001)], dtype, scale=3.0)
    assert {f"{op}_forward_{dtype}", f"{op}_backward_{dtype}"} <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
def test_layer_norm(launched, dtype):
    _compare(lambda x, w, b: F.layer_norm(x, (301,), w, b), [(5, 301), (301,), (301,)], dtype)
    assert {f"layer_norm_forward_{dtype}", f"layer_norm_backward_rows_{dtype}",
            f"layer_norm_backward_columns_{dtype}"} <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy(launched, reduction, dtype):
    target = ember.tensor([0, 36, 5, -100, 12, 7, 36, 1, 2], device="cuda")
    weight = _leaves((37,), dtype, 5)[0].detach().abs()

    def loss(x):
        return F.cross_entropy(x, target, weight.to(x.dtype), ignore_index=-100, reduction=reduction,
                               label_smoothing=0.1)
    _compare(loss, [(9, 37)], dtype, scale=2.0)
    assert {f"cross_entropy_forward_{dtype}", f"cross_entropy_backward_{dtype}"} <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
def test_dropout_draws_the_float32_mask(launched, dtype):
    def dropped(x):
        ember.manual_seed(5)
        return F.dropout(x, 0.3)
    _compare(dropped, [(3, 1001)], dtype)
    x, _ = _leaves((3, 1001), dtype, 0)
    kept_h = dropped(x) != 0
    kept_f = dropped(x.float()) != 0
    assert bool((kept_h == kept_f).all()) and 0.6 < kept_h.float().mean().item() < 0.8
    assert f"dropout_{dtype}" in launched


@pytest.mark.parametrize("dtype", HALF)
def test_embedding_backward(launched, dtype):
    index = ember.tensor(np.random.default_rng(1).integers(0, 50, (8, 25)), device="cuda")  # rows repeat
    _compare(lambda w: F.embedding(index, w, padding_idx=3), [(50, 16)], dtype)
    assert f"embedding_backward_{dtype}" in launched


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("op", ["max", "avg"])
def test_pool2d(launched, op, dtype):
    if op == "max":  # overlapping windows: the gradient adds atomically
        _compare(lambda x: F.max_pool2d(x, 3, 2, 1), [(2, 3, 17, 19)], dtype)
        names = {f"max_pool_forward_{dtype}_int16", f"max_pool_backward_{dtype}_int16"}
    else:
        _compare(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(2, 3, 17, 19)], dtype)
        names = {f"avg_pool_forward_{dtype}", f"avg_pool_backward_{dtype}"}
    assert names <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("groups", [2, 4])
def test_conv2d(launched, groups, dtype):
    out_channels, per_group = (6, 2) if groups == 2 else (8, 1)  # groups == 4: depthwise, two outputs each
    _compare(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=groups),
             [(2, 4, 11, 13), (out_channels, per_group, 3, 3), (out_channels,)], dtype, ulps=8)
    names = {f"im2col_{dtype}", f"col2im_{dtype}"} if groups == 2 else \
        {f"depthwise_{k}_{dtype}" for k in ("forward", "input_grad", "weight_grad")}
    assert names <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("mask", ["causal", "bool"])
def test_scaled_dot_product_attention(launched, mask, dtype):
    keep = ember.tensor(np.random.default_rng(2).random((37, 41)) > 0.3, device="cuda")

    def attention(q, k, v):
        if mask == "causal":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    _compare(attention, [(2, 3, 37, 64), (2, 3, 41, 64), (2, 3, 41, 64)], dtype)
    assert {f"attention_{k}_{dtype}" for k in ("forward", "backward_kv", "backward_q")} <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_recurrent_layers(launched, cell, dtype):
    ember.manual_seed(0)
    layer_h = getattr(nn, cell)(8, 16, batch_first=True).cuda().to(getattr(ember, dtype))
    layer_f = copy.deepcopy(layer_h).float()  # the same weights, exactly
    x_h, x_f = _leaves((3, 5, 8), dtype, 0)
    out_h, out_f = layer_h(x_h)[0], layer_f(x_f)[0]
    _close(out_h, out_f, dtype, ulps=8)
    out_h.sum().backward()
    out_f.sum().backward()
    _close(x_h.grad, x_f.grad, dtype, ulps=8)
    _close(layer_h.weight_hh_l0.grad, layer_f.weight_hh_l0.grad, dtype, ulps=8)
    name = cell.lower()
    assert {f"{name}_forward_{dtype}", f"{name}_backward_{dtype}"} <= set(launched)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("optimizer", ["Adam", "AdamW", "SGD"])
def test_fused_optimizer_step(launched, optimizer, dtype):
    options = {"SGD": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)}.get(
        optimizer, dict(lr=1e-2, weight_decay=0.01))
    params = [_leaves(shape, dtype, seed) for seed, shape in enumerate([(17,), (4099,)])]
    steppers = [getattr(ember.optim, optimizer)([p[i] for p in params], **options) for i in (0, 1)]
    rng = np.random.default_rng(7)
    for _ in range(3):
        for h, f in params:
            # gradients of magnitude 0.5 to 1.5: the squared averages stay normal numbers in float16
            g = ember.tensor(rng.choice([-1, 1], h.shape) * rng.uniform(0.5, 1.5, h.shape), device="cuda")
            h.grad = g.to(h.dtype)
            f.grad = h.grad.float()
        for stepper in steppers:
            stepper.step()
    for h, f in params:
        _close(h, f, dtype, ulps=8)
    assert f"{'sgd' if optimizer == 'SGD' else 'adam'}_{dtype}" in launched
