"""The backward engine.

Iterative, no recursion: one depth-first walk counts, for every node that leads to a
wanted gradient, how many gradients will flow into it; a node runs once all of them have
arrived, newest node first (as torch orders by sequence number).  Each gradient is
brought back to its input's shape (summing broadcast dimensions) and dtype here, in one
place, so gradient rules may return broadcast results.

Without ``create_graph`` (every ``loss.backward()``) gradients flow as raw arrays and
rules run in their array form (``graph.on_arrays``) where they have one: no tensor or
node is made for a gradient.  Hooks, custom Functions and rules without an array form
see tensors, wrapped around the same arrays.
"""

from __future__ import annotations

import heapq
import threading

from numpy import asarray, generic, ndarray

from .. import _tensor
from . import grad_mode
from .anomaly_mode import STATE as _ANOMALY
from .anomaly_mode import check_gradients
from .graph import AccumulateGrad, edge

__all__ = ["run_backward", "queue_callback"]

# one list of final callbacks per backward running on this thread (a backward started from
# inside another one, as a reentrant checkpoint does, has its own)
_CALLBACKS = threading.local()


def queue_callback(fn, outermost: bool = False) -> None:
    """Run ``fn()`` once the backward now running on this thread has finished (torch's
    ``Variable._execution_engine.queue_callback``), or, with ``outermost``, once the
    outermost one has (a backward started from inside another, as a reentrant checkpoint's,
    ends first). RuntimeError outside a backward."""
    stack = getattr(_CALLBACKS, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[0 if outermost else -1].append(fn)


def _graph_order(roots):
    """Nodes reachable from ``roots``, children before parents (post-order)."""
    order, seen = [], set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root._edges))]
        while stack:
            node, children = stack[-1]
            for child, *_ in children:
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child._edges)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def _dependencies(roots) -> dict:
    """For every node reachable from ``roots``: how many edges lead into it."""
    deps = dict.fromkeys(roots, 0)
    stack = list(deps)
    while stack:
        for e in stack.pop()._edges:
            child = e[0]
            if child is not None:
                if child in deps:
                    deps[child] += 1
                else:
                    deps[child] = 1
                    stack.append(child)
    return deps


def run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool,
                 inputs=None, accumulate: bool = True):
    """Backpropagate (see ``_backward``), then run the callbacks queued during it."""
    return with_callbacks(lambda: _backward(tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate))


def with_callbacks(run):
    """``run()`` as a backward: the callbacks queued while it runs (``queue_callback``) run
    after it, in order (callbacks may queue more). A compiled training step's gradients
    are applied this way."""
    stack = _CALLBACKS.__dict__.setdefault("stack", [])
    callbacks = []
    stack.append(callbacks)
    try:
        result = run()
    finally:
        stack.pop()
    i = 0
    while i < len(callbacks):
        callbacks[i]()
        i += 1
    return result


def _backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool, inputs=None, accumulate: bool = True):
    """Backpropagate ``grad_tensors`` from ``tensors``.

    ``accumulate=True`` (``Tensor.backward``) adds into ``.grad`` of the leaves, or only of
    ``inputs`` when given; ``accumulate=False`` (``autograd.grad``) returns the gradients
    of ``inputs`` (None for an input the outputs do not depend on) and touches no ``.grad``.
    """
    from ..ops._helpers import add_grads, fit_grad, fit_grad_array, wrap

    roots = []
    for i, t in enumerate(tensors):
        node, nr = edge(t)
        if node is None:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((node, nr))

    targets = None
    if inputs is not None:
        targets = {}
        for t in inputs:
            node, nr = edge(t)
            if node is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            targets.setdefault(node, set()).add(nr)

    root_nodes = [n for n, _ in roots]
    if targets is None:
        deps = _dependencies(root_nodes)
    else:
        needed = set()
        for node in _graph_order(root_nodes):  # children come first, so their answer is known
            if node in targets or any(e[0] in needed for e in node._edges if e[0] is not None):
                needed.add(node)
        deps = dict.fromkeys(needed, 0)
        for node in needed:
            for e in node._edges:
                if e[0] in needed:
                    deps[e[0]] += 1

    buffers: dict = {}
    on_arrays = not create_graph  # no graph of the gradient: gradients flow as raw arrays
    fit = fit_grad_array if on_arrays else fit_grad
    add = _add_arrays if on_arrays else add_grads
    for (node, nr), g in zip(roots, grad_tensors):
        if node in deps:
            if on_arrays:
                g = g._data
            buf = buffers.setdefault(node, [None] * node._num_outputs)
            buf[nr] = g if buf[nr] is None else add(buf[nr], g)

    captured = {}
    ready = [(-n._seq, n) for n in set(root_nodes) if n in deps and deps[n] == 0]
    heapq.heapify(ready)
    pop, push = heapq.heappop, heapq.heappush
    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            node = pop(ready)[1]
            grads = buffers.pop(node, None) or [None] * node._num_outputs
            array_rule = getattr(node._rule, "on_arrays", None) if on_arrays else None
            if (array_rule is not None and node._hooks is None and targets is None and type(grads[0]) is ndarray
                    and node._num_outputs == 1):  # the common case, kept lean
                results = node.apply_on_arrays(grads[0], retain_graph)
            else:
                results = _run_node(node, grads, retain_graph, on_arrays, targets, captured, accumulate)
                if results is None:
                    continue
            if _ANOMALY.enabled:
                check_gradients(node, results)
            for (child, nr, shape, dtype, array_dtype), g in zip(node._edges, results):
                if child is None or child not in deps:
                    continue
                if g is not None:
                    if on_arrays and isinstance(g, generic):  # numpy answers 0-d arithmetic with scalars
                        g = asarray(g)
                    if (g.shape != shape or g.dtype is not array_dtype) if on_arrays else (
                            g._data.shape != shape or g.dtype is not dtype):
                        g = fit(g, shape, dtype)
                    buf = buffers.get(child)
                    if buf is None:
                        if child._num_outputs == 1:
                            buffers[child] = [g]
                        else:
                            buf = buffers[child] = [None] * child._num_outputs
                            buf[nr] = g
                    else:
                        buf[nr] = g if buf[nr] is None else add(buf[nr], g)
                left = deps[child] - 1
                deps[child] = left
                if left == 0:
                    push(ready, (-child._seq, child))
            g = results = None  # the buffers hold the gradients now (so a leaf may take its own)

    if not accumulate:
        out = []
        for t in inputs:
            node, nr = edge(t)
            g = captured.get((node, nr))
            out.append(wrap(g) if on_arrays and g is not None and not isinstance(g, _tensor.Tensor) else g)
        return tuple(out)
    return None


def _run_node(node, grads, retain_graph, on_arrays, targets, captured, accumulate):
    """Everything but the common case: hooks (they see tensors), captured gradients of
    ``inputs``, leaves, nodes without gradients, rules without an array form.  Returns the
    gradients of the node's inputs (arrays when ``on_arrays``), or None when none flow on."""
    from ..ops._helpers import accumulate_grad, accumulate_grad_array, wrap
    hooked = bool(node._hooks)
    if hooked:
        if on_arrays:
            grads = [None if g is None else wrap(g) for g in grads]
        grads = _run_pre_hooks(node._hooks, grads)
    if targets is not None and node in targets:
        for nr in targets[node]:
            captured[(node, nr)] = grads[nr]
    if type(node) is AccumulateGrad:
        leaf = node.variable
        if accumulate and (targets is None or node in targets) and grads[0] is not None and leaf is not None:
            if on_arrays and not hooked:
                accumulate_grad_array(leaf, grads[0])
            else:
                accumulate_grad(leaf, grads[0])
            if node._post_accumulate:
                node._run_post_accumulate_hooks(leaf)
        return None
    if all(g is None for g in grads):
        return (None,) * len(node._edges)
    if not on_arrays:
        return _apply(node, grads, retain_graph)
    if not hooked and type(grads[0]) is ndarray and node._num_outputs == 1 \
            and getattr(node._rule, "on_arrays", None) is not None:
        return node.apply_on_arrays(grads[0], retain_graph)
    if not hooked:
        grads = [None if g is None else wrap(g) for g in grads]
    return [None if r is None else r._data for r in _apply(node, grads, retain_graph)]


def _apply(node, grads, retain_graph):
    """Run ``node``'s tensor rule and its post hooks."""
    results = node.apply(grads, retain_graph)
    if node._hooks is not None:
        for hook in node._hooks.post:
            new = hook(results, tuple(grads))
            if new is not None:
                results = tuple(new)
    return results


def _add_arrays(a, b):
    return a + b


def _run_pre_hooks(hooks, grads):
    if hooks.tensor_pre:
        grads = list(grads)
        for nr, fns in hooks.tensor_pre.items():
            for hook in fns:
                if grads[nr] is not None:
                    new = hook(grads[nr])
                    if new is not None:
                        grads[nr] = new
    if hooks.pre:
        for hook in hooks.pre:
            new = hook(tuple(grads))
            if new is not None:
                grads = list(new)
    return grads
