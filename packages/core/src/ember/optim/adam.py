"""Adam, with amsgrad, L2 weight decay and maximize (torch.optim.Adam).

Source: https://pytorch.org/docs/stable/generated/torch.optim.Adam.html
"""

from __future__ import annotations

import math

import numpy

from .._blas import axpby, axpy
from ..cpu import kernels
from ..cuda.kernels import optim as cuda_optim
from ._per_parameter import PerParameterOptimizer
from .optimizer import _check_lr, _state_zeros_like

__all__ = ["Adam", "adam_update"]


def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, step: float, lr: float, beta1: float,
                beta2: float, eps: float, weight_decay: float, amsgrad: bool, maximize: bool,
                decoupled_weight_decay: bool, xp) -> None:
    """One Adam/AdamW step on arrays, in place, in torch's order of operations.

    ``param``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq`` when ``amsgrad``) have
    the parameter's shape and dtype; ``step`` is the step number after incrementing (>= 1).
    ``decoupled_weight_decay`` selects AdamW's ``param *= 1 - lr * weight_decay`` over
    Adam's L2 term added to the gradient.  ``xp`` is the array module (numpy or cupy);
    one scratch array holds every intermediate.  Numpy float32/float64 arrays, all
    C-contiguous, take the one-pass kernel (``cpu/kernels/optim.py``) instead.
    """
    g = -grad if maximize else grad
    arrays = (param, g, exp_avg, exp_avg_sq) + ((max_exp_avg_sq,) if amsgrad else ())
    if kernels.accepts(*arrays) and all(a.flags.c_contiguous for a in arrays):
        kernels.optim.adam(param, g, exp_avg, exp_avg_sq, max_exp_avg_sq, step=step, lr=lr, beta1=beta1,
                           beta2=beta2, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                           decoupled_weight_decay=decoupled_weight_decay)
        return
    if weight_decay != 0:
        if decoupled_weight_decay:
            param *= 1 - lr * weight_decay
        else:
            g = g + weight_decay * param
    scratch = xp.empty_like(exp_avg)  # an array even for a 0-d parameter (ufuncs return scalars there)
    axpby(1 - beta1, g, beta1, exp_avg)  # exp_avg.lerp_(g, 1 - beta1)
    xp.multiply(g, g, out=scratch)
    axpby(1 - beta2, scratch, beta2, exp_avg_sq)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
    if amsgrad:
        xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        xp.sqrt(max_exp_avg_sq, out=scratch)
    else:
        xp.sqrt(exp_avg_sq, out=scratch)
    scratch /= bias_correction2_sqrt
    scratch += eps
    xp.divide(exp_avg, scratch, out=scratch)
    axpy(-lr / bias_correction1, scratch, param)  # param.addcdiv_(exp_avg, denom, value=-step_size)


class Adam(PerParameterOptimizer):
    """Adam: adaptive moment estimation (torch.optim.Adam; Kingma and Ba, 2015).

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate; default 1e-3.
        betas (tuple): the decay rates of the first and second moment
            averages; default (0.9, 0.999).
        eps (float): added to the denominator for numerical stability; default 1e-8.
        weight_decay (float): an L2 penalty added to the gradient; default 0.
        amsgrad (bool): divide by the running maximum of the second moment
            (AMSGrad); default False.
        maximize (bool): ascend the objective instead of descending it; default False.
        decoupled_weight_decay (bool): True makes it AdamW; default False.
        foreach, capturable, differentiable, fused: accepted for torch's signature and kept
            in the groups (the update is the same).

    State per parameter: ``'step'`` (float32 0-d tensor), ``'exp_avg'``, ``'exp_avg_sq'``
    and, with amsgrad, ``'max_exp_avg_sq'`` (shaped and typed like the parameter).

    Raises:
        ValueError: lr, eps or weight_decay negative, a beta outside [0, 1)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr(lr, eps=eps, weight_decay=weight_decay, betas=betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            for key, value in (("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                               ("differentiable", False), ("fused", None),
                               ("decoupled_weight_decay", False)):
                group.setdefault(key, value)

    def _init_state(self, p, state, group):
        state["exp_avg"] = _state_zeros_like(p)
        state["exp_avg_sq"] = _state_zeros_like(p)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _state_zeros_like(p)

    def _update_group(self, group, updates):
        """cupy parameters of the kernels' dtypes in one fused launch; the rest one by one."""
        fused = [u for u in updates if type(u[0]) is not numpy.ndarray and _fusable(*u)]
        if fused:
            beta1, beta2 = group["betas"]
            cuda_optim.adam([(p, g, s["exp_avg"], s["exp_avg_sq"], s.get("max_exp_avg_sq"), step)
                             for p, g, s, step in fused],
                            lr=float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                            weight_decay=group["weight_decay"], amsgrad=group["amsgrad"],
                            decoupled_weight_decay=group["decoupled_weight_decay"])
        super()._update_group(group, [u for u in updates if not any(u is f for f in fused)])

    def _update(self, param, grad, state, group, step):
        beta1, beta2 = group["betas"]
        xp = numpy if type(param) is numpy.ndarray else _array_module(param)
        adam_update(param, grad, state["exp_avg"], state["exp_avg_sq"], state.get("max_exp_avg_sq"), step=step,
                    lr=float(group["lr"]), beta1=beta1, beta2=beta2, eps=group["eps"],
                    weight_decay=group["weight_decay"], amsgrad=group["amsgrad"], maximize=False,
                    decoupled_weight_decay=group["decoupled_weight_decay"], xp=xp)


def _fusable(param, grad, state, step) -> bool:
    """Whether the fused cuda kernel takes this parameter: all its arrays C-contiguous cupy
    arrays of the parameter's dtype and shape."""
    arrays = [param, grad, state["exp_avg"], state["exp_avg_sq"]]
    if "max_exp_avg_sq" in state:
        arrays.append(state["max_exp_avg_sq"])
    return cuda_optim.accepts(*arrays) and all(a.dtype == param.dtype and a.shape == param.shape for a in arrays)


def _array_module(arr):
    from ..backends import backend_of_array
    return backend_of_array(arr).xp
