"""The fused Adam/AdamW and SGD kernels (one launch per group) on a GPU against ember's CPU
optimizers and torch's, over parameters of awkward sizes (one element, prime, larger than
one chunk, empty) that reach different step counts. Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
import torch

import ember

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

SIZES = [(1,), (7, 13), (4099,), (3, 4096 + 5), (0, 3)]
CONFIGS = [dict(), dict(weight_decay=0.1), dict(amsgrad=True), dict(maximize=True, weight_decay=0.01),
           dict(betas=(0.2, 0.9))]  # a beta1 below 0.5 takes lerp's other form


def _train(lib, make_opt, device, dtype, steps=4):
    rng = np.random.default_rng(0)
    params = [lib.tensor(rng.standard_normal(s).astype(dtype), device=device, requires_grad=True) for s in SIZES]
    opt = make_opt(params)
    for step in range(steps):
        for i, p in enumerate(params):
            # the second parameter skips every other step: its step count falls behind
            p.grad = None if (i == 1 and step % 2) else \
                lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dtype), device=device)
        opt.step()
    return [p.detach().cpu().numpy() for p in params]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_fused_step_matches_the_cpu_and_torch(cls, config, dtype):
    on_gpu = _train(ember, lambda ps: getattr(ember.optim, cls)(ps, lr=0.01, **config), "cuda", dtype)
    on_cpu = _train(ember, lambda ps: getattr(ember.optim, cls)(ps, lr=0.01, **config), "cpu", dtype)
    reference = _train(torch, lambda ps: getattr(torch.optim, cls)(ps, lr=0.01, **config), "cpu", dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    for g, c, t in zip(on_gpu, on_cpu, reference):
        np.testing.assert_allclose(g, c, **tol)
        np.testing.assert_allclose(g, t, **tol)


SGD_CONFIGS = [dict(), dict(momentum=0.9), dict(momentum=0.9, dampening=0.1, weight_decay=0.01),
               dict(momentum=0.8, nesterov=True), dict(momentum=0.9, maximize=True, weight_decay=0.1),
               dict(weight_decay=0.05, maximize=True)]


def _sgd_groups(params):
    # two groups: the second with its own learning rate (one launch per group and dtype)
    return [dict(params=params[:3]), dict(params=params[3:], lr=0.05)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("config", SGD_CONFIGS, ids=str)
def test_fused_sgd_matches_the_cpu_and_torch(config, dtype):
    on_gpu = _train(ember, lambda ps: ember.optim.SGD(_sgd_groups(ps), lr=0.01, **config), "cuda", dtype)
    on_cpu = _train(ember, lambda ps: ember.optim.SGD(_sgd_groups(ps), lr=0.01, **config), "cpu", dtype)
    reference = _train(torch, lambda ps: torch.optim.SGD(_sgd_groups(ps), lr=0.01, **config), "cpu", dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    for g, c, t in zip(on_gpu, on_cpu, reference):
        np.testing.assert_allclose(g, c, **tol)
        np.testing.assert_allclose(g, t, **tol)


def test_fused_sgd_launches_once_per_group(monkeypatch):
    from ember.cuda.kernels import optim as cuda_optim
    launches = []
    real = cuda_optim.sgd
    monkeypatch.setattr(cuda_optim, "sgd", lambda items, **kw: (launches.append(len(items)), real(items, **kw)))
    _train(ember, lambda ps: ember.optim.SGD(_sgd_groups(ps), lr=0.01, momentum=0.9), "cuda", "float32", steps=2)
    # the first step: every parameter; the second: all but the one whose gradient is None
    assert launches == [3, 2, 2, 2]
