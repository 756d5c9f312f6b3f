"""Adadelta (torch.optim.Adadelta; Zeiler, 2012).

Source: https://pytorch.org/docs/stable/generated/torch.optim.Adadelta.html
"""

from __future__ import annotations

import numpy

from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["Adadelta"]


class Adadelta(PerParameterOptimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, ``*``, maximize=False).
    State: 'step', 'square_avg', 'acc_delta'.

    Source: torch.optim.Adadelta; Zeiler, "ADADELTA: An Adaptive Learning Rate Method", 2012.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): scales the delta before it is applied.
        rho (float): the decay rate of the running averages, in [0, 1] (ValueError otherwise).
        eps (float): added inside the square roots for numerical stability.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        maximize (bool): ascend the objective instead of descending it.
        foreach, capturable, differentiable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize, differentiable=differentiable))

    def _init_state(self, p, state, group):
        state["square_avg"] = _state_zeros_like(p)
        state["acc_delta"] = _state_zeros_like(p)

    def _update(self, param, grad, state, group, step):
        rho, eps = group["rho"], group["eps"]
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        delta = numpy.sqrt(acc_delta + eps) / numpy.sqrt(square_avg + eps) * grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        param -= group["lr"] * delta
