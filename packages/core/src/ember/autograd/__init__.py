"""ember.autograd: reverse-mode automatic differentiation (torch.autograd's API)."""

from __future__ import annotations

from .._legacy import Variable  # noqa: F401  (deprecated by torch; kept for old programs)
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .engine import run_backward
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .graph import Node

__all__ = ["backward", "grad", "detect_anomaly", "set_detect_anomaly", "Function", "FunctionCtx",
           "once_differentiable", "gradcheck", "gradgradcheck", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "Node"]


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _make_grads(outputs, grad_outputs):
    import numpy

    from .._tensor import _make
    from ..ops.creation import ones_like
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
            data = out._data  # ones_like's dtype and device dispatch, for the common numpy case
            g = _make(numpy.ones(data.shape, data.dtype), out.dtype) if type(data) is numpy.ndarray else ones_like(out)
        elif g.shape != out.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] "
                               f"has a shape of {out.shape}.")
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves they depend on
    (only of ``inputs`` when given). The graph is freed unless ``retain_graph``.

    ``grad_tensors`` are the gradients of ``tensors`` (None for a 0-d one means 1); with
    ``create_graph`` the backward pass is itself recorded (for higher derivatives, and
    ``retain_graph`` then defaults to True) (torch.autograd.backward)."""
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_list(inputs)
    if inputs is not None and not inputs:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(tensors, _make_grads(tensors, grads), retain_graph, create_graph, inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated).

    Raises RuntimeError when an input is not used in the graph, unless ``allow_unused``
    (then its gradient is None, or zeros with ``materialize_grads``).

    ``grad_outputs`` are the vectors the Jacobians are multiplied by (None for a 0-d output
    means 1); ``retain_graph`` keeps the graph (default: ``create_graph``); with
    ``create_graph`` the gradients are themselves differentiable. ``only_inputs`` is
    accepted (deprecated in torch, always True) and ``is_grads_batched`` is accepted and
    ignored (torch.autograd.grad)."""
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    result = run_backward(outputs, _make_grads(outputs, grads), retain_graph, create_graph, inputs,
                          accumulate=False)
    out = []
    for _i, (x, g) in enumerate(zip(inputs, result)):
        if g is None:
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                from ..ops.creation import zeros_like
                g = zeros_like(x)
        out.append(g)
    return tuple(out)




from . import functional  # noqa: E402  (it uses grad, defined above)


def __getattr__(name):
    # torch.autograd.profiler, loaded on first use (it pulls in the profiler)
    if name == "profiler":
        import importlib
        return importlib.import_module(".profiler", __name__)
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")
