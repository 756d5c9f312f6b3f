"""Activation checkpointing gives the gradients of the plain run, with torch's."""

import numpy as np
import pytest
import torch
from conftest import assert_same

import ember
import ember.utils.checkpoint  # noqa: F401


def _model(L):
    L.manual_seed(0)
    nn = L.nn
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))


def _copy_weights(src, dst):
    for (_, p), (_, q) in zip(src.named_parameters(), dst.named_parameters()):
        with torch.no_grad():
            q.copy_(torch.tensor(p.detach().numpy()))


X = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)


@pytest.mark.parametrize("input_requires_grad", [False, True])
@pytest.mark.parametrize("how", ["checkpoint", "sequential"])
def test_checkpoint_gradients_match_the_plain_run_and_torch(how, input_requires_grad):
    results = []
    em = _model(ember)
    tm = _model(torch)
    _copy_weights(em, tm)
    for L, model in ((ember, em), (torch, tm)):
        x = L.tensor(X, requires_grad=input_requires_grad)
        if how == "checkpoint":
            first_two = model[:2]
            hidden = L.utils.checkpoint.checkpoint(first_two, x, use_reentrant=False)
            out = model[4](model[3](model[2](hidden)))
        else:
            out = L.utils.checkpoint.checkpoint_sequential(model, 2, x, use_reentrant=False)
        (out ** 2).sum().backward()
        results.append((out.detach(), [p.grad for p in model.parameters()], x.grad))
    assert_same(results[0], results[1], 1e-5, 1e-5)
    # and the same as without checkpointing
    for p in em.parameters():
        p.grad = None
    x = ember.tensor(X, requires_grad=input_requires_grad)
    (em(x) ** 2).sum().backward()
    assert_same([p.grad for p in em.parameters()], [torch.tensor(g.numpy()) for g in results[0][1]], 1e-6, 1e-6)


def test_dropout_is_replayed_with_the_same_mask():
    ember.manual_seed(3)
    w = ember.ones(100, requires_grad=True)
    out = ember.utils.checkpoint.checkpoint(lambda a: ember.nn.functional.dropout(a * 2, 0.5), w, use_reentrant=False)
    out.sum().backward()
    # the gradient is 4 where the forward kept an element and 0 where it dropped it
    np.testing.assert_array_equal(w.grad.numpy(), (out.detach().numpy() != 0) * 4.0)


def test_no_graph_is_kept_for_the_checkpointed_part():
    x = ember.ones(3, requires_grad=True)
    out = ember.utils.checkpoint.checkpoint(lambda a: (a * 2).exp(), x, use_reentrant=False)
    assert type(out.grad_fn).__name__ == "CheckpointFunctionBackward"
    assert [type(n).__name__ for n, _ in out.grad_fn.next_functions] == ["AccumulateGrad"]
