"""ASGD: averaged stochastic gradient descent (torch.optim.ASGD; Polyak & Juditsky, 1992).

Source: https://pytorch.org/docs/stable/generated/torch.optim.ASGD.html
"""

from __future__ import annotations

import numpy

from .. import _dtype as D
from .._tensor import _make
from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["ASGD"]


class ASGD(PerParameterOptimizer):
    """ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, ``*``, maximize=False).
    State: 'step', 'eta' and 'mu' (float32 scalars, as torch's), 'ax' (the average).

    Source: torch.optim.ASGD; Polyak and Juditsky, 1992.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate.
        lambd (float): the decay term of the step size eta.
        alpha (float): the power of the step size's decay.
        t0 (float): the step from which the parameters are averaged.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        maximize (bool): ascend the objective instead of descending it.
        foreach, differentiable, capturable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None, maximize=False,
                 differentiable=False, capturable=False):
        _check_lr(lr, weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init_state(self, p, state, group):
        state["eta"] = _make(numpy.asarray(group["lr"], dtype=numpy.float32), D.float32)
        state["mu"] = _make(numpy.ones((), dtype=numpy.float32), D.float32)
        state["ax"] = _state_zeros_like(p)

    def _update(self, param, grad, state, group, step):
        lr, lambd, alpha = group["lr"], group["lambd"], group["alpha"]
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        eta, mu, ax = state["eta"], state["mu"], state["ax"]
        eta_value = float(eta)
        param *= 1 - lambd * eta_value
        param -= eta_value * grad
        if float(mu) != 1:
            ax += (param - ax) * float(mu)
        else:
            ax[...] = param
        eta[...] = lr / ((1 + lambd * lr * step) ** alpha)
        mu[...] = 1 / max(1, step - group["t0"])
