"""ember.autograd.functional against torch.autograd.functional."""

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF
from conftest import assert_same

import ember
import ember.autograd.functional as EF

X = np.array([[0.5, -1.0, 0.3], [2.0, 0.3, -0.4]], np.float32)
Y = np.array([[1.5, 0.2, 0.1], [-0.7, 1.1, 0.8]], np.float32)
V = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.0]], np.float32)


def both(fn):
    """fn(L, functional module, tensor maker) for ember and torch; results compared."""
    e = fn(ember, EF, lambda a: ember.tensor(a))
    t = fn(torch, TF, lambda a: torch.tensor(a))
    assert_same(e, t, 1e-4, 1e-4)


def scalar_fn(L):
    return lambda x, y: (x * y).sin().sum() + (x ** 3).sum() * y.mean()


def vector_fn(L):
    return lambda x, y: ((x * y).exp(), (x - y).tanh().sum(0))


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_and_jvp(create_graph):
    both(lambda L, F, T: F.vjp(vector_fn(L), (T(X), T(Y)), (T(V), T(V[0])), create_graph=create_graph))
    both(lambda L, F, T: F.vjp(lambda x: (x * x).sum(), T(X), create_graph=create_graph))
    both(lambda L, F, T: F.jvp(vector_fn(L), (T(X), T(Y)), (T(V), T(X)), create_graph=create_graph))
    both(lambda L, F, T: F.jvp(lambda x: x.exp() * 2, T(X), T(V), create_graph=create_graph))


def test_jacobian():
    both(lambda L, F, T: F.jacobian(lambda x: (x * x).exp(), T(X)))
    both(lambda L, F, T: F.jacobian(vector_fn(L), (T(X), T(Y))))
    both(lambda L, F, T: F.jacobian(lambda x, y: x @ y.mT, (T(X), T(Y))))


def test_jacobian_with_create_graph_is_differentiable():
    def run(L, F, T):
        x = T(X).requires_grad_()
        jac = F.jacobian(lambda a: (a ** 3).sum(1), x, create_graph=True)
        jac.sum().backward()
        return jac, x.grad
    both(run)


def test_hessian_vhp_hvp():
    both(lambda L, F, T: F.hessian(lambda x: (x ** 3).sum() + x.prod(), T(X)))
    both(lambda L, F, T: F.hessian(scalar_fn(L), (T(X), T(Y))))
    both(lambda L, F, T: F.vhp(scalar_fn(L), (T(X), T(Y)), (T(V), T(V))))
    both(lambda L, F, T: F.hvp(scalar_fn(L), (T(X), T(Y)), (T(V), T(X))))
    both(lambda L, F, T: F.hvp(lambda x: (x.sin() * x).sum(), T(X), T(V)))


def test_unused_input_gives_zeros_or_raises_in_strict_mode():
    both(lambda L, F, T: F.vjp(lambda x, y: (x * 2).sum(), (T(X), T(Y))))
    both(lambda L, F, T: F.jacobian(lambda x, y: x * 2, (T(X), T(Y))))
    for F, T in ((TF, torch.tensor), (EF, ember.tensor)):
        with pytest.raises(RuntimeError):
            F.vjp(lambda x, y: (x * 2).sum(), (T(X), T(Y)), strict=True)
        with pytest.raises(RuntimeError):
            F.vjp(lambda x: x * 2, T(X))  # v is needed for a non-scalar output
        with pytest.raises(TypeError):
            F.jacobian(lambda x: x, [1.0, 2.0])
