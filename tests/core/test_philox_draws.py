"""The counter-based draws behind cuda Generators (ember.cuda._philox), run on the host with
numpy's Philox as the engine in cuRAND's place: every draw is a function of the Generator's
seed and offset (a saved state replays it), consecutive draws take disjoint blocks, and each
method's values have the distribution numpy's Generator method of that name gives (checked
by range, type and moments over many draws: fixed seeds, bounds of several standard errors).
The cuRAND engine itself runs in tests/core/cuda."""

import math

import numpy as np
import pytest

import ember
from ember.cuda._philox import NumpyPhilox, PhiloxDraws

N = 200_000


def _draws(seed=7):
    gen = ember.Generator().manual_seed(seed)
    return gen, PhiloxDraws(NumpyPhilox(), gen.philox_seed_offset, np)


CALLS = {
    "random": lambda d: d.random((3, 5), dtype=np.float32),
    "standard_normal": lambda d: d.standard_normal(7),
    "normal": lambda d: d.normal(1.0, 2.0, size=(2, 2)),
    "lognormal": lambda d: d.lognormal(0.0, 0.5, size=4),
    "uniform": lambda d: d.uniform(-1.0, 3.0, size=5),
    "exponential": lambda d: d.exponential(2.0, size=6),
    "standard_cauchy": lambda d: d.standard_cauchy(size=3),
    "geometric": lambda d: d.geometric(0.3, size=5),
    "integers": lambda d: d.integers(-5, 5, size=9),
    "wide integers": lambda d: d.integers(0, 2 ** 62, size=4),
    "permutation": lambda d: d.permutation(10),
    "poisson": lambda d: d.poisson(np.array([0.5, 3.0, 40.0])),
    "binomial": lambda d: d.binomial(np.array([10, 20]), np.array([0.3, 0.9])),
    "standard_gamma": lambda d: d.standard_gamma(np.array([0.5, 2.0, 9.0])),
    "choice": lambda d: d.choice(5, size=4, p=np.full(5, 0.2)),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_saved_state_replays_the_draw(name):
    gen, draws = _draws()
    CALLS["random"](draws)  # move the offset first
    state = gen.get_state()
    first, second = CALLS[name](draws), CALLS[name](draws)
    gen.set_state(state)
    np.testing.assert_array_equal(CALLS[name](draws), first)
    np.testing.assert_array_equal(CALLS[name](draws), second)


def test_consecutive_draws_take_disjoint_blocks():
    gen, draws = _draws()
    offsets = [gen.philox_seed_offset(0)[1]]
    for n, dtype in ((10, np.float32), (10, np.float64), (1, np.float32), (0, np.float32)):
        draws.random(n, dtype=dtype)
        offsets.append(gen.philox_seed_offset(0)[1])
    # a block is 4 words; a float64 value takes 2 words; one spare block each
    assert np.diff(offsets).tolist() == [3 + 1, 5 + 1, 1 + 1, 0 + 1]
    a, b = draws.random(1000), draws.random(1000)
    assert not np.intersect1d(a, b).size
    # a host sampler uses more values than the one block it reserves, never the next draw's:
    # choice takes one uniform a sample, so a shared stream would show as a shifted copy
    p, q = draws.choice(1000, size=2000, p=np.full(1000, 1e-3)), draws.choice(1000, size=2000, p=np.full(1000, 1e-3))
    assert not any(np.array_equal(p[k:], q[:-k]) for k in range(1, 50)) and not np.array_equal(p, q)


def test_another_seed_gives_other_values_and_the_same_seed_the_same():
    assert not np.array_equal(_draws(1)[1].random(100), _draws(2)[1].random(100))
    np.testing.assert_array_equal(_draws(3)[1].standard_normal(100), _draws(3)[1].standard_normal(100))


class _Ones(NumpyPhilox):
    """An engine whose uniforms are all 1.0, the top of cuRAND's (0, 1]."""

    def uniform(self, seed, offset, n, dtype):
        return np.ones(n, dtype)


def test_uniform_one_maps_into_the_half_open_interval():
    gen = ember.Generator()
    draws = PhiloxDraws(_Ones(), gen.philox_seed_offset, np)
    assert (draws.random(5) == 0).all() and (draws.exponential(size=3) == 0).all()
    assert (draws.geometric(0.5, size=3) == 1).all()


def _within(values, mean, var, sigmas=6.0):
    """The sample mean within ``sigmas`` standard errors of ``mean``."""
    return abs(values.mean() - mean) <= sigmas * math.sqrt(var / values.size)


def test_distributions_have_their_moments_and_ranges():
    _, d = _draws(11)
    u = d.random(N, dtype=np.float32)
    assert u.dtype == np.float32 and u.min() >= 0 and u.max() < 1 and _within(u, 0.5, 1 / 12)
    z = d.standard_normal(N)
    assert z.dtype == np.float64 and _within(z, 0.0, 1.0) and _within(z ** 2, 1.0, 2.0)
    x = d.normal(3.0, 2.0, size=N)
    assert _within(x, 3.0, 4.0)
    e = d.exponential(2.0, size=N)
    assert e.min() >= 0 and np.isfinite(e).all() and _within(e, 2.0, 4.0)
    g = d.geometric(0.25, size=N)
    assert g.dtype == np.int64 and g.min() >= 1 and _within(g, 4.0, 0.75 / 0.25 ** 2)
    ln = d.lognormal(0.0, 0.5, size=N)
    assert ln.min() > 0 and _within(np.log(ln), 0.0, 0.25)
    c = d.standard_cauchy(size=N)
    assert abs(np.median(c)) < 0.02 and abs(np.mean(np.abs(c) < 1) - 0.5) < 0.01  # P(|C| < 1) = 1/2
    v = d.uniform(-1.0, 3.0, size=N)
    assert v.min() >= -1 and v.max() < 3 and _within(v, 1.0, 16 / 12)


@pytest.mark.parametrize("low,high,endpoint", [(0, 10, False), (-5, 5, True), (0, 2 ** 32, False),
                                               (-(2 ** 40), 2 ** 40, False), (-(2 ** 63), 2 ** 63 - 1, True)])
def test_integers_cover_their_range_evenly(low, high, endpoint):
    _, d = _draws(5)
    k = d.integers(low, high, size=N, endpoint=endpoint)
    top = high if endpoint else high - 1
    assert k.dtype == np.int64 and k.min() >= low and k.max() <= top
    span = float(top) - float(low) + 1
    assert _within(k.astype(np.float64), (float(low) + float(top)) / 2, span ** 2 / 12)
    if span <= 10:
        assert set(np.unique(k).tolist()) == set(range(low, top + 1))


def test_permutation_is_one():
    _, d = _draws()
    p = d.permutation(1000)
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(1000)) and p.tolist() != list(range(1000))


def test_empty_draws_are_empty():
    _, d = _draws()
    assert d.random(0).shape == (0,) and d.standard_normal((2, 0)).shape == (2, 0)
    assert d.integers(0, 3, size=0).shape == (0,)
