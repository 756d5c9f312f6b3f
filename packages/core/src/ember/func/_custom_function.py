"""Custom ``autograd.Function``s under vmap: their ``vmap`` staticmethod, or with
``generate_vmap_rule = True`` their own forward and backward run on batched tensors.

The call becomes a Function of the batches (the level's tensors unwrapped), so autograd
records it on plain tensors, and its backward re-enters the level to run the user's
backward on batched gradients (also when it runs after the vmap call returned, as in
``vmap(f)(x).sum().backward()``). Nested levels recurse: the batches may themselves be
batched at an outer level, where the same happens once more.
"""

from __future__ import annotations

import contextlib

from .._tensor import Tensor
from ._batched import active_levels, is_batched_at, pop_level, unwrap, wrap

__all__ = ["apply_batched", "is_batched_call"]


class VmapInfo:
    """What a custom Function's ``vmap`` staticmethod is told: ``batch_size``, ``randomness``."""

    def __init__(self, batch_size: int, randomness: str):
        self.batch_size, self.randomness = batch_size, randomness


def is_batched_call(args) -> bool:
    return any(isinstance(a, Tensor) and type(a)._vmap_commit is not None for a in args)


@contextlib.contextmanager
def _at(level):
    """``level`` running (its mode entered), if it is not still running."""
    if level in active_levels():
        yield
        return
    from ._batched import _LEVELS
    from ._vmap import _VmapMode
    _LEVELS.stack.append(level)
    try:
        with _VmapMode(level):
            yield
    finally:
        pop_level(level)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def apply_batched(cls, args, kwargs):
    from ..autograd.function import Function, FunctionCtx
    level = max((a._level for a in args if isinstance(a, Tensor) and type(a)._vmap_commit is not None),
                key=lambda lv: lv.id)
    uses_vmap_rule = cls.vmap is not Function.vmap
    if not uses_vmap_rule and not cls.generate_vmap_rule:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
                           f"override and implement the vmap staticmethod or set generate_vmap_rule=True.")
    if cls.setup_context is Function.setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, jacrev, "
                           "...), it must override the setup_context staticmethod.")
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    batched_in = [is_batched_at(args[i], level) for i in positions]
    state = {}

    class AtLevel(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(*fulls):
            inputs = list(args)
            for i, full, batched in zip(positions, fulls, batched_in):
                inputs[i] = wrap(full, 0, level) if batched else full
            with _at(level):
                if uses_vmap_rule:
                    in_dims = tuple(0 if isinstance(a, Tensor) and is_batched_at(a, level) else None for a in inputs)
                    raw = tuple(unwrap(a, level) for a in inputs)
                    outs, out_dims = cls.vmap(VmapInfo(level.size, level.randomness), in_dims, *raw, **kwargs)
                    dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(_as_tuple(outs))
                    outputs = tuple(o if d is None else wrap(o, d, level) for o, d in zip(_as_tuple(outs), dims))
                    outputs = outputs if isinstance(outs, tuple) else outputs[0]
                else:
                    outputs = cls.forward(*inputs, **kwargs)
                ctx = FunctionCtx()
                ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
                cls.setup_context(ctx, tuple(inputs), outputs)
                ctx._saved = ctx._to_save  # batched tensors: the batches' own versions are checked
            state["ctx"], state["single"] = ctx, not isinstance(outputs, tuple)
            fulls_out = tuple(unwrap(o, level) if is_batched_at(o, level) else
                              o.unsqueeze(0).expand(level.size, *o.shape) for o in _as_tuple(outputs))
            return fulls_out if len(fulls_out) > 1 else fulls_out[0]

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, *grads):
            with _at(level):
                got = _as_tuple(cls.backward(state["ctx"], *[wrap(g, 0, level) for g in grads]))
                result = []
                for i, full_in in zip(positions, batched_in):
                    g = got[i] if i < len(got) else None
                    if g is None:
                        result.append(None)
                    elif is_batched_at(g, level):
                        g = unwrap(g, level)
                        result.append(g if full_in else g.sum(0))  # an unmapped input: every example's part
                    else:
                        result.append(g.unsqueeze(0).expand(level.size, *g.shape) if full_in else g)
            return tuple(result)

    AtLevel.__name__ = AtLevel.__qualname__ = cls.__name__
    fulls = [unwrap(args[i], level) for i in positions]
    out = AtLevel.apply(*fulls)
    outs = tuple(wrap(o, 0, level) for o in _as_tuple(out))
    return outs[0] if state["single"] else outs
