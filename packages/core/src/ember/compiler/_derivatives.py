"""Derivatives of a captured graph's nodes, written as nodes of a backward ``ember.fx`` graph.

``derive`` walks a forward graph from the nodes whose gradients are given back to its
inputs; each node adds the nodes of its gradient to a ``Backward`` graph: ``_DERIVATIVES``
(a matrix product's two products, in ``linear``'s own order so that gradients are eager's
to the bit; a view's inverse view), a fused region's generated backward loop, ``chunk``'s
concatenation, and, for any other op, the op's own gradient rule run on what its node saved
(``Local``). The backward graph reads forward values through placeholders (``Backward.saved``):
the values a forward must keep for it, and nothing else.
"""

from __future__ import annotations

import inspect
import operator

import numpy

import ember

from .._tensor import Tensor, _make
from ..autograd import grad_mode
from ..fx.node import _side_effectful_functions
from ..ops import _dispatch
from .fusion import _call_region

__all__ = ["NoDerivative", "Backward", "Local", "derive", "call_region_saving", "name_of", "is_node", "meta",
           "shape_of", "inplace_arg"]


class NoDerivative(Exception):
    """A node this module cannot differentiate (the caller keeps the graph's own autograd)."""


def meta(node):
    tm = node.meta.get("tensor_meta") if type(node).__name__ == "Node" else None
    return tm if tm is not None and hasattr(tm, "shape") else None


def name_of(node) -> str | None:
    if node.target is _call_region:
        return "region"
    if node.target is operator.getitem:
        return "getitem"
    entry = _dispatch.entry_of(node.target)
    return entry.name if entry is not None else None


def is_node(x) -> bool:
    return type(x).__name__ == "Node"


class Backward:
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
        self.locals: dict = {}  # forward node -> the Local call that replaces its target
        self.maybe_none: set = set()  # gradient nodes that are None on a call where a rule gives none

    def add(self, a, c):
        """The sum of two gradient nodes; None on a call where both are."""
        if a in self.maybe_none or c in self.maybe_none:
            total = self.call(_sum_optional, a, c)
            if a in self.maybe_none and c in self.maybe_none:
                self.maybe_none.add(total)
            return total
        return self.call(ember.add, a, c)

    def definite(self, g, like):
        """``g`` as a tensor a rule can take: zeros where it may be None (what reaches an
        operand through it only then ends with zeros where eager has None)."""
        if g not in self.maybe_none:
            return g
        return self.call(_zeros_if_none, g, shape_of(like), meta(like).dtype)

    def forward(self, x):
        """The forward value ``x`` as the backward reads it: ``x`` a node, a constant, or
        ``("extra", region call)`` / ``("ctx", op node)`` (what a region's generated
        backward / an op's own rule reads besides the operands)."""
        if not is_node(x) and not isinstance(x, tuple):
            return x
        ph = self._saved_at.get(x)
        if ph is None:
            if is_node(x) and x.op == "get_attr":  # a constant of the graph module: the backward's own attribute
                self.attrs[x.target] = getattr(self.gm, x.target)
                ph = self._insert(lambda: self.graph.get_attr(x.target))
            else:
                label = x.name if is_node(x) else f"{x[1].name}_{x[0]}"
                ph = self._insert(lambda: self.graph.placeholder(f"saved_{label}"))
                self.saved.append(x)
            self._saved_at[x] = ph
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


def shape_of(node) -> tuple:
    tm = meta(node)
    if tm is None:
        raise NoDerivative("a value without a shape")
    return tuple(tm.shape)


def _sum_to(b: Backward, g, like):
    """``g`` summed to the shape of the forward value ``like`` (undoing broadcasting)."""
    return b.call(ember.Tensor.sum_to_size, g, shape_of(like))


def _args(node, names, defaults=None):
    """``node``'s arguments by ``names`` (``defaults`` for those not given)."""
    given = dict(zip(names, node.args)) | dict(node.kwargs)
    if len(node.args) > len(names) or set(given) - set(names):
        raise NoDerivative(f"{name_of(node)} with arguments {sorted(set(given) - set(names))}")
    return [given.get(n, (defaults or {}).get(n)) for n in names]


# -- derivatives: (backward graph, forward node, gradient node, needs(x) -> bool) -> {input node: gradient} --

def _linear(b, node, g, needs):
    """The products of ``linear``'s own rule, in its order (so the gradients are eager's to
    the bit): 2-d products over the flattened leading dims."""
    x, w, bias = _args(node, ("input", "weight", "bias"))
    shape = shape_of(x)
    if len(shape) < 2 or len(shape_of(w)) != 2:
        raise NoDerivative("linear of a vector")
    out = []
    g2 = g if len(shape) == 2 else b.call(ember.reshape, g, (-1, shape_of(w)[0]))
    if needs(x):
        gx = b.call(ember.matmul, g2, b.forward(w))
        out.append((x, gx if len(shape) == 2 else b.call(ember.reshape, gx, shape)))
    if needs(w):
        x2 = b.forward(x) if len(shape) == 2 else b.call(ember.reshape, b.forward(x), (-1, shape[-1]))
        out.append((w, b.call(ember.matmul, b.call(ember.t, g2), x2)))
    if needs(bias):
        out.append((bias, b.call(ember.sum, g, tuple(range(len(shape) - 1)))))
    return _merge(b, out)


def _mT(b, v):
    return b.call(ember.transpose, v, -2, -1)


def _matmul(b, node, g, needs):
    x, y = _args(node, ("input", "other"))
    if len(shape_of(x)) < 2 or len(shape_of(y)) < 2:
        raise NoDerivative("a matrix product of a vector")
    out = []
    if needs(x):
        out.append((x, _sum_to(b, b.call(ember.matmul, g, _mT(b, b.forward(y))), x)))
    if needs(y):
        out.append((y, _sum_to(b, b.call(ember.matmul, _mT(b, b.forward(x)), g), y)))
    return _merge(b, out)


def _add(sign):
    def rule(b, node, g, needs):
        x, y, alpha = _args(node, ("input", "other", "alpha"), {"alpha": 1})
        out = []
        if needs(x):
            out.append((x, _sum_to(b, g, x)))
        if needs(y):
            scale = sign * alpha
            out.append((y, _sum_to(b, g if scale == 1 else b.call(ember.mul, g, scale), y)))
        return _merge(b, out)
    return rule


def _mul(b, node, g, needs):
    x, y = _args(node, ("input", "other"))
    out = []
    if needs(x):
        out.append((x, _sum_to(b, b.call(ember.mul, g, b.forward(y)), x)))
    if needs(y):
        out.append((y, _sum_to(b, b.call(ember.mul, g, b.forward(x)), y)))
    return _merge(b, out)


def _div(b, node, g, needs):
    x, y, mode = _args(node, ("input", "other", "rounding_mode"))
    if mode is not None or needs(y):
        raise NoDerivative("a division by a value that needs a gradient, or rounded")
    return {x: _sum_to(b, b.call(ember.div, g, b.forward(y)), x)} if needs(x) else {}


def _view(b, node, g, needs):
    x = node.args[0]
    return {x: b.call(ember.reshape, g, shape_of(x))} if needs(x) else {}


def _permute(b, node, g, needs):
    x, dims = node.args[0], node.args[1:]
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    if node.kwargs or not all(isinstance(d, int) for d in dims):
        raise NoDerivative("permute")
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
        raise NoDerivative("dropout that draws a mask")
    return {x: g} if needs(x) else {}


def _chunk_or_split(b, node, grads, needs):
    """``grads``: the gradient of each piece (None for a piece no gradient reached)."""
    x = node.args[0]
    if not needs(x):
        return {}
    dim = _args(node, ("input", "split_size_or_sections" if name_of(node) == "split" else "chunks", "dim"),
                {"dim": 0})[2]
    shape, dtype = shape_of(x), meta(x).dtype
    pieces = [b.call(ember.zeros, shape[:dim % len(shape)] + (size,) + shape[dim % len(shape) + 1:], dtype=dtype)
              if gr is None else gr for gr, size in zip(grads, _piece_sizes(node))]
    return {x: b.call(ember.cat, tuple(pieces), dim)}


def _piece_sizes(node) -> list:
    """The sizes along the split dim of ``chunk``'s or ``split``'s pieces (torch's rules:
    ``chunk`` makes pieces of ``ceil(size / chunks)``, the last one smaller)."""
    x, by, dim = _args(node, ("input", "split_size_or_sections" if name_of(node) == "split" else "chunks", "dim"),
                       {"dim": 0})
    size = shape_of(x)[dim]
    if isinstance(by, (list, tuple)):
        return list(by)
    if not isinstance(by, int) or by <= 0:
        raise NoDerivative(f"{name_of(node)} by {by!r}")
    step = -(-size // by) if name_of(node) == "chunk" else by
    return [min(step, size - i) for i in range(0, size, step)] if step else [0]


def _region(b, node, grads, needs):
    holder, *operands = node.args
    region = getattr(b.gm, holder.target)
    if not region.has_backward and any(needs(a) for a in operands):
        raise NoDerivative("a fused region without a generated backward")
    extra = b.forward(("extra", node))
    computed = b.call(_region_backward, b.forward(holder), extra, len(operands),
                      *[b.forward(a) for a in operands], *grads)
    unreached = region._unreached(tuple(g is None for g in grads))  # these take None, as in eager
    found = {a: b.call(operator.getitem, computed, i) for i, a in enumerate(operands)
             if needs(a) and i not in unreached}
    if any(g in b.maybe_none for g in grads):  # a result whose gradient may be None on a call: so may these
        b.maybe_none.update(found.values())
    return found


def _region_backward(region, extra, n, *operands_and_grads):
    """A fused region's generated backward on the saved operands and its results' gradients."""
    operands, grads = operands_and_grads[:n], operands_and_grads[n:]
    computed = region.backward_arrays([t._data if isinstance(t, Tensor) else t for t in operands],
                                      [None if g is None else g._data for g in grads], extra)
    return tuple(None if a is None else _make(a, region.dtype) for a in computed)


def call_region_saving(region, *tensors):
    """A fused region's forward that also returns what its backward reads."""
    results, extra = region.forward_arrays([t._data if isinstance(t, Tensor) else t for t in tensors])
    return (*[_make(a, region.dtype) for a in results], extra)


# -- any other op: its own gradient rule, run on the values it saved in the forward ----------

class Local:
    """An op without a derivative here, called in the forward graph: it runs with autograd
    on, on detached copies of its operands that need gradients, and returns its results
    (detached) and what its node saved (``ctx``: the results as the node made them, and
    those operands), so the backward graph runs the node's own rule (``_local_backward``)."""

    __slots__ = ("fn", "positions", "flat", "__name__")

    def __init__(self, fn, positions, flat):
        # ``positions``: of the operands needing gradients, among the positional arguments,
        # or (``flat``) among the flattened arguments (an operand inside a list)
        self.fn, self.positions, self.flat = fn, positions, flat
        self.__name__ = f"{getattr(fn, '__name__', 'op')}_saving"

    def __call__(self, *args, **kwargs):
        if self.flat:
            from ..func._pytree import tree_flatten, tree_unflatten
            leaves, spec = tree_flatten((args, kwargs))
        else:
            leaves = list(args)
        operands = []
        for i in self.positions:
            leaves[i] = t = leaves[i].detach().requires_grad_()
            operands.append(t)
        if self.flat:
            args, kwargs = tree_unflatten(leaves, spec)
        else:
            args = leaves
        with grad_mode.enable_grad():
            made = self.fn(*args, **kwargs)
            if isinstance(made, Tensor):
                made = _own(made, operands)
                return made.detach(), (made, operands)
            made = _rebuild(made, [_own(x, operands) if isinstance(x, Tensor) else x for x in made])
        return _rebuild(made, [x.detach() if isinstance(x, Tensor) else x for x in made]), (made, operands)


def _own(t, operands):
    """``t``, or a view of it where the op returned an operand itself (``float()`` of a
    float32 tensor): the view's node carries the gradient back to that operand."""
    return t.view_as(t) if any(t is o for o in operands) else t


def _rebuild(like, items):
    """A tuple (or named tuple, as ``max(dim)`` returns) of ``like``'s type holding ``items``."""
    return type(like)(*items) if hasattr(like, "_fields") else type(like)(items)


def _local_backward(ctx, *grads):
    """The gradients of a ``Local`` call's operands, by its node's own rule where one node
    made all its results from those operands (the engine's work done here: each gradient
    brought to its operand's shape and dtype), else by ``autograd.grad``. None for an
    operand its rule gives none (the shape argument of ``expand_as``), which the backward
    graph carries as eager does."""
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
    if not pairs:
        return tuple([None] * len(operands))
    return ember.autograd.grad([o for o, _ in pairs], operands, [g for _, g in pairs], retain_graph=True,
                               allow_unused=True)


def _local(b, node, grads, needs):
    """Mark ``node`` to run as a ``Local`` call in the forward graph (``b.locals``: the
    runner rewrites its copy of the forward) and read its saved ``ctx`` in the backward."""
    from ..func._pytree import tree_flatten
    if not _pure_op(node):
        raise NoDerivative(f"no derivative for {name_of(node) or node.target}")
    leaves, _ = tree_flatten((node.args, node.kwargs))
    if any(is_node(x) and meta(x) is None for x in leaves):  # a value that is no tensor: its leaves may vary
        raise NoDerivative(f"{name_of(node)} of a value that is not a tensor")
    if all(any(x is a for a in node.args) for x in leaves if needs(x)):
        positions = [i for i, x in enumerate(node.args) if needs(x)]  # all positional: no flattening
        b.locals[node] = Local(node.target, positions, flat=False)
        needed = [node.args[i] for i in positions]
    else:
        positions = [i for i, x in enumerate(leaves) if needs(x)]
        b.locals[node] = Local(node.target, positions, flat=True)
        needed = [leaves[i] for i in positions]
    computed = b.call(_local_backward, b.forward(("ctx", node)), *grads)
    pairs = [(x, b.call(operator.getitem, computed, k)) for k, x in enumerate(needed)]
    b.maybe_none.update(g for _, g in pairs)
    return _merge(b, pairs)


def _pure_op(node) -> bool:
    """Whether ``node`` is an op (or a tensor's indexing) that writes nothing in place."""
    entry = _dispatch.entry_of(node.target)
    if entry is None:
        return node.target is operator.getitem
    return not (entry.meta.get("capture") or entry.name.endswith("_") or inplace_arg(node)
                or "out" in node.kwargs or node.target in _side_effectful_functions)


def inplace_arg(node):
    """Where ``node``'s op takes an ``inplace`` argument given True: ("kw", name) or ("pos",
    index); else None."""
    if node.kwargs.get("inplace") is True:
        return ("kw", "inplace")
    try:
        params = list(inspect.signature(node.target).parameters)
    except (TypeError, ValueError):
        return None
    if "inplace" in params and params.index("inplace") < len(node.args) and node.args[params.index("inplace")] is True:
        return ("pos", params.index("inplace"))
    return None


def _result_indices(node) -> list:
    """The results of a node with several (read through ``getitem`` nodes)."""
    found = {u.args[1] for u in node.users if u.target is operator.getitem and isinstance(u.args[1], int)}
    return list(range(max(found) + 1)) if found else []


def _merge(b, pairs) -> dict:
    """{input: gradient} from (input, gradient) pairs, an input met twice summed."""
    out = {}
    for x, g in pairs:
        out[x] = g if x not in out else b.add(out[x], g)
    return out


def _sum_optional(a, b):
    """``a + b`` where either may be None (no gradient): the other, or None."""
    return b if a is None else a if b is None else a + b


def _zeros_if_none(g, shape, dtype):
    """``g``, or zeros where no gradient came (an op's rule takes a tensor)."""
    return ember.zeros(shape, dtype=dtype) if g is None else g


_DERIVATIVES = {
    "linear": _linear, "matmul": _matmul, "add": _add(1), "sub": _add(-1), "mul": _mul, "div": _div,
    "true_divide": _div, "reshape": _view, "view": _view, "flatten": _view, "unflatten": _view,
    "squeeze": _view, "unsqueeze": _view, "contiguous": _view, "permute": _permute, "transpose": _transpose,
    "t": _t, "dropout": _identity_dropout,
}
_MULTI = {"region": _region, "chunk": _chunk_or_split, "split": _chunk_or_split}


def _as_dtype_of(b, g, x, node):
    """``g`` cast to the dtype of the operand ``x`` where the op's result has another one
    (``h * p.double()``), as the engine brings a gradient to its input's dtype."""
    mx, mn = meta(x), meta(node)
    if mx is None or mn is None or mx.dtype == mn.dtype:
        return g
    return b.call(ember.Tensor.to, g, mx.dtype)


def derive(gm, nodes, back: Backward, grads: dict, needs_grad: set) -> dict:
    """Walk ``nodes`` (of ``gm``'s graph, in graph order) backwards from ``grads`` (forward
    node -> its gradient in ``back``), adding each node's gradient nodes to ``back``;
    returns the gradients reached (of the inputs, among them). ``needs_grad``: the nodes
    whose values depend on an input that needs a gradient. NoDerivative where a node on
    the way cannot be differentiated without changing what the forward does."""
    pieces: dict = {}  # forward node with several results -> {index: gradient}

    def needs(x):
        return is_node(x) and x in needs_grad

    for node in reversed(nodes):
        if node.op != "call_function" or node not in needs_grad:
            continue
        name = name_of(node)
        if name == "getitem" and meta(node.args[0]) is None:  # one result of a node with several
            parent, index = node.args
            if node in grads and is_node(parent):
                pieces.setdefault(parent, {})[index] = grads.pop(node)
            continue
        if name in _MULTI or (node in pieces and name != "getitem"):
            got = pieces.pop(node, None)
            if got is None:
                continue
            if name in ("chunk", "split"):  # pieces concatenated: each one a tensor
                got = {i: back.definite(g, u) for i, g in got.items()
                       for u in node.users if u.target is operator.getitem and u.args[1] == i}
            n = len(getattr(gm, node.args[0].target).outputs) if name == "region" else \
                len(_piece_sizes(node)) if name in _MULTI else len(_result_indices(node))
            found = _MULTI.get(name, _local)(back, node, [got.get(i) for i in range(n)], needs)
        else:
            g = grads.pop(node, None)
            if g is None:
                continue
            g = back.definite(g, node)
            try:
                found = _DERIVATIVES[name](back, node, g, needs)
                found = {x: _as_dtype_of(back, gx, x, node) for x, gx in found.items()}
            except (KeyError, NoDerivative):  # the op's own rule
                found = _local(back, node, [g], needs)
        for x, gx in found.items():
            grads[x] = gx if x not in grads else back.add(grads[x], gx)
    return grads
