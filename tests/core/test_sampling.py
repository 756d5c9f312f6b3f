"""The random samplers: shapes and dtypes as torch's, statistics as the distributions'."""

import numpy as np
import pytest
import torch

import ember

N = 40000


@pytest.mark.parametrize("sampler,mean,var", [
    (lambda L, t: L.poisson(L.full((N,), 3.0)), 3.0, 3.0),
    (lambda L, t: t.exponential_(2.0), 0.5, 0.25),
    (lambda L, t: t.geometric_(0.25), 4.0, 12.0),
    (lambda L, t: t.log_normal_(0.0, 0.5), np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    (lambda L, t: t.random_(0, 10), 4.5, 8.25),
    (lambda L, t: L.bernoulli(L.full((N,), 0.3)), 0.3, 0.21),
    (lambda L, t: L.binomial(L.full((N,), 10.0), L.full((N,), 0.3)), 3.0, 2.1),
    (lambda L, t: L.binomial(L.full((N,), 40.0, dtype=L.float64), L.full((1,), 0.9, dtype=L.float64)), 36.0, 3.6),
])
def test_sampler_statistics_and_types(sampler, mean, var):
    ember.manual_seed(0)
    e = sampler(ember, ember.empty(N))
    t = sampler(torch, torch.empty(N))
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    x = e.numpy().astype(np.float64)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / N)
    assert abs(x.var() - var) < 0.05 * var


def test_cauchy_median_and_integer_random():
    ember.manual_seed(0)
    x = ember.empty(N).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(x) - 1.0) < 0.1
    ints = ember.zeros(1000, dtype=ember.int64).random_(5)
    assert set(np.unique(ints.numpy())) == {0, 1, 2, 3, 4}


def test_binomial_support_and_seed():
    """Whole numbers in [0, count], each count's own; the same seed gives the same draws."""
    counts = ember.tensor([[0.0, 1.0, 5.0, 30.0]]).expand(500, 4)
    probs = ember.tensor([0.5, 0.2, 0.7, 0.5])
    ember.manual_seed(3)
    x = ember.binomial(counts, probs)
    ember.manual_seed(3)
    assert ember.equal(x, ember.binomial(counts, probs))
    v = x.numpy()
    assert (v == np.round(v)).all() and (v >= 0).all() and (v <= counts.numpy()).all()
    assert set(np.unique(v[:, 1])) == {0.0, 1.0} and v[:, 3].max() > 15


def test_sampler_errors_match_torch():
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.empty(3).exponential_(-1.0)
        with pytest.raises(RuntimeError):
            L.poisson(L.tensor([-1.0]))
