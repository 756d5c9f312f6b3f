"""ember.func against torch.func: gradients, vjp/jvp, Jacobians and Hessians of small
networks (through functional_call), nesting, and the errors of each transform."""

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef


def _np(tree):
    if isinstance(tree, dict):
        return {k: _np(v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_np(v) for v in tree)
    return tree.detach().double().numpy() if hasattr(tree, "detach") else tree


def _same(a, b, rtol=1e-5, atol=1e-6):
    """Nested results equal: same structure, values within float32 rounding."""
    a, b = _np(a), _np(b)
    if isinstance(b, dict):
        assert isinstance(a, dict) and a.keys() == b.keys()
        for k in b:
            _same(a[k], b[k], rtol, atol)
    elif isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y, rtol, atol)
    elif isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    else:
        assert a == b


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
W = RNG.standard_normal((2, 4)).astype(np.float32)


def f_scalar(lib, x, w):
    return (lib.tanh(x @ w.T) ** 2).sum() + (x * x).mean()


def _both(fn):
    """fn(lib, tensors) for both libraries on the same starting values."""
    return fn(torch, torch.tensor(X), torch.tensor(W)), fn(ember, ember.tensor(X), ember.tensor(W))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
def test_grad(argnums):
    t, e = _both(lambda lib, x, w: (tf if lib is torch else ef).grad(lambda a, b: f_scalar(lib, a, b),
                                                                      argnums=argnums)(x, w))
    _same(e, t)
    assert not any(g.requires_grad for g in (e if isinstance(e, tuple) else (e,)))


def test_grad_and_value_with_aux_and_dict_inputs():
    def run(lib, x, w):
        func = tf if lib is torch else ef

        def loss(params, data):
            out = lib.tanh(data @ params["w"].T)
            return (out ** 2).sum(), {"out": out}
        return func.grad_and_value(loss, has_aux=True)({"w": w}, x)
    t, e = _both(run)
    _same(e, t)


def test_nested_grad_is_the_second_derivative():
    def run(lib, x, w):
        func = tf if lib is torch else ef
        inner = func.grad(lambda a: (lib.sin(a) * a ** 2).sum())
        return func.grad(lambda a: inner(a).sum())(x)
    t, e = _both(run)
    _same(e, t)


def test_grad_errors_as_torchs():
    for func, lib in ((tf, torch), (ef, ember)):
        x = lib.ones(3)
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with "
                                               "1 dims"):
            func.grad(lambda a: a * 2)(x)
        with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor, got"):
            func.grad(lambda a: 3.0)(x)
        with pytest.raises(RuntimeError, match="output of function f should be a tuple"):
            func.grad(lambda a: a.sum(), has_aux=True)(x)


def test_vjp_and_jvp():
    def run(lib, x, w):
        func = tf if lib is torch else ef

        def two(a, b):
            return lib.tanh(a @ b.T), (a * a).sum(1)
        out, vjp_fn = func.vjp(two, x, w)
        cot = (lib.ones_like(out[0]) * 0.5, lib.arange(3.0))
        primal_out, tangent_out = func.jvp(two, (x, w), (lib.ones_like(x), lib.ones_like(w) * 2))
        return out, vjp_fn(cot), primal_out, tangent_out
    t, e = _both(run)
    _same(e, t)


def test_linearize():
    def run(lib, x, w):
        func = tf if lib is torch else ef
        out, jvp_fn = func.linearize(lambda a: lib.sin(a) * a, x)
        return out, jvp_fn(lib.ones_like(x)), jvp_fn(x)
    t, e = _both(run)
    _same(e, t)


def _mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 2))


def _mlp_pair():
    t = _mlp(torch)
    e = _mlp(ember)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, e


def _jacobians(lib, func, model, transform):
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = lib.tensor(X)

    def call(p, data):
        return func.functional_call(model, p, (data,))
    jacobian = getattr(func, transform)
    return jacobian(model)(x), jacobian(call)(params, x), jacobian(call, argnums=(0, 1))(params, x)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians_of_a_network_wrt_input_and_parameters(transform):
    tm, em = _mlp_pair()
    _same(_jacobians(ember, ef, em, transform), _jacobians(torch, tf, tm, transform))


def _hessian(lib, func, model):
    return func.hessian(lambda data: (model(data) ** 2).sum())(lib.tensor(X[:2]))


def test_hessian_of_a_small_network_loss():
    tm, em = _mlp_pair()
    ours = _hessian(ember, ef, em)
    _same(ours, _hessian(torch, tf, tm), rtol=1e-4, atol=1e-5)
    assert tuple(ours.shape) == (2, 4, 2, 4)


def test_functional_call_replaces_and_restores():
    tm, em = _mlp_pair()
    for lib, func, model in ((torch, tf, tm), (ember, ef, em)):
        before = model[0].weight.detach().clone()
        zeros = {"0.weight": lib.zeros(5, 4), "0.bias": lib.ones(5)}
        out = func.functional_call(model, zeros, (lib.tensor(X),))
        expected = model[2](lib.tanh(lib.ones(3, 5)))
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
        assert np.array_equal(model[0].weight.detach().numpy(), before.numpy())
        assert isinstance(model[0].weight, lib.nn.Parameter)


def _tied(lib):
    class Tied(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2, bias=False)
            self.b = lib.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    return Tied()


def test_functional_call_errors_and_tied_weights():
    for lib, func in ((torch, tf), (ember, ef)):
        m = lib.nn.Linear(2, 2)
        with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'nope'.\n\tMissing key\\(s\\): "
                                               "'bias', 'weight'"):
            func.functional_call(m, {"nope": lib.ones(1)}, (lib.ones(1, 2),), strict=True)
        with pytest.raises(ValueError, match="\\['weight'\\] appeared in multiple dictionaries"):
            func.functional_call(m, ({"weight": lib.ones(2, 2)}, {"weight": lib.ones(2, 2)}), lib.ones(1, 2))
        out = func.functional_call(m, ({"weight": lib.ones(2, 2)}, {"bias": lib.zeros(2)}), lib.ones(1, 2))
        assert out.tolist() == [[2.0, 2.0]]
        out = func.functional_call(_tied(lib), {"a.weight": lib.eye(2) * 2}, (lib.ones(1, 2),))
        assert out.tolist() == [[4.0, 4.0]]


def test_stack_module_state():
    results = []
    for lib, func in ((torch, tf), (ember, ef)):
        lib.manual_seed(0)
        models = [lib.nn.BatchNorm1d(3), lib.nn.BatchNorm1d(3)]
        params, buffers = func.stack_module_state(models)
        results.append(({k: (tuple(v.shape), v.requires_grad, v.is_leaf) for k, v in params.items()},
                        {k: (tuple(v.shape), v.requires_grad) for k, v in buffers.items()}))
        with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
            func.stack_module_state([])
    assert results[0] == results[1]
