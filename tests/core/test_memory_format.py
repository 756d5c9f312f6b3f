"""Memory formats against torch: the strides of channels-last tensors, and how layers and
elementwise ops carry the format from input to output."""

import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(0)
X4 = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
X5 = rng.standard_normal((2, 3, 4, 5, 3)).astype(np.float32)


def both(fn, x):
    """``fn(L, x)`` with x made channels-last in each library: (ember result, torch result)."""
    fmt = {4: "channels_last", 5: "channels_last_3d"}[x.ndim]
    e = fn(ember, ember.tensor(x).contiguous(memory_format=getattr(ember, fmt)))
    t = fn(torch, torch.tensor(x).contiguous(memory_format=getattr(torch, fmt)))
    return e, t


def assert_same_layout(e, t):
    if isinstance(t, tuple):
        for a, b in zip(e, t):
            assert_same_layout(a, b)
        return
    assert tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride(), (e.stride(), t.stride())
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_formats_exist_as_torch():
    for name in ("channels_last", "channels_last_3d", "contiguous_format", "preserve_format"):
        assert repr(getattr(ember, name)) == repr(getattr(torch, name)).replace("torch.", "ember.")


@pytest.mark.parametrize("x", [X4, X5], ids=["4d", "5d"])
def test_contiguous_and_is_contiguous(x):
    fmt = "channels_last" if x.ndim == 4 else "channels_last_3d"
    e, t = both(lambda L, v: v, x)
    assert_same_layout(e, t)
    for f in (fmt, "contiguous_format"):
        assert e.is_contiguous(memory_format=getattr(ember, f)) == t.is_contiguous(memory_format=getattr(torch, f))
    assert e.is_contiguous() == t.is_contiguous() is False
    assert_same_layout(e.contiguous(), t.contiguous())
    other = "channels_last_3d" if x.ndim == 4 else "channels_last"
    assert ember.tensor(x).is_contiguous(memory_format=getattr(ember, other)) is False
    with pytest.raises(RuntimeError):  # of a tensor not already contiguous
        e.contiguous(memory_format=ember.preserve_format)
    with pytest.raises(RuntimeError):
        t.contiguous(memory_format=torch.preserve_format)


def test_to_clone_and_gradients():
    e, t = ember.tensor(X4, requires_grad=True), torch.tensor(X4, requires_grad=True)
    ec, tc = e.to(memory_format=ember.channels_last), t.to(memory_format=torch.channels_last)
    assert_same_layout(ec, tc)
    assert_same_layout(ec.clone(), tc.clone())
    assert_same_layout(ec.clone(memory_format=ember.contiguous_format),
                       tc.clone(memory_format=torch.contiguous_format))
    (ec * ec).sum().backward()
    (tc * tc).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_module_to_memory_format_converts_4d_weights():
    em = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.Linear(4, 2)).to(memory_format=ember.channels_last)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(4, 2)).to(memory_format=torch.channels_last)
    assert [p.stride() for p in em.parameters()] == [p.stride() for p in tm.parameters()]
    assert isinstance(em[0].weight, ember.nn.Parameter)


LAYERS = {
    "conv2d": lambda L, x: L.nn.functional.conv2d(x, L.ones(4, 3, 3, 3) * 0.1, padding=1),
    "conv2d_stride": lambda L, x: L.nn.functional.conv2d(x, L.ones(6, 3, 2, 2) * 0.1, stride=2),
    "conv_transpose2d": lambda L, x: L.nn.functional.conv_transpose2d(x, L.ones(3, 2, 3, 3) * 0.1),
    "max_pool2d": lambda L, x: L.nn.functional.max_pool2d(x, 2),
    "max_pool2d_indices": lambda L, x: L.nn.functional.max_pool2d(x, 2, return_indices=True),
    "avg_pool2d": lambda L, x: L.nn.functional.avg_pool2d(x, 2),
    "adaptive_avg_pool2d": lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
    "batch_norm": lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
    "relu": lambda L, x: L.relu(x),
    "add_scalar": lambda L, x: x * 2 + 1,
    "add_same_format": lambda L, x: x + x.sin(),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layers_keep_channels_last(name):
    assert_same_layout(*both(LAYERS[name], X4))


def test_conv3d_keeps_channels_last_3d():
    assert_same_layout(*both(lambda L, x: L.nn.functional.conv3d(x, L.ones(2, 3, 2, 2, 2) * 0.1), X5))


def test_a_channels_last_model_trains_as_the_contiguous_one():
    results = []
    for fmt in (ember.contiguous_format, ember.channels_last):
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 3), ember.nn.BatchNorm2d(4), ember.nn.ReLU(),
                                    ember.nn.AdaptiveAvgPool2d(1), ember.nn.Flatten(), ember.nn.Linear(4, 2))
        model = model.to(memory_format=fmt)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        x = ember.tensor(X4).to(memory_format=fmt)
        for _ in range(3):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        results.append(model(x).detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)
