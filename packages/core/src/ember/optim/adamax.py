"""Adamax: Adam with the infinity norm (torch.optim.Adamax).

Source: https://pytorch.org/docs/stable/generated/torch.optim.Adamax.html
"""

from __future__ import annotations

import numpy

from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["Adamax"]


class Adamax(PerParameterOptimizer):
    """Adamax(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, ``*``, maximize=False).
    State: 'step', 'exp_avg', 'exp_inf'.  ValueError for invalid hyper-parameters.

    Source: torch.optim.Adamax; the infinity-norm variant of Adam, Kingma and Ba, 2015.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate.
        betas (tuple): the decay rates of the first moment and of the second (or infinity
            norm) estimate.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        maximize (bool): ascend the objective instead of descending it.
        foreach, differentiable, capturable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr, eps=eps, weight_decay=weight_decay, betas=betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _init_state(self, p, state, group):
        state["exp_avg"] = _state_zeros_like(p)
        state["exp_inf"] = _state_zeros_like(p)

    def _update(self, param, grad, state, group, step):
        beta1, beta2 = group["betas"]
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        exp_avg += (grad - exp_avg) * (1 - beta1)  # lerp
        exp_inf *= beta2
        numpy.maximum(exp_inf, numpy.abs(grad) + group["eps"], out=exp_inf)
        clr = group["lr"] / (1 - beta1 ** step)
        param -= clr * exp_avg / exp_inf
