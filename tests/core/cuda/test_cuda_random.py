"""cuda random ops on a GPU: every one draws from the Generator's Philox seed and offset
(cuRAND's Philox4x32-10), so a saved state replays them all and activation checkpointing
recomputes the same noise; the values have the distributions their ops name (moments within
several standard errors over a million draws)."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.utils.checkpoint import checkpoint

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

CUDA = "cuda"
OPS = {
    "rand": lambda: ember.rand(5, 3, device=CUDA),
    "randn": lambda: ember.randn(7, device=CUDA),
    "randn float64": lambda: ember.randn(7, device=CUDA, dtype=ember.float64),
    "randint": lambda: ember.randint(-3, 10, (6,), device=CUDA),
    "randperm": lambda: ember.randperm(9, device=CUDA),
    "normal_": lambda: ember.empty(5, device=CUDA).normal_(2.0, 0.5),
    "uniform_": lambda: ember.empty(5, device=CUDA).uniform_(-1, 1),
    "cauchy_": lambda: ember.empty(5, device=CUDA).cauchy_(),
    "log_normal_": lambda: ember.empty(5, device=CUDA).log_normal_(),
    "exponential_": lambda: ember.empty(5, device=CUDA).exponential_(),
    "geometric_": lambda: ember.empty(5, device=CUDA).geometric_(0.3),
    "random_": lambda: ember.empty(5, device=CUDA).random_(0, 100),
    "bernoulli": lambda: ember.bernoulli(ember.full((8,), 0.5, device=CUDA)),
    "multinomial": lambda: ember.multinomial(ember.ones(2, 6, device=CUDA), 3),
    "multinomial with replacement": lambda: ember.multinomial(ember.ones(6, device=CUDA), 4, replacement=True),
    "poisson": lambda: ember.poisson(ember.full((4,), 3.0, device=CUDA)),
    "dropout": lambda: F.dropout(ember.ones(64, device=CUDA), 0.5),
    "trunc_normal_": lambda: ember.nn.init.trunc_normal_(ember.empty(4, 4, device=CUDA)),
    "orthogonal_": lambda: ember.nn.init.orthogonal_(ember.empty(4, 4, device=CUDA)),
}


def test_a_saved_state_replays_every_random_op():
    ember.cuda.manual_seed(0)
    state = ember.cuda.get_rng_state()
    first = {name: op().cpu().numpy() for name, op in OPS.items()}
    ember.cuda.set_rng_state(state)
    for name, op in OPS.items():
        np.testing.assert_array_equal(op().cpu().numpy(), first[name], err_msg=name)
    ember.cuda.manual_seed(0)
    np.testing.assert_array_equal(OPS["rand"]().cpu().numpy(), first["rand"])


def test_checkpointing_recomputes_the_same_noise():
    w = ember.randn(32, 32, device=CUDA, requires_grad=True)

    def block(x):
        return (x @ w + 0.1 * ember.randn(x.shape, device=CUDA)).tanh()

    x = ember.randn(16, 32, device=CUDA)
    ember.cuda.manual_seed(3)
    block(x).square().sum().backward()
    direct, w.grad = w.grad.cpu().numpy(), None
    ember.cuda.manual_seed(3)
    checkpoint(block, x, use_reentrant=False).square().sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), direct, rtol=1e-5, atol=1e-6)


def _within(values, mean, var, sigmas=6.0):
    return abs(float(values.mean()) - mean) <= sigmas * math.sqrt(var / values.size)


def test_distributions_on_the_gpu():
    ember.cuda.manual_seed(1)
    n = 1 << 20
    u = ember.rand(n, device=CUDA).cpu().numpy()
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1 and _within(u, 0.5, 1 / 12)
    z = ember.randn(n, device=CUDA).double().cpu().numpy()
    assert _within(z, 0.0, 1.0) and _within(z ** 2, 1.0, 2.0)
    k = ember.randint(0, 7, (n,), device=CUDA).cpu().numpy()
    assert k.dtype == np.int64 and set(np.unique(k).tolist()) == set(range(7)) and _within(k, 3.0, 4.0)
    p = ember.randperm(1000, device=CUDA).cpu().numpy()
    assert sorted(p.tolist()) == list(range(1000))
    e = ember.empty(n, device=CUDA).exponential_(0.5).double().cpu().numpy()
    assert e.min() >= 0 and np.isfinite(e).all() and _within(e, 2.0, 4.0)
    kept = F.dropout(ember.ones(n, device=CUDA), 0.25).cpu().numpy()
    assert _within(kept > 0, 0.75, 0.75 * 0.25)


def test_consecutive_draws_share_no_values():
    # float64 draws reserve two counter words a value: whatever unit cuRAND's offset counts,
    # the next draw starts past them
    ember.cuda.manual_seed(2)
    a = ember.rand(4096, device=CUDA, dtype=ember.float64).cpu().numpy()
    ember.rand(4096, device=CUDA)  # a float32 draw between them
    c = ember.rand(4096, device=CUDA, dtype=ember.float64).cpu().numpy()
    assert not np.intersect1d(a, c).size  # float64 values of disjoint streams never coincide
