"""The joint forward/backward graph of a compiled graph, partitioned (torch's AOTAutograd).

The backward of a captured graph (after fusion) is derived as a second ``ember.fx`` graph
(``_derivatives``), and the forward graph is rewritten to keep exactly the values that
backward graph reads and to run without autograd. Two kinds of graphs take it:

- **a forward** whose results need gradients, the backward run later by the caller
  (``out = compiled(x); loss.backward()``): a call records one ``CompiledFunctionBackward``
  node over the inputs that need gradients, whose rule runs the backward graph;
- **a training step** that calls ``loss.backward()`` itself: the backward graph runs where
  that call was, and its gradients are accumulated into the leaves' ``.grad`` as the
  engine's ``AccumulateGrad`` does (their hooks included); what follows (``optimizer.step``,
  ``zero_grad``) runs as recorded.

A graph that changes anything besides its results on the way to its gradients (an in-place
op on a value that needs one, a mode switch, a hook registered inside), that has symbolic
sizes or runs under autocast, is left as it is: its ops record their own autograd nodes and
``backward()`` runs the engine, as in eager.
"""

from __future__ import annotations

import copy
import logging
import operator

from .. import fx
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.graph import record
from ..fx.node import _side_effectful_functions
from ..ops import _dispatch
from ._derivatives import (
    Backward,
    NoDerivative,
    call_region_saving,
    derive,
    inplace_arg,
    is_node,
    meta,
    name_of,
    shape_of,
)
from .fusion import _call_region
from .fusion.region import _no_double_backward

__all__ = ["partition"]

_ZERO_GRAD = ("Optimizer.zero_grad", "Module.zero_grad")
_log = logging.getLogger(__name__)


def partition(gm, example_inputs):
    """A runner for ``gm`` (a fused graph module) built on its joint graph, or None where
    ``gm`` is left to its ops' own gradients (see the module's docstring)."""
    from .. import _autocast
    if not grad_mode.STATE.enabled or _autocast.state.any_enabled:
        return None
    try:
        work = fx.GraphModule(gm, copy.deepcopy(gm.graph))  # gm stays as fusion left it
        _functionalize(work.graph)
        steps = [n for n in work.graph.nodes if n.op == "call_function" and name_of(n) == "Tensor.backward"]
        if steps:
            return _JointStep(work, steps) if len(steps) == 1 else None
        return _JointForward(work)
    except Exception as e:  # the joint graph only speeds up: a graph it cannot take keeps its ops' own gradients
        _log.debug("no joint graph: %s: %s", type(e).__name__, e)
        return None


# ops whose result may share memory with an operand (a view, or the operand itself: ``to``
# of the dtype it has): an in-place op on their result changes that operand too
_VIEWS = {"reshape", "view", "view_as", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "t", "permute",
          "expand", "expand_as", "narrow", "select", "getitem", "chunk", "split", "split_with_sizes", "tensor_split",
          "unbind", "as_strided", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "mT", "unfold",
          "contiguous", "detach", "real", "imag", "view_as_real", "view_as_complex", "to", "type", "type_as",
          "float", "double", "half", "bfloat16", "cpu", "cuda"}


def _functionalize(graph) -> None:
    """An in-place op (``relu_``, ``hardswish(inplace=True)``) on an intermediate result that
    nothing else reads becomes its out-of-place form: the same values for every later
    reader (a capture names an in-place op's result as the value it changed), and an op
    the joint graph can differentiate. An operand that came from outside the graph, or that
    views (``_VIEWS``) a value something else reads, keeps the in-place op."""
    import ember
    for node in list(graph.nodes):
        if node.op != "call_function" or not node.args or not is_node(node.args[0]) \
                or not _private(node.args[0]):
            continue
        name, where = name_of(node) or "", inplace_arg(node)
        if where is not None and where[0] == "kw":
            node.kwargs = {**node.kwargs, "inplace": False}
        elif where is not None:
            node.args = node.args[:where[1]] + (False,) + node.args[where[1] + 1:]
        elif name.endswith("_") and not name.endswith("__") and node.target is getattr(ember, name, None) \
                and callable(getattr(ember, name[:-1], None)):
            node.target = getattr(ember, name[:-1])


def _private(x) -> bool:
    """Whether the value of ``x`` is read by one node only and shares memory with no value
    another node reads (followed through views to the op that made the memory)."""
    while True:
        name = name_of(x) if x.op == "call_function" else None
        if name is None or len(x.users) != 1:
            return False
        if name == "getitem" and is_node(x.args[0]) and x.args[0].target is _call_region:
            return True  # a fused region's result: its own array
        if name not in _VIEWS:
            return True
        if not x.args or not is_node(x.args[0]):
            return False
        x = x.args[0]


def _leaf(node) -> bool:
    """Whether ``node`` reads a tensor from outside the graph (an input, or a parameter read
    after a call kept whole) that needs a gradient."""
    tm = meta(node)
    reads = node.op == "placeholder" or (node.op == "call_method" and node.target == "fetch")
    return reads and tm is not None and tm.requires_grad and tm.dtype.is_floating_point


def _needing_grad(nodes) -> set:
    """The nodes whose values needed a gradient when the graph was recorded (their tensor
    metadata says so: a comparison, an index or ``zeros_like`` of a parameter does not), and
    the nodes with several results one of which did."""
    found = set()
    for node in nodes:
        tm = meta(node)
        if tm is not None and tm.requires_grad and (tm.dtype.is_floating_point or tm.dtype.is_complex):
            found.add(node)
            parent = node.args[0] if node.target is operator.getitem and node.args else None
            if is_node(parent) and meta(parent) is None:
                found.add(parent)
    return found


def _check_nodes(nodes, allowed=()) -> None:
    """NoDerivative for a node the joint graph cannot carry: symbolic sizes, a method call
    other than a parameter's read, a call kept whole or a side effect not in ``allowed``."""
    for node in nodes:
        if node.op == "call_method" and node.target != "fetch" or node.op == "call_module":
            raise NoDerivative(f"the method call {node.target}")
        if node.op != "call_function":
            continue
        if "dynamic_dims" in node.meta or "sym_hint" in node.meta:
            raise NoDerivative("symbolic sizes")
        entry = _dispatch.entry_of(node.target)
        name = entry.name if entry is not None else getattr(node.target, "__name__", "")
        if (node.target in _side_effectful_functions or (entry is not None and entry.meta.get("capture"))) \
                and name not in allowed:
            raise NoDerivative(f"{name}, which acts on more than its results")


def _forward_graph(gm, back: Backward):
    """A copy of ``gm``'s graph, without its output, where each fused region's call and each
    op run by its own rule also return what their backward reads. Returns the copy and
    ``value(x)``: the copy's node for the forward value ``x`` (a node of ``gm``, or a
    ``Backward.saved`` key)."""
    graph, new = fx.Graph(), {}
    graph.graph_copy(gm.graph, new)
    made = {}
    for node in gm.graph.nodes:
        twin = new.get(node)  # (the output is not copied)
        if node.op == "call_function" and node.target is _call_region:
            twin.target = call_region_saving
            with graph.inserting_after(twin):
                made[("extra", node)] = graph.call_function(
                    operator.getitem, (twin, len(getattr(gm, node.args[0].target).outputs)))
        elif node in back.locals:
            twin.target = back.locals[node]
            with graph.inserting_after(twin):
                value = graph.call_function(operator.getitem, (twin, 0))
            twin.replace_all_uses_with(value, lambda user, v=value: user is not v)
            value.meta, twin.meta = twin.meta, {}
            with graph.inserting_after(value):
                made[("ctx", node)] = graph.call_function(operator.getitem, (twin, 1))
            new[node] = value

    def value(x):
        if isinstance(x, tuple):
            return made[x]
        return new[x] if is_node(x) else x
    return graph, value


class _JointForward:
    """A forward graph whose backward the caller runs: each call records one
    ``CompiledFunctionBackward`` node."""

    def __init__(self, gm):
        graph = gm.graph
        nodes = list(graph.nodes)
        placeholders = [n for n in nodes if n.op == "placeholder"]
        _check_nodes(nodes)
        self.diff = [k for k, n in enumerate(placeholders) if _leaf(n)]
        needs_grad = _needing_grad(nodes)
        results = graph.output_node().args[0]
        tensors = [r for r in results if is_node(r)] if isinstance(results, tuple) else None
        if tensors is None or any(r in placeholders for r in tensors) or len(set(tensors)) != len(tensors):
            raise NoDerivative("a result that is an input, or returned twice")
        self.diff_results = [k for k, r in enumerate(results) if is_node(r) and r in needs_grad
                             and meta(r) is not None and meta(r).dtype.is_floating_point]
        if not self.diff_results:
            raise NoDerivative("no result needs a gradient")
        self._derivation = (gm, nodes, needs_grad, [placeholders[k] for k in self.diff], results)
        self.backward, back = self._derive(tuple(False for _ in self.diff_results))
        self.saved_keys = back.saved
        self._pruned: dict = {}  # which results lack a gradient -> (backward graph, positions of its saved values)

        forward, value = _forward_graph(gm, back)
        forward.output(tuple(value(r) for r in results) + tuple(value(s) for s in back.saved))
        forward.lint()
        self.forward_module = fx.GraphModule(gm, forward)
        self.forward = self.forward_module.forward
        self.saved_at = len(results)

    def _derive(self, missing):
        """The backward graph for the results whose gradients are not ``missing``."""
        gm, nodes, needs_grad, leaves, results = self._derivation
        present = [k for k, m in zip(self.diff_results, missing) if not m]
        back = Backward(gm, len(present))
        grads = derive(gm, nodes, back, {results[k]: g for k, g in zip(present, back.grad_inputs)}, needs_grad)
        back.graph.output(tuple(grads.get(leaf) for leaf in leaves))
        return fx.GraphModule(back.attrs, back.graph), back

    def backward_without(self, missing):
        """(backward graph, positions of the saved values it reads) where some results got
        no gradient: what reaches only them gets none, as in eager (not a zero gradient)."""
        found = self._pruned.get(missing)
        if found is None:
            graph, back = self._derive(missing)
            found = self._pruned[missing] = (graph, [self.saved_keys.index(key) for key in back.saved])
        return found

    def __call__(self, *args):
        with grad_mode.no_grad():
            values = self.forward(*args)
        results, saved = values[:self.saved_at], values[self.saved_at:]
        inputs = tuple(args[k] for k in self.diff)
        if grad_mode.STATE.enabled and any(t._requires_grad for t in inputs):
            results = _own_tensors(results, self.diff_results, args)
            outs = tuple(results[k] for k in self.diff_results)
            record("CompiledFunctionBackward", _Rule(self), inputs, outs if len(outs) > 1 else outs[0], saved)
        return results


def _own_tensors(results, positions, args) -> tuple:
    """``results`` with a view in place of each one at ``positions`` that is an argument or
    an earlier result (an op returned its operand, as ``contiguous()`` does): the node
    recorded on it must not take over the argument."""
    results = list(results)
    for j, k in enumerate(positions):
        o = results[k]
        if any(o is a for a in args) or any(o is results[i] for i in positions[:j]):
            results[k] = o.view_as(o)
    return tuple(results)


class _Rule:
    """Runs the backward graph on the results' gradients and the saved values."""

    __slots__ = ("joint",)

    def __init__(self, joint):
        self.joint = joint

    def __call__(self, grads, *saved):
        joint = self.joint
        grads = [grads] if isinstance(grads, Tensor) or grads is None else list(grads)
        backward = joint.backward
        if any(g is None for g in grads):
            backward, positions = joint.backward_without(tuple(g is None for g in grads))
            grads, saved = [g for g in grads if g is not None], tuple(saved[i] for i in positions)
        create_graph = grad_mode.STATE.enabled
        with grad_mode.no_grad():
            out = backward(*grads, *saved)
        if create_graph:
            made = tuple(g for g in out if g is not None)
            if made:
                record("CompiledFunctionBackwardBackward", _no_double_backward, tuple(grads) + saved,
                       made if len(made) > 1 else made[0])
        return tuple(out)


class _JointStep:
    """A training step graph that calls ``loss.backward()`` itself: the backward graph runs
    in that call's place (``_ApplyGradients``)."""

    def __init__(self, gm, steps):
        import ember
        graph = gm.graph
        nodes = list(graph.nodes)
        (step,) = steps
        at = nodes.index(step)
        before, after = nodes[:at], nodes[at + 1:]
        given = dict(zip(("self", "gradient", "retain_graph", "create_graph", "inputs"), step.args)) | step.kwargs
        loss = given.get("self")
        if not is_node(loss) or any(given.get(k) for k in ("gradient", "retain_graph", "create_graph", "inputs")):
            raise NoDerivative("backward() with a gradient, retain_graph, create_graph or inputs")
        _check_nodes(before, allowed=_ZERO_GRAD + ("set_grad",))
        leaves = [n for n in before if _leaf(n)]
        needs_grad = _needing_grad(nodes)
        if any(n in needs_grad for n in after if n.op == "call_function"):
            raise NoDerivative("a value that needs a gradient computed after backward()")
        if loss not in needs_grad:
            raise NoDerivative("a loss that needs no gradient")

        back = Backward(gm, 0)
        seed = back.call(ember.ones, shape_of(loss), dtype=meta(loss).dtype)
        grads = derive(gm, before, back, {loss: seed}, needs_grad)
        back.graph.output(tuple(grads.get(leaf) for leaf in leaves))
        self.backward = fx.GraphModule(back.attrs, back.graph)

        forward, value = _forward_graph(gm, back)
        call = next(n for n in forward.nodes if n.op == "call_function" and n.target is step.target)
        call.target = _ApplyGradients(self.backward, len(leaves))
        call.args, call.kwargs = tuple(value(x) for x in leaves) + tuple(value(s) for s in back.saved), {}
        results = graph.output_node().args[0]
        if not isinstance(results, tuple):
            raise NoDerivative("a result that is not a tuple of values")
        forward.output(tuple(value(r) for r in results))
        forward.lint()
        self.forward_module = fx.GraphModule(gm, forward)
        self.forward = self.forward_module.forward
        # results computed before backward() that need gradients: their graph was used up by it
        self.spent = [k for k, r in enumerate(results) if is_node(r) and r in needs_grad and r.op == "call_function"]

    def __call__(self, *args):
        with grad_mode.no_grad():
            results = self.forward(*args)
        if self.spent and grad_mode.STATE.enabled:
            results = _own_tensors(results, self.spent, args)
            outs = tuple(results[k] for k in self.spent)
            record("CompiledFunctionBackward", _spent, (), outs if len(outs) > 1 else outs[0])
        return results


def _spent(*_):
    raise RuntimeError(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
        "if you need to access saved tensors after calling backward.")


class _ApplyGradients:
    """``loss.backward()`` of a training step: the backward graph on the saved values, each
    gradient accumulated into its leaf as the engine's ``AccumulateGrad`` does (hooks and
    post-accumulate hooks included), or sent on into the graph of an input that has one."""

    __name__ = "apply_gradients"

    def __init__(self, backward, n_leaves):
        self.backward, self.n_leaves = backward, n_leaves

    def __call__(self, *values):
        from ..autograd.engine import _run_node, run_backward, with_callbacks
        from ..autograd.graph import grad_accumulator
        from ..ops._helpers import fit_grad_array
        leaves, saved = values[:self.n_leaves], values[self.n_leaves:]
        with grad_mode.no_grad():
            grads = self.backward(*saved)
        onward = [(t, g) for t, g in zip(leaves, grads) if g is not None and t.grad_fn is not None]
        arrays = [None if g is None or t.grad_fn is not None else g._data for t, g in zip(leaves, grads)]
        del grads  # the arrays alone hold the gradients now, so a leaf may take its own without a copy

        def accumulate():
            for k, t in enumerate(leaves):
                if arrays[k] is not None:
                    a = arrays[k]
                    if a.shape != t._data.shape or a.dtype != t._data.dtype:
                        a = fit_grad_array(a, t._data.shape, t.dtype)
                    buffer, arrays[k], a = [a], None, None
                    _run_node(grad_accumulator(t), buffer, False, True, None, {}, True)
            if onward:
                run_backward(tuple(t for t, _ in onward), tuple(g for _, g in onward), False, False)
        with_callbacks(accumulate)  # hooks may queue callbacks for the end of the backward
