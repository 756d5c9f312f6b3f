"""ember.distributions against torch.distributions: densities, entropies, moments and KL
divergences (with their gradients) must match; samples are checked by their statistics
(the two libraries draw from different generators)."""

import numpy as np
import pytest
import torch
from conftest import assert_same

import ember

R = np.random.default_rng(0)


def params(*shape, lo=0.5, hi=2.0):
    return R.uniform(lo, hi, size=shape).astype(np.float32)


def simplex(*shape):
    v = params(*shape)
    return (v / v.sum(-1, keepdims=True)).astype(np.float32)


def lower_tri(n):
    m = np.tril(R.uniform(-0.5, 0.5, size=(n, n))) + np.diag(R.uniform(0.5, 1.5, size=n))
    return m.astype(np.float32)


# name: (constructor arguments as arrays, a value in the support, differentiable params)
CASES = {
    "Normal": ((params(3) - 1, params(3)), params(3) - 1),
    "Uniform": ((params(3) - 2, params(3)), params(3) - 1.0),
    "Gamma": ((params(3), params(3)), params(3)),
    "Beta": ((params(3), params(3)), simplex(3, 2)[:, 0].copy()),
    "Dirichlet": ((params(2, 3),), simplex(2, 3)),
    "Bernoulli": ((simplex(3, 2)[:, 0].copy(),), np.array([1.0, 0.0, 1.0], np.float32)),
    "Categorical": ((simplex(2, 4),), np.array([3, 0])),
    "OneHotCategorical": ((simplex(2, 4),), np.eye(4, dtype=np.float32)[[1, 2]]),
    "MultivariateNormal": ((params(3) - 1, None, None, lower_tri(3)), params(3) - 1),
}


def _build(L, name, requires_grad=True):
    args, value = CASES[name]
    tensors = [None if a is None else L.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f")
               for a in args]
    dist = getattr(L.distributions, name)(*tensors)
    return dist, [t for t in tensors if t is not None and t.requires_grad], L.tensor(value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_entropy_moments_and_their_gradients(name):
    out = []
    for L in (ember, torch):
        dist, leaves, value = _build(L, name)
        if name == "Uniform":  # the value must lie inside each interval
            value = (dist.low + dist.high).detach() / 2
        lp = dist.log_prob(value)
        ent = dist.entropy()
        (lp.sum() + ent.sum()).backward()
        moments = [dist.mean, dist.variance] if name not in ("Categorical",) else []
        out.append((lp, ent, [m.detach() for m in moments], [t.grad for t in leaves], tuple(dist.batch_shape),
                    tuple(dist.event_shape)))
    assert_same(out[0], out[1], 1e-4, 1e-4)


def _other(L, name):
    """A second distribution of the same family with other parameters."""
    args, _ = CASES[name]
    if name in ("Categorical", "OneHotCategorical", "Bernoulli", "Dirichlet"):  # probabilities stay probabilities
        return getattr(L.distributions, name)(L.tensor(np.flip(args[0], -1).copy()))
    return getattr(L.distributions, name)(*[None if a is None else L.tensor(a * 1.3) for a in args])


@pytest.mark.parametrize("name", sorted(CASES))
def test_kl_divergence_and_its_gradient(name):
    out = []
    for L in (ember, torch):
        p, leaves, _ = _build(L, name)
        kl = L.distributions.kl_divergence(p, _other(L, name))
        kl.sum().backward()
        out.append((kl, [t.grad for t in leaves]))
    assert_same(out[0], out[1], 1e-4, 1e-4)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_shapes_and_statistics(name):
    ember.manual_seed(0)
    dist, _, _ = _build(ember, name, requires_grad=False)
    tdist, _, _ = _build(torch, name, requires_grad=False)
    n = 20000
    s = dist.sample((n,))
    assert tuple(s.shape) == tuple(tdist.sample((n,)).shape)
    if name == "Categorical":
        freq = np.stack([(s.numpy() == k).mean(0) for k in range(4)], -1)
        np.testing.assert_allclose(freq, tdist.probs.numpy(), atol=0.02)
        return
    mean, var = tdist.mean.numpy(), tdist.variance.numpy()
    np.testing.assert_allclose(s.numpy().mean(0), mean, atol=5 * np.sqrt(var.max() / n) + 1e-3)
    np.testing.assert_allclose(s.numpy().var(0), var, rtol=0.1, atol=1e-3)


@pytest.mark.parametrize("name", ["Normal", "Uniform", "MultivariateNormal", "Gamma", "Beta", "Dirichlet"])
def test_rsample_gradient_is_the_gradient_of_the_mean(name):
    """d/dtheta of the average of many reparameterized samples ~ d/dtheta of the mean."""
    ember.manual_seed(1)
    dist, leaves, _ = _build(ember, name)
    dist.rsample((40000,)).mean(0).sum().backward()
    sampled = [t.grad.numpy().copy() for t in leaves]
    dist2, leaves2, _ = _build(ember, name)
    dist2.mean.sum().backward()
    for g, t in zip(sampled, leaves2):  # a parameter the mean does not depend on gets no gradient
        expected = t.grad.numpy() if t.grad is not None else np.zeros_like(g)
        np.testing.assert_allclose(g, expected, atol=0.05)


def test_errors_match_torch():
    for L in (torch, ember):
        with pytest.raises(ValueError):
            L.distributions.Bernoulli(probs=L.tensor(0.5), logits=L.tensor(0.0))
        with pytest.raises(ValueError):
            L.distributions.MultivariateNormal(L.zeros(2))
        with pytest.raises(NotImplementedError):
            L.distributions.kl_divergence(L.distributions.Categorical(L.ones(3)), L.distributions.Normal(0.0, 1.0))
