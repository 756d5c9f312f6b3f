"""Custom differentiable functions: ``class F(ember.autograd.Function)`` with static
``forward(ctx, ...)`` and ``backward(ctx, *grads)``, called as ``F.apply(...)``."""

from __future__ import annotations

import functools

from . import grad_mode
from .graph import SavedTensor, record, saved_tensor

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    """The ``ctx`` handed to forward and backward (torch.autograd.function.FunctionCtx)."""

    def __init__(self):
        self._to_save = ()
        self._saved = None
        self._node = None
        self._dirty = ()
        self._non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward; modifying them in place afterwards makes backward raise."""
        self._to_save = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            return ()
        if self._saved == "released":
            raise RuntimeError("Trying to backward through the graph a second time (or directly access saved "
                               "tensors after they have already been freed). Specify retain_graph=True if you "
                               "need to backward through the graph a second time.")
        return tuple(s.unpack(self._node) if isinstance(s, SavedTensor) else s for s in self._saved)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_name = f"{name}Backward"


class Function(metaclass=_FunctionMeta):
    """Base class of custom autograd functions (torch.autograd.Function)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with grad_mode.no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        for t in ctx._dirty:
            t._vc[0] += 1
        if grad_mode.STATE.enabled and any(ctx.needs_input_grad):
            from ..ops._helpers import check_inplace
            for t in ctx._dirty:
                check_inplace(t)
            tensor_outs = tuple(o if isinstance(o, Tensor) and not any(o is n for n in ctx._non_differentiable)
                                else None for o in outs)
            meta = tuple((o.shape, o.dtype) if o is not None else None for o in tensor_outs)
            rule = functools.partial(_run_backward, cls, ctx, len(args), meta)
            node = record(cls._backward_name, rule, args, tensor_outs if len(outs) > 1 else tensor_outs[0])
            ctx._node = node
            ctx._saved = tuple(saved_tensor(t, any(t is o for o in outs)) if isinstance(t, Tensor) else t
                               for t in ctx._to_save)
        else:
            ctx._saved = ctx._to_save
        return outputs


def _run_backward(cls, ctx, n_inputs, out_meta, grads):
    grads = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    if ctx.materialize_grads:
        from ..ops.creation import zeros
        grads = [zeros(m[0], dtype=m[1]) if g is None and m is not None else g for g, m in zip(grads, out_meta)]
    result = cls.backward(ctx, *grads)
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != n_inputs:
        if len(result) < n_inputs or any(r is not None for r in result[n_inputs:]):
            raise RuntimeError(f"function {cls._backward_name} returned an incorrect number of gradients "
                               f"(expected {n_inputs}, got {len(result)})")
        result = result[:n_inputs]
    return result


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs under no_grad."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            return fn(ctx, *args)
    return wrapper
