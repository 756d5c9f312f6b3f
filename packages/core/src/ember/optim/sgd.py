"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (torch.optim.SGD).

Source: https://pytorch.org/docs/stable/generated/torch.optim.SGD.html
"""

from __future__ import annotations

from .._blas import axpby, axpy
from ..cuda.kernels import optim as cuda_optim
from .optimizer import Optimizer, _check_lr, _step_wrapper

__all__ = ["SGD", "sgd_update"]


def sgd_update(param, grad, buf, *, lr: float, momentum: float, dampening: float, weight_decay: float,
               nesterov: bool, maximize: bool, first: bool):
    """One SGD step on arrays, in place: ``param`` is updated, ``buf`` (the momentum buffer,
    same shape and dtype as ``param``; None when ``momentum == 0``) is updated or, on the
    ``first`` step, filled with the gradient.  Arrays are numpy or cupy; the math stays in
    the parameter's dtype, and no pass is spent on a factor of 1.
    """
    d = grad if grad.dtype == param.dtype else grad.astype(param.dtype)
    if maximize:
        d = -d
    if weight_decay != 0:
        d = d + weight_decay * param
    if momentum != 0:
        if first:
            buf[...] = d
        else:
            axpby(1 - dampening, d, momentum, buf)
        d = d + momentum * buf if nesterov else buf
    axpy(-lr, d, param)


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum (torch.optim.SGD).

    On a GPU, the cupy float32/float64 parameters of a group are updated by one fused kernel
    launch (``cuda/kernels/optim.py``, the same arithmetic as ``sgd_update``).

    Args:
        params: the parameters (tensors that require grad), or parameter groups (dicts with
            ``params`` and per-group options).
        lr (float): the learning rate; default 1e-3.
        momentum (float): the momentum factor, default 0 (plain SGD).
        dampening (float): the new gradient enters the momentum buffer scaled by
            1 - dampening; default 0.
        weight_decay (float): an L2 penalty, ``weight_decay * param`` added to
            the gradient; default 0.
        nesterov (bool): Nesterov momentum (needs momentum > 0 and dampening 0); default False.
        maximize (bool): ascend the objective instead of descending it; default False.
        foreach, differentiable, fused: accepted for torch's signature and kept in the
            groups (the update is the same).

    Raises:
        ValueError: a negative lr, momentum or weight_decay, or Nesterov momentum
            without momentum or with dampening."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr, momentum=momentum, weight_decay=weight_decay)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    @_step_wrapper
    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()``'s loss if given."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = group["momentum"]
            fused = []  # cupy parameters of the kernels' dtypes: one launch for the group
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad._data
                if type(grad) is not type(p._data):
                    raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                                       f"devices, {p.device} and {p.grad.device}!")
                buf, first = None, False
                if momentum != 0:
                    state = self.state[p]
                    if state.get("momentum_buffer") is None:
                        from .optimizer import _state_zeros_like
                        state["momentum_buffer"] = _state_zeros_like(p)
                        first = True
                    buf_t = state["momentum_buffer"]
                    buf = buf_t._data
                if _fusable(p._data, grad, buf):
                    fused.append((p._data, grad, buf, first))
                else:
                    sgd_update(p._data, grad, buf, lr=lr, momentum=momentum, dampening=group["dampening"],
                               weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                               maximize=group["maximize"], first=first)
                p._vc[0] += 1
                if buf is not None:
                    buf_t._vc[0] += 1
            if fused:
                cuda_optim.sgd(fused, lr=lr, momentum=momentum, dampening=group["dampening"],
                               weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                               maximize=group["maximize"])
        return loss


def _fusable(param, grad, buf) -> bool:
    """Whether the fused cuda kernel takes this parameter: its arrays C-contiguous cupy arrays
    of the parameter's dtype and shape (numpy parameters never reach the kernel)."""
    arrays = (param, grad) if buf is None else (param, grad, buf)
    return type(param).__module__.startswith("cupy") and cuda_optim.accepts(*arrays) and all(
        a.dtype == param.dtype and a.shape == param.shape for a in arrays)
