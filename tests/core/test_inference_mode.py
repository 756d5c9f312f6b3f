"""Inference tensors: made under inference_mode, checked against torch's rules."""

import pytest
import torch

import ember


def _made_in_inference_mode(L):
    with L.inference_mode():
        x = L.ones(3)
        view = x[1:]
        x.add_(1)  # in place inside the mode: allowed
        inner = L.zeros(2)
        with L.inference_mode(False):
            normal = L.zeros(2)
    return x, view, inner, normal


def test_which_tensors_are_inference_tensors():
    for L in (torch, ember):
        x, view, inner, normal = _made_in_inference_mode(L)
        assert [x.is_inference(), view.is_inference(), inner.is_inference(), normal.is_inference()] == \
            [True, True, True, False]
        assert not (x + 1).is_inference() and not x.clone().is_inference() and not L.ones(1).is_inference()
        assert x.tolist() == [2.0, 2.0, 2.0]


def _under_no_grad(L, fn):
    with L.no_grad():
        return fn()


@pytest.mark.parametrize("use", [
    lambda L, x: x.add_(1),
    lambda L, x: x.copy_(L.zeros(3)),
    lambda L, x: x.__setitem__(0, 1.0),
    lambda L, x: _under_no_grad(L, lambda: x.mul_(2)),
    lambda L, x: x._version,
    lambda L, x: x.requires_grad_(),
    lambda L, x: (L.ones(3, requires_grad=True) * x).sum(),
])
def test_misuse_outside_inference_mode_raises_as_torch(use):
    messages = []
    for L in (torch, ember):
        x = _made_in_inference_mode(L)[0]
        with pytest.raises(RuntimeError) as err:
            use(L, x)
        messages.append(str(err.value).split(".")[0])
    assert messages[0] == messages[1]


def test_inference_tensors_are_fine_as_plain_inputs():
    x = _made_in_inference_mode(ember)[0]
    w = ember.ones(3, requires_grad=True)
    (w + x).sum().backward()  # nothing of x is saved: allowed, as in torch
    assert w.grad.tolist() == [1.0, 1.0, 1.0]
    assert (x.clone().add_(1)).tolist() == [3.0, 3.0, 3.0]


def test_decorator_form():
    @ember.inference_mode()
    def predict(v):
        return v * 2
    assert predict(ember.ones(2)).is_inference()
