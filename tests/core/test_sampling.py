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


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("fill", ["uniform", "normal"])
def test_large_in_place_fills_draw_the_whole_shape_in_chunks(fill, dtype, monkeypatch):
    # drawn chunk by chunk (no float64 temporary of the tensor's size), the values are
    # those of numpy's generator drawing the whole shape at once from the same seed
    from ember.ops import creation
    shape = (3, 7, 11)
    monkeypatch.setattr(creation, "_FILL_CHUNK", 50)   # 231 elements: five chunks, a short last one
    gen = ember.Generator().manual_seed(1234)
    ref = np.random.Generator(np.random.PCG64(1234))
    t = ember.empty(shape, dtype=dtype)
    if fill == "uniform":
        t.uniform_(-2.0, 3.0, generator=gen)
        want = ref.uniform(-2.0, 3.0, size=shape)
    else:
        t.normal_(0.5, 2.0, generator=gen)
        want = ref.normal(0.5, 2.0, size=shape)
    np.testing.assert_array_equal(t.numpy(), want.astype(t.numpy().dtype))
    # a strided tensor (120 elements) takes one draw of its shape
    base = ember.zeros(12, 20, dtype=dtype)
    view = base[:, ::2]
    gen.manual_seed(99)
    view.uniform_(0.0, 1.0, generator=gen)
    want = np.random.Generator(np.random.PCG64(99)).uniform(0.0, 1.0, size=(12, 10))
    np.testing.assert_array_equal(base.numpy()[:, ::2], want.astype(base.numpy().dtype))
    assert not base.numpy()[:, 1::2].any()
