"""Full backward hooks of a Module (register_full_backward_hook / _pre_hook).

The call is wrapped in two identity nodes: one on the inputs that require grad and one
on the outputs.  In backward the output node runs first: it hands the gradients of the
outputs to the pre-hooks (which may replace them) and keeps them; the input node then
calls each hook with (module, grad_input, grad_output), and a hook may return a
replacement grad_input.  When no input requires grad, the hooks run from the output node
with a grad_input of Nones, as torch does.
"""

from __future__ import annotations

from ..._tensor import Tensor, _make
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.graph import record

NODE = "BackwardHookFunctionBackward"


def _alias(t: Tensor) -> Tensor:
    """A new tensor over the same memory and version counter (the identity node's output)."""
    out = _make(t._data, t.dtype)
    out._vc = t._vc
    return out


class BackwardHook:
    """The backward hooks of one call of ``module``."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.inputs_hooked = False

    def wrap_inputs(self, args: tuple) -> tuple:
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.n_inputs = len(positions)
        wanted = [i for i in positions if args[i].requires_grad]
        if not wanted or not is_grad_enabled():
            return args
        aliases = tuple(_alias(args[i]) for i in wanted)
        record(NODE, self._on_input_grads, tuple(args[i] for i in wanted), aliases)
        self.inputs_hooked = True
        self._wanted = [positions.index(i) for i in wanted]
        new = list(args)
        for i, a in zip(wanted, aliases):
            new[i] = a
        return tuple(new)

    def wrap_outputs(self, result):
        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result) if isinstance(result, (tuple, list)) else None
        if outs is None or not is_grad_enabled():
            return result
        wanted = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if not wanted:
            return result
        aliases = tuple(_alias(outs[i]) for i in wanted)
        record(NODE, self._on_output_grads, tuple(outs[i] for i in wanted), aliases)
        new = list(outs)
        for i, a in zip(wanted, aliases):
            new[i] = a
        return new[0] if single else type(result)(new)

    def _on_output_grads(self, grads):
        grads = (grads,) if isinstance(grads, Tensor) or grads is None else tuple(grads)  # one output: one grad
        for hook in list(self.pre_hooks.values()):
            res = hook(self.module, grads)
            if res is not None:
                grads = tuple(res)
        self.grad_outputs = grads
        if not self.inputs_hooked:
            for hook in list(self.hooks.values()):
                hook(self.module, (None,) * self.n_inputs, grads)
        return grads

    def _on_input_grads(self, grads):
        grads = (grads,) if isinstance(grads, Tensor) or grads is None else tuple(grads)
        full = [None] * self.n_inputs
        for k, g in zip(self._wanted, grads):
            full[k] = g
        full = tuple(full)
        for hook in list(self.hooks.values()):
            res = hook(self.module, full, self.grad_outputs)
            if res is not None:
                full = tuple(res)
        return tuple(full[k] for k in self._wanted)
