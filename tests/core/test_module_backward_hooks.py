"""Module full backward hooks and pre-hooks against torch."""

import numpy as np
import torch
from conftest import assert_same

import ember

X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)


def _pair():
    em, tm = ember.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(em.weight.detach().numpy()))
        tm.bias.copy_(torch.tensor(em.bias.detach().numpy()))
    return em, tm


def _run(L, model, x_requires_grad, scale_grad_input=False, scale_grad_output=False):
    seen = []

    def hook(module, grad_input, grad_output):
        seen.append(("hook", module is model, grad_input, grad_output))
        if scale_grad_input and grad_input[0] is not None:
            return (grad_input[0] * 10,)

    def pre_hook(module, grad_output):
        seen.append(("pre", grad_output))
        if scale_grad_output:
            return (grad_output[0] * 3,)
    h1 = model.register_full_backward_hook(hook)
    h2 = model.register_full_backward_pre_hook(pre_hook)
    x = L.tensor(X, requires_grad=x_requires_grad)
    (model(x) ** 2).sum().backward()
    h1.remove()
    h2.remove()
    (model(L.tensor(X)) * 0).sum().backward()  # removed hooks do not run
    return seen, x.grad, model.weight.grad


def test_hook_sees_input_and_output_gradients():
    em, tm = _pair()
    assert_same(_run(ember, em, True), _run(torch, tm, True))


def test_input_without_grad_gives_none_in_grad_input():
    em, tm = _pair()
    assert_same(_run(ember, em, False), _run(torch, tm, False))


def test_hooks_may_replace_gradients():
    em, tm = _pair()
    assert_same(_run(ember, em, True, scale_grad_input=True, scale_grad_output=True),
                _run(torch, tm, True, scale_grad_input=True, scale_grad_output=True))
