"""What the conformance table cannot express, checked against torch: resize_ and
resize_as_ (memory kept, found again, grown), post-accumulate-grad hooks, as_subclass,
empty_strided, the errors of the in-place and Python-callable methods, and the random nn
forms (gumbel_softmax, native_dropout, feature_dropout, fractional max pooling's drawn
samples) by their distributions and structure."""

import numpy as np
import pytest
import torch
from conftest import assert_same

import ember


def both(fn):
    return fn(ember), fn(torch)


def _arange(L, n):
    return L.arange(float(n))


# ---- resize_ -------------------------------------------------------------------------

def _resize_steps(L):
    x = _arange(L, 6)
    out = [x.resize_(2).clone(), x.stride()]
    out += [x.resize_(6).clone()]  # the memory kept by the shrink comes back
    out += [x.resize_(2, 2).clone(), x.is_contiguous(), x._version]
    return out


def test_resize_shrinks_and_grows_back_within_its_memory():
    e, t = both(_resize_steps)
    assert_same(e, t)


def test_resize_of_a_non_contiguous_view_reads_memory_in_order():
    for shape in [(2, 2), (3, 2)]:
        e, t = both(lambda L, shape=shape: _arange(L, 6).reshape(2, 3).t().resize_(*shape))
        assert_same(e, t)
        assert e.stride() == t.stride()


def test_resize_of_a_view_starts_at_its_storage_offset():
    def run(L):
        x = L.arange(6.0)
        v = x[2:]
        v.resize_(4)
        v.resize_(2, 1)
        v.fill_(-1.0)  # still the base's memory
        return v.clone(), v.storage_offset(), x, x._version
    e, t = both(run)
    assert_same(e, t)


def test_resize_beyond_its_memory_keeps_the_old_elements_first():
    e, t = both(lambda L: _arange(L, 3).resize_(2, 4))
    assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride()
    assert_same(e.reshape(-1)[:3], t.reshape(-1)[:3])


def test_resize_takes_sizes_as_a_tuple_or_size():
    for L in (ember, torch):
        assert tuple(L.zeros(2).resize_((2, 3)).shape) == (2, 3)
        assert tuple(L.zeros(2).resize_(L.Size([3, 1])).shape) == (3, 1)


def test_resize_as_takes_the_template_shape():
    e, t = both(lambda L: L.resize_as_(_arange(L, 6), L.zeros(3, 1)))
    assert_same(e, t)
    e, t = both(lambda L: _arange(L, 6).resize_as_(L.zeros(2, 2)))
    assert_same(e, t)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_resize_of_a_tensor_that_requires_grad_raises(grad_mode):
    for L in (ember, torch):
        x = L.zeros(2, requires_grad=True)
        with L.set_grad_enabled(grad_mode), pytest.raises(RuntimeError, match="cannot resize variables that require"):
            x.resize_(3)
        with pytest.raises(RuntimeError, match="cannot resize"):
            (x * 2).resize_(1)
        with pytest.raises(RuntimeError, match="cannot resize"):
            L.resize_as_(x, L.zeros(1))


def test_resize_to_a_negative_size_raises():
    for L in (ember, torch):
        with pytest.raises(RuntimeError):
            L.zeros(2).resize_(2, -1)


# ---- post-accumulate-grad hooks ------------------------------------------------------

def _hook_run(L):
    w = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.clone()))
    (w * 2).sum().backward()
    (w * w).sum().backward()
    handle.remove()
    (w * 3).sum().backward()
    return seen, w.grad


def test_post_accumulate_hook_sees_the_accumulated_grad():
    e, t = both(_hook_run)
    assert_same(e, t)


def test_post_accumulate_hook_optimizer_in_backward():
    """Each parameter steps as soon as its gradient is ready, and drops the gradient."""
    def run(L):
        lin = L.nn.Linear(3, 2)
        with L.no_grad():
            lin.weight.copy_(L.tensor([[0.5, -1.0, 0.25], [1.5, 0.0, -0.5]]))
            lin.bias.copy_(L.tensor([0.1, -0.2]))
        opts = {p: L.optim.SGD([p], lr=0.1) for p in lin.parameters()}

        def step(p):
            opts[p].step()
            opts[p].zero_grad()
        for p in lin.parameters():
            p.register_post_accumulate_grad_hook(step)
        x = L.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
        for _ in range(3):
            (lin(x) ** 2).sum().backward()
        return lin.weight.detach(), lin.bias.detach(), lin.weight.grad
    e, t = both(run)
    assert_same(e, t)


def test_post_accumulate_hook_runs_after_tensor_hooks_and_not_for_autograd_grad():
    for L in (ember, torch):
        w = L.ones(2, requires_grad=True)
        order = []
        w.register_post_accumulate_grad_hook(lambda p, order=order: order.append("post"))
        w.register_hook(lambda g, order=order: order.append("pre"))
        L.autograd.grad((w * 2).sum(), w)
        assert order == ["pre"]
        (w * 2).sum().backward()
        assert order == ["pre", "pre", "post"]


def test_post_accumulate_hook_errors():
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="non-leaf"):
            (L.ones(2, requires_grad=True) * 2).register_post_accumulate_grad_hook(lambda p: None)
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            L.ones(2).register_post_accumulate_grad_hook(lambda p: None)
        w = L.ones(2, requires_grad=True)
        w.register_post_accumulate_grad_hook(lambda p: 5)
        with pytest.raises(TypeError):
            w.sum().backward()
        assert w.grad.tolist() == [1.0, 1.0]  # accumulated before the hook ran


# ---- as_subclass ---------------------------------------------------------------------

class ESub(ember.Tensor):
    pass


class TSub(torch.Tensor):
    pass


def test_as_subclass_is_an_alias_in_the_graph():
    out = {}
    for L, cls in ((ember, ESub), (torch, TSub)):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        s = a.as_subclass(cls)
        assert type(s) is cls
        assert type(s.grad_fn).__name__ == "AliasBackward0"
        assert s.requires_grad and not s.is_leaf and s.data_ptr() == a.data_ptr()
        (s * a).sum().backward()
        plain = L.zeros(2).as_subclass(cls)
        assert plain.grad_fn is None and not plain.requires_grad
        base = L.zeros(2)
        base.as_subclass(cls).add_(1.0)  # shares memory and version counter
        out[L] = (a.grad, base, base._version)
    assert_same(out[ember], out[torch])


def test_as_subclass_errors():
    for L in (ember, torch):
        with pytest.raises(TypeError, match="cls must be a type"):
            L.zeros(1).as_subclass(3)
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            L.zeros(1).as_subclass(int)


# ---- empty_strided -------------------------------------------------------------------

def test_empty_strided_and_new_empty_strided_layout():
    for make in (lambda L: L.empty_strided((2, 3), (1, 2)),
                 lambda L: L.empty_strided((2, 3), (4, 1), dtype=L.int32),
                 lambda L: L.zeros(2, dtype=L.float64).new_empty_strided((3, 2), (1, 3)),
                 lambda L: L.zeros(2).new_empty_strided((2, 2), (2, 1), dtype=L.int64, requires_grad=False),
                 lambda L: L.empty_strided((2, 0), (1, 2))):
        e, t = both(make)
        assert tuple(e.shape) == tuple(t.shape) and e.stride() == t.stride() and str(e.dtype)[6:] == str(t.dtype)[6:]
        assert e.requires_grad == t.requires_grad
    e, t = both(lambda L: L.empty_strided((2,), (1,), requires_grad=True).requires_grad)
    assert e == t


def test_empty_strided_errors():
    for L in (ember, torch):
        with pytest.raises(RuntimeError):
            L.empty_strided((2, 3), (1,))
        with pytest.raises(RuntimeError):
            L.zeros(1).new_empty_strided((2, -3), (1, 2))


# ---- in-place methods on leaves, Python-callable methods -----------------------------

@pytest.mark.parametrize("method", [
    lambda L, x: x.fill_diagonal_(1.0),
    lambda L, x: x.put_(L.tensor([0]), L.tensor([1.0])),
    lambda L, x: x.index_reduce_(0, L.tensor([0]), L.ones(1, 2), "amax"),
    lambda L, x: x.renorm_(2, 0, 1.0),
    lambda L, x: x.apply_(lambda v: v),
    lambda L, x: x.map_(L.ones(2, 2), lambda a, b: a),
    lambda L, x: x.map2_(L.ones(2, 2), L.ones(2, 2), lambda a, b, c: a),
])
def test_inplace_methods_on_a_leaf_that_requires_grad_raise(method):
    for L in (ember, torch):
        with pytest.raises(RuntimeError):
            method(L, L.ones(2, 2, requires_grad=True))


def test_map_with_a_tensor_that_requires_grad_raises():
    for L in (ember, torch):
        with pytest.raises(RuntimeError, match="requires grad"):
            L.ones(2).map_(L.ones(2, requires_grad=True), lambda a, b: a)


@pytest.mark.parametrize("call", [
    lambda L: L.ones(2).map_(L.ones(2, dtype=L.int64), lambda a, b: a),
    lambda L: L.ones(2, dtype=L.int64).map2_(L.ones(2, dtype=L.int64), L.ones(2), lambda a, b, c: a),
    lambda L: L.ones(2).apply_(lambda v: "a"),
    lambda L: L.ones(2, dtype=L.int64).apply_(lambda v: "a"),
    lambda L: L.ones(2).apply_(3),
])
def test_python_callable_methods_type_errors(call):
    for L in (ember, torch):
        with pytest.raises(TypeError):
            call(L)


def test_map_shape_mismatch_raises():
    for L in (ember, torch):
        with pytest.raises(RuntimeError):
            L.ones(2, 2).map_(L.ones(3, 2), lambda a, b: a)


def test_apply_writes_through_views_without_a_version_bump():
    def run(L):
        x = L.zeros(3)
        x[1:].apply_(lambda v: v + 1.0)
        t = L.arange(6.0).reshape(2, 3).t()
        t.apply_(lambda v: v * 10)
        return x, x._version, t
    e, t = both(run)
    assert_same(e, t)


# ---- random nn forms: distributions and structure, beside torch's --------------------

def test_gumbel_softmax_samples_follow_the_softmax():
    """Hard samples pick class k with probability softmax(logits)_k (the Gumbel-max trick),
    in ember as in torch; soft samples sum to 1; hard ones are one-hot at the soft argmax."""
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], np.float32))
    rows = np.tile(logits, (20000, 1))
    ember.manual_seed(0)
    torch.manual_seed(0)
    freq = {}
    for L in (ember, torch):
        x = L.tensor(rows)
        hard = L.nn.functional.gumbel_softmax(x, tau=0.5, hard=True)
        soft = L.nn.functional.gumbel_softmax(x, tau=0.5)
        h, s = np.asarray(hard.tolist()), np.asarray(soft.tolist())
        assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(1) == 1).all()
        np.testing.assert_allclose(s.sum(1), 1.0, rtol=1e-5)
        freq[L] = h.mean(0)
    # 20000 draws: the standard error of each frequency is below 0.0035
    np.testing.assert_allclose(freq[ember], np.exp(logits), atol=0.015)
    np.testing.assert_allclose(freq[ember], freq[torch], atol=0.02)


def test_gumbel_softmax_hard_gradient_is_the_soft_one():
    """With the same noise (the same seed), the hard sample is one-hot at the soft
    sample's argmax and passes back exactly the soft sample's gradient; in both libraries."""
    w = [[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]]
    for L in (ember, torch):
        out = {}
        for hard in (False, True):
            L.manual_seed(3)
            x = L.tensor([[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]], requires_grad=True)
            y = L.nn.functional.gumbel_softmax(x, tau=0.7, hard=hard)
            (y * L.tensor(w)).sum().backward()
            out[hard] = np.asarray(y.tolist()), np.asarray(x.grad.tolist())
        (soft, g_soft), (one_hot, g_hard) = out[False], out[True]
        np.testing.assert_array_equal(one_hot, np.eye(3)[soft.argmax(1)])
        np.testing.assert_allclose(g_hard, g_soft, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("p", [0.2, 0.6])
def test_native_dropout_mask_and_scale(p):
    keep = {}
    for L in (ember, torch):
        L.manual_seed(1)
        x = L.ones(200, 100, requires_grad=True) * 3.0
        out, mask = L.native_dropout(x, p, True)
        assert str(mask.dtype).endswith("bool")
        o, m = np.asarray(out.tolist()), np.asarray(mask.tolist())
        np.testing.assert_allclose(o, np.where(m, 3.0 / (1 - p), 0.0), rtol=1e-6)
        out.sum().backward()
        keep[L] = m.mean()
    assert abs(keep[ember] - (1 - p)) < 0.02 and abs(keep[torch] - (1 - p)) < 0.02


@pytest.mark.parametrize("train", [True, None])
def test_native_dropout_gradient_is_the_mask_scaled(train):
    """The gradient is mask / (1 - p), the derivative of the forward.  torch agrees for
    train=True; for train=None its backward leaves out the 1 / (1 - p) its forward applied,
    which ember does not copy (see native_dropout's docstring)."""
    for L in (ember, torch):
        L.manual_seed(2)
        x = L.ones(50, 40, requires_grad=True)
        out, mask = L.native_dropout(x, 0.5, train)
        out.sum().backward()
        scale = 1.0 if L is torch and train is None else 2.0
        np.testing.assert_allclose(np.asarray(x.grad.tolist()), np.asarray(mask.tolist()) * scale)
        np.testing.assert_allclose(np.asarray(out.tolist()), np.asarray(mask.tolist()) * 2.0)
        assert type(out.grad_fn).__name__ == "NativeDropoutBackward0"


@pytest.mark.parametrize("shape", [(40, 30, 5), (40, 30)])
def test_feature_dropout_drops_whole_features(shape):
    kept = {}
    for L in (ember, torch):
        L.manual_seed(4)
        out = np.asarray(L.feature_dropout(L.ones(*shape), 0.3, True).tolist())
        flat = out.reshape(shape[0], shape[1], -1)
        assert (flat == flat[..., :1]).all()  # one draw per (n, c)
        np.testing.assert_allclose(np.unique(flat), [0.0, 1.0 / 0.7], rtol=1e-6)
        kept[L] = (flat[..., 0] != 0).mean()
    assert abs(kept[ember] - 0.7) < 0.04 and abs(kept[torch] - 0.7) < 0.04


def test_feature_dropout_in_place_writes_its_input():
    for L in (ember, torch):
        L.manual_seed(5)
        y = L.ones(30, 20, 2)
        assert L.feature_dropout_(y, 0.5, True) is y
        v = np.asarray(y.tolist())
        assert (v == v[..., :1]).all() and set(np.unique(v)) == {0.0, 2.0}


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_with_drawn_samples(nd):
    """Without _random_samples each plane draws its own: the output is the maximum of some
    window of the kernel's size, the same for a repeated seed, and matches torch once given
    the same samples."""
    F = ember.nn.functional
    shape = (2, 3) + (7,) * nd
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    fn = getattr(F, f"fractional_max_pool{nd}d")
    ember.manual_seed(0)
    a, ia = fn(ember.tensor(x), 2, output_size=(3,) * nd, return_indices=True)
    ember.manual_seed(0)
    b = fn(ember.tensor(x), 2, output_size=(3,) * nd)
    np.testing.assert_array_equal(np.asarray(a.tolist()), np.asarray(b.tolist()))
    flat = x.reshape(2, 3, -1)
    got = np.take_along_axis(flat, np.asarray(ia.tolist()).reshape(2, 3, -1), axis=2)
    np.testing.assert_array_equal(got.reshape(a.shape), np.asarray(a.tolist()))
    plans = {tuple(np.asarray(fn(ember.tensor(x), 2, output_size=(3,) * nd, return_indices=True)[1].tolist())
                   .reshape(-1)) for _ in range(6)}
    assert len(plans) > 1  # the places are random
    s = np.random.default_rng(1).random((2, 3, nd)).astype(np.float32)
    t = getattr(torch.nn.functional, f"fractional_max_pool{nd}d")(torch.tensor(x), 2, output_size=(3,) * nd,
                                                                    _random_samples=torch.tensor(s))
    assert_same(fn(ember.tensor(x), 2, output_size=(3,) * nd, _random_samples=ember.tensor(s)), t)


def test_native_batch_norm_eval_without_running_stats_raises():
    with pytest.raises(RuntimeError):
        ember.native_batch_norm(ember.ones(2, 3), None, None, None, None, False, 0.1, 1e-5)
