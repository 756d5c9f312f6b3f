"""The joint forward/backward graph of a compiled graph, partitioned (torch's AOTAutograd).

Given a captured graph (after fusion) whose results need gradients, the backward is
derived here as a second ``ember.fx`` graph: the graph is walked from its results to its
inputs, and each node adds the nodes of its gradient: ``_DERIVATIVES`` (a matrix product's
two products, a view's inverse view), a fused region's generated backward loop, and, for
any other op, the op's own gradient rule run on what its node saved (``_Local``). The
forward graph then returns, besides its results, exactly the values the backward graph
reads (for a region, its inputs and the per-row values its loop writes; for a product, its
operands), and runs without autograd: a call records one node, ``CompiledFunctionBackward``,
whose rule runs the backward graph.

A graph that changes anything besides its results (an in-place op on a value that needs a
gradient, a call kept whole such as ``backward()`` or an optimizer's ``step``, a mode
switch), that has symbolic sizes or runs under autocast, is left as it is: its ops then
record their own autograd nodes, as in eager.
"""

from __future__ import annotations

import operator

import numpy

import ember

from .._tensor import Tensor, _make
from ..autograd import grad_mode
from ..autograd.graph import record
from ..fx.node import _side_effectful_functions
from ..ops import _dispatch
from .fusion import _call_region
from .fusion.region import _no_double_backward

__all__ = ["partition"]


class _NoDerivative(Exception):
    pass


def _meta(node):
    tm = node.meta.get("tensor_meta") if type(node).__name__ == "Node" else None
    return tm if tm is not None and hasattr(tm, "shape") else None


def _name(node) -> str | None:
    if node.target is _call_region:
        return "region"
    if node.target is operator.getitem:
        return "getitem"
    entry = _dispatch.entry_of(node.target)
    return entry.name if entry is not None else None


def _is_node(x) -> bool:
    return type(x).__name__ == "Node"


class _Backward:
    """The backward graph being built: a placeholder per result gradient, then one per
    forward value it reads (``saved``)."""

    def __init__(self, gm, n_grads):
        from .. import fx
        self.graph = fx.Graph()
        self.attrs: dict = {}
        self.gm = gm
        self.grad_inputs = [self.graph.placeholder(f"grad_{k}") for k in range(n_grads)]
        self.saved: list = []  # forward nodes, in the order of their placeholders
        self._saved_at: dict = {}
        self._first_op = None
        self.locals: dict = {}  # forward node -> the _Local call that replaces its target

    def forward(self, x):
        """The forward value ``x`` (a node, a constant, or ``("extra", region call)``: what
        that region's backward reads besides its operands) as the backward reads it."""
        if not _is_node(x) and not isinstance(x, tuple):
            return x
        if _is_node(x) and x.op == "get_attr":  # a constant of the graph module: the backward's own attribute
            name = x.target
            if name not in self.attrs:
                self.attrs[name] = getattr(self.gm, name)
            return self._insert(lambda: self.graph.get_attr(name))
        ph = self._saved_at.get(x)
        if ph is None:
            label = x.name if _is_node(x) else f"{x[1].name}_{x[0]}"
            ph = self._saved_at[x] = self._insert(lambda: self.graph.placeholder(f"saved_{label}"))
            self.saved.append(x)
        return ph

    def _insert(self, make):
        if self._first_op is None:
            return make()
        with self.graph.inserting_before(self._first_op):
            return make()

    def call(self, fn, *args, **kwargs):
        node = self.graph.call_function(fn, args, kwargs)
        if self._first_op is None:
            self._first_op = node
        return node


def _shape(node) -> tuple:
    tm = _meta(node)
    if tm is None:
        raise _NoDerivative("a value without a shape")
    return tuple(tm.shape)


def _sum_to(b: _Backward, g, like):
    """``g`` summed to the shape of the forward value ``like`` (undoing broadcasting)."""
    return b.call(ember.Tensor.sum_to_size, g, _shape(like))


def _args(node, names, defaults=None):
    given = dict(zip(names, node.args)) | dict(node.kwargs)
    if set(given) - set(names):
        raise _NoDerivative(f"{_name(node)} with arguments {sorted(set(given) - set(names))}")
    return [given.get(n, (defaults or {}).get(n)) for n in names]


# -- derivatives: (backward graph, forward node, gradient node, needs(x) -> bool) -> {input node: gradient} --

def _linear(b, node, g, needs):
    """The products of ``linear``'s own rule, in its order (so the gradients are eager's to
    the bit): 2-d products over the flattened leading dims."""
    x, w, bias = _args(node, ("input", "weight", "bias"))
    shape = _shape(x)
    if len(shape) < 2 or len(_shape(w)) != 2:
        raise _NoDerivative("linear of a vector")
    out = {}
    g2 = g if len(shape) == 2 else b.call(ember.reshape, g, (-1, _shape(w)[0]))
    if needs(x):
        gx = b.call(ember.matmul, g2, b.forward(w))
        out[x] = gx if len(shape) == 2 else b.call(ember.reshape, gx, shape)
    if needs(w):
        x2 = b.forward(x) if len(shape) == 2 else b.call(ember.reshape, b.forward(x), (-1, shape[-1]))
        out[w] = b.call(ember.matmul, b.call(ember.t, g2), x2)
    if needs(bias):
        out[bias] = b.call(ember.sum, g, tuple(range(len(shape) - 1)))
    return out


def _mT(b, v):
    return b.call(ember.transpose, v, -2, -1)


def _matmul(b, node, g, needs):
    x, y = _args(node, ("input", "other"))
    if len(_shape(x)) < 2 or len(_shape(y)) < 2:
        raise _NoDerivative("a matrix product of a vector")
    out = {}
    if needs(x):
        out[x] = _sum_to(b, b.call(ember.matmul, g, _mT(b, b.forward(y))), x)
    if needs(y):
        out[y] = _sum_to(b, b.call(ember.matmul, _mT(b, b.forward(x)), g), y)
    return out


def _add(sign):
    def rule(b, node, g, needs):
        x, y, alpha = _args(node, ("input", "other", "alpha"), {"alpha": 1})
        out = {}
        if needs(x):
            out[x] = _sum_to(b, g, x)
        if needs(y):
            scale = sign * alpha
            out[y] = _sum_to(b, g if scale == 1 else b.call(ember.mul, g, scale), y)
        return out
    return rule


def _mul(b, node, g, needs):
    x, y = _args(node, ("input", "other"))
    out = {}
    if needs(x):
        out[x] = _sum_to(b, b.call(ember.mul, g, b.forward(y)), x)
    if needs(y):
        out[y] = _sum_to(b, b.call(ember.mul, g, b.forward(x)), y)
    return out


def _div(b, node, g, needs):
    x, y, mode = _args(node, ("input", "other", "rounding_mode"))
    if mode is not None or needs(y):
        raise _NoDerivative("a division by a value that needs a gradient, or rounded")
    return {x: _sum_to(b, b.call(ember.div, g, b.forward(y)), x)} if needs(x) else {}


def _view(b, node, g, needs):
    x = node.args[0]
    return {x: b.call(ember.reshape, g, _shape(x))} if needs(x) else {}


def _permute(b, node, g, needs):
    x, dims = node.args[0], node.args[1:]
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    if node.kwargs or not all(isinstance(d, int) for d in dims):
        raise _NoDerivative("permute")
    n = len(dims)
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d % n] = i
    return {x: b.call(ember.permute, g, tuple(inverse))} if needs(x) else {}


def _transpose(b, node, g, needs):
    x, d0, d1 = _args(node, ("input", "dim0", "dim1"))
    return {x: b.call(ember.transpose, g, d0, d1)} if needs(x) else {}


def _t(b, node, g, needs):
    x = node.args[0]
    return {x: b.call(ember.t, g)} if needs(x) else {}


def _identity_dropout(b, node, g, needs):
    x, p, training, inplace = _args(node, ("input", "p", "training", "inplace"),
                                    {"p": 0.5, "training": True, "inplace": False})
    if inplace or (training and p != 0):
        raise _NoDerivative("dropout that draws a mask")
    return {x: g} if needs(x) else {}


def _chunk_or_split(b, node, grads, needs):
    """``grads``: the gradient of each piece (None for a piece no gradient reached)."""
    x = node.args[0]
    if not needs(x):
        return {}
    dim = _args(node, ("input", "split_size_or_sections" if _name(node) == "split" else "chunks", "dim"),
                {"dim": 0})[2]
    shape, dtype = _shape(x), _meta(x).dtype
    pieces = [b.call(ember.zeros, shape[:dim % len(shape)] + (size,) + shape[dim % len(shape) + 1:], dtype=dtype)
              if gr is None else gr for gr, size in zip(grads, _piece_sizes(node))]
    return {x: b.call(ember.cat, tuple(pieces), dim)}


def _piece_sizes(node) -> list:
    """The sizes along the split dim of ``chunk``'s or ``split``'s pieces (torch's rules:
    ``chunk`` makes pieces of ``ceil(size / chunks)``, the last one smaller)."""
    x, by, dim = _args(node, ("input", "split_size_or_sections" if _name(node) == "split" else "chunks", "dim"),
                       {"dim": 0})
    size = _shape(x)[dim]
    if isinstance(by, (list, tuple)):
        return list(by)
    if not isinstance(by, int) or by <= 0:
        raise _NoDerivative(f"{_name(node)} by {by!r}")
    step = -(-size // by) if _name(node) == "chunk" else by
    return [min(step, size - i) for i in range(0, size, step)] if step else [0]


def _region(b, node, grads, needs):
    holder, *operands = node.args
    region = getattr(b.gm, holder.target)
    if not region.has_backward and any(needs(a) for a in operands):
        raise _NoDerivative("a fused region without a generated backward")
    extra = b.forward(("extra", node))
    computed = b.call(_region_backward, b.forward(holder), extra, len(operands),
                      *[b.forward(a) for a in operands], *grads)
    return {a: b.call(operator.getitem, computed, i) for i, a in enumerate(operands) if needs(a)}


def _region_backward(region, extra, n, *operands_and_grads):
    """A fused region's generated backward on the saved operands and its results' gradients."""
    operands, grads = operands_and_grads[:n], operands_and_grads[n:]
    computed = region.backward_arrays([t._data if isinstance(t, Tensor) else t for t in operands],
                                      [None if g is None else g._data for g in grads], extra)
    return tuple(None if a is None else _make(a, region.dtype) for a in computed)


def _call_region_saving(region, *tensors):
    """A fused region's forward that also returns what its backward reads."""
    results, extra = region.forward_arrays([t._data if isinstance(t, Tensor) else t for t in tensors])
    return (*[_make(a, region.dtype) for a in results], extra)


# -- any other op: its own gradient rule, run on the values it saved in the forward ----------

class _Local:
    """An op without a derivative here, called in the forward graph: it runs with autograd
    on, on detached copies of its operands that need gradients, and returns its results
    (detached) and what its node saved (``ctx``: the results as the node made them, and
    those operands), so the backward graph runs the node's own rule (``_local_backward``)."""

    __slots__ = ("fn", "positions", "__name__")

    def __init__(self, fn, positions):
        self.fn, self.positions = fn, positions  # the positions of the flattened args needing gradients
        self.__name__ = f"{getattr(fn, '__name__', 'op')}_saving"

    def __call__(self, *args, **kwargs):
        from ..func._pytree import tree_flatten, tree_unflatten
        leaves, spec = tree_flatten((args, kwargs))
        operands = []
        for i in self.positions:
            leaves[i] = t = leaves[i].detach().requires_grad_()
            operands.append(t)
        args, kwargs = tree_unflatten(leaves, spec)
        with grad_mode.enable_grad():
            made = self.fn(*args, **kwargs)
        if isinstance(made, Tensor):
            return made.detach(), (made, operands)
        return type(made)(x.detach() if isinstance(x, Tensor) else x for x in made), (made, operands)


def _local_backward(ctx, *grads):
    """The gradients of a ``_Local`` call's operands, by its node's own rule where one node
    made all its results from those operands (the engine's work done here: each gradient
    brought to its operand's shape and dtype), else by ``autograd.grad``."""
    from ..autograd.graph import AccumulateGrad
    from ..ops._helpers import fit_grad, fit_grad_array
    made, operands = ctx
    outs = [made] if isinstance(made, Tensor) else list(made)
    pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.grad_fn is not None]
    node = pairs[0][0].grad_fn if pairs else None
    at = {id(t._acc): k for k, t in enumerate(operands) if t._acc is not None}
    if node is not None and all(o.grad_fn is node for o, _ in pairs) and all(
            e[0] is None or (type(e[0]) is AccumulateGrad and id(e[0]) in at) for e in node._edges):
        buffer = [None] * node._num_outputs
        for o, g in pairs:
            buffer[o._output_nr] = g
        out = [None] * len(operands)
        if node._num_outputs == 1 and getattr(node._rule, "on_arrays", None) is not None:
            # the rule's array form, as the engine runs it without create_graph
            if buffer[0] is None:
                return tuple(out)
            for (child, _, shape, dtype, _), a in zip(node._edges, node.apply_on_arrays(buffer[0]._data, True)):
                if child is not None and a is not None:
                    a = numpy.asarray(a)
                    a = a if a.shape == shape and a.dtype is dtype.np else fit_grad_array(a, shape, dtype)
                    k = at[id(child)]
                    out[k] = _make(a, dtype) if out[k] is None else out[k] + _make(a, dtype)
            return tuple(out)
        if any(g is None for g in buffer):
            buffer = [ember.zeros_like(o) if g is None else g for o, g in zip(outs, buffer)]
        with grad_mode.no_grad():
            results = node.apply(buffer, retain_graph=True)
        for (child, _, shape, dtype, _), g in zip(node._edges, results):
            if child is not None and g is not None:
                k = at[id(child)]
                g = g if g._data.shape == shape and g.dtype is dtype else fit_grad(g, shape, dtype)
                out[k] = g if out[k] is None else out[k] + g
        return tuple(out)
    pairs = [(o, g) for o, g in pairs if g is not None]
    return ember.autograd.grad([o for o, _ in pairs], operands, [g for _, g in pairs], retain_graph=True,
                               allow_unused=True)


def _local(b, node, grads, needs):
    """Rewrite ``node`` to a ``_Local`` call in the forward graph (done by ``_Joint`` once
    the backward is built) and read its saved ``ctx`` in the backward."""
    from ..func._pytree import tree_flatten
    if not _pure_op(node):
        raise _NoDerivative(f"no derivative for {_name(node) or node.target}")
    leaves, _ = tree_flatten((node.args, node.kwargs))
    positions = [i for i, x in enumerate(leaves) if needs(x)]
    b.locals[node] = _Local(node.target, positions)
    computed = b.call(_local_backward, b.forward(("ctx", node)), *grads)
    needed = [leaves[i] for i in positions]
    return _merge(b, [(x, b.call(operator.getitem, computed, k)) for k, x in enumerate(needed)])


def _pure_op(node) -> bool:
    """Whether ``node`` is an op (or a tensor's indexing) that writes nothing in place."""
    entry = _dispatch.entry_of(node.target)
    if entry is None:
        return node.target is operator.getitem
    return not (entry.meta.get("capture") or entry.name.endswith("_") or node.kwargs.get("inplace")
                or "out" in node.kwargs or node.target in _side_effectful_functions)


def _meta_list(node) -> list:
    """The results of a node with several (read through ``getitem`` nodes)."""
    found = {u.args[1] for u in node.users if u.target is operator.getitem and isinstance(u.args[1], int)}
    return list(range(max(found) + 1)) if found else []


def _merge(b, pairs) -> dict:
    """{input: gradient} from (input, gradient) pairs, an input met twice summed."""
    out = {}
    for x, g in pairs:
        out[x] = g if x not in out else b.call(ember.add, out[x], g)
    return out


_DERIVATIVES = {
    "linear": _linear, "matmul": _matmul, "add": _add(1), "sub": _add(-1), "mul": _mul, "div": _div,
    "true_divide": _div, "reshape": _view, "view": _view, "flatten": _view, "unflatten": _view,
    "squeeze": _view, "unsqueeze": _view, "contiguous": _view, "permute": _permute, "transpose": _transpose,
    "t": _t, "dropout": _identity_dropout,
}
_MULTI = {"region": _region, "chunk": _chunk_or_split, "split": _chunk_or_split}


def partition(gm, example_inputs):
    """The joint graph of ``gm`` (a fused graph module) partitioned into a runner whose
    calls record one ``CompiledFunctionBackward`` node, or None where ``gm`` is left to its
    ops' own gradients (see the module's docstring)."""
    from .. import _autocast
    if not grad_mode.STATE.enabled or _autocast.state.any_enabled:
        return None
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return None
    diff = [i for i, x in enumerate(example_inputs) if isinstance(x, Tensor) and x._requires_grad
            and x.dtype.is_floating_point]
    if not diff:
        return None
    try:
        return _Joint(gm, placeholders, diff)
    except Exception:  # the joint graph only speeds up: a graph it cannot take keeps its ops' own gradients
        return None


class _Joint:
    """The partitioned graphs and their runner."""

    def __init__(self, gm, placeholders, diff):
        from .. import fx
        graph = gm.graph
        needs_grad = {placeholders[i] for i in diff}
        for node in graph.nodes:
            if node.op in ("call_method", "call_module"):
                raise _NoDerivative("a method call")
            if node.op == "call_function":
                if "dynamic_dims" in node.meta or "sym_hint" in node.meta:
                    raise _NoDerivative("symbolic sizes")
                entry = _dispatch.entry_of(node.target)
                if node.target in _side_effectful_functions or (entry is not None and entry.meta.get("capture")):
                    raise _NoDerivative("a call that acts on more than its results (backward, a mode switch)")
                if any(a in needs_grad for a in node.all_input_nodes):
                    needs_grad.add(node)
        output = graph.output_node()
        results = output.args[0]
        if not isinstance(results, tuple) or any(r in placeholders for r in results if _is_node(r)) \
                or len(set(r for r in results if _is_node(r))) != len([r for r in results if _is_node(r)]):
            raise _NoDerivative("a result that is an input, or returned twice")
        self.diff_results = [k for k, r in enumerate(results) if _is_node(r) and r in needs_grad
                             and _meta(r) is not None and _meta(r).dtype.is_floating_point]
        if not self.diff_results:
            raise _NoDerivative("no result needs a gradient")
        self.result_meta = [(_shape(results[k]), _meta(results[k]).dtype) for k in self.diff_results]

        back = _Backward(gm, len(self.diff_results))
        grads: dict = {}  # forward node -> its gradient in the backward graph
        pieces: dict = {}  # forward node with several results -> {index: gradient}
        for k, gi in zip(self.diff_results, back.grad_inputs):
            grads[results[k]] = gi

        def needs(x):
            return _is_node(x) and x in needs_grad

        for node in reversed(list(graph.nodes)):
            if node.op != "call_function" or node not in needs_grad:
                continue
            name = _name(node)
            if name == "getitem" and _meta(node.args[0]) is None:  # a result of a node with several
                parent, index = node.args
                if node in grads and _is_node(parent):
                    pieces.setdefault(parent, {})[index] = grads.pop(node)
                continue
            if name in _MULTI or (node in pieces and name != "getitem"):
                got = pieces.pop(node, None)
                if got is None:
                    continue
                n = len(getattr(gm, node.args[0].target).outputs) if name == "region" else \
                    len(_piece_sizes(node)) if name in _MULTI else len(_meta_list(node))
                multi = [got.get(i) for i in range(n)]
                found = _MULTI.get(name, _local)(back, node, multi, needs)
            else:
                g = grads.pop(node, None)
                if g is None:
                    continue
                try:
                    found = _DERIVATIVES[name](back, node, g, needs)
                except (KeyError, _NoDerivative):  # the op's own rule
                    found = _local(back, node, [g], needs)
            for x, gx in found.items():
                grads[x] = gx if x not in grads else back.call(ember.add, grads[x], gx)
        back.graph.output(tuple(grads.get(placeholders[i]) for i in diff))
        self.backward = fx.GraphModule(back.attrs, back.graph)

        # the forward: each region's call and each op run by its own rule also return what
        # their backward reads, and the graph returns the values the backward reads after
        # its results
        # (on a copy: the graph module handed to the backend stays as fusion left it)
        fwd, new = fx.Graph(), {}
        fwd.graph_copy(graph, new)
        made, value_of = {}, {}
        for node in graph.nodes:
            copy = new.get(node)
            if node.op == "call_function" and node.target is _call_region:
                copy.target = _call_region_saving
                with fwd.inserting_after(copy):
                    made[("extra", node)] = fwd.call_function(
                        operator.getitem, (copy, len(getattr(gm, node.args[0].target).outputs)))
            elif node in back.locals:
                copy.target = back.locals[node]
                with fwd.inserting_after(copy):
                    value = fwd.call_function(operator.getitem, (copy, 0))
                copy.replace_all_uses_with(value, lambda user, v=value: user is not v)
                value.meta, copy.meta = copy.meta, {}
                with fwd.inserting_after(value):
                    made[("ctx", node)] = fwd.call_function(operator.getitem, (copy, 1))
                value_of[node] = value

        def forward_value(x):
            if not _is_node(x):
                return x
            return value_of[x] if x in value_of else new[x]
        fwd.output(tuple(forward_value(r) for r in results)
                   + tuple(made[s] if isinstance(s, tuple) else forward_value(s) for s in back.saved))
        fwd.lint()
        self.forward_module = fx.GraphModule(gm, fwd)
        self.forward = self.forward_module.forward
        self.diff = diff
        self.saved_at = len(results)

    def __call__(self, *args):
        with grad_mode.no_grad():
            values = self.forward(*args)
        results, saved = values[:self.saved_at], values[self.saved_at:]
        inputs = tuple(args[i] for i in self.diff)
        if grad_mode.STATE.enabled and any(t._requires_grad for t in inputs):
            outs = [results[k] for k in self.diff_results]
            for j, o in enumerate(outs):  # an op that returned its operand (contiguous()): the node goes on a view
                if any(o is a for a in args) or any(o is p for p in outs[:j]):
                    outs[j] = o.view_as(o)
                    results = results[:self.diff_results[j]] + (outs[j],) + results[self.diff_results[j] + 1:]
            outs = tuple(outs)
            record("CompiledFunctionBackward", _Rule(self), inputs, outs if len(outs) > 1 else outs[0], saved)
        return results


class _Rule:
    """Runs the backward graph on the results' gradients and the saved values."""

    __slots__ = ("joint",)

    def __init__(self, joint):
        self.joint = joint

    def __call__(self, grads, *saved):
        joint = self.joint
        grads = [grads] if isinstance(grads, Tensor) or grads is None else list(grads)
        grads = [ember.zeros(shape, dtype=dtype) if g is None else g
                 for g, (shape, dtype) in zip(grads, joint.result_meta)]
        create_graph = grad_mode.STATE.enabled
        with grad_mode.no_grad():
            out = joint.backward(*grads, *saved)
        if create_graph:
            made = tuple(g for g in out if g is not None)
            if made:
                record("CompiledFunctionBackwardBackward", _no_double_backward, tuple(grads) + saved,
                       made if len(made) > 1 else made[0])
        return tuple(out)
