"""Attention and transformers against torch: F.scaled_dot_product_attention,
nn.MultiheadAttention, the Transformer layers and stacks (values, gradients of inputs and
of every parameter, state_dict keys and shapes, repr, errors, dropout statistics)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import assert_same, to_ember

import ember
import ember.nn.functional as EF

RNG = np.random.default_rng(0)


def pair(shape, dtype="float64", requires_grad=True):
    a = RNG.standard_normal(shape).astype(dtype)
    t = torch.tensor(a, requires_grad=requires_grad)
    return t, to_ember(t)


def bool_pair(shape, p_keep=0.7):
    a = RNG.random(shape) < p_keep
    return torch.tensor(a), ember.tensor(a)


def assert_grads(e_inputs, t_inputs, rtol=1e-7, atol=1e-9):
    for e, t in zip(e_inputs, t_inputs):
        if t is not None and t.requires_grad:
            assert e.grad is not None
            assert_same(e.grad, t.grad, rtol=rtol, atol=atol)


def backward_both(e_out, t_out):
    g = RNG.standard_normal(tuple(t_out.shape))
    t_out.backward(torch.tensor(g, dtype=t_out.dtype))
    e_out.backward(ember.tensor(g).to(e_out.dtype))


# ---- scaled_dot_product_attention -------------------------------------------------------

SDPA_CASES = {
    "plain": dict(q=(2, 3, 4, 8), k=(2, 3, 5, 8), v=(2, 3, 5, 6)),
    "2d": dict(q=(4, 8), k=(5, 8), v=(5, 3)),
    "broadcast_batch": dict(q=(2, 3, 4, 8), k=(1, 3, 5, 8), v=(1, 3, 5, 6)),
    "causal_short_query": dict(q=(2, 3, 8), k=(2, 5, 8), v=(2, 5, 4), is_causal=True),
    "causal_long_query": dict(q=(2, 6, 8), k=(2, 4, 8), v=(2, 4, 4), is_causal=True),
    "bool_mask": dict(q=(2, 3, 4, 8), k=(2, 3, 5, 8), v=(2, 3, 5, 6), mask="bool", mshape=(4, 5)),
    "bool_mask_dead_rows": dict(q=(2, 3, 4, 8), k=(2, 3, 5, 8), v=(2, 3, 5, 6), mask="dead", mshape=(2, 1, 4, 5)),
    "float_mask": dict(q=(2, 3, 4, 8), k=(2, 3, 5, 8), v=(2, 3, 5, 6), mask="float", mshape=(3, 4, 5)),
    "float_mask_dead_rows": dict(q=(2, 4, 8), k=(2, 5, 8), v=(2, 5, 6), mask="float_dead", mshape=(2, 4, 5)),
    "scale": dict(q=(2, 4, 8), k=(2, 5, 8), v=(2, 5, 6), scale=0.3),
    "gqa": dict(q=(2, 4, 3, 8), k=(2, 2, 5, 8), v=(2, 2, 5, 6), enable_gqa=True),
}


def _sdpa_inputs(case):
    tq, eq = pair(case["q"])
    tk, ek = pair(case["k"])
    tv, ev = pair(case["v"])
    tm = em = None
    kind = case.get("mask")
    if kind in ("bool", "dead"):
        tm, em = bool_pair(case["mshape"])
        if kind == "dead":
            tm[..., 1, :] = False
            em = ember.tensor(tm.numpy())
    elif kind in ("float", "float_dead"):
        a = RNG.standard_normal(case["mshape"])
        if kind == "float_dead":
            a[:, 2, :] = -np.inf
            a[0, 0, 1] = -np.inf
        tm = torch.tensor(a, requires_grad=True)
        em = to_ember(tm)
    kw = {k: case[k] for k in ("is_causal", "scale", "enable_gqa") if k in case}
    return (tq, tk, tv, tm), (eq, ek, ev, em), kw


@pytest.mark.parametrize("name", list(SDPA_CASES))
def test_sdpa_values_and_gradients(name):
    t_in, e_in, kw = _sdpa_inputs(SDPA_CASES[name])
    t_out = TF.scaled_dot_product_attention(*t_in[:3], attn_mask=t_in[3], **kw)
    e_out = EF.scaled_dot_product_attention(*e_in[:3], attn_mask=e_in[3], **kw)
    assert_same(e_out, t_out, rtol=1e-10, atol=1e-12)
    backward_both(e_out, t_out)
    assert_grads(e_in, t_in)


def test_sdpa_without_keys_is_zero_as_torch():
    tq, eq = pair((2, 3, 5, 4))
    tk, ek = pair((2, 3, 0, 4))
    tv, ev = pair((2, 3, 0, 6))
    t_out = TF.scaled_dot_product_attention(tq, tk, tv)
    e_out = EF.scaled_dot_product_attention(eq, ek, ev)
    assert_same(e_out, t_out)
    t_out.sum().backward()
    e_out.sum().backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        assert_same(e.grad, t.grad)


def test_sdpa_fully_masked_row_is_zero_as_torch():
    tq, eq = pair((3, 4))
    tk, ek = pair((5, 4))
    tv, ev = pair((5, 2))
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    t_out = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    e_out = EF.scaled_dot_product_attention(eq, ek, ev, attn_mask=ember.tensor(mask.numpy()))
    assert_same(e_out, t_out)
    assert (e_out[1] == 0).all().item()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{"is_causal": True}, {}, {"attn_mask": "tril"}, {"dropout_p": 0.3}])
@pytest.mark.parametrize("T", [5, 130])  # 130: causal attention in bands of queries
@pytest.mark.parametrize("heads_split", [(0, 0, 0), (1, 1, 1), (0, 1, 1), (1, 0, 0)])
def test_sdpa_lays_out_its_output_and_gradients_as_torch(heads_split, T, kw, dtype):
    # q, k, v split into heads from [N, T, H, D] (transposed views) or made as [N, H, T, D]:
    # the output is laid out as the query (so that GPT's out.transpose(1, 2).view(N, T, C)
    # works), each gradient as its input, and under dropout torch's math path gives a
    # contiguous output
    N, H, D = 2, 3, 4
    strides = []
    for lib, F in ((torch, TF), (ember, EF)):
        qkv = []
        for split in heads_split:
            a = RNG.standard_normal((N, T, H, D) if split else (N, H, T, D)).astype(dtype)
            x = lib.tensor(a)
            qkv.append((x.transpose(1, 2) if split else x).requires_grad_())
        given = dict(kw)
        if given.get("attn_mask") == "tril":
            given["attn_mask"] = lib.tensor(np.tril(np.ones((T, T), bool)))
        out = F.scaled_dot_product_attention(*qkv, **given)
        out.sum().backward()
        strides.append([out.stride()] + [t.grad.stride() for t in qkv])
        if heads_split[0] and not kw.get("dropout_p"):
            assert out.transpose(1, 2).view(N, T, H * D).shape == (N, T, H * D)
    assert strides[1] == strides[0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sdpa_dtype(dtype):
    tq, eq = pair((2, 3, 4), dtype)
    tk, ek = pair((2, 5, 4), dtype)
    tv, ev = pair((2, 5, 3), dtype)
    t_out = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    e_out = EF.scaled_dot_product_attention(eq, ek, ev, is_causal=True)
    assert_same(e_out, t_out)


@pytest.mark.parametrize("name", ["plain", "bool_mask_dead_rows", "float_mask", "causal_short_query", "gqa"])
def test_sdpa_double_backward(name):
    t_in, e_in, kw = _sdpa_inputs(SDPA_CASES[name])
    t_vars = [t for t in t_in if t is not None and t.requires_grad]
    e_vars = [e for e in e_in if e is not None and e.requires_grad]
    tg = torch.autograd.grad(TF.scaled_dot_product_attention(*t_in[:3], attn_mask=t_in[3], **kw).pow(2).sum(),
                             t_vars, create_graph=True)
    eg = ember.autograd.grad(EF.scaled_dot_product_attention(*e_in[:3], attn_mask=e_in[3], **kw).pow(2).sum(),
                             e_vars, create_graph=True)
    for a, b in zip(eg, tg):
        assert_same(a, b, rtol=1e-9, atol=1e-11)
    tgg = torch.autograd.grad(sum((g * g).sum() for g in tg), t_vars)
    egg = ember.autograd.grad(sum((g * g).sum() for g in eg), e_vars)
    for a, b in zip(egg, tgg):
        assert_same(a, b, rtol=1e-8, atol=1e-10)


def test_sdpa_gradcheck():
    q = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    k = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    v = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    m = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    fn = lambda q, k, v, m: EF.scaled_dot_product_attention(q, k, v, attn_mask=m)  # noqa: E731
    assert ember.autograd.gradcheck(fn, (q, k, v, m))
    assert ember.autograd.gradgradcheck(fn, (q, k, v, m))


def test_sdpa_dropout_statistics():
    # q = 0: every key gets 1/S; v = I: the output row is the (scaled) dropout mask
    n, S, p = 400, 16, 0.3
    q = ember.zeros(n, 1, 4, requires_grad=True)
    k = ember.randn(n, S, 4)
    v = ember.eye(S).expand(n, S, S).contiguous().requires_grad_()
    out = EF.scaled_dot_product_attention(q, k, v, dropout_p=p)
    vals = out.detach().numpy().ravel()
    kept = 1.0 / (S * (1 - p))
    assert np.all(np.isclose(vals, 0) | np.isclose(vals, kept))
    assert abs((vals == 0).mean() - p) < 0.02
    g = ember.randn(n, 1, S)
    out.backward(g)
    # dv = Pd^T g with the same mask the forward used: Pd = out here
    expected = out.detach().transpose(-1, -2) @ g
    np.testing.assert_allclose(v.grad.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)


def test_sdpa_errors_match_torch():
    q, k, v = ember.randn(2, 3, 4), ember.randn(2, 5, 4), ember.randn(2, 5, 6)
    tq, tk, tv = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    cases = [
        (dict(attn_mask=ember.ones(3, 5, dtype=ember.bool), is_causal=True),
         dict(attn_mask=torch.ones(3, 5, dtype=torch.bool), is_causal=True)),
        (dict(attn_mask=ember.ones(3, 5, dtype=ember.int64)), dict(attn_mask=torch.ones(3, 5, dtype=torch.int64))),
        (dict(attn_mask=ember.ones(3, 5, dtype=ember.float64)),
         dict(attn_mask=torch.ones(3, 5, dtype=torch.float64))),
    ]
    for ekw, tkw in cases:
        with pytest.raises(RuntimeError):
            TF.scaled_dot_product_attention(tq, tk, tv, **tkw)
        with pytest.raises(RuntimeError):
            EF.scaled_dot_product_attention(q, k, v, **ekw)
    for args_e, args_t in [((q, k.double(), v), (tq, tk.double(), tv)),
                           ((q[0, 0], k[0], v[0]), (tq[0, 0], tk[0], tv[0])),
                           ((q, ember.randn(2, 5, 3), v), (tq, torch.randn(2, 5, 3), tv))]:
        with pytest.raises(RuntimeError):
            TF.scaled_dot_product_attention(*args_t)
        with pytest.raises(RuntimeError):
            EF.scaled_dot_product_attention(*args_e)
    with pytest.raises(RuntimeError):
        TF.scaled_dot_product_attention(torch.randn(1, 4, 3, 2), torch.randn(1, 3, 5, 2), torch.randn(1, 3, 5, 2),
                                        enable_gqa=True)
    with pytest.raises(RuntimeError):
        EF.scaled_dot_product_attention(ember.randn(1, 4, 3, 2), ember.randn(1, 3, 5, 2), ember.randn(1, 3, 5, 2),
                                        enable_gqa=True)


# ---- modules: shared helpers ------------------------------------------------------------------

def copy_module(tmod, emod):
    """Load torch's weights into the ember module; the state_dicts must agree in keys and shapes."""
    tsd, esd = tmod.state_dict(), emod.state_dict()
    assert list(esd.keys()) == list(tsd.keys())
    for key in tsd:
        assert tuple(esd[key].shape) == tuple(tsd[key].shape), key
    emod.load_state_dict({k: to_ember(v) for k, v in tsd.items()})


def assert_param_grads(emod, tmod, rtol=1e-7, atol=1e-9):
    tp = dict(tmod.named_parameters())
    ep = dict(emod.named_parameters())
    assert list(ep) == list(tp)
    for name, t in tp.items():
        if t.grad is None:
            assert ep[name].grad is None or not ep[name].grad.abs().sum().item(), name
        else:
            assert ep[name].grad is not None, name
            assert_same(ep[name].grad, t.grad, rtol=rtol, atol=atol)


def make_pair(tcls, ecls, *args, **kwargs):
    torch.manual_seed(0)
    tmod = tcls(*args, dtype=torch.float64, **kwargs)
    emod = ecls(*args, dtype=ember.float64, **kwargs)
    copy_module(tmod, emod)
    return tmod, emod


# ---- MultiheadAttention ------------------------------------------------------------------------

MHA_CASES = {
    "self": dict(),
    "self_batch_first": dict(ctor=dict(batch_first=True)),
    "cross": dict(cross=True),
    "cross_batch_first_kv_same": dict(ctor=dict(batch_first=True), cross="kv"),
    "kdim_vdim": dict(ctor=dict(kdim=5, vdim=3), cross=True),
    "no_bias": dict(ctor=dict(bias=False)),
    "bias_kv_zero_attn": dict(ctor=dict(add_bias_kv=True, add_zero_attn=True), attn_mask="bool2d", kpm="bool"),
    "kpm_bool": dict(kpm="bool"),
    "kpm_float": dict(kpm="float"),
    "attn_2d_bool": dict(attn_mask="bool2d"),
    "attn_3d_float": dict(attn_mask="float3d"),
    "attn_and_kpm": dict(attn_mask="bool2d", kpm="bool", ctor=dict(batch_first=True)),
    "weights_per_head": dict(need_weights=True, average=False, attn_mask="float3d"),
    "weights_averaged": dict(need_weights=True, kpm="bool"),
    "causal_hint": dict(attn_mask="causal", is_causal=True, ctor=dict(batch_first=True)),
    "causal_hint_with_kpm": dict(attn_mask="causal", is_causal=True, kpm="bool"),
    "unbatched": dict(unbatched=True, attn_mask="bool2d", kpm="bool"),
    "unbatched_batch_first": dict(unbatched=True, ctor=dict(batch_first=True), need_weights=True),
}

E, H, L, S, N = 8, 2, 4, 5, 3


def _mha_data(case, batch_first):
    cross = case.get("cross", False)
    kdim = case.get("ctor", {}).get("kdim", E)
    vdim = case.get("ctor", {}).get("vdim", E)
    unb = case.get("unbatched", False)
    src = S if cross else L

    def shape(t, d):
        if unb:
            return (t, d)
        return (N, t, d) if batch_first else (t, N, d)

    tq, eq = pair(shape(L, E))
    if cross == "kv":
        tk, ek = pair(shape(src, kdim))
        tv, ev = tk, ek
    elif cross:
        tk, ek = pair(shape(src, kdim))
        tv, ev = pair(shape(src, vdim))
    else:
        tk, ek, tv, ev = tq, eq, tq, eq
    kw_t, kw_e = {}, {}
    kpm = case.get("kpm")
    if kpm:
        kshape = (src,) if unb else (N, src)
        if kpm == "bool":
            m = RNG.random(kshape) < 0.3
            m[..., 0] = False  # every row keeps a key (torch's weights are NaN otherwise)
            kw_t["key_padding_mask"], kw_e["key_padding_mask"] = torch.tensor(m), ember.tensor(m)
        else:
            kw_t["key_padding_mask"], kw_e["key_padding_mask"] = pair(kshape, requires_grad=False)
    am = case.get("attn_mask")
    if am == "bool2d":
        m = RNG.random((L, src)) < 0.3
        m[:, 0] = False
        kw_t["attn_mask"], kw_e["attn_mask"] = torch.tensor(m), ember.tensor(m)
    elif am == "float3d":
        kw_t["attn_mask"], kw_e["attn_mask"] = pair((H if unb else N * H, L, src), requires_grad=False)
    elif am == "causal":
        m = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
        kw_t["attn_mask"], kw_e["attn_mask"] = m, to_ember(m)
    for kw in (kw_t, kw_e):
        kw["need_weights"] = case.get("need_weights", False)
        kw["average_attn_weights"] = case.get("average", True)
        kw["is_causal"] = case.get("is_causal", False)
    return (tq, tk, tv), (eq, ek, ev), kw_t, kw_e


@pytest.mark.parametrize("name", list(MHA_CASES))
def test_multihead_attention(name):
    case = MHA_CASES[name]
    ctor = case.get("ctor", {})
    tmod, emod = make_pair(torch.nn.MultiheadAttention, ember.nn.MultiheadAttention, E, H, **ctor)
    t_in, e_in, kw_t, kw_e = _mha_data(case, ctor.get("batch_first", False))
    t_out, t_w = tmod(*t_in, **kw_t)
    e_out, e_w = emod(*e_in, **kw_e)
    assert_same(e_out, t_out, rtol=1e-10, atol=1e-12)
    if t_w is None:
        assert e_w is None
    else:
        assert_same(e_w, t_w, rtol=1e-10, atol=1e-12)
    backward_both(e_out + (e_w.sum() if e_w is not None else 0), t_out + (t_w.sum() if t_w is not None else 0))
    assert_grads(e_in, t_in)
    assert_param_grads(emod, tmod)


def test_multihead_attention_functional_matches_module():
    tmod, emod = make_pair(torch.nn.MultiheadAttention, ember.nn.MultiheadAttention, E, H, add_bias_kv=True)
    tq, eq = pair((L, N, E))
    args_t = (tq, tq, tq, E, H, tmod.in_proj_weight, tmod.in_proj_bias, tmod.bias_k, tmod.bias_v, False, 0.0,
              tmod.out_proj.weight, tmod.out_proj.bias)
    args_e = (eq, eq, eq, E, H, emod.in_proj_weight, emod.in_proj_bias, emod.bias_k, emod.bias_v, False, 0.0,
              emod.out_proj.weight, emod.out_proj.bias)
    t_out, t_w = TF.multi_head_attention_forward(*args_t)
    e_out, e_w = EF.multi_head_attention_forward(*args_e)
    assert_same(e_out, t_out, rtol=1e-10, atol=1e-12)
    assert_same(e_w, t_w, rtol=1e-10, atol=1e-12)


def test_multihead_attention_state_dict_and_repr():
    for kw in (dict(), dict(kdim=3, vdim=5, add_bias_kv=True), dict(bias=False)):
        tmod = torch.nn.MultiheadAttention(E, H, **kw)
        emod = ember.nn.MultiheadAttention(E, H, **kw)
        assert {k: tuple(v.shape) for k, v in emod.state_dict().items()} == \
            {k: tuple(v.shape) for k, v in tmod.state_dict().items()}
        assert repr(emod) == repr(tmod)
    # initialisation: biases zero, projections xavier-uniform bounded
    emod = ember.nn.MultiheadAttention(E, H)
    assert emod.in_proj_bias.abs().sum().item() == 0 and emod.out_proj.bias.abs().sum().item() == 0
    assert emod.in_proj_weight.abs().max().item() <= (6 / (E + 3 * E)) ** 0.5


def test_multihead_attention_dropout():
    torch.manual_seed(0)
    emod = ember.nn.MultiheadAttention(E, H, dropout=1.0)
    x = ember.randn(L, N, E)
    out, w = emod(x, x, x)
    # every attention probability dropped: only the output projection's bias remains
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(emod.out_proj.bias.detach().numpy(),
                                                                     (L, N, E)))
    assert (w == 0).all().item()
    emod.eval()
    out, _ = emod(x, x, x)
    assert out.abs().sum().item() > 0


def test_multihead_attention_errors_match_torch():
    tmod = torch.nn.MultiheadAttention(E, H)
    emod = ember.nn.MultiheadAttention(E, H)
    tx, ex = torch.randn(L, N, E), ember.randn(L, N, E)
    bad = [
        (dict(), (tx[0, 0], tx[0, 0], tx[0, 0]), (ex[0, 0], ex[0, 0], ex[0, 0])),  # 1-D query
        (dict(attn_mask=torch.zeros(L, L + 1)), (tx, tx, tx), (ex, ex, ex)),
        (dict(attn_mask=torch.zeros(N, L, L)), (tx, tx, tx), (ex, ex, ex)),
        (dict(key_padding_mask=torch.zeros(N, L, dtype=torch.int64)), (tx, tx, tx), (ex, ex, ex)),
        (dict(is_causal=True), (tx, tx, tx), (ex, ex, ex)),
        (dict(key_padding_mask=torch.zeros(L)), (tx, tx, tx), (ex, ex, ex)),
    ]
    for kw, targs, eargs in bad:
        ekw = {k: to_ember(v) for k, v in kw.items() if isinstance(v, torch.Tensor)}
        ekw.update({k: v for k, v in kw.items() if not isinstance(v, torch.Tensor)})
        with pytest.raises(Exception) as texc:
            tmod(*targs, **kw)
        with pytest.raises(type(texc.value)):
            emod(*eargs, **ekw)
    for args in ((0, 2), (8, 3)):
        with pytest.raises(Exception) as texc:
            torch.nn.MultiheadAttention(*args)
        with pytest.raises(type(texc.value)):
            ember.nn.MultiheadAttention(*args)


# ---- Transformer layers and stacks -----------------------------------------------------------

D_MODEL, NHEAD, FF = 8, 2, 16


def _seq(batch_first, t, unbatched=False):
    if unbatched:
        return pair((t, D_MODEL))
    return pair((N, t, D_MODEL) if batch_first else (t, N, D_MODEL))


def _run_and_compare(tmod, emod, t_args, e_args, t_kw=None, e_kw=None):
    t_out = tmod(*t_args, **(t_kw or {}))
    e_out = emod(*e_args, **(e_kw or {}))
    assert_same(e_out, t_out, rtol=1e-9, atol=1e-11)
    backward_both(e_out, t_out)
    assert_grads(e_args, t_args, rtol=1e-7, atol=1e-9)
    assert_param_grads(emod, tmod, rtol=1e-7, atol=1e-9)


ENC_CASES = {
    "post_norm_relu": dict(),
    "pre_norm_gelu_batch_first": dict(ctor=dict(norm_first=True, activation="gelu", batch_first=True)),
    "no_bias": dict(ctor=dict(bias=False)),
    "masks": dict(mask=True, kpm=True),
    "causal": dict(causal=True, ctor=dict(batch_first=True)),
    "unbatched": dict(unbatched=True, mask=True),
}


def _enc_masks(case, t):
    t_kw, e_kw = {}, {}
    if case.get("mask"):
        m = RNG.random((t, t)) < 0.3
        np.fill_diagonal(m, False)
        t_kw["src_mask"], e_kw["src_mask"] = torch.tensor(m), ember.tensor(m)
    if case.get("kpm"):
        m = RNG.random((N, t)) < 0.3
        m[:, 0] = False
        t_kw["src_key_padding_mask"], e_kw["src_key_padding_mask"] = torch.tensor(m), ember.tensor(m)
    if case.get("causal"):
        m = torch.nn.Transformer.generate_square_subsequent_mask(t, dtype=torch.float64)
        t_kw["src_mask"], e_kw["src_mask"] = m, to_ember(m)
        t_kw["is_causal"] = e_kw["is_causal"] = True
    return t_kw, e_kw


@pytest.mark.parametrize("name", list(ENC_CASES))
def test_transformer_encoder_layer(name):
    case = ENC_CASES[name]
    ctor = dict(dropout=0.0, **case.get("ctor", {}))
    tmod, emod = make_pair(torch.nn.TransformerEncoderLayer, ember.nn.TransformerEncoderLayer, D_MODEL, NHEAD, FF,
                           **ctor)
    tx, ex = _seq(ctor.get("batch_first", False), L, case.get("unbatched", False))
    t_kw, e_kw = _enc_masks(case, L)
    _run_and_compare(tmod, emod, (tx,), (ex,), t_kw, e_kw)


def test_transformer_encoder_layer_callable_activation_and_repr():
    torch.manual_seed(0)
    for act_t, act_e in ((torch.nn.GELU(), ember.nn.GELU()), (torch.tanh, ember.tanh)):
        tmod = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=act_t,
                                                dtype=torch.float64)
        emod = ember.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=act_e,
                                                dtype=ember.float64)
        copy_module(tmod, emod)
        assert repr(emod) == repr(tmod)
        assert emod.activation_relu_or_gelu == tmod.activation_relu_or_gelu
        tx, ex = _seq(False, L)
        _run_and_compare(tmod, emod, (tx,), (ex,))
    with pytest.raises(RuntimeError):
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="swish")
    with pytest.raises(RuntimeError):
        ember.nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="swish")


DEC_CASES = {
    "post_norm": dict(),
    "pre_norm_batch_first_gelu": dict(ctor=dict(norm_first=True, batch_first=True, activation="gelu")),
    "masks": dict(masks=True),
    "causal_hint": dict(causal=True),
}


@pytest.mark.parametrize("name", list(DEC_CASES))
def test_transformer_decoder_layer(name):
    case = DEC_CASES[name]
    ctor = dict(dropout=0.0, **case.get("ctor", {}))
    bf = ctor.get("batch_first", False)
    tmod, emod = make_pair(torch.nn.TransformerDecoderLayer, ember.nn.TransformerDecoderLayer, D_MODEL, NHEAD, FF,
                           **ctor)
    tt, et = _seq(bf, L)
    tm, em = _seq(bf, S)
    t_kw, e_kw = {}, {}
    if case.get("masks"):
        m = RNG.random((L, S)) < 0.3
        m[:, 0] = False
        t_kw["memory_mask"], e_kw["memory_mask"] = torch.tensor(m), ember.tensor(m)
        k = RNG.random((N, S)) < 0.3
        k[:, 0] = False
        t_kw["memory_key_padding_mask"], e_kw["memory_key_padding_mask"] = torch.tensor(k), ember.tensor(k)
        k = RNG.random((N, L)) < 0.3
        k[:, 0] = False
        t_kw["tgt_key_padding_mask"], e_kw["tgt_key_padding_mask"] = torch.tensor(k), ember.tensor(k)
    if case.get("causal"):
        m = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
        t_kw["tgt_mask"], e_kw["tgt_mask"] = m, to_ember(m)
        t_kw["tgt_is_causal"] = e_kw["tgt_is_causal"] = True
    _run_and_compare(tmod, emod, (tt, tm), (et, em), t_kw, e_kw)


def _stack_pair(kind, num_layers, batch_first):
    torch.manual_seed(0)
    if kind == "encoder":
        tl = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=batch_first,
                                              dtype=torch.float64)
        el = ember.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=batch_first,
                                              dtype=ember.float64)
        tmod = torch.nn.TransformerEncoder(tl, num_layers, torch.nn.LayerNorm(D_MODEL, dtype=torch.float64),
                                           enable_nested_tensor=False)
        emod = ember.nn.TransformerEncoder(el, num_layers, ember.nn.LayerNorm(D_MODEL, dtype=ember.float64),
                                           enable_nested_tensor=False)
    else:
        tl = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=batch_first,
                                              dtype=torch.float64)
        el = ember.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=batch_first,
                                              dtype=ember.float64)
        tmod = torch.nn.TransformerDecoder(tl, num_layers, torch.nn.LayerNorm(D_MODEL, dtype=torch.float64))
        emod = ember.nn.TransformerDecoder(el, num_layers, ember.nn.LayerNorm(D_MODEL, dtype=ember.float64))
    copy_module(tmod, emod)
    assert repr(emod) == repr(tmod)
    return tmod, emod


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("causal", [None, True, False])
def test_transformer_encoder_stack(batch_first, causal):
    tmod, emod = _stack_pair("encoder", 2, batch_first)
    tx, ex = _seq(batch_first, L)
    m = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    k = RNG.random((N, L)) < 0.3
    k[:, 0] = False
    t_kw = dict(mask=m, src_key_padding_mask=torch.tensor(k), is_causal=causal)
    e_kw = dict(mask=to_ember(m), src_key_padding_mask=ember.tensor(k), is_causal=causal)
    _run_and_compare(tmod, emod, (tx,), (ex,), t_kw, e_kw)


def test_transformer_encoder_detects_causal_mask():
    from torch.nn.modules.transformer import _detect_is_causal_mask as t_detect

    from ember.nn.modules.transformer import _detect_is_causal_mask
    for m in (torch.nn.Transformer.generate_square_subsequent_mask(4), torch.zeros(4, 4), torch.zeros(3, 3)):
        for flag in (None, True, False):
            assert _detect_is_causal_mask(to_ember(m), flag, 4) == t_detect(m, flag, 4)


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_decoder_stack(batch_first):
    tmod, emod = _stack_pair("decoder", 2, batch_first)
    tt, et = _seq(batch_first, L)
    tm, em = _seq(batch_first, S)
    m = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    _run_and_compare(tmod, emod, (tt, tm), (et, em), dict(tgt_mask=m), dict(tgt_mask=to_ember(m)))


@pytest.mark.parametrize("ctor", [dict(), dict(batch_first=True, norm_first=True, activation="gelu")])
def test_transformer(ctor):
    kw = dict(d_model=D_MODEL, nhead=NHEAD, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=FF,
              dropout=0.0, **ctor)
    tmod, emod = make_pair(torch.nn.Transformer, ember.nn.Transformer, **kw)
    assert repr(emod) == repr(tmod)
    bf = ctor.get("batch_first", False)
    ts, es = _seq(bf, S)
    tt, et = _seq(bf, L)
    m = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    _run_and_compare(tmod, emod, (ts, tt), (es, et), dict(tgt_mask=m), dict(tgt_mask=to_ember(m)))


def test_transformer_unbatched_and_custom_parts():
    torch.manual_seed(0)
    t_enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, 0.0,
                                                                         dtype=torch.float64), 1,
                                        enable_nested_tensor=False)
    e_enc = ember.nn.TransformerEncoder(ember.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, 0.0,
                                                                         dtype=ember.float64), 1)
    tmod = torch.nn.Transformer(D_MODEL, NHEAD, num_decoder_layers=1, dim_feedforward=FF, dropout=0.0,
                                custom_encoder=t_enc, dtype=torch.float64)
    emod = ember.nn.Transformer(D_MODEL, NHEAD, num_decoder_layers=1, dim_feedforward=FF, dropout=0.0,
                                custom_encoder=e_enc, dtype=ember.float64)
    copy_module(tmod, emod)
    ts, es = _seq(False, S, unbatched=True)
    tt, et = _seq(False, L, unbatched=True)
    _run_and_compare(tmod, emod, (ts, tt), (es, et))


def test_transformer_errors_and_square_mask():
    for sz, dtype in ((3, None), (5, "float64")):
        tm = torch.nn.Transformer.generate_square_subsequent_mask(sz, dtype=getattr(torch, dtype or "float32"))
        em = ember.nn.Transformer.generate_square_subsequent_mask(sz, dtype=getattr(ember, dtype) if dtype else None)
        assert_same(em, tm)
    tmod = torch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    emod = ember.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    for src, tgt in (((S, N, D_MODEL), (L, N + 1, D_MODEL)), ((S, N, D_MODEL), (L, N, D_MODEL + 1))):
        with pytest.raises(RuntimeError):
            tmod(torch.randn(src), torch.randn(tgt))
        with pytest.raises(RuntimeError):
            emod(ember.randn(src), ember.randn(tgt))


def test_transformer_encoder_layer_dropout_in_training():
    layer = ember.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.5)
    x = ember.randn(L, N, D_MODEL)
    a, b = layer(x), layer(x)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())  # fresh masks each call
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())
    # dropout 1.0 in the feed-forward and attention blocks: only the residual path remains
    layer = ember.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=1.0)
    ref = ember.nn.functional.layer_norm(ember.nn.functional.layer_norm(x, (D_MODEL,), layer.norm1.weight,
                                                                        layer.norm1.bias), (D_MODEL,),
                                         layer.norm2.weight, layer.norm2.bias)
    np.testing.assert_allclose(layer(x).detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
