"""Factory functions and random ops against torch (random ones statistically)."""

import numpy as np
import pytest
import torch
from conftest import assert_same, dname, to_torch

import ember


@pytest.mark.parametrize("data", [
    [1, 2, 3], [1.0, 2, 3], [True, False], [[1, 2], [3, 4]], 3, 2.5, True, [], [[]], [1, 2.5, True],
    (1, 2), [[1.5, 2], [3, 4]], np.float64(1.5), np.array([1, 2], np.int32), np.array(2.0),
])
def test_tensor_infers_dtype_and_copies(data):
    e, t = ember.tensor(data), torch.tensor(data)
    assert_same(e, t)
    if isinstance(data, np.ndarray):
        data[...] = 7
        assert not (e.numpy() == 7).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "uint8", "int32", "bool"])
def test_tensor_dtype_argument(dtype):
    assert_same(ember.tensor([0, 1.7, 3], dtype=getattr(ember, dtype)),
                torch.tensor([0, 1.7, 3], dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("bad,exc", [(["a"], ValueError), ("abc", TypeError), (object(), RuntimeError),
                                     (None, RuntimeError), ([[1, 2], [3]], ValueError)])
def test_tensor_errors(bad, exc):
    with pytest.raises(exc):
        torch.tensor(bad)
    with pytest.raises(exc):
        ember.tensor(bad)


def test_from_numpy_and_as_tensor_share_memory():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ember.from_numpy(a)
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t[1, 1] = -1
    assert a[1, 1] == -1
    assert ember.as_tensor(a).numpy() is a or np.shares_memory(ember.as_tensor(a).numpy(), a)
    assert not np.shares_memory(ember.as_tensor(a, dtype=ember.float64).numpy(), a)
    x = ember.ones(3)
    assert ember.as_tensor(x) is x
    assert ember.as_tensor([1, 2]).dtype is ember.int64
    with pytest.raises(TypeError):
        torch.from_numpy(np.array([1], np.uint16).astype(np.complex256) if hasattr(np, "complex256")
                         else np.array(["x"]))
    with pytest.raises(TypeError):
        ember.from_numpy(np.array(["x"]))
    with pytest.raises(TypeError):
        ember.from_numpy([1, 2])


@pytest.mark.parametrize("name,args,kwargs", [
    ("zeros", (2, 3), {}), ("zeros", ((2, 3),), {"dtype": "int32"}), ("ones", (4,), {}), ("ones", ((),), {}),
    ("empty", (0, 2), {}), ("full", ((2, 2), 1.5), {}), ("full", ((2,), 7), {}), ("full", ((2,), True), {}),
    ("full", ((2,), 3), {"dtype": "float64"}), ("arange", (5,), {}), ("arange", (1, 4), {}),
    ("arange", (0, 1, 0.25), {}), ("arange", (1.5, 4), {}), ("arange", (10, 0, -3), {}),
    ("arange", (0, 5), {"dtype": "float64"}), ("linspace", (0, 1, 5), {}), ("linspace", (-2, 3, 1), {}),
    ("linspace", (0, 10, 0), {}), ("linspace", (0, 1, 4), {"dtype": "float64"}), ("eye", (3,), {}),
    ("eye", (2, 4), {}), ("eye", (3,), {"dtype": "int64"}),
])
def test_factories(name, args, kwargs):
    ek = {k: getattr(ember, v) if k == "dtype" else v for k, v in kwargs.items()}
    tk = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    e, t = getattr(ember, name)(*args, **ek), getattr(torch, name)(*args, **tk)
    if name == "empty":
        assert e.shape == t.shape and dname(e.dtype) == dname(t.dtype)
    else:
        assert_same(e, t)


def test_factory_requires_grad_and_errors():
    assert ember.zeros(2, requires_grad=True).requires_grad
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.zeros(-1)
        with pytest.raises(RuntimeError):
            L.arange(0, 5, 0)
        with pytest.raises(RuntimeError):
            L.arange(0, 5, -1)
        with pytest.raises(RuntimeError):
            L.zeros(2, dtype=L.int64, requires_grad=True)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
def test_like_functions(name):
    x = ember.tensor([[1.0, 2.0]], dtype=ember.float64)
    y = getattr(ember, name)(x)
    assert y.shape == x.shape and y.dtype is ember.float64 and not y.requires_grad
    z = getattr(ember, name)(x, dtype=ember.float32)
    assert z.dtype is ember.float32
    assert_same(ember.full_like(x, 3), torch.full_like(to_torch(x), 3))
    assert_same(ember.zeros_like(x), torch.zeros_like(to_torch(x)))
    assert_same(ember.ones_like(x), torch.ones_like(to_torch(x)))


# ---- random ----------------------------------------------------------------------

def _ks_uniform(x):
    """Kolmogorov-Smirnov distance between samples and U(0, 1)."""
    x = np.sort(x)
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - x), np.max(x - np.arange(n) / n))


def _ks_normal(x):
    from math import erf, sqrt
    x = np.sort(x)
    n = len(x)
    cdf = np.array([0.5 * (1 + erf(v / sqrt(2))) for v in x])
    return max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))


def test_rand_statistics():
    ember.manual_seed(0)
    x = ember.rand(20000)
    assert x.dtype is ember.float32 and x.shape == (20000,)
    a = x.numpy()
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.var() - 1 / 12) < 0.005
    assert _ks_uniform(a) < 0.015  # critical value at 0.1% is about 1.95 / sqrt(n) = 0.0138
    assert ember.rand(2, 3, dtype=ember.float64).dtype is ember.float64


def test_randn_and_normal_statistics():
    ember.manual_seed(1)
    a = ember.randn(5000).numpy()
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1) < 0.05
    assert _ks_normal(a) < 0.03
    b = ember.normal(3.0, 2.0, size=(5000,)).numpy()
    assert abs(b.mean() - 3) < 0.1 and abs(b.std() - 2) < 0.1
    m = ember.normal(ember.tensor([0.0, 100.0]).expand(4000, 2), ember.tensor([1.0, 0.1]))
    assert m.shape == (4000, 2)
    assert abs(m[:, 1].mean().item() - 100) < 0.01 and abs(m[:, 1].std().item() - 0.1) < 0.01
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.normal(0.0, -1.0, size=(2,))


def test_randint_and_randperm():
    ember.manual_seed(2)
    r = ember.randint(3, 7, (6000,))
    assert r.dtype is ember.int64 and r.shape == (6000,)
    counts = np.bincount(r.numpy(), minlength=7)
    assert counts[:3].sum() == 0 and (np.abs(counts[3:] - 1500) < 150).all()
    assert ember.randint(5, (2, 2)).max().item() < 5
    assert ember.randint(0, 4, (3,), dtype=ember.int32).dtype is ember.int32
    p = ember.randperm(50)
    assert p.dtype is ember.int64 and sorted(p.tolist()) == list(range(50))
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.randint(5, 3, (2,))


def test_manual_seed_reproducibility_and_generators():
    ember.manual_seed(123)
    a = ember.randn(5)
    b = ember.rand(3)
    ember.manual_seed(123)
    assert ember.equal(a, ember.randn(5)) and ember.equal(b, ember.rand(3))
    assert ember.initial_seed() == 123
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    assert ember.equal(ember.rand(4, generator=g1), ember.rand(4, generator=g2))
    assert g1.initial_seed() == 7
    # a private generator leaves the default stream alone
    ember.manual_seed(5)
    x = ember.rand(3)
    ember.manual_seed(5)
    ember.rand(10, generator=g1)
    assert ember.equal(ember.rand(3), x)
    assert not ember.equal(ember.rand(3, generator=ember.Generator().manual_seed(1)),
                           ember.rand(3, generator=ember.Generator().manual_seed(2)))


def test_get_set_state_and_fork_rng():
    ember.manual_seed(9)
    state = ember.get_rng_state()
    assert state.dtype is ember.uint8
    a = ember.randn(4)
    ember.set_rng_state(state)
    assert ember.equal(ember.randn(4), a)
    g = ember.Generator().manual_seed(3)
    s = g.get_state()
    x = ember.rand(3, generator=g)
    g.set_state(s)
    assert ember.equal(ember.rand(3, generator=g), x)
    ember.manual_seed(11)
    with ember.random.fork_rng():
        ember.randn(100)
    after_fork = ember.randn(3)
    ember.manual_seed(11)
    assert ember.equal(ember.randn(3), after_fork)


def test_random_inplace_and_bernoulli():
    ember.manual_seed(4)
    x = ember.empty(4000).uniform_(-2, 3)
    assert x.min().item() >= -2 and x.max().item() < 3 and abs(x.mean().item() - 0.5) < 0.1
    y = ember.empty(4000, dtype=ember.float64).normal_(1.0, 0.5)
    assert y.dtype is ember.float64 and abs(y.mean().item() - 1) < 0.05
    p = ember.full((4000,), 0.3)
    b = ember.bernoulli(p)
    assert set(b.unique().tolist() if hasattr(b, "unique") else np.unique(b.numpy()).tolist()) <= {0.0, 1.0}
    assert abs(b.mean().item() - 0.3) < 0.03
    w = ember.tensor([0.0, 1.0, 3.0])
    s = ember.multinomial(w, 2000, replacement=True)
    c = np.bincount(s.numpy(), minlength=3)
    assert c[0] == 0 and abs(c[2] / 2000 - 0.75) < 0.04


def test_multinomial_without_replacement_and_errors():
    """The first draw without replacement follows the weights; zero weights come only
    after every positive one; torch's errors for degenerate rows."""
    ember.manual_seed(5)
    w = ember.tensor([[1.0, 2.0, 3.0, 4.0]]).expand(3000, 4)
    first = ember.multinomial(w, 2)[:, 0].numpy()
    np.testing.assert_allclose(np.bincount(first, minlength=4) / 3000, [0.1, 0.2, 0.3, 0.4], atol=0.03)
    draws = ember.multinomial(ember.tensor([[0.0, 5.0, 0.0, 1.0]] * 50), 4).numpy()
    assert (np.sort(draws[:, :2], axis=1) == [1, 3]).all()  # the positive ones first
    assert (np.sort(draws, axis=1) == [0, 1, 2, 3]).all()  # each category once
    for weights, n, replace in (([0.0, 0.0], 1, True), ([0.0, 0.0], 1, False), ([1.0, -1.0], 1, True),
                                ([1.0, float("nan")], 1, True), ([1.0, 2.0], 3, False)):
        messages = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as err:
                lib.multinomial(lib.tensor(weights), n, replace)
            messages.append(str(err.value))
        assert messages[0] == messages[1]
