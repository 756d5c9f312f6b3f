"""The float64 references the GPU tests compare the kernels with, checked here on the CPU:
Philox4x32-10 against the published known answers, the dropout counter scheme's
properties, cross entropy (loss and gradient, every option) and attention (output,
gradients, masks) against torch."""

import _references as ref
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

# Random123's known-answer vectors for philox4x32 with 10 rounds (the file kat_vectors of
# the Random123 library, D. E. Shaw Research, which accompanies Salmon, Moraes, Dror and
# Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11): counter, key, result
KAT = [((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
        (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
        (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]


@pytest.mark.parametrize("counter,key,expected", KAT)
def test_philox_known_answers(counter, key, expected):
    """Random123's kat_vectors, philox4x32 10 rounds (Salmon et al., SC'11)."""
    got = ref.philox4x32_10(np.array([counter], np.uint32), key)
    assert [int(v) for v in got[0]] == list(expected)


def test_philox_rows_are_independent_of_their_neighbours():
    rows = np.array([k[0] for k in KAT], np.uint32)
    together = ref.philox4x32_10(rows, KAT[2][1])
    alone = np.concatenate([ref.philox4x32_10(r[None], KAT[2][1]) for r in rows])
    np.testing.assert_array_equal(together, alone)


def test_counter_is_offset_plus_group_with_a_64_bit_carry():
    seed = 0x0123_4567_89AB_CDEF
    words = ref.philox_words(3, seed, 0xFFFF_FFFF)  # groups cross the low word's wrap
    key = (seed & 0xFFFFFFFF, seed >> 32)
    expected = ref.philox4x32_10(np.array([[0xFFFFFFFF, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0]], np.uint32), key)
    np.testing.assert_array_equal(words, expected)
    # the 64-bit counter wraps modulo 2**64
    np.testing.assert_array_equal(ref.philox_words(2, seed, 2 ** 64 - 1)[1], ref.philox_words(1, seed, 0)[0])


def test_uniforms_follow_the_element_to_group_map():
    seed, n = 42, 37
    u = ref.philox_uniform(n, seed, 5)
    assert u.dtype == np.float32 and u.shape == (n,) and u.min() >= 0 and u.max() < 1
    # dropping the first group is the same as starting one counter later
    np.testing.assert_array_equal(u[4:], ref.philox_uniform(n - 4, seed, 6))
    words = ref.philox_words(1, seed, 5)[0]
    assert u[2] == np.float32((int(words[2]) >> 8) / 2 ** 24)


def test_keep_rate_and_reproducibility():
    keep = ref.dropout_keep(200_000, 0.3, 2024, 0)
    assert abs(keep.mean() - 0.7) < 0.005
    np.testing.assert_array_equal(keep, ref.dropout_keep(200_000, 0.3, 2024, 0))
    assert (keep != ref.dropout_keep(200_000, 0.3, 2025, 0)).any()
    assert (keep != ref.dropout_keep(200_000, 0.3, 2024, 50_000)).any()


OPTIONS = [dict(), dict(weight=True), dict(ignore_index=1), dict(label_smoothing=0.2),
           dict(weight=True, ignore_index=0, label_smoothing=0.1)]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("opts", OPTIONS, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (7, 3), (6, 13)], ids=str)
def test_cross_entropy_reference_is_torchs(shape, opts, reduction):
    rng = np.random.default_rng(sum(shape))
    n, c = shape
    x = rng.standard_normal(shape) * 3
    t = rng.integers(0, c, n)
    w = rng.uniform(0.5, 2, c) if opts.get("weight") else None
    ignore, eps = opts.get("ignore_index", -100), opts.get("label_smoothing", 0.0)
    tx = torch.tensor(x, requires_grad=True)
    out = TF.cross_entropy(tx, torch.tensor(t), weight=None if w is None else torch.tensor(w), ignore_index=ignore,
                           reduction=reduction, label_smoothing=eps)
    g = rng.standard_normal(n) if reduction == "none" else 1.7
    out.backward(torch.tensor(g) if reduction == "none" else torch.tensor(g, dtype=torch.float64))
    np.testing.assert_allclose(ref.cross_entropy(x, t, w, ignore, eps, reduction), out.detach().numpy(), rtol=1e-12,
                               atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(ref.cross_entropy_grad(x, t, w, ignore, eps, reduction, g), tx.grad.numpy(), rtol=1e-10,
                               atol=1e-12, equal_nan=True)


def test_cross_entropy_rows_lse_and_weights():
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    loss, lse, wt = ref.cross_entropy_rows(x, np.array([2, 1]), np.array([1.0, 2.0, 3.0]), 1, 0.0)
    np.testing.assert_allclose(lse, [np.log(np.exp(x[0]).sum()), np.log(3.0)])
    np.testing.assert_allclose(wt, [3.0, 0.0])
    np.testing.assert_allclose(loss, [3.0 * (lse[0] - 3.0), 0.0])


ATTENTION = [((2, 3, 7, 4), (2, 3, 9, 4), (2, 3, 9, 5), None, False),
             ((1, 2, 9, 4), (1, 2, 6, 4), (1, 2, 6, 3), None, True),
             ((2, 1, 5, 3), (2, 1, 8, 3), (2, 1, 8, 3), "bool", False),
             ((3, 6, 4), (3, 7, 4), (3, 7, 2), "float", False)]


@pytest.mark.parametrize("qs,ks,vs,kind,causal", ATTENTION, ids=str)
def test_attention_reference_is_torchs(qs, ks, vs, kind, causal):
    rng = np.random.default_rng(len(qs) + qs[-2])
    q, k, v = (rng.standard_normal(s) for s in (qs, ks, vs))
    L, S = qs[-2], ks[-2]
    mask = None
    if kind == "bool":
        mask = rng.random((L, S)) > 0.4
        mask[2] = False  # a row with no key: zeros
    elif kind == "float":
        mask = rng.standard_normal((qs[0], L, S))
        mask[0, 1] = -np.inf
        mask[1, :, ::2] = -np.inf
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tm = None if mask is None else torch.tensor(mask, requires_grad=kind == "float")
    out = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal, scale=0.4)
    g = rng.standard_normal(tuple(out.shape))
    out.backward(torch.tensor(g))
    got, bound = ref.attention(q, k, v, mask, causal, 0.4, g)
    want = {"out": out.detach(), "dq": tq.grad, "dk": tk.grad, "dv": tv.grad}
    if kind == "float":
        want["ds"] = tm.grad
    for name, t in want.items():
        np.testing.assert_allclose(got[name], t.numpy(), rtol=1e-12, atol=1e-13, err_msg=name)
    for name in got:
        assert bound[name].shape == got[name].shape and (bound[name] >= 0).all()
    if kind is not None:  # the row with no key: zero results with zero bounds
        row = (Ellipsis, 2, slice(None)) if kind == "bool" else (0, 1, slice(None))
        for name in ("out", "dq", "ds"):
            assert not got[name][row].any() and not bound[name][row].any(), name
