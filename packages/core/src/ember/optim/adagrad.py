"""Adagrad (torch.optim.Adagrad; Duchi et al., 2011).

Source: https://pytorch.org/docs/stable/generated/torch.optim.Adagrad.html
"""

from __future__ import annotations

import numpy

from .._tensor import _make
from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _step_tensor, _xp

__all__ = ["Adagrad"]


class Adagrad(PerParameterOptimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
    ``*``, maximize=False).  Its state ('step', 'sum') exists from construction, as torch's.

    Source: torch.optim.Adagrad; Duchi, Hazan and Singer, 2011.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate.
        lr_decay (float): the step size is lr / (1 + (step - 1) * lr_decay).
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to the gradient.
        initial_accumulator_value (float): the starting value of the squared-gradient sum.
        eps (float): added to the denominator for numerical stability.
        maximize (bool): ascend the objective instead of descending it.
        foreach, differentiable, fused: accepted for torch's signature and kept in the groups."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _step_tensor()
                self._init_state(p, state, group)

    def _init_state(self, p, state, group):
        state["sum"] = _make(_xp(p).full_like(p._data, group["initial_accumulator_value"]), p.dtype)

    def _update(self, param, grad, state, group, step):
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        total = state["sum"]
        total += grad * grad
        param -= clr * grad / (numpy.sqrt(total) + group["eps"])
