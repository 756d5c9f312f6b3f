"""isclose / allclose / equal against torch, including infinities and NaN."""

import pytest
import torch

import ember

INF, NAN = float("inf"), float("nan")
CASES = [
    ([1.0, 2.0, NAN, INF, -INF], [1.00001, 2.1, NAN, INF, INF], {}),
    ([1.0, 2.0, NAN], [1.0, 2.0, NAN], {"equal_nan": True}),
    ([[1.0, 5.0], [3.0, 4.0]], [1.05, 4.0], {"rtol": 0.1}),
    ([1e-9, 0.0], [0.0, 1e-7], {"atol": 1e-8}),
    ([1, 2, 3], [1, 2, 4], {}),
    ([1, 2, 3], [2, 2, 2], {"atol": 1}),
    ([True, False], [True, True], {}),
]


@pytest.mark.parametrize("a,b,kw", CASES)
def test_isclose_and_allclose_match_torch(a, b, kw):
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    got = ember.isclose(ea, eb, **kw)
    assert got.dtype is ember.bool
    assert got.tolist() == torch.isclose(ta, tb, **kw).tolist()
    assert ea.allclose(eb, **kw) == torch.allclose(ta, tb, **kw)
    assert ember.equal(ea, ea) == torch.equal(ta, ta)  # False with a NaN, as in torch
    assert ea.equal(eb) == torch.equal(ta, tb)


def test_isclose_dtype_mismatch_raises():
    with pytest.raises(RuntimeError):
        torch.isclose(torch.ones(2), torch.ones(2, dtype=torch.float64))
    with pytest.raises(RuntimeError):
        ember.isclose(ember.ones(2), ember.ones(2, dtype=ember.float64))
