"""NAdam: Adam with Nesterov momentum (torch.optim.NAdam; Dozat, 2016).

Source: https://pytorch.org/docs/stable/generated/torch.optim.NAdam.html
"""

from __future__ import annotations

import numpy

from .._tensor import _make
from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["NAdam"]


class NAdam(PerParameterOptimizer):
    """NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
    decoupled_weight_decay=False, ``*``, maximize=False).  State: 'step', 'mu_product' (a
    float32 scalar, as torch keeps it), 'exp_avg', 'exp_avg_sq'.

    Source: torch.optim.NAdam; Dozat, "Incorporating Nesterov Momentum into Adam", 2016.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate.
        betas (tuple): the decay rates of the first moment and of the second (or infinity
            norm) estimate.
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        momentum_decay (float): the rate psi of the momentum schedule
            mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * psi)); negative raises ValueError.
        decoupled_weight_decay (bool): decay the parameter directly (as AdamW) instead of the
            L2 term.
        maximize (bool): ascend the objective instead of descending it.
        foreach, capturable, differentiable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr, eps=eps, weight_decay=weight_decay, betas=betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def _init_state(self, p, state, group):
        from .. import _dtype as D
        state["mu_product"] = _make(numpy.ones((), dtype=numpy.float32), D.float32)
        state["exp_avg"] = _state_zeros_like(p)
        state["exp_avg_sq"] = _state_zeros_like(p)

    def _update(self, param, grad, state, group, step):
        beta1, beta2 = group["betas"]
        lr, wd, decay = group["lr"], group["weight_decay"], group["momentum_decay"]
        if wd:
            if group["decoupled_weight_decay"]:
                param *= 1 - lr * wd
            else:
                grad = grad + wd * param
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        mu_product = state["mu_product"]
        mu_product *= numpy.float32(mu)  # float32, as torch's scalar tensor
        mp = float(mu_product)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        exp_avg += (grad - exp_avg) * (1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * grad * grad
        denom = numpy.sqrt(exp_avg_sq / (1 - beta2 ** step)) + group["eps"]
        param -= (lr * (1 - mu) / (1 - mp)) * grad / denom
        param -= (lr * mu_next / (1 - mp * mu_next)) * exp_avg / denom
