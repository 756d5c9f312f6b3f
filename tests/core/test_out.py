"""The out= argument against torch: the result lands in out (resized when needed), out is
returned, and torch's errors for a dtype that cannot hold the result and for inputs that
require grad."""

import numpy as np
import pytest
import torch
from conftest import assert_same

import ember

A = np.random.default_rng(0).uniform(0.1, 0.9, size=(3, 4)).astype(np.float32)

CASES = {
    "asin": lambda L, a, out: L.asin(a, out=out),
    "atan2": lambda L, a, out: L.atan2(a, a.flip(0), out=out),
    "logaddexp": lambda L, a, out: L.logaddexp(a, a * 2, out=out),
    "lgamma": lambda L, a, out: L.lgamma(a, out=out),
    "cumprod": lambda L, a, out: L.cumprod(a, 1, out=out),
    "tril": lambda L, a, out: L.tril(a, out=out),
    "kron": lambda L, a, out: L.kron(a, a[:2, :2], out=out),
    "outer": lambda L, a, out: L.outer(a[0], a[1], out=out),
    "mm": lambda L, a, out: L.mm(a, a.T, out=out),
    "exp": lambda L, a, out: L.exp(a, out=out),
    "cumsum": lambda L, a, out: L.cumsum(a, 0, out=out),
    "logsumexp": lambda L, a, out: L.logsumexp(a, 1, out=out),
    "gather": lambda L, a, out: L.gather(a, 1, L.tensor([[0, 0], [1, 0], [3, 2]]), out=out),
    "lerp": lambda L, a, out: L.lerp(a, a * 2, 0.3, out=out),
    "std": lambda L, a, out: L.std(a, 0, out=out),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("preshaped", [True, False], ids=["sized", "resized"])
def test_result_written_into_out(name, preshaped):
    def run(L):
        a = L.tensor(A)
        shape = tuple(CASES[name](L, a, None).shape)
        out = L.empty(shape if preshaped else (0,))
        returned = CASES[name](L, a, out)
        return returned is out, out
    assert_same(run(ember), run(torch))


def test_tuple_out():
    def run(L):
        values, indices = L.empty(3), L.empty(3, dtype=L.int64)
        res = L.cummax(L.tensor(A), 1, out=(values, indices))
        med = (L.empty(3), L.empty(3, dtype=L.int64))
        L.median(L.tensor(A), 1, out=med)
        top = (L.empty(0), L.empty(0, dtype=L.int64))
        L.topk(L.tensor(A), 2, out=top)
        same = L.empty(3, 4, dtype=L.bool)
        L.eq(L.tensor(A), L.tensor(A), out=same)
        return res[0] is values, values, indices, med, top, same
    assert_same(run(ember), run(torch))


def test_out_errors_match_torch():
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.asin(L.tensor(A), out=L.empty(3, 4, dtype=L.int64))
        with pytest.raises(RuntimeError):
            L.asin(L.tensor(A, requires_grad=True), out=L.empty(3, 4))
