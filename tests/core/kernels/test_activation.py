"""The activation kernels (ember/cpu/kernels/activation.py) against torch and against
ember's numpy path (the same call inside ``kernels.disabled()``): values, gradients from
a random gradient and from ``sum()`` (a broadcast scalar gradient), double backward,
node names, in-place forms and memory layouts, in float32 and float64."""

import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cpu import kernels

# name -> (ember call, torch call); parameters chosen off their defaults where there are some
CASES = {
    "gelu": (lambda f, x: f.gelu(x), None),
    "gelu_tanh": (lambda f, x: f.gelu(x, approximate="tanh"), None),
    "silu": (lambda f, x: f.silu(x), None),
    "mish": (lambda f, x: f.mish(x), None),
    "elu": (lambda f, x: f.elu(x), None),
    "elu_alpha": (lambda f, x: f.elu(x, 0.3), None),
    "selu": (lambda f, x: f.selu(x), None),
    "celu": (lambda f, x: f.celu(x, 0.7), None),
    "softplus": (lambda f, x: f.softplus(x), None),
    "softplus_beta": (lambda f, x: f.softplus(x, 2.0, 5.0), None),
    "sigmoid": (lambda f, x: f.sigmoid(x), None),
    "tanh": (lambda f, x: f.tanh(x), None),
    "hardswish": (lambda f, x: f.hardswish(x), None),
    "hardsigmoid": (lambda f, x: f.hardsigmoid(x), None),
    "leaky_relu": (lambda f, x: f.leaky_relu(x), None),
    "leaky_relu_slope": (lambda f, x: f.leaky_relu(x, 0.2), None),
    "relu": (lambda f, x: f.relu(x), None),
}
NAMES = sorted(CASES)
TOL = {np.float32: dict(rtol=1e-5, atol=1e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _call(name, lib, x):
    return CASES[name][0](F if lib == "ember" else TF, x)


def _values(rng, shape, dtype):
    """Normal values spread to +-12, with the kinks and saturation points of the
    activations (0, +-3, large magnitudes) mixed in."""
    x = rng.standard_normal(shape) * 4
    special = np.array([0.0, -0.0, 3.0, -3.0, 1e-3, -1e-3, 25.0, -25.0, 95.0, -95.0, 12.0, -12.0])
    flat = x.reshape(-1)
    k = min(flat.size, special.size)
    flat[:k] = special[:k]
    return x.astype(dtype)


def _layouts(arr):
    """(label, array) pairs of one set of values in several memory layouts."""
    out = [("contiguous", arr)]
    if arr.ndim == 4:
        out.append(("channels_last", np.ascontiguousarray(arr.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)))
    if arr.ndim >= 2:
        out.append(("transposed", np.ascontiguousarray(arr.swapaxes(0, 1)).swapaxes(0, 1)))
        out.append(("strided", np.repeat(arr, 2, axis=-1)[..., ::2]))
    return out


def _run(name, arr, grad, lib):
    """Forward and x.grad from ``grad`` (None: from sum())."""
    if lib == "ember":
        x = ember.from_numpy(arr.copy() if arr.flags.c_contiguous else arr).requires_grad_()
        y = _call(name, "ember", x)
        (y.sum() if grad is None else y).backward(None if grad is None else ember.tensor(grad))
        return y.detach().numpy(), x.grad.numpy(), y
    x = torch.from_numpy(np.ascontiguousarray(arr)).requires_grad_()
    y = _call(name, "torch", x)
    (y.sum() if grad is None else y).backward(None if grad is None else torch.from_numpy(grad))
    return y.detach().numpy(), x.grad.numpy(), y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# sigmoid, tanh and relu take their kernels from 16384 elements on: the last two shapes
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (13, 17), (1, 3, 5, 7), (2, 4, 3, 5), (997,), (129, 131),
                                   (3, 11, 23, 29)])
@pytest.mark.parametrize("name", NAMES)
def test_against_torch_and_numpy_path(name, shape, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((name, shape)).encode()))  # hash() of a str changes per process
    base = _values(rng, shape, dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    tol = dict(TOL[dtype])
    if name == "gelu_tanh" and dtype == np.float32:
        tol["atol"] = 1e-5  # past |x| ~ 5 torch's tanh is -1 exactly; the kernel keeps the 1e-6 tail
    if name == "gelu" and dtype == np.float32:
        # torch's float32 erf GELU is off by up to 1.2e-6 near x = -3.45 (against float64, over 2e6
        # normal values; the kernel's error there is below 4e-7), so float32 allows 2e-6 absolute
        tol["atol"] = 2e-6
    for label, arr in _layouts(base):
        for g in (grad, None):
            ty, tg, tnode = _run(name, arr, g, "torch")
            ey, eg, enode = _run(name, arr, g, "ember")
            with kernels.disabled():
                ny, ng, _ = _run(name, arr, g, "ember")
            assert ey.dtype == dtype and eg.dtype == dtype
            np.testing.assert_allclose(ey, ty, **tol, err_msg=f"{label} forward vs torch")
            np.testing.assert_allclose(eg, tg, **tol, err_msg=f"{label} gradient vs torch")
            np.testing.assert_allclose(ey, ny, **tol, err_msg=f"{label} forward vs numpy path")
            np.testing.assert_allclose(eg, ng, **tol, err_msg=f"{label} gradient vs numpy path")
            assert enode.grad_fn.name() == tnode.grad_fn.name()


@pytest.mark.parametrize("name", NAMES)
def test_layout_kept(name):
    # a channels-last input gives a channels-last result and gradient, as on the numpy path
    arr = _values(np.random.default_rng(1), (2, 3, 67, 41), np.float32)
    x = ember.from_numpy(arr).contiguous(memory_format=ember.channels_last).requires_grad_()
    y = _call(name, "ember", x)
    assert y.is_contiguous(memory_format=ember.channels_last)
    y.backward(ember.ones_like(y))
    # the numpy path gives a C-ordered gradient; the kernels keep the layout, as torch does
    assert x.grad.is_contiguous(memory_format=ember.channels_last) == kernels.enabled()
    with kernels.disabled():
        xn = ember.from_numpy(arr).contiguous(memory_format=ember.channels_last).requires_grad_()
        yn = _call(name, "ember", xn)
        assert y._data.strides == yn._data.strides


# piecewise linear ones have a zero second derivative: their gradient is no function of x
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(set(NAMES) - {"relu", "leaky_relu", "leaky_relu_slope", "hardsigmoid"}))
def test_double_backward(name, dtype):
    # create_graph keeps the gradient rule as ember ops: second derivatives match torch's
    arr = _values(np.random.default_rng(2), (5, 6), dtype)
    arr[np.abs(arr) > 20] = 0.5  # saturated ends: torch's own second derivative is rounding there
    arr[(np.abs(arr) == 3.0) | (arr == 0)] = 0.25  # kinks: one-sided derivatives differ by definition
    out = []
    for lib in ("ember", "torch"):
        m = ember if lib == "ember" else torch
        x = m.tensor(arr, requires_grad=True)
        y = _call(name, lib, x)
        (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x, allow_unused=True, materialize_grads=True) if lib == "torch" else \
            m.autograd.grad((g * g).sum(), x, allow_unused=True)
        out.append((g.detach().numpy(), None if gg is None else gg.detach().numpy()))
    (eg, egg), (tg, tgg) = out
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(eg, tg, **tol)
    np.testing.assert_allclose(np.zeros_like(tg) if egg is None else egg, tgg, **tol)


@pytest.mark.parametrize("name", ["silu", "mish", "elu", "selu", "celu", "hardswish", "hardsigmoid", "leaky_relu",
                                  "relu"])
def test_inplace(name):
    arr = _values(np.random.default_rng(3), (4, 9), np.float32)
    call = {"celu": lambda f, x: f.celu(x, 0.7, inplace=True), "relu": lambda f, x: f.relu(x, inplace=True)}.get(
        name, lambda f, x: getattr(f, name)(x, inplace=True))
    res = []
    for f, m in ((F, ember), (TF, torch)):
        leaf = m.tensor(arr, requires_grad=True)
        h = leaf * 1.0
        out = call(f, h)
        assert out is h
        h.backward(m.tensor(arr[::-1].copy()))
        res.append((h.detach().numpy(), leaf.grad.numpy()))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-5, atol=1e-6)


def test_kernel_path_runs(monkeypatch):
    # the ops call the kernels (forward and backward) for numpy float arrays, not otherwise
    calls = []
    fam = kernels.activation
    for fname in ("silu", "silu_grad", "gelu", "gelu_grad", "relu", "relu_grad", "sigmoid", "sigmoid_grad"):
        real = getattr(fam, fname)
        monkeypatch.setattr(fam, fname, lambda *a, _real=real, _n=fname: calls.append(_n) or _real(*a))
    x = ember.randn(160, 103, requires_grad=True)
    F.silu(x).sum().backward()
    F.gelu(x).sum().backward()
    F.relu(x).sum().backward()
    ember.sigmoid(x).sum().backward()
    expected = ["silu", "silu_grad", "gelu", "gelu_grad", "relu", "relu_grad", "sigmoid", "sigmoid_grad"]
    assert calls == (expected if kernels.enabled() else [])
    calls.clear()
    with kernels.disabled():
        F.silu(x).sum().backward()
    F.silu(x.to(ember.float16)).sum().backward()
    assert calls == []


def test_infinite_gradient_masked():
    # where the derivative is a select (relu, leaky_relu, hardswish, hardsigmoid), an
    # infinite gradient in the zero region gives 0, not nan, as in torch
    for name in ("relu", "hardswish", "hardsigmoid"):
        arr = np.array([-5.0, -4.0, 1.0, 5.0], np.float32)
        g = np.array([np.inf, -np.inf, 1.0, 2.0], np.float32)
        _, eg, _ = _run(name, arr, g, "ember")
        _, tg, _ = _run(name, arr, g, "torch")
        np.testing.assert_array_equal(eg, tg)


def test_nonfinite_inputs():
    # the oracle is torch's float64 path: its float32 GELU gives nan for +inf on AVX-512
    # hosts (its vectorized erf), where GELU(x) = x * Phi(x) is +inf, as its float64 says
    arr = np.array([np.nan, np.inf, -np.inf, 0.0], np.float32)
    for name in NAMES:
        ty, _, _ = _run(name, arr.astype(np.float64), None, "torch")
        ey, _, _ = _run(name, arr, None, "ember")
        np.testing.assert_allclose(ey, ty.astype(np.float32), rtol=1e-6, err_msg=name)


def test_relu_signed_zero_and_nan():
    # torch's relu keeps -0.0 and NaN; so does the kernel (numpy's maximum gives +0.0)
    arr = np.zeros(20000, np.float32)
    arr[:4] = [-0.0, np.nan, -1.0, 2.0]
    y = F.relu(ember.from_numpy(arr)).numpy()
    t = torch.relu(torch.from_numpy(arr)).numpy()
    if kernels.enabled():  # numpy's maximum (the reference path) gives +0.0
        np.testing.assert_array_equal(np.signbit(y), np.signbit(t))
    else:
        np.testing.assert_array_equal(np.signbit(y[1:]), np.signbit(t[1:]))
    np.testing.assert_array_equal(y, t)


def test_celu_zero_alpha():
    with pytest.raises(RuntimeError, match="alpha cannot be 0"):
        F.celu(ember.ones(3), 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "no_graph"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_relu_inplace_without_a_graph(monkeypatch, dtype, mode, layout):
    # relu_ where nothing is recorded: the kernel rectifies a C-contiguous array where it
    # lies (one pass, no copy back); values, identity and version as torch's relu_
    arr = _values(np.random.default_rng(5), (131, 157), dtype)  # 20567 elements: the kernel's size
    arr.reshape(-1)[:3] = [-0.0, np.nan, -2.0]
    calls = []
    real = kernels.activation.relu_
    monkeypatch.setattr(kernels.activation, "relu_", lambda x: calls.append(x) or real(x))
    res = []
    for m in (ember, torch):
        context = {"no_grad": m.no_grad, "inference_mode": m.inference_mode}.get(mode)
        with context() if context else m.enable_grad():
            t = m.tensor(arr)
            t = t.t() if layout == "transposed" else t
            before = None if mode == "inference_mode" else t._version
            out = t.relu_()
            assert out is t
            if before is not None:
                assert t._version == before + 1
            res.append(t.numpy().copy())
            if m is ember:
                buffer = t.numpy()
    if kernels.enabled():  # numpy's maximum (the reference path) gives +0.0 for -0.0
        np.testing.assert_array_equal(np.signbit(res[0]), np.signbit(res[1]))
    np.testing.assert_array_equal(res[0], res[1])
    kernel_path = kernels.enabled() and layout == "contiguous"
    assert len(calls) == (1 if kernel_path else 0)
    if kernel_path:  # the tensor's own buffer, not a copy
        assert np.shares_memory(calls[0], buffer)
