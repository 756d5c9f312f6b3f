"""Activation checkpointing (torch.utils.checkpoint): trade compute for memory.

``checkpoint(fn, *args)`` runs ``fn`` without recording its graph, so none of its
intermediate activations are kept; backward runs ``fn`` again on the saved inputs (with
the random generator state of the first run, so dropout draws the same mask) and
backpropagates through that second run.  Gradients reach the inputs and every parameter
``fn`` uses, also when no input requires grad (torch's non-reentrant behaviour).
"""

from __future__ import annotations

from .._tensor import Tensor
from ..autograd import backward as _backward
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ..autograd.graph import record
from ..random import get_rng_state, set_rng_state

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)``, its activations recomputed in backward instead of
    kept.  ``use_reentrant`` is accepted for torch's signature; both settings behave as
    torch's non-reentrant checkpoint.

    With ``preserve_rng_state`` (the default) the CPU default generator's state, and that of
    each CUDA device holding a tensor argument (as torch), are restored for the
    recomputation, so random ops (dropout) draw the same values. ``context_fn``,
    ``determinism_check`` and ``debug`` are accepted for torch's signature and unused
    (torch.utils.checkpoint.checkpoint)."""
    if not is_grad_enabled():
        return function(*args, **kwargs)
    rng = _rng_states(args) if preserve_rng_state else None
    with no_grad():
        outputs = function(*args, **kwargs)
    single = isinstance(outputs, Tensor)
    outs = (outputs,) if single else tuple(outputs)
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    tensor_args = tuple(args[i] for i in positions)

    def recompute(grads, *saved):
        inputs = list(args)
        fresh = [t.detach().requires_grad_(t.requires_grad) for t in saved]
        for i, t in zip(positions, fresh):
            inputs[i] = t
        grads = grads if isinstance(grads, (list, tuple)) else [grads]
        state = _rng_states(args) if rng is not None else None
        if rng is not None:
            _set_rng_states(rng)
        try:
            with enable_grad():
                again = function(*inputs, **kwargs)
        finally:
            if state is not None:
                _set_rng_states(state)
        again = (again,) if isinstance(again, Tensor) else tuple(again)
        pairs = [(o, g) for o, g in zip(again, grads)
                 if isinstance(o, Tensor) and g is not None and (o.requires_grad or o.grad_fn is not None)]
        if pairs:
            _backward([o for o, _ in pairs], [g for _, g in pairs])
        return tuple(t.grad if t.requires_grad else None for t in fresh)

    differentiable = tuple(o if isinstance(o, Tensor) and o.dtype.is_floating_point else None for o in outs)
    if any(o is not None for o in differentiable):
        record("CheckpointFunctionBackward", recompute, tensor_args, differentiable, tensor_args)
    return outs[0] if single else outputs


def _run_unchecked(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
                   preserve_rng_state=True, **kwargs):
    """``function(*args, **kwargs)`` with ``checkpoint``'s signature and no checkpointing:
    how ``ember.compile`` records a checkpointed call (its activations are kept)."""
    return function(*args, **kwargs)


def _rng_states(args):
    """The CPU default generator's state and ``(generator, state)`` of the default generator
    of each CUDA device among the tensor arguments (torch's ``get_device_states``)."""
    from ..random import default_generator
    devices = sorted({(a.device.index or 0) for a in args if isinstance(a, Tensor) and a.device.type == "cuda"})
    return get_rng_state(), [(g, g.get_state()) for g in (default_generator(f"cuda:{i}") for i in devices)]


def _set_rng_states(states) -> None:
    cpu, devices = states
    set_rng_state(cpu)
    for gen, state in devices:
        gen.set_state(state)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a Sequential (or a list of modules) as ``segments`` chunks, each checkpointed
    but the last, which runs normally (torch's split).

    ``functions`` is the Sequential or list of modules, ``input`` the first one's input;
    ``use_reentrant`` is accepted, as in ``checkpoint``, and the other keywords go to it
    (torch.utils.checkpoint.checkpoint_sequential)."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)

    def run(start, end):  # fns[start..end], inclusive
        def chunk(x):
            for f in fns[start:end + 1]:
                x = f(x)
            return x
        return chunk
    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run(end + 1, len(fns) - 1)(input)
