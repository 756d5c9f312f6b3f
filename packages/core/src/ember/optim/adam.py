"""Adam, with amsgrad, L2 weight decay and maximize (torch.optim.Adam).

Source: https://pytorch.org/docs/stable/generated/torch.optim.Adam.html
"""

from __future__ import annotations

import math

from .._blas import axpby, axpy
from .optimizer import Optimizer, _check_lr, _state_zeros_like, _step_tensor, _step_wrapper

__all__ = ["Adam", "adam_update"]


def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, step: float, lr: float, beta1: float,
                beta2: float, eps: float, weight_decay: float, amsgrad: bool, maximize: bool,
                decoupled_weight_decay: bool, xp) -> None:
    """One Adam/AdamW step on arrays, in place, in torch's order of operations.

    ``param``, ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq`` when ``amsgrad``) have
    the parameter's shape and dtype; ``step`` is the step number after incrementing (>= 1).
    ``decoupled_weight_decay`` selects AdamW's ``param *= 1 - lr * weight_decay`` over
    Adam's L2 term added to the gradient.  ``xp`` is the array module (numpy or cupy);
    one scratch array holds every intermediate.
    """
    g = -grad if maximize else grad
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


class Adam(Optimizer):
    """Adam: adaptive moment estimation.

    Args:
        params: parameters (tensors that require grad) or parameter groups.
        lr (float, default 1e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0, an
        L2 penalty added to the gradient), amsgrad (False), maximize (False),
        decoupled_weight_decay (False: True makes it AdamW); foreach, capturable,
        differentiable and fused are accepted and kept in the groups.

    State per parameter: ``'step'`` (float32 0-d tensor), ``'exp_avg'``, ``'exp_avg_sq'``
    and, with amsgrad, ``'max_exp_avg_sq'`` (shaped and typed like the parameter).

    Raises:
        ValueError: lr, eps or weight_decay negative, a beta outside [0, 1).
    """

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

    @_step_wrapper
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given.

        Raises RuntimeError for a sparse gradient (ember has none) or a gradient on
        another device.
        """
        loss = self._run_closure(closure)
        from .optimizer import _xp
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = float(group["lr"])
            for p in group["params"]:
                if p.grad is None:
                    continue
                if type(p.grad._data) is not type(p._data):
                    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                                       f"devices, {p.device} and {p.grad.device}!")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _step_tensor()
                    state["exp_avg"] = _state_zeros_like(p)
                    state["exp_avg_sq"] = _state_zeros_like(p)
                    if group["amsgrad"]:
                        state["max_exp_avg_sq"] = _state_zeros_like(p)
                step_t = state["step"]
                step_t._data += 1
                step_t._vc[0] += 1
                amsgrad = group["amsgrad"]
                adam_update(p._data, p.grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                            state["max_exp_avg_sq"]._data if amsgrad else None, step=float(step_t._data),
                            lr=lr, beta1=beta1, beta2=beta2, eps=group["eps"],
                            weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
                            decoupled_weight_decay=group["decoupled_weight_decay"], xp=_xp(p))
                p._vc[0] += 1
                for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
                    if key in state:
                        state[key]._vc[0] += 1
        return loss
