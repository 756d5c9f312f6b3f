"""RMSprop (torch.optim.RMSprop; Hinton's lecture 6e), optionally centered and with momentum.

Source: https://pytorch.org/docs/stable/generated/torch.optim.RMSprop.html
"""

from __future__ import annotations

import numpy

from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["RMSprop"]


class RMSprop(PerParameterOptimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    ``*``, maximize=False).  State: 'step', 'square_avg', with momentum 'momentum_buffer', when
    centered 'grad_avg'.

    Source: torch.optim.RMSprop; Hinton's lecture 6e of "Neural Networks for Machine Learning".

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate.
        alpha (float): the smoothing constant of the squared-gradient average (negative
            raises ValueError).
        eps (float): added to the denominator for numerical stability.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        momentum (float): the momentum factor of the update (0: none).
        centered (bool): normalize by the estimated variance (the squared average minus the
            squared mean gradient) instead.
        maximize (bool): ascend the objective instead of descending it.
        capturable, foreach, differentiable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr, eps=eps, weight_decay=weight_decay, momentum=momentum)
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _init_state(self, p, state, group):
        state["square_avg"] = _state_zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = _state_zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = _state_zeros_like(p)

    def _update(self, param, grad, state, group, step):
        alpha = group["alpha"]
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        square_avg = state["square_avg"]
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state["grad_avg"]
            grad_avg += (grad - grad_avg) * (1 - alpha)
            avg = numpy.sqrt(square_avg - grad_avg * grad_avg) + group["eps"]
        else:
            avg = numpy.sqrt(square_avg) + group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf *= group["momentum"]
            buf += grad / avg
            param -= group["lr"] * buf
        else:
            param -= group["lr"] * grad / avg
