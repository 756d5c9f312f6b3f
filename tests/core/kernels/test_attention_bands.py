"""Causal attention on the CPU in bands of query rows (``ops/attention.py``): each product
runs over the keys its band sees. Checked against torch in float64 and against the
whole-matrix path, for the shapes the bands split unevenly (L != S, odd sizes), the GPT
layout (q, k, v as transposed views of one projection) and dropout; and the kernel that
turns the probabilities' gradient into the scores' (``kernels.softmax.attention_grad``)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import count_calls

import ember
import ember.nn.functional as F
from ember.cpu import kernels
from ember.ops import attention


def _views(x, H, D):
    """q, k, v ``[B, H, T, D]`` as the transposed head views of ``x`` ``[B, T, 3HD]`` (GPT's layout)."""
    B, T = x.shape[0], x.shape[1]
    return tuple(t.view(B, T, H, D).transpose(1, 2) for t in x.split(H * D, dim=2))


def _attention(lib, arrays, grad, gpt, dropout_p=0.0):
    """The output and the inputs' gradients of causal attention, as numpy arrays."""
    if gpt:
        x = lib.tensor(arrays[0], requires_grad=True)
        q, k, v = _views(x, *gpt)
        leaves = (x,)
    else:
        q, k, v = leaves = tuple(lib.tensor(a, requires_grad=True) for a in arrays)
    out = (F if lib is ember else TF).scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
    out.backward(lib.tensor(grad))
    return [out.detach().numpy()] + [t.grad.numpy() for t in leaves]


BANDED = ("_causal_banded", "_causal_banded_grads")  # the banded forward and backward


def _banded(n):
    """The calls expected after ``n`` banded runs: none where the kernels are off (``EMBER_NUMBA=0``)."""
    return dict.fromkeys(BANDED, n * int(kernels.enabled()))


def _counting(monkeypatch):
    return count_calls(monkeypatch, attention, BANDED)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("L,S,E,Ev", [(128, 128, 16, 8), (200, 131, 7, 5), (131, 300, 9, 9), (517, 517, 8, 8)])
def test_causal_bands_match_torch_and_the_whole_matrix(monkeypatch, L, S, E, Ev, dtype):
    rng = np.random.default_rng(L + S)
    arrays = [rng.standard_normal(s).astype(dtype) * 2 for s in ((2, 3, L, E), (2, 3, S, E), (2, 3, S, Ev))]
    grad = rng.standard_normal((2, 3, L, Ev)).astype(dtype)
    calls = _counting(monkeypatch)
    got = _attention(ember, arrays, grad, None)
    assert calls == _banded(1)
    monkeypatch.setattr(attention, "_MAX_BANDS", 1)
    whole = _attention(ember, arrays, grad, None)
    assert calls == _banded(1)  # one band: the whole-matrix path
    theirs = _attention(torch, arrays, grad, None)
    exact = _attention(torch, [a.astype(np.float64) for a in arrays], grad.astype(np.float64), None)
    for ours, one_band, t32, best in zip(got, whole, theirs, exact):  # 8x torch's own distance in float32
        tol = 8 * np.abs(t32 - best).max() + 1e-6 * np.abs(best).max() if dtype == "float32" else 1e-10
        assert np.abs(ours - best).max() <= tol and np.abs(one_band - best).max() <= tol


def test_the_gpt_layout_and_dropout_in_bands(monkeypatch):
    # q, k, v as strided views of one [B, T, 3C] projection (products into strided bands of
    # the result); with dropout, the same seed gives the whole-matrix path's result
    B, T, H, D = 2, 192, 4, 16
    rng = np.random.default_rng(7)
    x = rng.standard_normal((B, T, 3 * H * D)).astype("float32")
    grad = rng.standard_normal((B, H, T, D)).astype("float32")
    calls = _counting(monkeypatch)
    got = _attention(ember, [x], grad, (H, D))
    exact = _attention(torch, [x.astype(np.float64)], grad.astype(np.float64), (H, D))
    theirs = _attention(torch, [x], grad, (H, D))
    for ours, t32, best in zip(got, theirs, exact):
        assert np.abs(ours - best).max() <= 8 * np.abs(t32 - best).max() + 1e-6 * np.abs(best).max()
    ember.manual_seed(3)
    dropped = _attention(ember, [x], grad, (H, D), dropout_p=0.25)
    assert calls == _banded(2)
    monkeypatch.setattr(attention, "_MAX_BANDS", 1)
    ember.manual_seed(3)
    reference = _attention(ember, [x], grad, (H, D), dropout_p=0.25)
    assert calls == _banded(2)
    assert not np.allclose(dropped[0], got[0])  # dropout took effect
    for a, b in zip(dropped, reference):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L,S", [(1, 1), (5, 9), (9, 5), (70, 33)])
def test_attention_grad_is_the_scaled_softmax_backward_reading_no_masked_key(L, S, causal, dtype):
    rng = np.random.default_rng(L * S)
    p = rng.random((3, L, S)).astype(dtype)
    dp = rng.standard_normal((3, L, S)).astype(dtype)
    masked = np.triu(np.ones((L, S), bool), 1) if causal else np.zeros((L, S), bool)
    p[:, masked] = 0
    # softmax's backward (torch's derivatives.yaml), in float64 from the same inputs
    p64, dp64 = p.astype(np.float64), dp.astype(np.float64)
    want = 0.3 * p64 * (dp64 - (dp64 * p64).sum(-1, keepdims=True))
    # the row sum's rounding in the input dtype, in any order: at most (S + 1) eps times the
    # sum of magnitudes; it is multiplied by 0.3 p, and the difference rounds once more
    eps = np.finfo(dtype).eps
    rows = np.abs(dp64 * p64).sum(-1, keepdims=True) + np.abs(dp64)
    bound = 0.3 * p64 * (S + 3) * eps * rows
    dp[:, masked] = np.nan  # never read
    got = kernels.softmax.attention_grad(dp, p, 0.3, causal)
    assert got is dp
    assert np.all(np.abs(got - want) <= bound)
    assert np.all(got[:, masked] == 0)
