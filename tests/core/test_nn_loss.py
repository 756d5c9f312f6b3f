"""Every loss of nn (functional forms and modules) compared with torch on the same inputs:
values and dtypes in each reduction, gradients with respect to inputs (and targets where
torch differentiates them), module reprs and state_dicts, torch's errors."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from conftest import assert_same, to_ember

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck

REDUCTIONS = ["none", "mean", "sum"]
G = torch.Generator().manual_seed(0)


def rnd(*shape, dtype=torch.float64, grad=True, low=None, high=None):
    if low is not None:
        t = torch.rand(*shape, generator=G, dtype=dtype) * (high - low) + low
    else:
        t = torch.randn(*shape, generator=G, dtype=dtype)
    return t.requires_grad_(grad)


def signs(*shape):
    return torch.randint(0, 2, shape, generator=G).to(torch.float64) * 2 - 1


def ints(high, *shape, low=0):
    return torch.randint(low, high, shape, generator=G)


def check(name, args, kwargs=None, rtol=None, atol=None):
    """F.<name>(*args, **kwargs) in ember and torch: value, dtype, and the gradients of every
    float argument that requires grad (a weighted sum makes each output element count)."""
    kwargs = kwargs or {}
    targs = [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
             for a in args]
    eargs = [to_ember(a) if isinstance(a, torch.Tensor) else a for a in targs]
    ekw = {k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_out = getattr(TF, name)(*targs, **kwargs)
        e_out = getattr(F, name)(*eargs, **ekw)
    assert_same(e_out, t_out, rtol, atol)
    leaves = [i for i, a in enumerate(targs) if isinstance(a, torch.Tensor) and a.requires_grad]
    if not leaves:
        return
    w = torch.rand(t_out.shape, generator=G, dtype=t_out.dtype) + 0.5
    tg = torch.autograd.grad((t_out * w).sum(), [targs[i] for i in leaves])
    eg = ember.autograd.grad((e_out * to_ember(w)).sum(), [eargs[i] for i in leaves])
    for a, b in zip(eg, tg):
        assert_same(a, b, rtol, atol)


# ---- elementwise and per-sample losses ----------------------------------------------

CASES = {
    "mse_loss": lambda: ([rnd(3, 4), rnd(3, 4)], {}),
    "mse_loss-weight": lambda: ([rnd(3, 4), rnd(3, 4)], {"weight": rnd(3, 4, grad=False, low=0.1, high=2)}),
    "mse_loss-broadcast": lambda: ([rnd(3, 4), rnd(4)], {}),
    "l1_loss": lambda: ([rnd(3, 4), rnd(3, 4)], {}),
    "l1_loss-weight": lambda: ([rnd(3, 4), rnd(3, 4)], {"weight": rnd(3, 4, grad=False, low=0.1, high=2)}),
    "kl_div": lambda: ([rnd(4, 5).log_softmax(1).detach().requires_grad_(),
                        rnd(4, 5, low=0.0, high=1.0)], {}),
    "kl_div-zero-target": lambda: ([rnd(4, 5), rnd(4, 5, grad=False, low=0, high=1).clamp(min=0.4) - 0.4], {}),
    "kl_div-log_target": lambda: ([rnd(4, 5), rnd(4, 5)], {"log_target": True}),
    "huber_loss": lambda: ([rnd(5, 6) * 2, rnd(5, 6)], {}),
    "huber_loss-delta": lambda: ([rnd(5, 6) * 2, rnd(5, 6)], {"delta": 0.4}),
    "huber_loss-weight": lambda: ([rnd(5, 6) * 2, rnd(5, 6)], {"delta": 2.0, "weight": rnd(5, 6, grad=False)}),
    "huber_loss-broadcast": lambda: ([rnd(5, 6) * 2, rnd(6)], {}),
    "smooth_l1_loss": lambda: ([rnd(5, 6) * 2, rnd(5, 6)], {}),
    "smooth_l1_loss-beta": lambda: ([rnd(5, 6) * 2, rnd(5, 6)], {"beta": 0.3}),
    "smooth_l1_loss-beta0": lambda: ([rnd(5, 6) * 2, rnd(5, 6)], {"beta": 0.0}),
    "soft_margin_loss": lambda: ([rnd(4, 3) * 3, signs(4, 3)], {}),
    "multilabel_soft_margin_loss": lambda: ([rnd(4, 5), ints(2, 4, 5).double()], {}),
    "multilabel_soft_margin_loss-weight": lambda: ([rnd(4, 5), ints(2, 4, 5).double()],
                                                   {"weight": rnd(5, grad=False, low=0.1, high=2)}),
    "multi_margin_loss": lambda: ([rnd(6, 5), ints(5, 6)], {}),
    "multi_margin_loss-p2": lambda: ([rnd(6, 5), ints(5, 6)], {"p": 2, "margin": 0.7}),
    "multi_margin_loss-weight": lambda: ([rnd(6, 5), ints(5, 6)], {"weight": rnd(5, grad=False, low=0.1, high=2)}),
    "multi_margin_loss-1d": lambda: ([rnd(5), ints(5, 1)[0]], {"margin": 2.0}),
    "multilabel_margin_loss": lambda: ([rnd(3, 5), torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0],
                                                                  [-1, 2, 1, 0, 0]])], {}),
    "multilabel_margin_loss-1d": lambda: ([rnd(4), torch.tensor([2, 2, -1, 0])], {}),
    "margin_ranking_loss": lambda: ([rnd(7), rnd(7), signs(7)], {"margin": 0.3}),
    "margin_ranking_loss-2d": lambda: ([rnd(3, 4), rnd(3, 4), signs(3, 4)], {}),
    "hinge_embedding_loss": lambda: ([rnd(4, 5), signs(4, 5)], {}),
    "hinge_embedding_loss-margin": lambda: ([rnd(4, 5), signs(4, 5)], {"margin": 0.2}),
    "cosine_embedding_loss": lambda: ([rnd(5, 4), rnd(5, 4), signs(5)], {"margin": -0.2}),
    "cosine_embedding_loss-1d": lambda: ([rnd(4), rnd(4), signs(1)[0]], {"margin": 0.1}),
    "triplet_margin_loss": lambda: ([rnd(5, 4), rnd(5, 4), rnd(5, 4)], {}),
    "triplet_margin_loss-p1-swap": lambda: ([rnd(5, 4), rnd(5, 4), rnd(5, 4)],
                                            {"p": 1, "eps": 1e-3, "swap": True, "margin": 2.0}),
    "triplet_margin_loss-p3-1d": lambda: ([rnd(4), rnd(4), rnd(4)], {"p": 3, "margin": 3.0}),
    "triplet_margin_with_distance_loss": lambda: ([rnd(5, 4), rnd(5, 4), rnd(5, 4)], {"margin": 1.5}),
    "poisson_nll_loss": lambda: ([rnd(4, 5), rnd(4, 5, low=0, high=4)], {}),
    "poisson_nll_loss-rate": lambda: ([rnd(4, 5, low=0.1, high=3), rnd(4, 5, low=0, high=4)],
                                      {"log_input": False, "eps": 1e-4}),
    "poisson_nll_loss-full": lambda: ([rnd(4, 5), rnd(4, 5, low=0.2, high=4)], {"full": True}),
    "gaussian_nll_loss": lambda: ([rnd(4, 3), rnd(4, 3), rnd(4, 3, low=0.1, high=2)], {}),
    "gaussian_nll_loss-full-eps": lambda: ([rnd(4, 3), rnd(4, 3), rnd(4, 3, low=0.0, high=0.5)],
                                           {"full": True, "eps": 0.2}),
    "gaussian_nll_loss-var-short": lambda: ([rnd(4, 3), rnd(4, 3), rnd(4, low=0.1, high=2)], {}),
    "gaussian_nll_loss-var-one-dim": lambda: ([rnd(2, 3, 4), rnd(2, 3, 4), rnd(2, 1, 4, low=0.1, high=2)], {}),
    "gaussian_nll_loss-var-float": lambda: ([rnd(4, 3), rnd(4, 3), 0.7], {}),
    "binary_cross_entropy": lambda: ([rnd(4, 3, low=0.05, high=0.95), rnd(4, 3, low=0, high=1)], {}),
    "binary_cross_entropy-weight": lambda: ([rnd(4, 3, low=0.05, high=0.95), rnd(4, 3, low=0, high=1)],
                                            {"weight": rnd(3, grad=False, low=0.1, high=2)}),
    "binary_cross_entropy_with_logits": lambda: ([rnd(4, 3), rnd(4, 3, low=0, high=1)], {}),
    "binary_cross_entropy_with_logits-weights": lambda: (
        [rnd(2, 4, 3), rnd(2, 4, 3, low=0, high=1)],
        {"weight": rnd(4, 1, grad=False, low=0.1, high=2), "pos_weight": rnd(3, grad=False, low=0.1, high=3)}),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_matches_torch(case, reduction):
    args, kwargs = CASES[case]()
    check(case.split("-")[0], args, {**kwargs, "reduction": reduction})


@pytest.mark.parametrize("case", sorted(CASES))
def test_loss_float32(case):
    args, kwargs = CASES[case]()
    args = [a.detach().float().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) and
            a.is_floating_point() else a for a in args]
    kwargs = {k: v.float() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    check(case.split("-")[0], args, {**kwargs, "reduction": "sum"}, rtol=1e-4, atol=1e-5)


def test_kl_div_batchmean_and_mean_warning():
    check("kl_div", [rnd(4, 5), rnd(4, 5, low=0, high=1)], {"reduction": "batchmean"})
    check("kl_div", [rnd(4, 5), rnd(4, 5)], {"reduction": "batchmean", "log_target": True})
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(ember.randn(3), ember.rand(3))
    with pytest.raises(ValueError, match="not a valid value"):
        F.kl_div(ember.randn(3), ember.rand(3), reduction="batchsum")


@pytest.mark.parametrize("legacy", [dict(size_average=False), dict(reduce=False), dict(size_average=True)])
@pytest.mark.parametrize("name", ["smooth_l1_loss", "soft_margin_loss", "hinge_embedding_loss", "kl_div"])
def test_legacy_reduction_flags(name, legacy):
    target = signs(3, 4) if name != "kl_div" else rnd(3, 4, low=0, high=1)
    check(name, [rnd(3, 4), target], legacy)


def test_triplet_margin_with_distance_function_and_swap():
    def cos_dist(x, y, lib):
        return 1.0 - lib.nn.functional.cosine_similarity(x, y)
    a, p, n = rnd(5, 4), rnd(5, 4), rnd(5, 4)
    ta, tp, tn = (x.detach().clone().requires_grad_() for x in (a, p, n))
    ea, ep, en = (to_ember(x) for x in (ta, tp, tn))
    for swap in (False, True):
        t = TF.triplet_margin_with_distance_loss(ta, tp, tn, distance_function=lambda x, y: cos_dist(x, y, torch),
                                                 margin=0.5, swap=swap, reduction="sum")
        e = F.triplet_margin_with_distance_loss(ea, ep, en, distance_function=lambda x, y: cos_dist(x, y, ember),
                                                margin=0.5, swap=swap, reduction="sum")
        assert_same(e, t)
        for a_, b_ in zip(ember.autograd.grad(e, [ea, ep, en]), torch.autograd.grad(t, [ta, tp, tn])):
            assert_same(a_, b_)


@pytest.mark.parametrize("kw", [{}, {"p": 1.0}, {"p": 3.0, "eps": 0.0, "keepdim": True}])
def test_pairwise_distance(kw):
    check("pairwise_distance", [rnd(4, 5), rnd(4, 5)], kw)
    check("pairwise_distance", [rnd(4, 5), rnd(5)], kw)


@pytest.mark.parametrize("shapes,dim", [(((4, 5), (4, 5)), 1), (((2, 3, 4), (3, 4)), -1), (((6,), (6,)), 0)])
def test_cosine_similarity(shapes, dim):
    check("cosine_similarity", [rnd(*shapes[0]), rnd(*shapes[1])], {"dim": dim})
    small = rnd(3, 4) * 1e-9      # norms below eps: clamped values, gradient as if unclamped
    check("cosine_similarity", [small, rnd(3, 4)], {"eps": 1e-6})


# ---- class-index losses --------------------------------------------------------------

CE_CASES = {
    "plain": lambda: ([rnd(5, 4), ints(4, 5)], {}),
    "kdim": lambda: ([rnd(3, 4, 2, 3), ints(4, 3, 2, 3)], {}),
    "weight-ignore": lambda: ([rnd(6, 4), torch.tensor([0, 3, 1, 1, 2, 3])],
                              {"weight": rnd(4, grad=False, low=0.1, high=2), "ignore_index": 1}),
    "kdim-weight-ignore-smooth": lambda: ([rnd(2, 4, 3), torch.tensor([[0, -100, 2], [3, 1, -100]])],
                                          {"weight": rnd(4, grad=False, low=0.1, high=2), "label_smoothing": 0.2}),
    "smooth": lambda: ([rnd(5, 4), ints(4, 5)], {"label_smoothing": 0.3}),
    "unbatched": lambda: ([rnd(4), torch.tensor(2)], {"label_smoothing": 0.1}),
    "probs": lambda: ([rnd(5, 4), rnd(5, 4).softmax(1).detach()], {}),
    "probs-kdim-weight-smooth": lambda: ([rnd(2, 4, 3), rnd(2, 4, 3).softmax(1).detach()],
                                         {"weight": rnd(4, grad=False, low=0.1, high=2), "label_smoothing": 0.25}),
}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", sorted(CE_CASES))
def test_cross_entropy(case, reduction):
    args, kwargs = CE_CASES[case]()
    check("cross_entropy", args, {**kwargs, "reduction": reduction})


def test_cross_entropy_probability_target_gradient():
    check("cross_entropy", [rnd(5, 4), rnd(5, 4).softmax(1).detach().requires_grad_()], {"label_smoothing": 0.1})


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["plain", "kdim", "weight-ignore", "unbatched"])
def test_nll_loss(case, reduction):
    args, kwargs = CE_CASES[case]()
    kwargs.pop("label_smoothing", None)
    args[0] = args[0].log_softmax(0 if args[0].ndim == 1 else 1).detach().requires_grad_()
    check("nll_loss", args, {**kwargs, "reduction": reduction})


# ---- errors ------------------------------------------------------------------------

ALL_LOSS_CALLS = {
    "kl_div": lambda L: (L.randn(3), L.rand(3)),
    "huber_loss": lambda L: (L.randn(3), L.randn(3)),
    "smooth_l1_loss": lambda L: (L.randn(3), L.randn(3)),
    "soft_margin_loss": lambda L: (L.randn(3), L.ones(3)),
    "multilabel_soft_margin_loss": lambda L: (L.randn(2, 3), L.ones(2, 3)),
    "multi_margin_loss": lambda L: (L.randn(2, 3), L.tensor([0, 2])),
    "multilabel_margin_loss": lambda L: (L.randn(2, 3), L.tensor([[0, -1, 0], [1, 2, -1]])),
    "margin_ranking_loss": lambda L: (L.randn(3), L.randn(3), L.ones(3)),
    "hinge_embedding_loss": lambda L: (L.randn(3), L.ones(3)),
    "cosine_embedding_loss": lambda L: (L.randn(2, 3), L.randn(2, 3), L.ones(2)),
    "triplet_margin_loss": lambda L: (L.randn(2, 3), L.randn(2, 3), L.randn(2, 3)),
    "triplet_margin_with_distance_loss": lambda L: (L.randn(2, 3), L.randn(2, 3), L.randn(2, 3)),
    "poisson_nll_loss": lambda L: (L.randn(3), L.rand(3)),
    "gaussian_nll_loss": lambda L: (L.randn(3), L.randn(3), L.ones(3)),
    "mse_loss": lambda L: (L.randn(3), L.randn(3)),
    "l1_loss": lambda L: (L.randn(3), L.randn(3)),
    "binary_cross_entropy": lambda L: (L.rand(3), L.rand(3)),
    "binary_cross_entropy_with_logits": lambda L: (L.randn(3), L.rand(3)),
    "cross_entropy": lambda L: (L.randn(2, 3), L.tensor([0, 1])),
    "nll_loss": lambda L: (L.randn(2, 3), L.tensor([0, 1])),
}


@pytest.mark.parametrize("name", sorted(ALL_LOSS_CALLS))
def test_bad_reduction_raises_value_error(name):
    with pytest.raises(ValueError) as t_err:
        getattr(TF, name)(*ALL_LOSS_CALLS[name](torch), reduction="avg")
    with pytest.raises(ValueError) as e_err:
        getattr(F, name)(*ALL_LOSS_CALLS[name](ember), reduction="avg")
    assert str(e_err.value) == str(t_err.value)


def _both_raise(exc, fn):
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        fn(ember)


@pytest.mark.parametrize("call,exc", [
    (lambda L: L.nn.functional.gaussian_nll_loss(L.randn(3), L.randn(3), -1.0), ValueError),
    (lambda L: L.nn.functional.gaussian_nll_loss(L.randn(3), L.randn(3), L.tensor([1.0, -1.0, 1.0])), ValueError),
    (lambda L: L.nn.functional.gaussian_nll_loss(L.randn(4, 3), L.randn(4, 3), L.ones(3, 3)), ValueError),
    (lambda L: L.nn.functional.gaussian_nll_loss(L.randn(2, 3, 4), L.randn(2, 3, 4), L.ones(2, 1, 1)), ValueError),
    (lambda L: L.nn.functional.huber_loss(L.randn(3), L.randn(3), delta=0.0), RuntimeError),
    (lambda L: L.nn.functional.smooth_l1_loss(L.randn(3), L.randn(3), beta=-1.0), RuntimeError),
    (lambda L: L.nn.functional.mse_loss(L.randn(3), L.randn(3), weight=L.ones(2)), ValueError),
    (lambda L: L.nn.functional.multi_margin_loss(L.randn(2, 3), L.tensor([0, 1]), p=3), ValueError),
    (lambda L: L.nn.functional.multi_margin_loss(L.randn(2, 3), L.tensor([0, 1]), weight=L.ones(3, 1)), ValueError),
    (lambda L: L.nn.functional.multi_margin_loss(L.randn(2, 3), L.tensor([0, 3])), RuntimeError),
    (lambda L: L.nn.functional.multi_margin_loss(L.randn(2, 3), L.tensor([0, 1, 2])), RuntimeError),
    (lambda L: L.nn.functional.multilabel_margin_loss(L.randn(2, 3), L.tensor([0, 1])), RuntimeError),
    (lambda L: L.nn.functional.margin_ranking_loss(L.randn(3), L.randn(3), L.ones(1, 3)), RuntimeError),
    (lambda L: L.nn.functional.cosine_embedding_loss(L.randn(2, 3), L.randn(2, 3), L.ones(2, 1)), RuntimeError),
    (lambda L: L.nn.functional.cosine_embedding_loss(L.randn(3), L.randn(3), L.ones(1)), RuntimeError),
    (lambda L: L.nn.functional.triplet_margin_loss(L.randn(2, 3), L.randn(2, 3), L.randn(3)), RuntimeError),
    (lambda L: L.nn.functional.triplet_margin_loss(L.randn(3), L.randn(3), L.randn(3), margin=0.0), ValueError),
    (lambda L: L.nn.functional.triplet_margin_with_distance_loss(L.randn(3), L.randn(3), L.randn(3), margin=-1),
     ValueError),
    (lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.randn(2, 3), L.rand(3)), ValueError),
    (lambda L: L.nn.functional.binary_cross_entropy(L.rand(2, 3), L.rand(3)), ValueError),
    (lambda L: L.nn.functional.cross_entropy(L.randn(2, 3), L.tensor([0, 3])), IndexError),
    (lambda L: L.nn.functional.nll_loss(L.randn(2, 3, 4), L.tensor([0, 1])), RuntimeError),
    (lambda L: L.nn.functional.cross_entropy(L.randn(2, 3), L.tensor([0, 1]), label_smoothing=1.5), RuntimeError),
    (lambda L: L.nn.functional.cross_entropy(L.randn(2, 3), L.tensor([0, 1]), weight=L.ones(2)), RuntimeError),
])
def test_errors_match_torch(call, exc):
    _both_raise(exc, call)


# ---- CTC ---------------------------------------------------------------------------

def _ctc_case(T=10, N=4, C=6, S=5, blank=0, dtype=torch.float64, repeat=True):
    lp = rnd(T, N, C, dtype=dtype, grad=False).log_softmax(2).requires_grad_()
    labels = [c for c in range(C) if c != blank]
    tg = torch.tensor(labels)[ints(len(labels), N, S)]
    if repeat:
        tg[0, 1] = tg[0, 0]                      # a repeated label needs a blank between
    il = torch.tensor([T, T - 2, T, max(T - 4, 1)][:N])
    tl = torch.tensor([S, min(3, S), 0, min(2, S)][:N])
    return lp, tg, il, tl


def _ctc_check(lp, targets, il, tl, logits=False, rtol=None, atol=None, **kw):
    """F.ctc_loss in both; the gradient is taken w.r.t. log_probs, or w.r.t. logits
    through log_softmax when ``logits``."""
    tx = lp.detach().clone().requires_grad_()
    ex = to_ember(tx)
    tin, ein = (tx.log_softmax(-1), ex.log_softmax(-1)) if logits else (tx, ex)

    def conv(v):
        return to_ember(v) if isinstance(v, torch.Tensor) else v
    t = TF.ctc_loss(tin, targets, il, tl, **kw)
    e = F.ctc_loss(ein, conv(targets), conv(il), conv(tl), **kw)
    assert_same(e, t, rtol, atol)
    w = torch.rand(t.shape, generator=G, dtype=t.dtype) + 0.5
    (t * w).sum().backward()
    (e * to_ember(w)).sum().backward()
    assert_same(ex.grad, tx.grad, rtol, atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("logits", [False, True])
def test_ctc_padded_targets(reduction, logits):
    lp, tg, il, tl = _ctc_case()
    _ctc_check(lp, tg, il, tl, logits=logits, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_concatenated_targets_and_tuple_lengths(reduction):
    lp, tg, il, tl = _ctc_case(blank=2)
    flat = torch.cat([tg[i, :tl[i]] for i in range(len(tl))])
    _ctc_check(lp, flat, il, tl, blank=2, reduction=reduction)
    _ctc_check(lp, flat, tuple(il.tolist()), tuple(tl.tolist()), blank=2, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_unbatched(reduction):
    lp, tg, il, tl = _ctc_case(N=1)
    _ctc_check(lp[:, 0].detach(), tg[0], il[0], tl[0], reduction=reduction)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_impossible_alignment(zero_infinity):
    lp, tg, il, tl = _ctc_case(T=6, S=5)
    tg[0] = torch.tensor([1, 1, 1, 2, 3])        # needs 7 frames, 6 given: infinite loss
    if zero_infinity:
        _ctc_check(lp, tg, il, tl, zero_infinity=True, reduction="none")
        _ctc_check(lp, tg, il, tl, zero_infinity=True, reduction="mean")
    else:
        e = F.ctc_loss(to_ember(lp.detach()), to_ember(tg), to_ember(il), to_ember(tl), reduction="none")
        assert_same(e, TF.ctc_loss(lp.detach(), tg, il, tl, reduction="none"))


def test_ctc_float32_int32():
    lp, tg, il, tl = _ctc_case(T=30, N=3, C=8, S=6, dtype=torch.float32)
    _ctc_check(lp, tg.int(), il.int(), tl.int(), rtol=1e-4, atol=1e-5)


def test_ctc_gradcheck_through_log_softmax():
    lp, tg, il, tl = _ctc_case(T=5, N=2, C=4, S=2)
    x = to_ember(lp.detach(), requires_grad=True)
    args = (to_ember(tg), to_ember(il), to_ember(tl))
    assert gradcheck(lambda v: F.ctc_loss(v.log_softmax(2), *args, reduction="sum"), (x,))


@pytest.mark.parametrize("call", [
    lambda L: L.nn.functional.ctc_loss(L.randn(5, 2, 4).log_softmax(2), L.tensor([[1, 2], [1, 1]]),
                                       L.tensor([5, 6]), L.tensor([2, 2])),
    lambda L: L.nn.functional.ctc_loss(L.randn(5, 2, 4).log_softmax(2), L.tensor([[1, 2], [1, 1]]),
                                       L.tensor([5, 5]), L.tensor([2, 2]), blank=4),
    lambda L: L.nn.functional.ctc_loss(L.randn(5, 2, 4).log_softmax(2), L.tensor([[1, 2], [1, 1]]),
                                       L.tensor([5, 5, 5]), L.tensor([2, 2])),
    lambda L: L.nn.functional.ctc_loss(L.randn(5, 2, 4).log_softmax(2), L.tensor([[1, 2], [1, 1]]),
                                       L.tensor([5, 5]), L.tensor([2, 3])),
])
def test_ctc_errors(call):
    _both_raise(RuntimeError, call)


def test_ctc_bad_reduction():
    def call(L):
        return L.nn.functional.ctc_loss(L.randn(5, 1, 3).log_softmax(2), L.tensor([[1]]), L.tensor([5]),
                                        L.tensor([1]), reduction="avg")
    _both_raise(ValueError, call)


def test_gradcheck_composed_losses():
    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    y = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([[1, 3, -1, 0], [0, -1, 2, 2], [2, 1, 0, 3]])
    assert gradcheck(lambda a, b: F.huber_loss(a * 2, b, delta=0.7), (x, y))
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, t, reduction="sum"), (x,))
    assert gradcheck(lambda a, b: F.triplet_margin_loss(a, b, b.flip(0), swap=True), (x, y))


# ---- modules -----------------------------------------------------------------------

def _modules():
    w4 = rnd(4, grad=False, low=0.1, high=2)
    return [
        ("CrossEntropyLoss", dict(weight=w4, ignore_index=2, label_smoothing=0.1), lambda: [rnd(5, 4), ints(4, 5)]),
        ("NLLLoss", dict(weight=w4, reduction="sum"), lambda: [rnd(5, 4), ints(4, 5)]),
        ("NLLLoss2d", dict(), lambda: [rnd(2, 4, 3, 3), ints(4, 2, 3, 3)]),
        ("MSELoss", dict(reduction="none"), lambda: [rnd(3, 2), rnd(3, 2)]),
        ("L1Loss", dict(), lambda: [rnd(3, 2), rnd(3, 2)]),
        ("BCELoss", dict(weight=w4), lambda: [rnd(3, 4, low=0.1, high=0.9), rnd(3, 4, low=0, high=1)]),
        ("BCEWithLogitsLoss", dict(weight=w4, pos_weight=w4 + 1), lambda: [rnd(3, 4), rnd(3, 4, low=0, high=1)]),
        ("KLDivLoss", dict(reduction="batchmean", log_target=True), lambda: [rnd(3, 4), rnd(3, 4)]),
        ("HuberLoss", dict(delta=0.5), lambda: [rnd(3, 4), rnd(3, 4)]),
        ("SmoothL1Loss", dict(beta=0.5, reduction="sum"), lambda: [rnd(3, 4), rnd(3, 4)]),
        ("SoftMarginLoss", dict(), lambda: [rnd(3, 4), signs(3, 4)]),
        ("MultiLabelSoftMarginLoss", dict(weight=w4), lambda: [rnd(3, 4), ints(2, 3, 4).double()]),
        ("MultiMarginLoss", dict(p=2, margin=0.5, weight=w4), lambda: [rnd(3, 4), ints(4, 3)]),
        ("MultiLabelMarginLoss", dict(), lambda: [rnd(2, 4), torch.tensor([[3, 1, -1, 0], [0, 1, 2, 3]])]),
        ("MarginRankingLoss", dict(margin=0.2), lambda: [rnd(5), rnd(5), signs(5)]),
        ("HingeEmbeddingLoss", dict(margin=0.5), lambda: [rnd(5), signs(5)]),
        ("CosineEmbeddingLoss", dict(margin=0.1), lambda: [rnd(5, 3), rnd(5, 3), signs(5)]),
        ("TripletMarginLoss", dict(margin=0.5, p=1.0, swap=True), lambda: [rnd(5, 3), rnd(5, 3), rnd(5, 3)]),
        ("TripletMarginWithDistanceLoss", dict(margin=2.0), lambda: [rnd(5, 3), rnd(5, 3), rnd(5, 3)]),
        ("PoissonNLLLoss", dict(full=True), lambda: [rnd(3, 4), rnd(3, 4, low=0, high=3)]),
        ("GaussianNLLLoss", dict(full=True, eps=1e-3), lambda: [rnd(3, 4), rnd(3, 4), rnd(3, 1, low=0.1, high=1)]),
        ("CTCLoss", dict(blank=1, zero_infinity=True), lambda: [rnd(6, 2, 4).log_softmax(2).detach().requires_grad_(),
                                                                torch.tensor([[2, 3], [0, 0]]), torch.tensor([6, 5]),
                                                                torch.tensor([2, 1])]),
    ]


@pytest.mark.parametrize("name,kw,make", _modules(), ids=[m[0] for m in _modules()])
def test_loss_modules(name, kw, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = getattr(tnn, name)(**kw)
        em = getattr(nn, name)(**{k: to_ember(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
    assert repr(em) == repr(tm)
    assert em.reduction == tm.reduction
    te, ee = tm.state_dict(), em.state_dict()
    assert list(ee) == list(te)
    for k in te:
        assert_same(ee[k], te[k])
    args = make()
    targs = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    eargs = [to_ember(a) for a in targs]
    t, e = tm(*targs), em(*eargs)
    assert_same(e, t)
    t.sum().backward()
    e.sum().backward()
    for a, b in zip(eargs, targs):
        if b.requires_grad:
            assert_same(a.grad, b.grad)


@pytest.mark.parametrize("make", [
    lambda L: L.nn.MultiMarginLoss(p=3),
    lambda L: L.nn.MultiMarginLoss(weight=L.ones(2, 2)),
    lambda L: L.nn.TripletMarginLoss(margin=0),
    lambda L: L.nn.TripletMarginWithDistanceLoss(margin=-1.0),
])
def test_module_constructor_errors(make):
    _both_raise(ValueError, make)


def test_huber_module_delta_type():
    _both_raise(TypeError, lambda L: L.nn.HuberLoss(delta="1"))


@pytest.mark.parametrize("legacy", [dict(size_average=False), dict(reduce=False), dict(size_average=True)])
def test_legacy_flags_warn_and_set_reduction(legacy):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as t_rec:
        t = tnn.SmoothL1Loss(**legacy)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated") as e_rec:
        e = nn.SmoothL1Loss(**legacy)
    assert e.reduction == t.reduction
    assert str(e_rec[0].message) == str(t_rec[0].message)


def test_every_torch_loss_module_exists():
    outside = ("LinearCrossEntropyLoss", "AdaptiveLogSoftmaxWithLoss")     # layers with parameters
    names = [n for n in dir(tnn) if n.endswith("Loss") and n not in outside]
    missing = [n for n in names if not hasattr(nn, n)]
    assert not missing
    assert np.all([hasattr(F, n) for n in ("ctc_loss", "pairwise_distance", "cosine_similarity")])


def test_cosine_similarity_of_integers_raises_and_of_mixed_dtypes_computes_as_torch():
    with pytest.raises(RuntimeError) as theirs:
        torch.nn.functional.cosine_similarity(torch.tensor([[1, 2]]), torch.tensor([[3, 4]]))
    with pytest.raises(RuntimeError, match=theirs.value.args[0]):
        ember.nn.functional.cosine_similarity(ember.tensor([[1, 2]]), ember.tensor([[3, 4]]))
    want = torch.nn.functional.cosine_similarity(torch.tensor([[1, 2]]), torch.tensor([[3.0, 4.5]]))
    got = ember.nn.functional.cosine_similarity(ember.tensor([[1, 2]]), ember.tensor([[3.0, 4.5]]))
    assert got.dtype is ember.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("fn,smoothing", [("cross_entropy", 0.0), ("cross_entropy", 0.2), ("nll_loss", None)])
def test_an_ignored_target_adds_nothing_whatever_its_row_holds(fn, smoothing, reduction):
    # padding rows may hold NaN or inf logits: torch's kernels skip them
    z = torch.tensor([[0.5, 0.2, 1.0], [float("nan"), 2.0, 0.1], [float("inf"), 0.0, 1.0], [0.3, -1.0, 0.0]])
    t = torch.tensor([0, -1, -1, 2])
    kwargs = dict(ignore_index=-1, reduction=reduction)
    if smoothing is not None:
        kwargs["label_smoothing"] = smoothing
    want = getattr(TF, fn)(z, t, **kwargs)
    got = getattr(F, fn)(to_ember(z), to_ember(t), **kwargs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
