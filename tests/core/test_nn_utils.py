"""ember.nn.utils (clipping, parameter vectors, parametrizations, pruning) against torch.nn.utils."""

import math

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch does not import it with torch.nn.utils)
from conftest import assert_same, to_ember, to_torch

import ember


def _params_with_grads(dtype="float32", scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    e, t = [], []
    for i, s in enumerate(shapes):
        w = rng.standard_normal(s)
        g = rng.standard_normal(s) * scale
        ep = ember.nn.Parameter(ember.tensor(w).to(getattr(ember, dtype)))
        tp = torch.nn.Parameter(torch.tensor(w).to(getattr(torch, dtype)))
        if i != 1:  # one parameter without a gradient
            ep.grad = ember.tensor(g).to(getattr(ember, dtype))
            tp.grad = torch.tensor(g).to(getattr(torch, dtype))
        e.append(ep)
        t.append(tp)
    return e, t


# ---- clip_grad -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
@pytest.mark.parametrize("foreach", [None, False])
def test_clip_grad_norm(dtype, norm_type, max_norm, foreach):
    e, t = _params_with_grads(dtype)
    en = ember.nn.utils.clip_grad_norm_(e, max_norm, norm_type, foreach=foreach)
    tn = torch.nn.utils.clip_grad_norm_(t, max_norm, norm_type, foreach=foreach)
    assert_same(en, tn)
    for a, b in zip(e, t):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            assert_same(a.grad, b.grad)


def test_clip_grad_norm_single_tensor_and_empty():
    e, t = _params_with_grads()
    assert_same(ember.nn.utils.clip_grad_norm_(e[0], 0.1), torch.nn.utils.clip_grad_norm_(t[0], 0.1))
    assert_same(e[0].grad, t[0].grad)
    assert_same(ember.nn.utils.clip_grad_norm_([], 1.0), torch.nn.utils.clip_grad_norm_([], 1.0))
    with pytest.warns(UserWarning, match="empty generator"):
        ember.nn.utils.clip_grad_norm_((p for p in []), 1.0)
    with pytest.warns(FutureWarning):
        assert_same(ember.nn.utils.clip_grad_norm(e, 0.1), torch.nn.utils.clip_grad_norm_(t, 0.1))


@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_clip_grad_norm_nonfinite(bad):
    e, t = _params_with_grads()
    e[0].grad[0, 0] = bad
    t[0].grad[0, 0] = bad
    with pytest.raises(RuntimeError) as te:
        torch.nn.utils.clip_grad_norm_(t, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError) as ee:
        ember.nn.utils.clip_grad_norm_(e, 1.0, error_if_nonfinite=True)
    assert str(ee.value) == str(te.value)
    assert_same(ember.nn.utils.clip_grad_norm_(e, 1.0), torch.nn.utils.clip_grad_norm_(t, 1.0))
    for a, b in zip(e, t):
        if b.grad is not None:
            assert_same(a.grad, b.grad)


def test_get_total_norm_and_clip_grads_with_norm():
    e, t = _params_with_grads(scale=3.0)
    en = ember.nn.utils.get_total_norm([p.grad for p in e if p.grad is not None], 3.0)
    tn = torch.nn.utils.get_total_norm([p.grad for p in t if p.grad is not None], 3.0)
    assert_same(en, tn)
    ember.nn.utils.clip_grads_with_norm_(e, 2.0, en)
    torch.nn.utils.clip_grads_with_norm_(t, 2.0, tn)
    for a, b in zip(e, t):
        if b.grad is not None:
            assert_same(a.grad, b.grad)
    assert_same(ember.nn.utils.get_total_norm(e[0].grad), torch.nn.utils.get_total_norm(t[0].grad))


@pytest.mark.parametrize("clip_value", [0.3, 2])
def test_clip_grad_value(clip_value):
    e, t = _params_with_grads(scale=2.0)
    assert ember.nn.utils.clip_grad_value_(e, clip_value) is None
    torch.nn.utils.clip_grad_value_(t, clip_value)
    for a, b in zip(e, t):
        if b.grad is not None:
            assert_same(a.grad, b.grad)


def test_clip_grad_norm_in_no_grad_and_returns_leaf():
    e, _ = _params_with_grads()
    n = ember.nn.utils.clip_grad_norm_(e, 1.0)
    assert n.grad_fn is None and not n.requires_grad and n.dim() == 0


# ---- convert_parameters ----------------------------------------------------------------------
def test_parameters_to_vector_and_back():
    em, tm = ember.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    tm.load_state_dict({k: to_torch(v) for k, v in em.state_dict().items()})
    ev = ember.nn.utils.parameters_to_vector(em.parameters())
    tv = torch.nn.utils.parameters_to_vector(tm.parameters())
    assert_same(ev, tv)
    ev.sum().backward()  # the vector is differentiable through the views
    assert_same(em.weight.grad, torch.ones(2, 3))
    new = np.arange(8, dtype=np.float32)
    ember.nn.utils.vector_to_parameters(ember.tensor(new), em.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), tm.parameters())
    for (ka, a), (kb, b) in zip(em.named_parameters(), tm.named_parameters()):
        assert ka == kb and isinstance(a, ember.nn.Parameter)
        assert_same(a, b)
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        ember.nn.utils.vector_to_parameters([1.0], em.parameters())
    with pytest.raises(TypeError):
        torch.nn.utils.vector_to_parameters([1.0], tm.parameters())


# ---- parametrize -----------------------------------------------------------------------------
def _linear_pair(i=3, o=4, seed=0, dtype="float32"):
    rng = np.random.default_rng(seed)
    w, b = rng.standard_normal((o, i)), rng.standard_normal(o)
    em, tm = ember.nn.Linear(i, o), torch.nn.Linear(i, o)
    em.load_state_dict({"weight": w, "bias": b})
    tm.load_state_dict({"weight": torch.tensor(w), "bias": torch.tensor(b)})
    return em.to(getattr(ember, dtype)), tm.to(getattr(torch, dtype))


def _copy_state(em, tm):
    """torch's state (parametrized keys, buffers) loaded into the ember module."""
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})


def _check_forward_backward(em, tm, shape=(2, 3), seed=1):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    ey, ty = em(ember.tensor(x)), tm(torch.tensor(x))
    assert_same(ey, ty, rtol=1e-4, atol=1e-5)
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    tgrads = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        assert_same(p.grad, tgrads[name].grad, rtol=1e-4, atol=1e-5)


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric()


def _split(lib):
    class Split(lib.nn.Module):
        def forward(self, a, b):
            return a + 2 * b

        def right_inverse(self, X):
            return X * 0.5, X * 0.25
    return Split()


def _scale(lib):
    class Scale(lib.nn.Module):
        def forward(self, X):
            return X * 3
    return Scale()


def test_register_parametrization_keys_repr_values():
    em, tm = _linear_pair(4, 4)
    for m, lib in ((em, ember), (tm, torch)):
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _symmetric(lib))
    assert repr(em) == repr(tm)
    assert type(em).__name__ == "ParametrizedLinear"
    assert list(em.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert_same(em.state_dict()[k], v)
    assert ember.nn.utils.parametrize.is_parametrized(em)
    assert ember.nn.utils.parametrize.is_parametrized(em, "weight")
    assert not ember.nn.utils.parametrize.is_parametrized(em, "bias")
    assert ember.nn.utils.parametrize.type_before_parametrizations(em) is ember.nn.Linear
    _check_forward_backward(em, tm, (2, 4))


def test_parametrization_chain_assign_and_tuple_originals():
    em, tm = _linear_pair()
    for m, lib in ((em, ember), (tm, torch)):
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", _split(lib))
        P.register_parametrization(m, "bias", _scale(lib), unsafe=True)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert "parametrizations.weight.original1" in em.state_dict()
    for k, v in tm.state_dict().items():
        assert_same(em.state_dict()[k], v)
    new = np.arange(12, dtype=np.float32).reshape(4, 3)
    em.weight = ember.tensor(new)
    tm.weight = torch.tensor(new)
    for k, v in tm.state_dict().items():
        assert_same(em.state_dict()[k], v)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        em.bias = ember.zeros(4)
    _check_forward_backward(em, tm)


def test_parametrization_errors():
    class Grow(ember.nn.Module):
        def forward(self, X):
            return ember.cat([X, X])

    class TGrow(torch.nn.Module):
        def forward(self, X):
            return torch.cat([X, X])

    em, tm = _linear_pair()
    for m, g, lib in ((em, Grow(), ember), (tm, TGrow(), torch)):
        with pytest.raises(ValueError, match="may not change the shape"):
            lib.nn.utils.parametrize.register_parametrization(m, "weight", g)
        with pytest.raises(ValueError, match="does not have a parameter"):
            lib.nn.utils.parametrize.register_parametrization(m, "nothing", g)
        with pytest.raises(ValueError, match="does not have a parametrization"):
            lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        lib.nn.utils.parametrize.register_parametrization(m, "weight", g, unsafe=True)
        assert tuple(m.weight.shape) == (8, 3)


@pytest.mark.parametrize("leave", [True, False])
@pytest.mark.parametrize("maker", [_symmetric, _split])
def test_remove_parametrizations(leave, maker):
    em, tm = _linear_pair(4, 4)
    for m, lib in ((em, ember), (tm, torch)):
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", maker(lib))
        if maker is _split and not leave:
            with pytest.raises(ValueError, match="sequence of tensors"):
                P.remove_parametrizations(m, "weight", leave_parametrized=leave)
            return
        P.remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert type(em) is ember.nn.Linear and not hasattr(em, "parametrizations")
    assert isinstance(em.weight, ember.nn.Parameter)
    assert repr(em) == repr(tm)
    for k, v in tm.state_dict().items():
        assert_same(em.state_dict()[k], v)


def test_cached():
    em, _ = _linear_pair(4, 4)
    ember.nn.utils.parametrize.register_parametrization(em, "weight", _symmetric(ember))
    assert em.weight is not em.weight
    with ember.nn.utils.parametrize.cached():
        w = em.weight
        assert em.weight is w
        with ember.nn.utils.parametrize.cached():
            assert em.weight is w
        assert em.weight is w
    assert em.weight is not w


# ---- weight_norm, spectral_norm, orthogonal --------------------------------------------------
def _conv_pair(seed=0):
    rng = np.random.default_rng(seed)
    em, tm = ember.nn.Conv2d(2, 3, 2), torch.nn.Conv2d(2, 3, 2)
    sd = {"weight": rng.standard_normal((3, 2, 2, 2)).astype(np.float32),
          "bias": rng.standard_normal(3).astype(np.float32)}
    em.load_state_dict(sd)
    tm.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    return em, tm


@pytest.mark.parametrize("kind,dim", [("linear", 0), ("linear", 1), ("linear", None), ("conv", 0), ("conv", -2),
                                      ("conv", -1)])
def test_weight_norm(kind, dim):
    em, tm = _linear_pair() if kind == "linear" else _conv_pair()
    ember.nn.utils.parametrizations.weight_norm(em, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
    assert repr(em) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    for k, v in tm.state_dict().items():
        assert_same(em.state_dict()[k], v)
    _check_forward_backward(em, tm, (2, 3) if kind == "linear" else (1, 2, 4, 4))


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_weight_norm_loads_old_keys():
    em, tm = _linear_pair()
    old = torch.nn.utils.weight_norm(torch.nn.Linear(3, 4))  # the deprecated form: weight_g, weight_v
    ember.nn.utils.parametrizations.weight_norm(em)
    torch.nn.utils.parametrizations.weight_norm(tm)
    em.load_state_dict({k: to_ember(v) for k, v in old.state_dict().items()})
    tm.load_state_dict(old.state_dict())
    _check_forward_backward(em, tm)


@pytest.mark.parametrize("kind,dim,iters", [("linear", None, 1), ("linear", 1, 3), ("conv", None, 2),
                                            ("conv", 1, 1)])
def test_spectral_norm(kind, dim, iters):
    em, tm = _linear_pair(3, 5) if kind == "linear" else _conv_pair()
    ember.nn.utils.parametrizations.spectral_norm(em, n_power_iterations=iters, dim=dim)
    torch.nn.utils.parametrizations.spectral_norm(tm, n_power_iterations=iters, dim=dim)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    # the initial power-iteration vectors are random: take torch's
    _copy_state(em, tm)
    shape = (2, 3) if kind == "linear" else (1, 2, 4, 4)
    for _ in range(2):  # training mode: u and v advance on every forward
        _check_forward_backward(em, tm, shape)
        for k, v in tm.state_dict().items():
            assert_same(em.state_dict()[k], v, rtol=1e-4, atol=1e-6)
    em.eval()
    tm.eval()
    u = em.parametrizations.weight[0]._u.clone()
    _check_forward_backward(em, tm, shape)
    assert_same(em.parametrizations.weight[0]._u, to_torch(u))  # eval: the vectors stay


def test_spectral_norm_errors():
    em, tm = _linear_pair()
    for m, lib in ((em, ember), (tm, torch)):
        with pytest.raises(IndexError):
            lib.nn.utils.parametrizations.spectral_norm(m, dim=2)
        with pytest.raises(ValueError):
            lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=0)
        with pytest.raises(ValueError):
            lib.nn.utils.parametrizations.spectral_norm(m, name="nothing")


@pytest.mark.parametrize("omap", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("io", [(4, 4), (3, 5), (5, 3)])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal(omap, io, triv):
    em, tm = _linear_pair(*io, dtype="float64")
    ember.nn.utils.parametrizations.orthogonal(em, orthogonal_map=omap, use_trivialization=triv)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=omap, use_trivialization=triv)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    if io[0] == io[1] or not triv:  # deterministic registration: compare the stored state as it is
        for k, v in tm.state_dict().items():
            assert_same(em.state_dict()[k], v, rtol=1e-7, atol=1e-9)
    _copy_state(em, tm)  # the wide/tall trivialization base is completed with random columns
    assert_same(em.weight, tm.weight, rtol=1e-7, atol=1e-9)
    w = em.weight.detach()
    small = w.mT @ w if io[1] >= io[0] else w @ w.mT
    assert_same(small, torch.eye(min(io), dtype=torch.float64), atol=1e-9, rtol=0)
    em.double()
    x = np.random.default_rng(3).standard_normal((2, io[0]))
    ey, ty = em(ember.tensor(x)), tm(torch.tensor(x))
    assert_same(ey, ty)
    (ey * ey).sum().backward()
    (ty * ty).sum().backward()
    tgrads = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        assert_same(p.grad, tgrads[name].grad, rtol=1e-6, atol=1e-8)


def test_orthogonal_errors():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError, match="Expected a matrix"):
            lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), name="bias")
        m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(3, 3), use_trivialization=False)
        with pytest.raises(NotImplementedError):
            m.weight = lib.eye(3)


# ---- prune -----------------------------------------------------------------------------------
def _pruned_pair(kind="linear"):
    return _linear_pair(5, 4) if kind == "linear" else _conv_pair()


def _same_pruned_state(em, tm):
    assert list(em.state_dict()) == list(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert_same(em.state_dict()[k], v)
    assert_same(em.weight, tm.weight)
    assert ember.nn.utils.prune.is_pruned(em) == torch.nn.utils.prune.is_pruned(tm)


@pytest.mark.parametrize("name,args", [("identity", ()), ("l1_unstructured", (0.3,)), ("l1_unstructured", (5,)),
                                       ("ln_structured", (0.5, 2, 0)), ("ln_structured", (1, 1, -1)),
                                       ("ln_structured", (1, math.inf, 1))])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_deterministic_pruning(name, args, kind):
    em, tm = _pruned_pair(kind)
    getattr(ember.nn.utils.prune, name)(em, "weight", *args)
    getattr(torch.nn.utils.prune, name)(tm, "weight", *args)
    _same_pruned_state(em, tm)
    assert isinstance(em.weight_orig, ember.nn.Parameter) and "weight" not in em._parameters
    # pruning again combines the masks; the hook recomputes weight on forward
    ember.nn.utils.prune.l1_unstructured(em, "weight", 2)
    torch.nn.utils.prune.l1_unstructured(tm, "weight", 2)
    _same_pruned_state(em, tm)
    assert type(em._forward_pre_hooks[next(iter(em._forward_pre_hooks))]).__name__ == "PruningContainer"
    shape = (2, 5) if kind == "linear" else (1, 2, 4, 4)
    _check_forward_backward(em, tm, shape)
    ember.nn.utils.prune.remove(em, "weight")
    torch.nn.utils.prune.remove(tm, "weight")
    _same_pruned_state(em, tm)
    assert isinstance(em.weight, ember.nn.Parameter)


def test_custom_from_mask_and_importance_scores():
    em, tm = _pruned_pair()
    mask = np.random.default_rng(4).integers(0, 2, (4, 5))
    ember.nn.utils.prune.custom_from_mask(em, "bias", ember.tensor(mask[:, 0]))
    torch.nn.utils.prune.custom_from_mask(tm, "bias", torch.tensor(mask[:, 0]))
    scores = np.random.default_rng(5).standard_normal((4, 5)).astype(np.float32)
    ember.nn.utils.prune.l1_unstructured(em, "weight", 0.5, importance_scores=ember.tensor(scores))
    torch.nn.utils.prune.l1_unstructured(tm, "weight", 0.5, importance_scores=torch.tensor(scores))
    _same_pruned_state(em, tm)
    _check_forward_backward(em, tm, (2, 5))


def test_global_unstructured():
    (e1, t1), (e2, t2) = _pruned_pair(), _conv_pair(seed=7)  # distinct values: no ties in the ranking
    ember.nn.utils.prune.global_unstructured([(e1, "weight"), (e2, "weight"), (e2, "bias")],
                                             ember.nn.utils.prune.L1Unstructured, amount=11)
    torch.nn.utils.prune.global_unstructured([(t1, "weight"), (t2, "weight"), (t2, "bias")],
                                             torch.nn.utils.prune.L1Unstructured, amount=11)
    _same_pruned_state(e1, t1)
    _same_pruned_state(e2, t2)
    with pytest.raises(TypeError, match="Only \"unstructured\""):
        ember.nn.utils.prune.global_unstructured([(e1, "bias")], ember.nn.utils.prune.RandomStructured, amount=1)


@pytest.mark.parametrize("amount", [0.5, 2])
def test_random_pruning_counts(amount):
    em, tm = _pruned_pair("conv")
    ember.nn.utils.prune.random_unstructured(em, "weight", amount)
    torch.nn.utils.prune.random_unstructured(tm, "weight", amount)
    assert int((em.weight_mask == 0).sum()) == int((tm.weight_mask == 0).sum())
    assert_same((em.weight == 0) == (em.weight_mask == 0), torch.ones(3, 2, 2, 2, dtype=torch.bool))
    em2, tm2 = _pruned_pair("conv")
    ember.nn.utils.prune.random_structured(em2, "weight", amount, dim=1 if amount == 0.5 else 0)
    torch.nn.utils.prune.random_structured(tm2, "weight", amount, dim=1 if amount == 0.5 else 0)
    dims = (0, 2, 3) if amount == 0.5 else (1, 2, 3)
    assert_same((em2.weight_mask.sum(dim=dims) == 0).sum(), (tm2.weight_mask.sum(dim=dims) == 0).sum())
    assert list(em2.state_dict()) == list(tm2.state_dict())


@pytest.mark.parametrize("call", [lambda p, m: p.l1_unstructured(m, "weight", 1.5),
                                  lambda p, m: p.l1_unstructured(m, "weight", -1),
                                  lambda p, m: p.l1_unstructured(m, "weight", "a"),
                                  lambda p, m: p.l1_unstructured(m, "weight", 100),
                                  lambda p, m: p.ln_structured(m, "bias", 1, 2, 0),
                                  lambda p, m: p.ln_structured(m, "weight", 1, 2, 5),
                                  lambda p, m: p.remove(m, "weight")])
def test_prune_errors(call):
    em, tm = _pruned_pair()
    with pytest.raises(Exception) as te:
        call(torch.nn.utils.prune, tm)
    with pytest.raises(te.type) as ee:
        call(ember.nn.utils.prune, em)
    assert str(ee.value).replace("ember", "torch") == str(te.value) or te.type is IndexError
    assert list(em.state_dict()) == list(tm.state_dict())  # a failed pruning leaves the module as it was
