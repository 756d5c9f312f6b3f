"""Gradient clipping by total norm or by value (torch.nn.utils.clip_grad).

``foreach`` is accepted for torch compatibility; ember has one implementation, so the
flag changes nothing."""

from __future__ import annotations

import functools
import types
import warnings

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _no_grad(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with no_grad():
            return fn(*args, **kwargs)
    return wrapper


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


@_no_grad
def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` viewed as one vector (the norm of their
    norms); ``norm_type`` may be ``inf``.  An empty input gives ``tensor(0.)``.

    Raises RuntimeError when ``error_if_nonfinite`` and the norm is nan or inf
    (torch.nn.utils.get_total_norm).
    ``foreach``: accepted for torch compatibility, changes nothing (one implementation)."""
    from ...linalg import vector_norm
    from ...ops.creation import tensor
    from ...ops.shape import stack
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    device = tensors[0].device
    norms = [vector_norm(t, norm_type).to(device) for t in tensors]
    total = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


@_no_grad
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale every ``.grad`` in place by ``min(max_norm / (total_norm + 1e-6), 1)``
    (``torch.nn.utils.clip_grads_with_norm_``).  ``parameters``: a Tensor or an iterable of
    them (those without a gradient are skipped).  ``max_norm``: the norm to clip to;
    ``total_norm``: the 0-d total norm, e.g. from ``get_total_norm``.
    ``foreach``: accepted for torch compatibility, changes nothing (one implementation)."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.to(g.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Clip the gradients of ``parameters`` (a Tensor or an iterable) in place so their
    total ``norm_type``-norm is at most ``max_norm``; returns the total norm before
    clipping, a 0-d tensor (``torch.nn.utils.clip_grad_norm_``).  Warns on an empty generator.

    The gradients are scaled by ``min(max_norm / (total + 1e-6), 1)``.  ``norm_type`` may be
    ``inf``.  ``error_if_nonfinite``: RuntimeError when the total norm is nan or inf (else the
    gradients are scaled by it anyway).
    ``foreach``: accepted for torch compatibility, changes nothing (one implementation).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_` (warns FutureWarning, as torch): clips the
    gradients of ``parameters`` to a total ``norm_type``-norm of ``max_norm`` and returns the
    norm before clipping; ``error_if_nonfinite`` and ``foreach`` as there."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every ``.grad`` in place to ``[-clip_value, clip_value]``
    (``torch.nn.utils.clip_grad_value_``). ``parameters``: a Tensor or an iterable of them (those
    without a gradient are skipped). ``clip_value``: the positive bound.
    ``foreach``: accepted for torch compatibility, changes nothing (one implementation)."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
