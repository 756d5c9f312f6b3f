"""ember.testing.assert_close behaves as torch.testing.assert_close on the same inputs."""

import pytest
import torch

import ember
from ember.testing import assert_close, make_tensor

CASES = [
    ([1.0, 2.0], [1.0, 2.0], {}),
    ([1.0, 2.0], [1.0, 2.000001], {}),
    ([1.0, 2.0], [1.0, 2.1], {}),
    ([1.0, 2.0], [1.0, 2.1], {"rtol": 0.1, "atol": 0.0}),
    ([1, 2], [1, 3], {}),
    ([float("nan")], [float("nan")], {}),
    ([float("nan")], [float("nan")], {"equal_nan": True}),
    ([float("inf")], [float("inf")], {}),
    ([[1.0, 2.0]], [1.0, 2.0], {}),
]


@pytest.mark.parametrize("a,b,kw", CASES)
def test_matches_torch(a, b, kw):
    def outcome(L, fn):
        try:
            fn(L.tensor(a), L.tensor(b), **kw)
        except AssertionError:
            return False
        return True
    assert outcome(ember, assert_close) == outcome(torch, torch.testing.assert_close)


def test_dtype_and_structures():
    with pytest.raises(AssertionError):
        assert_close(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64))
    assert_close(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64), check_dtype=False)
    assert_close({"a": [ember.ones(2), 3]}, {"a": [ember.ones(2), 3]})
    with pytest.raises(AssertionError):
        assert_close({"a": ember.ones(2)}, {"b": ember.ones(2)})
    assert_close(ember.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))  # against the oracle directly
    assert_close(1.0, 1.0 + 1e-9)
    with pytest.raises(AssertionError, match="custom"):
        assert_close(ember.ones(1), ember.zeros(1), msg="custom")
    with pytest.raises(ValueError):
        assert_close(ember.ones(1), ember.ones(1), rtol=1e-3)


def test_make_tensor():
    t = make_tensor(3, 4, dtype=ember.float64, low=-1, high=1, requires_grad=True)
    assert t.shape == (3, 4) and t.dtype is ember.float64 and t.requires_grad
    assert t.min().item() >= -1 and t.max().item() < 1
    i = make_tensor((5,), dtype=ember.int32, low=0, high=3)
    assert i.dtype is ember.int32 and 0 <= i.min().item() and i.max().item() < 3
