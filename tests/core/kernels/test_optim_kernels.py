"""The Adam/AdamW update kernel (ember/cpu/kernels/optim.py) against torch.optim and
against ember's numpy path, over several steps, with amsgrad, maximize, L2 and decoupled
weight decay, betas whose lerp weight takes either of lerp's forms, float32 and float64,
and odd, empty, 0-d and non-contiguous parameters (the last take the numpy path)."""

import numpy as np
import pytest
import torch

import ember
from ember.cpu import kernels

OPTIONS = [
    {},
    dict(amsgrad=True),
    dict(maximize=True),
    dict(weight_decay=0.1),
    dict(weight_decay=0.1, amsgrad=True, maximize=True),
    dict(betas=(0.3, 0.8)),  # 1 - beta1 >= 0.5: lerp's other form
    dict(eps=1e-3, lr=0.5),
]
SHAPES = [(37, 11), (1,), (), (0,), (3, 5, 7), (100003,)]


def _steps(lib, opt_name, dtype, kw, shape, steps=5, transpose=False):
    m = ember if lib == "ember" else torch
    rng = np.random.default_rng(sum(shape) + len(kw))
    base = np.asarray(rng.standard_normal(shape) * 2, dtype=dtype)
    if transpose:
        base = np.ascontiguousarray(base.T).T
    p = m.from_numpy(base.copy() if not transpose else base).requires_grad_() if lib == "ember" else \
        torch.tensor(base, requires_grad=True)
    kw = dict(kw)
    opt = getattr(m.optim, opt_name)([p], lr=kw.pop("lr", 0.01), **kw)
    for _ in range(steps):
        g = np.asarray(rng.standard_normal(shape) * 3, dtype=dtype)
        p.grad = m.from_numpy(np.ascontiguousarray(g.T).T if transpose else g)
        opt.step()
    state = opt.state[p]
    return [p.detach().numpy().copy()] + [state[k].numpy().copy() for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
                                          if k in state]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kw", OPTIONS, ids=[str(k) for k in OPTIONS])
@pytest.mark.parametrize("opt_name", ["Adam", "AdamW"])
def test_against_torch_and_numpy_path(opt_name, kw, shape, dtype):
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    ref = _steps("torch", opt_name, dtype, kw, shape)
    got = _steps("ember", opt_name, dtype, kw, shape)
    with kernels.disabled():
        numpy_path = _steps("ember", opt_name, dtype, kw, shape)
    assert len(got) == len(ref)
    for e, t, n in zip(got, ref, numpy_path):
        assert e.dtype == dtype
        np.testing.assert_allclose(e, t, **tol)
        np.testing.assert_allclose(e, n, **tol)


@pytest.mark.parametrize("kw", [{}, dict(amsgrad=True)], ids=["plain", "amsgrad"])
def test_non_contiguous_parameter(kw):
    # a transposed parameter and gradient: the numpy path, still torch's result
    ref = _steps("torch", "AdamW", np.float32, kw, (9, 13))
    got = _steps("ember", "AdamW", np.float32, kw, (9, 13), transpose=True)
    for e, t in zip(got, ref):
        np.testing.assert_allclose(e, t, rtol=2e-6, atol=1e-6)


def test_nan_in_amsgrad_state_propagates():
    # torch.maximum propagates NaN into max_exp_avg_sq; so does the kernel
    out = []
    for lib in ("ember", "torch"):
        m = ember if lib == "ember" else torch
        p = m.tensor(np.ones(8, np.float32), requires_grad=True)
        opt = m.optim.Adam([p], amsgrad=True)
        g = np.ones(8, np.float32)
        g[3] = np.nan
        p.grad = m.tensor(g)
        opt.step()
        p.grad = m.tensor(np.ones(8, np.float32))
        opt.step()
        out.append((p.detach().numpy(), opt.state[p]["max_exp_avg_sq"].numpy()))
    np.testing.assert_array_equal(np.isnan(out[0][1]), np.isnan(out[1][1]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-6)


def test_kernel_path_runs(monkeypatch):
    calls = []
    real = kernels.optim.adam
    monkeypatch.setattr(kernels.optim, "adam", lambda *a, **k: calls.append(1) or real(*a, **k))
    p = ember.randn(10, 3, requires_grad=True)
    opt = ember.optim.Adam([p])
    p.grad = ember.randn(10, 3)
    opt.step()
    assert calls == ([1] if kernels.enabled() else [])
    with kernels.disabled():
        opt.step()
    q = ember.randn(4, dtype=ember.float16, requires_grad=True)  # not a kernel dtype
    opt16 = ember.optim.Adam([q])
    q.grad = ember.randn(4, dtype=ember.float16)
    opt16.step()
    assert calls == ([1] if kernels.enabled() else [])
