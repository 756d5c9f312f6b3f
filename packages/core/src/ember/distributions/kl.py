"""kl_divergence(p, q) for pairs of the same family, in closed form (torch.distributions.kl;
the formulas are those of the torch docs and, for Beta/Gamma/Dirichlet, Penny, "KL
divergences of Normal, Gamma, Dirichlet and Wishart densities", 2001)."""

from __future__ import annotations

import math

from .. import ops
from .continuous import Beta, Dirichlet, Gamma, MultivariateNormal, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical

_KL = {}


def register_kl(type_p, type_q):
    """A decorator registering ``fn(p, q)`` as the KL(p || q) of a distribution of class
    ``type_p`` and one of class ``type_q`` (torch.distributions.register_kl). Only the exact
    pair of classes is looked up, not their base classes."""
    def mark(fn):
        _KL[(type_p, type_q)] = fn
        return fn
    return mark


def kl_divergence(p, q):
    """``KL(p || q) = E_p[log p(x) - log q(x)]`` of the distributions ``p`` and ``q``, of their
    batch shape (torch.distributions.kl_divergence); NotImplementedError for a pair of
    classes without a registered closed form."""
    fn = _KL.get((type(p), type(q)))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return ops.where(outside, math.inf, result)


@register_kl(Bernoulli, Bernoulli)
def _bernoulli(p, q):
    from ..nn import functional as F
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = ops.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = ops.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = ops.where(p.probs == 0, 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _one_hot(p, q):
    return _categorical(p._categorical, q._categorical)


@register_kl(Gamma, Gamma)
def _gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = ops.lgamma(q.concentration) - ops.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * ops.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _dirichlet(p, q):
    a0 = p.concentration.sum(-1)
    return (ops.lgamma(a0) - ops.lgamma(q.concentration.sum(-1))
            - (ops.lgamma(p.concentration) - ops.lgamma(q.concentration)).sum(-1)
            + ((p.concentration - q.concentration)
               * (ops.digamma(p.concentration) - ops.digamma(a0.unsqueeze(-1)))).sum(-1))


@register_kl(Beta, Beta)
def _beta(p, q):
    return _dirichlet(p._dirichlet, q._dirichlet)


@register_kl(MultivariateNormal, MultivariateNormal)
def _mvn(p, q):
    from .. import linalg
    k = p.event_shape[0]
    Lq = q.scale_tril
    M = linalg.solve_triangular(Lq, p.scale_tril, upper=False)
    diff = linalg.solve_triangular(Lq, (q.loc - p.loc).unsqueeze(-1), upper=False).squeeze(-1)
    return (q._half_log_det() - p._half_log_det()
            + 0.5 * ((M ** 2).sum((-2, -1)) + (diff ** 2).sum(-1) - k))
