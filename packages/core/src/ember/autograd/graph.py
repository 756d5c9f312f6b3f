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
from .anomaly_mode import STATE as _ANOMALY
from .anomaly_mode import remember_forward

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "record", "on_arrays"]

_sequence = itertools.count()
_node_classes: dict = {}
# Accumulators run before every other ready node, as torch gives them the largest sequence
# number: a parameter's gradient lands (and its post-accumulate hooks, DDP's bucket
# all-reduces among them, run) as soon as it is ready, not after the rest of backward.
_ACCUMULATE_FIRST = 1 << 62


class Node:
    """One recorded op. Subclassed once per name so that ``type(node).__name__`` reads
    ``MulBackward0`` as in torch.  ``_saved`` is None once backward has freed it.

    Made by ember's ops, not by users: ``rule`` maps the output gradients to the input
    ones, ``edges`` lists ``(node, output_nr)`` per input (where its gradient goes),
    ``saved`` holds what the rule needs, ``num_outputs`` the number of outputs
    (torch.autograd.graph.Node)."""

    __slots__ = ("_edges", "_rule", "_saved", "_seq", "_num_outputs", "_hooks", "__weakref__")

    def __init__(self, rule, edges, saved, num_outputs=1):
        self._rule = rule
        self._edges = edges
        self._saved = saved
        self._seq = next(_sequence)
        self._num_outputs = num_outputs
        self._hooks = None

    @property
    def next_functions(self) -> tuple:
        """``(node, output_nr)`` for each input: where its gradient goes ((None, 0) for an
        input that needs none)."""
        return tuple((e[0], e[1]) for e in self._edges)

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {id(self):#x}>"

    def _hook_lists(self) -> "_NodeHooks":
        if self._hooks is None:
            self._hooks = _NodeHooks()
        return self._hooks

    @property
    def metadata(self) -> dict:
        """A dict for the user's own annotations (torch's ``Node.metadata``)."""
        hooks = self._hook_lists()
        if hooks.metadata is None:
            hooks.metadata = {}
        return hooks.metadata

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after the node; may return new grad_inputs."""
        return _RemovableHandle(self._hook_lists().post, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before the node; may return new grad_outputs."""
        return _RemovableHandle(self._hook_lists().pre, fn)

    def _add_tensor_hook(self, output_nr: int, fn, last: bool = False):
        """Add a hook on output ``output_nr``'s gradient. The one ``retain_grad`` adds
        (``last=True``) stays after all others, so ``.grad`` holds what the other hooks
        made of the gradient, as in torch."""
        hooks = self._hook_lists().tensor_pre.setdefault(output_nr, [])
        handle = _RemovableHandle(hooks, fn)
        if last:
            fn._runs_last = True
        else:
            keep = [h for h in hooks if getattr(h, "_runs_last", False)]
            for h in keep:
                hooks.remove(h)
            hooks.extend(keep)
        return handle

    def _unpack_saved(self, retain_graph: bool) -> list:
        saved = self._saved
        if saved is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or if "
                "you need to access saved tensors after calling backward.")
        if not retain_graph:
            self._saved = None
        return [s.unpack(self) if type(s) is SavedTensor else s for s in saved]

    def apply(self, grads: list, retain_graph: bool):
        """Run the rule on the gradients of this node's outputs; return one per input."""
        saved = self._unpack_saved(retain_graph)
        if self._num_outputs == 1:
            result = self._rule(grads[0], *saved)
        else:
            result = self._rule(grads, *saved)
        return result if type(result) is tuple else (result,)

    def apply_on_arrays(self, grad, retain_graph: bool):
        """Run the rule's array form (``rule.on_arrays``) on the raw gradient array of this
        single-output node: saved tensors are handed over as their arrays.  Used when no
        graph of the gradient is wanted."""
        saved = self._saved
        if saved is None:
            self._unpack_saved(retain_graph)  # raises: the graph was freed
        if not retain_graph:
            self._saved = None
        args = [grad]
        for s in saved:  # SavedTensor.unpack inlined for arrays: this runs for every node
            if type(s) is SavedTensor:
                if s._vc[0] != s._version:
                    s.unpack(self)  # raises the in-place modification error
                s = s._data if s._tensor is None else s._tensor._data
            args.append(s)
        result = self._rule.on_arrays(*args)
        return result if type(result) is tuple else (result,)

    def _release_variables(self):
        self._saved = None


class _NodeHooks:
    """The hooks and metadata of a node, allocated on first use (most nodes have none)."""

    __slots__ = ("pre", "post", "tensor_pre", "metadata")

    def __init__(self):
        self.pre, self.post, self.tensor_pre, self.metadata = [], [], {}, None

    def __bool__(self) -> bool:
        return bool(self.pre or self.post or any(self.tensor_pre.values()))


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into ``tensor.grad``.

    The leaf holds its accumulator (so hooks registered on the leaf last as long as it
    does) and the accumulator holds the leaf weakly (so neither keeps the other alive)."""

    __slots__ = ("_variable", "_post_accumulate")

    def __init__(self, variable):
        super().__init__(None, (), ())
        self._seq += _ACCUMULATE_FIRST
        self._variable = weakref.ref(variable)
        self._post_accumulate = None

    def _add_post_accumulate_hook(self, fn):
        if self._post_accumulate is None:
            self._post_accumulate = []
        return _RemovableHandle(self._post_accumulate, fn)

    def _run_post_accumulate_hooks(self, leaf) -> None:
        """Tensor.register_post_accumulate_grad_hook's hooks, after ``leaf.grad`` is updated."""
        for hook in list(self._post_accumulate or ()):
            result = hook(leaf)
            if result is not None:
                raise TypeError(f"a post accumulate grad hook must return None, but it returned "
                                f"'{type(result).__name__}'")

    @property
    def variable(self):
        """The leaf tensor (None once it has been freed)."""
        return self._variable()

    def apply(self, grads, retain_graph):
        from ..ops._helpers import accumulate_grad
        accumulate_grad(self.variable, grads[0])
        return ()


class _RemovableHandle:
    __slots__ = ("_list", "_fn")

    def __init__(self, lst, fn):
        lst.append(fn)
        self._list, self._fn = lst, fn

    def remove(self) -> None:
        if self._fn in self._list:
            self._list.remove(self._fn)


def on_arrays(array_rule=None):
    """Give a gradient rule its array form, used when no graph of the gradient is wanted.

    ``@on_arrays()`` marks a rule written with operators only (``g * r``), which runs
    unchanged on numpy arrays; ``@on_arrays(fn)`` names a separate form taking the gradient
    and the saved values as numpy arrays.  Either must return numpy arrays (or None) in
    the same order as the tensor rule.
    """
    def mark(rule):
        rule.on_arrays = array_rule or rule
        return rule
    return mark


def node_class(name: str):
    cls = _node_classes.get(name)
    if cls is None:
        cls = _node_classes[name] = type(name, (Node,), {"__slots__": ()})
    return cls


def grad_accumulator(t) -> AccumulateGrad:
    """The one AccumulateGrad node of leaf ``t``, made on first use."""
    acc = t._acc
    if acc is None:
        acc = t._acc = AccumulateGrad(t)
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
    # this runs for every op that records: plain loops, no helper calls on the common path.
    # An edge is (node, output_nr, shape, dtype, array dtype): where the gradient of an
    # input goes, and the shape and dtype the engine brings it to.
    edges = []
    for t in inputs:
        if isinstance(t, Tensor):
            data = t._data
            fn = t.grad_fn
            if fn is not None:
                edges.append((fn, t._output_nr, data.shape, t.dtype, data.dtype))
            elif t._requires_grad:
                edges.append((t._acc or grad_accumulator(t), 0, data.shape, t.dtype, data.dtype))
            else:
                edges.append(_NO_EDGE)
        else:
            edges.append(_NO_EDGE)
    node = _new_object(_node_classes.get(name) or node_class(name))
    node._rule = rule
    node._edges = tuple(edges)
    node._seq = next(_sequence)
    node._hooks = None
    if type(outputs) is tuple:
        node._num_outputs = len(outputs)
        for i, o in enumerate(outputs):
            if o is not None and o.dtype._category >= 2:  # only floating/complex outputs get history
                o.grad_fn, o._output_nr, o._requires_grad = node, i, True
        node._saved = tuple([(_saved_output(v) if any(v is o for o in outputs) else _saved_input(v))
                             if isinstance(v, Tensor) else v for v in saved])
    else:
        node._num_outputs = 1
        if outputs.dtype._category >= 2:
            outputs.grad_fn = node
            outputs._requires_grad = True
        if saved:
            packed = []
            for v in saved:
                if isinstance(v, Tensor):
                    v = _saved_output(v) if v is outputs else _saved_input(v)
                packed.append(v)
            node._saved = tuple(packed)
        else:
            node._saved = ()
    if _ANOMALY.enabled:
        remember_forward(node)
    return node


def saved_tensor(t, is_output: bool) -> SavedTensor:
    """``t`` kept for backward (an op's output is kept without its grad_fn)."""
    return _saved_output(t) if is_output else _saved_input(t)


_INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                    "mode in computation tracked by autograd. To work around, clone the tensor to get a normal one.")


def _saved_input(t) -> SavedTensor:
    s = _new_object(SavedTensor)
    s._vc = vc = t._vc
    if type(vc) is not list:
        raise RuntimeError(_INFERENCE_SAVED)
    s._version = vc[0]
    s._tensor = t
    return s


def _saved_output(t) -> SavedTensor:
    s = _new_object(SavedTensor)
    s._vc = vc = t._vc
    s._version = vc[0]
    s._tensor = None
    s._data, s._dtype, s._output_nr, s._requires_grad = t._data, t.dtype, t._output_nr, t._requires_grad
    return s


_new_object = object.__new__
_NO_EDGE = (None, 0, None, None, None)


from .._tensor import Tensor, _make  # noqa: E402  (the tensor module imports this one lazily)
