"""Rprop: resilient backpropagation (torch.optim.Rprop; Riedmiller & Braun, 1993).

Source: https://pytorch.org/docs/stable/generated/torch.optim.Rprop.html
"""

from __future__ import annotations

import numpy

from .._tensor import _make
from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like, _xp

__all__ = ["Rprop"]


class Rprop(PerParameterOptimizer):
    """Rprop(params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), ``*``, maximize=False): each
    weight's step grows by etas[1] while its gradient keeps its sign and shrinks by
    etas[0] when it flips (that step then skipped).  State: 'step', 'prev', 'step_size'.

    Source: torch.optim.Rprop; Riedmiller and Braun, 1993.

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the initial step size of every weight.
        etas (tuple): the (decrease, increase) factors, with 0 < etas[0] < 1 < etas[1]
            (ValueError otherwise).
        step_sizes (tuple): the (smallest, largest) step size allowed.
        maximize (bool): ascend the objective instead of descending it.
        capturable, foreach, differentiable: accepted for torch's signature and kept in the
            groups."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, capturable=capturable,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable))

    def _init_state(self, p, state, group):
        state["prev"] = _state_zeros_like(p)
        state["step_size"] = _make(_xp(p).full_like(p._data, group["lr"]), p.dtype)

    def _update(self, param, grad, state, group, step):
        eta_minus, eta_plus = group["etas"]
        low, high = group["step_sizes"]
        prev, step_size = state["prev"], state["step_size"]
        same = numpy.sign(grad * prev)
        factor = numpy.where(same > 0, eta_plus, numpy.where(same < 0, eta_minus, 1.0)).astype(param.dtype)
        step_size *= factor
        numpy.clip(step_size, low, high, out=step_size)
        grad = numpy.where(same < 0, 0, grad).astype(param.dtype)
        param -= numpy.sign(grad) * step_size
        prev[...] = grad
