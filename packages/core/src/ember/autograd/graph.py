"""Graph nodes: what an op records so that backward can run it in reverse.

A node holds its gradient rule, the edges to the nodes of its inputs
(``next_functions``, as torch names them), the tensors the rule needs (saved with the
version they had, so that an in-place change is caught) and per-input metadata used to
bring gradients back to each input's shape and dtype.  Rules are written with ember ops,
so running them in grad mode (``create_graph=True``) records the graph of the gradient.
"""

from __future__ import annotations

import itertools
import weakref

from . import grad_mode

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "record"]

_sequence = itertools.count()
_node_classes: dict = {}


class Node:
    """One recorded op. Subclassed once per name so that ``type(node).__name__`` reads
    ``MulBackward0`` as in torch."""

    __slots__ = ("next_functions", "_rule", "_saved", "_input_meta", "_seq", "_pre_hooks",
                 "_post_hooks", "_tensor_pre_hooks", "_released", "_num_outputs", "metadata",
                 "__weakref__")

    def __init__(self, rule, next_functions, saved, input_meta, num_outputs=1):
        self._rule = rule
        self.next_functions = next_functions
        self._saved = saved
        self._input_meta = input_meta
        self._seq = next(_sequence)
        self._pre_hooks = self._post_hooks = self._tensor_pre_hooks = None
        self._released = False
        self._num_outputs = num_outputs
        self.metadata = None

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after the node; may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return _RemovableHandle(self._post_hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before the node; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _RemovableHandle(self._pre_hooks, fn)

    def _add_tensor_hook(self, output_nr: int, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        hooks = self._tensor_pre_hooks.setdefault(output_nr, [])
        hooks.append(fn)
        return _RemovableHandle(hooks, fn)

    def apply(self, grads: list, retain_graph: bool):
        """Run the rule on the gradients of this node's outputs; return one per input."""
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        saved = [s.unpack(self) if type(s) is SavedTensor else s for s in self._saved]
        if not retain_graph:
            self._saved = ()
            self._released = True
        if self._num_outputs == 1:
            result = self._rule(grads[0], *saved)
        else:
            result = self._rule(grads, *saved)
        if type(result) is not tuple:
            result = (result,)
        return result

    def _release_variables(self):
        self._saved = ()
        self._released = True


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``tensor.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(None, (), (), ((variable.shape, variable.dtype),))
        self.variable = variable

    def apply(self, grads, retain_graph):
        from ..ops._helpers import accumulate_grad
        accumulate_grad(self.variable, grads[0])
        return ()


class _RemovableHandle:
    __slots__ = ("_list", "_fn")

    def __init__(self, lst, fn):
        self._list, self._fn = lst, fn

    def remove(self) -> None:
        if self._fn in self._list:
            self._list.remove(self._fn)


def node_class(name: str):
    cls = _node_classes.get(name)
    if cls is None:
        cls = _node_classes[name] = type(name, (Node,), {"__slots__": ()})
    return cls


def grad_accumulator(t) -> AccumulateGrad:
    """The one AccumulateGrad node of leaf ``t`` (kept through a weak reference)."""
    ref = t._acc
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._acc = weakref.ref(acc)
    return acc


def edge(t):
    """(node, output_nr) that gradients for tensor ``t`` flow into, or (None, 0)."""
    if t.grad_fn is not None:
        return (t.grad_fn, t._output_nr)
    if t._requires_grad:
        return (grad_accumulator(t), 0)
    return (None, 0)


class SavedTensor:
    """A tensor kept for backward, with its version at save time.

    An op's own output is stored without its grad_fn (the node owns the saved value, so
    keeping the output tensor would make a reference cycle); unpacking rebuilds it with
    the node as its grad_fn, as torch's SavedVariable does.
    """

    __slots__ = ("_tensor", "_data", "_dtype", "_vc", "_version", "_output_nr", "_requires_grad")

    def __init__(self, t, is_output: bool):
        self._vc = t._vc
        self._version = t._vc[0]
        if is_output:
            self._tensor = None
            self._data, self._dtype = t._data, t.dtype
            self._output_nr, self._requires_grad = t._output_nr, t._requires_grad
        else:
            self._tensor = t

    def unpack(self, node):
        if self._vc[0] != self._version:
            data = self._tensor._data if self._tensor is not None else self._data
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [tensor of shape {list(data.shape)}], saved by {node.name()}, "
                f"is at version {self._vc[0]}; expected version {self._version} instead.")
        if self._tensor is not None:
            return self._tensor
        t = _make(self._data, self._dtype)
        t._vc = self._vc
        if grad_mode.STATE.enabled and self._requires_grad:
            t._requires_grad = True
            t.grad_fn, t._output_nr = node, self._output_nr
        return t


def record(name: str, rule, inputs, outputs, saved=()):
    """Attach a node named ``name`` to ``outputs`` (a tensor or a tuple of tensors).

    ``rule(grad, *saved)`` (``rule(grads, *saved)`` for several outputs) returns one
    gradient per input, None where an input gets none; each gradient is brought back to
    its input's shape and dtype by the engine.  ``saved`` holds tensors (kept with
    version checks; an op's outputs are recognised and stored without a cycle) and any
    other values the rule needs.  The caller checks that some input requires grad.
    """
    edges, meta = [], []
    for t in inputs:  # one plain loop: this runs for every op that records
        if isinstance(t, Tensor):
            fn = t.grad_fn
            if fn is not None:
                edges.append((fn, t._output_nr))
            elif t._requires_grad:
                edges.append((grad_accumulator(t), 0))
            else:
                edges.append(_NO_EDGE)
            meta.append((t._data.shape, t.dtype))
        else:
            edges.append(_NO_EDGE)
            meta.append(None)
    if type(outputs) is tuple:
        outs = outputs
        node = node_class(name)(rule, tuple(edges), (), tuple(meta), len(outs))
        for i, o in enumerate(outs):
            if o is not None and o.dtype._category >= 2:  # only floating/complex outputs get history
                o.grad_fn, o._output_nr, o._requires_grad = node, i, True
    else:
        outs = (outputs,)
        node = node_class(name)(rule, tuple(edges), (), tuple(meta), 1)
        if outputs.dtype._category >= 2:
            outputs.grad_fn, outputs._requires_grad = node, True
    if saved:
        node._saved = tuple(
            SavedTensor(s, s is outs[0] or (len(outs) > 1 and any(s is o for o in outs)))
            if isinstance(s, Tensor) else s for s in saved)
    return node


_NO_EDGE = (None, 0)


from .._tensor import Tensor, _make  # noqa: E402  (the tensor module imports this one lazily)
