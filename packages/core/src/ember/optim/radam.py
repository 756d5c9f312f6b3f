"""RAdam: Adam with a rectified adaptive learning rate (torch.optim.RAdam; Liu et al., 2019).

Source: https://pytorch.org/docs/stable/generated/torch.optim.RAdam.html
"""

from __future__ import annotations

import math

import numpy

from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["RAdam"]


class RAdam(PerParameterOptimizer):
    """RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, ``*``, maximize=False).  The first steps, while the
    variance estimate is not yet trusted (rho_t <= 5), are plain momentum SGD.

    Source: torch.optim.RAdam; Liu et al., "On the Variance of the Adaptive Learning Rate and Beyond", 2020.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate.
        betas (tuple): the decay rates of the first moment and of the second (or infinity
            norm) estimate.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        decoupled_weight_decay (bool): decay the parameter directly (as AdamW) instead of the
            L2 term.
        maximize (bool): ascend the objective instead of descending it.
        foreach, capturable, differentiable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr, eps=eps, weight_decay=weight_decay, betas=betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def _init_state(self, p, state, group):
        state["exp_avg"] = _state_zeros_like(p)
        state["exp_avg_sq"] = _state_zeros_like(p)

    def _update(self, param, grad, state, group, step):
        beta1, beta2 = group["betas"]
        lr, wd = group["lr"], group["weight_decay"]
        if wd:
            if group["decoupled_weight_decay"]:
                param *= 1 - lr * wd
            else:
                grad = grad + wd * param
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg += (grad - exp_avg) * (1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = math.sqrt(bias_correction2) / (numpy.sqrt(exp_avg_sq) + group["eps"])
            param -= corrected * lr * adaptive * rect
        else:
            param -= corrected * lr
