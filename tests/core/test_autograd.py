"""The autograd engine, grad modes, hooks, custom Functions and gradcheck, against torch."""

import threading

import numpy as np
import pytest
import torch
from conftest import assert_same

import ember


def both(fn):
    """fn(L) for L = ember and torch; compared."""
    assert_same(fn(ember), fn(torch))


def test_backward_with_gradient_for_non_scalar():
    def run(L):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * x + x
        y.backward(L.tensor([[1.0, 0.5], [2.0, -1.0]]))
        return x.grad
    both(run)
    for L in (torch, ember):
        x = L.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
            (x * 2).backward()
        with pytest.raises(RuntimeError):
            (x * 2).backward(L.ones(3))
        with pytest.raises(RuntimeError, match="does not require grad"):
            L.ones(2).sum().backward()


def test_grad_accumulates_across_backward_calls():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward()
        (x * x).sum().backward()
        g1 = x.grad.clone()
        x.grad = None
        (x ** 3).sum().backward()
        return g1, x.grad
    both(run)


def test_autograd_grad_options():
    def run(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
        unused = L.tensor([1.0], requires_grad=True)
        y = (x * w).sum() + (x ** 2).sum()
        gx, gw, gu = L.autograd.grad(y, [x, w, unused], retain_graph=True, allow_unused=True)
        assert gu is None and x.grad is None  # grad() does not accumulate
        (gx2,) = L.autograd.grad([y * 2], [x], grad_outputs=[L.tensor(0.5)])
        return gx, gw, gx2
    both(run)
    for L in (torch, ember):
        x = L.tensor([1.0], requires_grad=True)
        u = L.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="not have been used in the graph"):
            L.autograd.grad((x * 2).sum(), [x, u])
        g = L.autograd.grad((x * 2).sum(), [x, u], materialize_grads=True)
        assert g[1].tolist() == [0.0]


def test_higher_order_gradients():
    def run(L):
        x = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
        y = (x.sin() * x ** 3).sum()
        (g,) = L.autograd.grad(y, x, create_graph=True)
        (h,) = L.autograd.grad(g.sum(), x, create_graph=True)
        (t,) = L.autograd.grad(h.sum(), x)
        return g, h, t
    both(run)

    def hvp(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x[0] ** 2 * x[1] + L.exp(x[1])
        g = L.autograd.grad(y, x, create_graph=True)[0]
        (g * L.tensor([1.0, -1.0])).sum().backward()
        return x.grad
    both(hvp)


@pytest.mark.parametrize("op", ["tanh", "sigmoid", "exp", "log", "sqrt", "div", "matmul", "softmax_like", "norm",
                                "var", "max", "cumsum", "prod"])
def test_gradgradcheck(op):
    fns = {
        "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(), "exp": lambda x: x.exp(),
        "log": lambda x: (x.abs() + 1).log(), "sqrt": lambda x: (x * x + 1).sqrt(), "div": lambda x: 1 / (x * x + 1),
        "matmul": lambda x: x @ x.t(), "softmax_like": lambda x: x.exp() / x.exp().sum(-1, keepdim=True),
        "norm": lambda x: x.norm(dim=1), "var": lambda x: x.var(1), "max": lambda x: x.max(1).values * x.sum(),
        "cumsum": lambda x: x.cumsum(1) ** 2, "prod": lambda x: x.prod(1),
    }
    ember.manual_seed(0)
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(fns[op], (x,))
    assert ember.autograd.gradgradcheck(fns[op], (x,))


def test_gradcheck_catches_a_wrong_gradient():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = ember.randn(3, dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError):
        ember.autograd.gradcheck(Bad.apply, (x,))
    assert ember.autograd.gradcheck(Bad.apply, (x,), raise_exception=False) is False


def test_graph_freed_after_backward():
    for L in (torch, ember):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        y.backward()  # second pass works with the graph retained
        assert x.grad is not None
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.backward()
    both(lambda L: _twice(L))


def _twice(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


def test_deep_chain_has_no_recursion_limit():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 1.0001 + 0.0
    y.sum().backward()
    assert abs(x.grad.item() - 1.0001 ** 5000) < 1e-2
    del y


def test_gradients_after_scalar_arithmetic_stay_arrays(monkeypatch):
    # numpy answers arithmetic on 0-d arrays with numpy scalars; the engine must hand the
    # next rule an array again, or every node after a scaled loss (loss / accumulation
    # steps, 0.5 * loss) leaves the array path for the slower tensor path
    from ember.autograd import graph
    seen = []
    run_on_arrays = graph.Node.apply_on_arrays

    def spy(node, grad, retain_graph):
        seen.append(node.name())
        return run_on_arrays(node, grad, retain_graph)
    monkeypatch.setattr(graph.Node, "apply_on_arrays", spy)
    x = ember.tensor(2.0, requires_grad=True)
    w = ember.tensor([1.0, -2.0, 3.0], requires_grad=True)
    logits, target = ember.randn(4, 3, requires_grad=True), ember.tensor([0, 2, 1, 2])
    loss = (x * 3) * 0.5 / 4 + (w * 2).sum() * 0.5 + ember.nn.functional.cross_entropy(logits, target) / 4
    loss.backward()
    assert sorted(seen) == sorted(["AddBackward0", "AddBackward0", "MulBackward0", "DivBackward0", "MulBackward0",
                                   "MulBackward0", "SumBackward0", "MulBackward0", "DivBackward0",
                                   "NllLossBackward0", "LogSoftmaxBackward0"])
    assert type(x.grad._data) is np.ndarray and x.grad.item() == 3 * 0.5 / 4
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0, 1.0])


def test_diamond_graph_runs_each_node_once():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        a = x * 2
        b = a.exp()
        c = a.sin()
        d = (b * c + a).sum()
        d.backward()
        return x.grad
    both(run)


def test_leaf_gradients_land_as_soon_as_they_are_ready_as_torch():
    # torch runs accumulators before every other ready node, so a parameter's gradient (and
    # its post-accumulate hooks: DDP's bucket all-reduces) comes while backward goes on
    def order(L):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(4, 8), L.nn.Tanh(), L.nn.Linear(8, 8), L.nn.Tanh(), L.nn.Linear(8, 2))
        events = []
        for name, p in m.named_parameters():
            p.register_post_accumulate_grad_hook(lambda p, n=name: events.append(n))
        h = m[0](L.randn(6, 4))
        h.register_hook(lambda g: events.append("first layer's output"))
        m[4](m[3](m[2](m[1](h)))).square().sum().backward()
        return events
    assert order(ember) == order(torch)


def test_leaf_gradients_never_share_memory():
    """A leaf may take the engine's gradient array as its .grad without a copy only when
    nothing else sees that array: not another leaf, not the caller's gradient, not a
    retained graph."""
    def grads(L):
        a = L.ones(3, requires_grad=True)
        b = L.ones(3, requires_grad=True)
        c = L.full((3,), 2.0, requires_grad=True)
        ((a + b) * c).sum().backward()  # the add rule hands one array to both a and b
        a.grad += 1  # must not leak into b.grad
        d = L.ones(3, requires_grad=True)
        given = L.full((3,), 5.0)
        d.clone().backward(given)  # the clone rule passes the caller's gradient through
        given += 1
        e = L.ones(3, requires_grad=True)
        y = e * 3.0
        y.backward(L.ones(3), retain_graph=True)
        y.backward(L.ones(3))  # accumulates into e.grad, whose first value must be its own
        return a.grad, b.grad, c.grad, d.grad, e.grad
    both(grads)


def test_leaf_and_non_leaf_rules():
    for L in (torch, ember):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        z = y.sum()
        y.retain_grad()
        assert y.retains_grad and not x.retains_grad
        z.backward()
        assert x.grad.tolist() == [2.0, 2.0]
        assert y.grad.tolist() == [1.0, 1.0]
        assert z.grad is None
        assert z.is_leaf is False and x.is_leaf and L.ones(2).is_leaf
        assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_tensor_hooks():
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        y = x * 3
        y.register_hook(lambda g: seen.append(g.clone()))
        h = x.register_hook(lambda g: g * 10)
        (y * y).sum().backward()
        g1 = x.grad.clone()
        h.remove()
        x.grad = None
        (x * 3 * x).sum().backward()
        return seen[0], g1, x.grad
    both(run)

    def hook_before_any_op(L):  # the leaf keeps its hook until an op uses it
        w = L.tensor([1.0, 2.0], requires_grad=True)
        w.register_hook(lambda g: g * 2)
        (w * w).sum().backward()
        (w * 3).sum().backward()
        return w.grad
    both(hook_before_any_op)
    for L in (torch, ember):
        with pytest.raises(RuntimeError):
            L.ones(2).register_hook(lambda g: g)


def test_node_hooks_and_next_functions():
    for L in (torch, ember):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([3.0, 4.0], requires_grad=True)
        c = a * b + a
        names = [type(n).__name__ if n is not None else None for n, _ in c.grad_fn.next_functions]
        assert type(c.grad_fn).__name__ == "AddBackward0"
        assert names == ["MulBackward0", "AccumulateGrad"]
        mul = c.grad_fn.next_functions[0][0]
        assert [type(n).__name__ for n, _ in mul.next_functions] == ["AccumulateGrad", "AccumulateGrad"]
        assert mul.next_functions[0][0].variable is a
        assert c.grad_fn.name() == "AddBackward0"
        d = a * 2.0
        assert [type(n).__name__ if n is not None else None for n, _ in d.grad_fn.next_functions] == \
            ["AccumulateGrad", None]
        calls = []
        c.grad_fn.register_prehook(lambda go, calls=calls: calls.append("pre"))
        c.grad_fn.register_hook(lambda gi, go, calls=calls: calls.append("post"))
        c.sum().backward()
        assert calls == ["pre", "post"]


def test_grad_modes():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.enable_grad():
            z = x * 2
    assert not y.requires_grad and y.grad_fn is None and z.requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not (x * 2).requires_grad
    with ember.inference_mode(False):
        assert (x * 2).requires_grad

    @ember.no_grad()
    def f(t):
        return t * 2

    @ember.inference_mode()
    def g(t):
        return t * 2

    @ember.enable_grad()
    def h(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad
    with ember.no_grad():
        assert h(x).requires_grad
    assert ember.is_grad_enabled()


def test_grad_mode_is_per_thread():
    results = {}

    def worker():
        results["thread"] = ember.is_grad_enabled()
        results["out"] = (ember.ones(1, requires_grad=True) * 2).requires_grad

    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not ember.is_grad_enabled()
    assert results == {"thread": True, "out": True}


def test_custom_function():
    class MulExp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, scale):
            out = (x * y).exp() * scale
            ctx.save_for_backward(x, y, out)
            ctx.scale = scale
            return out

        @staticmethod
        def backward(ctx, g):
            x, y, out = ctx.saved_tensors
            assert ctx.needs_input_grad == (True, False, False)
            return g * out * y, None, None

    x = ember.tensor([0.5, 1.0], dtype=ember.float64, requires_grad=True)
    y = ember.tensor([2.0, -1.0], dtype=ember.float64)
    out = MulExp.apply(x, y, 3.0)
    assert type(out.grad_fn).__name__ == "MulExpBackward"
    out.sum().backward()
    tx = torch.tensor([0.5, 1.0], dtype=torch.float64, requires_grad=True)
    ((tx * torch.tensor([2.0, -1.0], dtype=torch.float64)).exp() * 3.0).sum().backward()
    assert_same(x.grad, tx.grad)
    assert ember.autograd.gradcheck(lambda a: MulExp.apply(a, y, 3.0), (x,))


def test_custom_function_mark_dirty_and_saved_modification():
    class AddOne_(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    v = b._version
    c = AddOne_.apply(b)
    assert c is b and b._version == v + 2 and type(b.grad_fn).__name__ == "AddOne_Backward"
    (c * c).sum().backward()
    assert a.grad.tolist() == [12.0, 20.0]

    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    p = ember.tensor([1.0, 2.0], requires_grad=True)
    q = p * 1
    r = Square.apply(q)
    q.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        r.sum().backward()


def test_backward_inputs_argument():
    def run(L):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        b = L.tensor([3.0, 4.0], requires_grad=True)
        (a * b).sum().backward(inputs=[a])
        return a.grad, b.grad
    e, t = run(ember), run(torch)
    assert t[1] is None and e[1] is None
    assert_same(e[0], t[0])


def test_dtype_of_gradients_and_broadcast_reduction():
    def run(L):
        a = L.tensor([[1.0, 2.0, 3.0]], dtype=L.float64, requires_grad=True)
        b = L.tensor([[1.0], [2.0]], dtype=L.float32, requires_grad=True)
        s = L.tensor(2.0, requires_grad=True)
        ((a * b + s) ** 2).sum().backward()
        return a.grad, b.grad, s.grad
    both(run)


def test_integer_ops_do_not_track_history():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert not (x > 1).requires_grad and not x.argmax().requires_grad
    assert not x.max(0).indices.requires_grad
    assert x.max(0).values.requires_grad
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert (x * 1).to(ember.int64).requires_grad == (t * 1).to(torch.int64).requires_grad


@pytest.mark.parametrize("make", [lambda L, t: L.cat([t]), lambda L, t: L.stack([t]),
                                  lambda L, t: L.split(t, [2], 0)[0], lambda L, t: t.unbind(0)[0][None],
                                  lambda L, t: L.chunk(t, 1, 1)[0]])
def test_one_piece_views_differentiate_twice_as_torch(make):
    """A split/unbind/cat of a single piece is a node of one output; its gradient (and the
    gradient of that) keep their shapes."""
    results = []
    for lib in (ember, torch):
        t = lib.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], dtype=lib.float64, requires_grad=True)
        y = (make(lib, t) ** 3).sum()
        (g,) = lib.autograd.grad(y, t, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), t)
        results.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])


def _new_style(lib):
    class MulAdd(lib.autograd.Function):
        """torch's new style: forward without ctx, setup_context saves."""

        @staticmethod
        def forward(x, y, scale):
            return x * y * scale + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y, scale = inputs
            ctx.save_for_backward(x, y)
            ctx.scale = scale

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * ctx.scale, g * (x * ctx.scale + 1), None
    return MulAdd


def test_new_style_function_with_setup_context():
    results = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, -1.0], requires_grad=True)
        out = _new_style(lib).apply(x, y, 2.0)
        out.sum().backward()
        results.append((out.tolist(), x.grad.tolist(), y.grad.tolist(), type(out.grad_fn).__name__))
        assert lib.autograd.Function.generate_vmap_rule is False
        with pytest.raises(NotImplementedError, match="override the vmap staticmethod or set generate_vmap_rule"):
            lib.autograd.Function.vmap(None, (0,), x)
    assert results[0] == results[1]


def test_a_custom_functions_context_is_freed_without_the_cycle_collector():
    """The node's rule holds ctx and ctx refers to its node only weakly: no reference
    cycle, so saved arrays go when the graph goes (a cycle kept them until gc ran)."""
    import gc
    import weakref

    seen = []

    class Double(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            seen.append(weakref.ref(ctx))
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    gc.disable()
    try:
        x = ember.ones(3, requires_grad=True)
        y = Double.apply(x)
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0, 2.0]
        del y
        assert seen[0]() is None
    finally:
        gc.enable()
