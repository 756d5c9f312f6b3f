"""The attention kernels on a GPU: ember's scaled_dot_product_attention on cuda tensors
against the float64 reference (``_references.attention``), torch and ember's CPU path, for
the output and the gradients of query, key, value and a float mask, float32 and float64:
one element, odd and prime sizes, more rows than one tile, head dims up to 128, L != S,
causal (top-left aligned) with L < S and L > S, boolean and additive masks broadcast over
batch, heads and rows, rows with every key masked (zeros, and zero gradients), 2-d and 3-d
inputs, key and value broadcast over the batch, an empty batch, no queries and no keys.
Run where ``ember.cuda.is_available()``.

Tolerance: per element, twice the first-order rounding-error bound of
``_references.attention`` (derived there from the reduction lengths E, Ev, S and L and the
sizes of the terms) at the dtype's unit roundoff, plus the same at float64's for the
reference itself; plus ``1e4 * tiny`` for probabilities that flush below the smallest
normal number (at most 1e4 of them, times inputs below 10). The bound is 0 where every key
is masked, so those entries must be exact zeros. Two results within the bound of the truth
are within twice it of each other: the bar against torch and the CPU path."""

import contextlib
import math
import os

import _references as ref
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.attention import SDPBackend, sdpa_kernel

import ember
import ember.nn.functional as F
from ember.cuda.kernels import attention as cuda_attention

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

DTYPES = ["float32", "float64"]
UNIT = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}

# query, key, value shapes; mask kind and shape; causal; scale (None: 1/sqrt(E))
CASES = [((1, 1, 1, 1), (1, 1, 1, 1), (1, 1, 1, 1), None, None, False, None),
         ((2, 3, 17, 8), (2, 3, 17, 8), (2, 3, 17, 8), None, None, False, None),
         ((1, 2, 37, 64), (1, 2, 53, 64), (1, 2, 53, 32), None, None, False, 0.5),
         ((2, 1, 45, 128), (2, 1, 45, 128), (2, 1, 45, 128), None, None, True, None),
         ((1, 2, 19, 16), (1, 2, 40, 16), (1, 2, 40, 16), None, None, True, None),
         ((1, 2, 41, 16), (1, 2, 23, 16), (1, 2, 23, 24), None, None, True, None),
         ((1, 4, 131, 32), (1, 4, 97, 32), (1, 4, 97, 32), None, None, False, None),
         ((2, 2, 29, 12), (2, 2, 31, 12), (2, 2, 31, 7), "bool", (29, 31), False, None),
         ((3, 2, 23, 8), (3, 2, 33, 8), (3, 2, 33, 8), "bool", (3, 1, 1, 33), False, None),
         ((2, 3, 21, 8), (2, 3, 21, 8), (2, 3, 21, 8), "float", (1, 3, 21, 21), False, 0.3),
         ((2, 3, 21, 8), (1, 3, 27, 8), (1, 3, 27, 5), "float", (2, 1, 1, 27), False, None),
         ((3, 17, 8), (3, 19, 8), (3, 19, 8), "float", (3, 17, 19), False, None),
         ((11, 4), (13, 4), (13, 3), "bool", (11, 13), False, None),
         ((0, 2, 5, 8), (0, 2, 6, 8), (0, 2, 6, 8), None, None, False, None),
         ((1, 2, 0, 8), (1, 2, 6, 8), (1, 2, 6, 8), None, None, True, None),
         ((1, 2, 5, 8), (1, 2, 0, 8), (1, 2, 0, 8), None, None, False, None)]


def _mask(kind, shape, dtype, rng):
    """A mask with a row whose keys are all masked (a whole batch, for a key padding mask)."""
    if kind == "bool":
        mask = rng.random(shape) > 0.3
        if shape[-2] > 1:
            mask.reshape(-1, shape[-2], shape[-1])[0, min(4, shape[-2] - 1)] = False
        if len(shape) == 4 and shape[0] > 1:
            mask[1] = False
        return mask
    mask = (rng.standard_normal(shape) * 2).astype(dtype)
    flat = mask.reshape(-1, shape[-2], shape[-1])
    flat[0, min(1, shape[-2] - 1)] = -np.inf
    flat[-1, :, ::3] = -np.inf
    return mask


@pytest.fixture
def launched(monkeypatch):
    """Counts the calls into the kernels' launchers (the ops must take them)."""
    seen = {"forward": 0, "backward": 0}
    for name in seen:
        real = getattr(cuda_attention, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen[_name] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(cuda_attention, name, spy)
    return seen


def _run(lib, device, q, k, v, mask, causal, scale, g, mask_grad):
    tq, tk, tv = (lib.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
    tm = None if mask is None else lib.tensor(mask, device=device, requires_grad=mask_grad)
    out = lib.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal, scale=scale)
    inputs = [tq, tk, tv] + ([tm] if mask_grad else [])
    grads = lib.autograd.grad(out, inputs, lib.tensor(g, device=device))
    names = ["out", "dq", "dk", "dv"] + (["ds"] if mask_grad else [])
    return {n: t.detach().cpu().numpy() for n, t in zip(names, [out, *grads])}, out


def _sum_to(value, bound, shape):
    """A result in the broadcast shape and its bound, summed over the dims it was broadcast
    along to come from ``shape`` (as the engine sums a gradient); the sum of n terms adds
    at most ``n sum|terms|`` (in units of u) to the bound."""
    lead = tuple(range(value.ndim - len(shape)))
    dims = lead + tuple(len(lead) + i for i, n in enumerate(shape) if n == 1 and value.shape[len(lead) + i] != 1)
    if not dims:
        return value, bound
    terms = int(np.prod([value.shape[d] for d in dims]))

    def total(a):
        return a.sum(axis=dims, keepdims=True).reshape(shape)
    return total(value), total(bound) + terms * total(np.abs(value))


def _check(got, want, bound, dtype, factor, what):
    for name, value in got.items():
        err = np.abs(value.astype(np.float64) - want[name])
        limit = factor * bound[name] + 1e4 * np.finfo(dtype).tiny
        assert value.shape == want[name].shape, f"{name} {what}"
        assert (err <= limit).all(), (f"{name} {what}: worst error {err.max():.3g}, "
                                      f"worst error / bound {(err / limit).max():.3g}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("qs,ks,vs,kind,mshape,causal,scale", CASES, ids=str)
def test_attention_matches_the_reference_torch_and_the_cpu_path(qs, ks, vs, kind, mshape, causal, scale, dtype,
                                                                 launched):
    import cupy
    rng = np.random.default_rng(sum(qs) + sum(ks))
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in (qs, ks, vs))
    mask = None if kind is None else _mask(kind, mshape, dtype, rng)
    mask_grad = kind == "float"
    sc = 1 / np.sqrt(qs[-1]) if scale is None else scale
    lead = np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2], () if mask is None else mshape[:-2])
    g = rng.standard_normal(lead + (qs[-2], vs[-1])).astype(dtype)
    want, bound = ref.attention(q, k, v, mask, causal, sc, g)
    shapes = {"out": g.shape, "dq": qs, "dk": ks, "dv": vs}
    if mask_grad:
        shapes["ds"] = mshape
    for name, shape in shapes.items():
        want[name], bound[name] = _sum_to(want[name], bound[name], shape)

    got, out = _run(ember, "cuda", q, k, v, mask, causal, scale, g, mask_grad)
    assert isinstance(out._data, cupy.ndarray)
    assert launched == {"forward": 1, "backward": 1}
    one = 2 * (UNIT[dtype] + UNIT["float64"])
    _check(got, want, bound, dtype, one, "vs the float64 reference")
    torch_got, _ = _run(torch, "cpu", q, k, v, mask, causal, scale, g, mask_grad)
    _check(got, torch_got, bound, dtype, 2 * one, "vs torch")
    if qs[-2] and ks[-2]:  # ember's CPU path raises for no keys (torch gives zeros)
        cpu_got, _ = _run(ember, "cpu", q, k, v, mask, causal, scale, g, mask_grad)
        _check(got, cpu_got, bound, dtype, 2 * one, "vs ember's cpu path")


@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_give_exact_zeros(dtype):
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 2, 20, 8)).astype(dtype) for _ in range(3))
    mask = rng.random((2, 2, 20, 20)) > 0.5
    mask[:, :, 3] = False
    mask[1] = False
    tq, tk, tv = (ember.tensor(a, device="cuda", requires_grad=True) for a in (q, k, v))
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=ember.tensor(mask, device="cuda"))
    out.sum().backward()
    o, dq = out.detach().cpu().numpy(), tq.grad.cpu().numpy()
    assert not o[:, :, 3].any() and not o[1].any() and np.isfinite(o).all()
    assert not dq[:, :, 3].any() and not dq[1].any()
    assert not tk.grad.cpu().numpy()[1].any() and not tv.grad.cpu().numpy()[1].any()


def test_second_derivatives_through_the_kernels_forward():
    # the graph form of the gradient recomputes P with ember ops: create_graph works on cuda
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal((1, 2, 9, 4)) for _ in range(3))
    mask = rng.standard_normal((9, 9))
    mask[2] = -np.inf
    grads = {}
    for lib, device in ((ember, "cuda"), (torch, "cpu")):
        tq, tk, tv = (lib.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
        tm = lib.tensor(mask, device=device)
        with contextlib.ExitStack() as stack:
            if lib is torch:  # torch's fused CPU kernel has no second derivative; its math path has
                stack.enter_context(sdpa_kernel(SDPBackend.MATH))
            out = lib.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm)
            first = lib.autograd.grad((out * out).sum(), (tq, tk, tv), create_graph=True)
            second = lib.autograd.grad(sum((f * f).sum() for f in first), (tq, tk, tv))
        grads[lib.__name__] = [t.detach().cpu().numpy() for t in (*first, *second)]
    for a, b in zip(grads["ember"], grads["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_grouped_query_heads_take_the_kernels(launched):
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 4, 10, 8))
    k, v = rng.standard_normal((2, 2, 12, 8)), rng.standard_normal((2, 2, 12, 8))
    res = {}
    for lib, device in ((ember, "cuda"), (torch, "cpu")):
        tq, tk, tv = (lib.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
        out = lib.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True, enable_gqa=True)
        out.sum().backward()
        res[lib.__name__] = [t.detach().cpu().numpy() for t in (out, tq.grad, tk.grad, tv.grad)]
    assert launched["forward"] == 1
    for a, b in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_dropout_draws_from_the_generator_and_replays(launched):
    from ember.cuda.kernels import dropout as cuda_dropout
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 37, 8))
    q = ember.tensor(x, device="cuda", requires_grad=True)
    state = ember.cuda.get_rng_state()
    runs = []
    for _ in range(2):  # a restored state draws the same mask, forward and backward
        ember.cuda.set_rng_state(state)
        seed, offset = ember.random.default_generator("cuda").philox_seed_offset(0)
        out = F.scaled_dot_product_attention(q, q, q, dropout_p=0.3)
        (grad,) = ember.autograd.grad(out.sum(), q)
        runs.append((out.detach().cpu().numpy(), grad.cpu().numpy()))
    assert launched["forward"] == 2
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    # the output is the attention of the kept probabilities, the mask the dropout kernels' of [1, 2, 37, 37]
    z = cuda_dropout.mask((1, 2, 37, 37), np.dtype("float64"), 0.3, 1 / 0.7, seed, offset).get()
    tq = torch.tensor(x, requires_grad=True)
    want = (torch.softmax(tq @ tq.transpose(-1, -2) / math.sqrt(8), -1) * torch.tensor(z)) @ tq
    (want_grad,) = torch.autograd.grad(want.sum(), tq)
    np.testing.assert_allclose(runs[0][0], want.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(runs[0][1], want_grad.numpy(), rtol=1e-10, atol=1e-12)


def test_wide_heads_keep_the_generic_path(launched):
    rng = np.random.default_rng(6)
    wide = rng.standard_normal((1, 2, 5, cuda_attention.E_MAX + 32))
    out = F.scaled_dot_product_attention(*(ember.tensor(wide, device="cuda") for _ in range(3)))
    want = TF.scaled_dot_product_attention(*(torch.tensor(wide) for _ in range(3)))
    np.testing.assert_allclose(out.cpu().numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    assert launched["forward"] == 0


@pytest.mark.skipif(os.environ.get("CUPY_TF32") == "1", reason="TF32 products break the float32 bar")
def test_multi_head_attention_module_on_cuda(launched):
    # nn.MultiheadAttention with a key padding mask runs the kernels through its additive mask;
    # float32 sums of 16 features and 7 keys: errors near 16 * 2^-24 of the terms, the bar 1e-5
    torch.manual_seed(0)
    ref_mod = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    mod = ember.nn.MultiheadAttention(16, 4, batch_first=True)
    mod.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in ref_mod.state_dict().items()})
    mod = mod.to("cuda")
    x = np.random.default_rng(1).standard_normal((3, 7, 16)).astype(np.float32)
    pad = np.zeros((3, 7), bool)
    pad[0, 4:] = True
    want, _ = ref_mod(torch.tensor(x), torch.tensor(x), torch.tensor(x), key_padding_mask=torch.tensor(pad),
                      need_weights=False)
    ex = ember.tensor(x, device="cuda")
    got, _ = mod(ex, ex, ex, key_padding_mask=ember.tensor(pad, device="cuda"), need_weights=False)
    assert launched["forward"] == 1
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
