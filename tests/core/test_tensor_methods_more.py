"""Tensor methods the conformance table cannot express, checked against torch: resize_
and resize_as_ (memory kept, found again, grown), post-accumulate-grad hooks, as_subclass,
empty_strided, and the errors of the in-place and Python-callable methods."""

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
