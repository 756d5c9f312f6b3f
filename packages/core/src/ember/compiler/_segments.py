"""A recording cut into graphs at its breaks, and the tree of recordings of one signature.

Values are numbered as the recording met them (inputs, then externals and results); a
replay keeps them in ``env`` (number -> tensor). Each ``Segment`` is one ``ember.fx``
``GraphModule`` that reads the values it needs from ``env`` as placeholders and returns
the ones it defines; then, if the recording broke there, the break's value is computed
and chooses the next segment. A segment before a break returns every tensor it defines,
because a branch recorded later may read any of them.
"""

from __future__ import annotations

import operator

from ..func._pytree import tree_flatten, tree_unflatten
from ..fx._symbolic_floats import SymFloat
from ..fx._symbolic_shapes import SymInt
from ..fx.node import has_side_effect
from ._capture import Break, Capture, Step, _Ref, same_value, set_grad, set_modes

__all__ = ["Segment", "build_segments", "resolve"]

_LITERALS = (int, float, bool, str, type(None), slice, type(Ellipsis), complex)
has_side_effect(set_modes)  # a mode switch has no users: dead-code elimination must keep it
has_side_effect(set_grad)


class Segment:
    """One graph of a recording and what follows it."""

    __slots__ = ("gm", "run", "inputs", "outputs", "brk", "children", "steps", "result")

    def __init__(self, gm, inputs, outputs, brk, steps, result):
        self.gm = gm
        self.run = gm  # what the backend made of ``gm``
        self.inputs, self.outputs = inputs, outputs
        self.brk: Break | None = brk
        self.children: list[tuple[object, Segment]] = []  # (break value, next segment)
        self.steps = steps  # the op names, to check that a later recording took the same path
        self.result = result  # (spec, leaves) at the end of the program: leaves are _Ref or constants

    def child(self, value):
        for expected, segment in self.children:
            if same_value(value, expected):
                return segment
        return None


def resolve(a, env):
    """``a`` with ``_Ref``s replaced by the values in ``env``."""
    if isinstance(a, _Ref):
        return env[a.index]
    if type(a) in (list, tuple):
        return type(a)(resolve(x, env) for x in a)
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*(resolve(x, env) for x in a))
    if type(a) is dict:
        return {k: resolve(v, env) for k, v in a.items()}
    if type(a) is slice and any(isinstance(x, _Ref) for x in (a.start, a.stop, a.step)):
        return slice(resolve(a.start, env), resolve(a.stop, env), resolve(a.step, env))
    return a


def _chunks(items):
    """The recording's items cut after each break: [(items, break or None)]."""
    out, current = [], []
    for item in items:
        if isinstance(item, Break):
            out.append((current, item))
            current = []
        else:
            current.append(item)
    out.append((current, None))
    return out


class _Builder:
    """Builds one segment's graph: placeholders for the values read from ``env``, a node per
    recorded call, attributes for the objects generated code cannot spell."""

    def __init__(self, names, values, externals=None, dynamic=None, exprs=None):
        from .. import fx
        self.graph = fx.Graph()
        self.attrs: dict = {}  # the graph module's attributes: constants, and externals read as attributes
        self.names = names
        self.externals = externals or {}  # value index -> External read with get_attr (jit.trace)
        self.values = values  # value index -> the tensor recorded (for node.meta["tensor_meta"])
        self.dynamic = dynamic or {}  # value index -> {dim: expression} of its symbolic sizes
        self.exprs = exprs or {}  # value index of a symbolic size -> its expression
        self.local: dict[int, object] = {}  # value index -> node
        self.inputs: list[int] = []
        self.defined: list[int] = []
        self.consts = 0

    def node_of(self, index: int):
        node = self.local.get(index)
        if node is None:
            ext = self.externals.get(index)
            if ext is not None:
                name = ".".join(key for _, key in ext.path) if ext.attr_path else f"_tensor_constant{index}"
                self.attrs[name] = ext.fetch()
                node = self.local[index] = self.graph.get_attr(name)
            else:
                node = self.local[index] = self.graph.placeholder(self.names.get(index, f"v{index}"))
                self.inputs.append(index)
            self._describe(node, index)
        return node

    def _describe(self, node, index: int) -> None:
        from ..fx.passes.shape_prop import _extract_tensor_metadata
        t = self.values[index]
        node.meta["value_index"] = index  # what the size expressions of node.meta call it
        if _is_tensor(t):
            node.meta["tensor_meta"] = _extract_tensor_metadata(t)
            if index in self.dynamic:
                node.meta["dynamic_dims"] = self.dynamic[index]
        elif isinstance(t, (int, float)):
            node.meta["sym_hint"] = t  # a symbolic size or float: the value it had while recording
            if index in self.exprs:
                node.meta["sym_expr"] = self.exprs[index]

    def arg(self, a):
        if isinstance(a, _Ref):
            return self.node_of(a.index)
        if type(a) in (list, tuple):
            return type(a)(self.arg(x) for x in a)
        if type(a) is dict:
            return {k: self.arg(v) for k, v in a.items()}
        if type(a) is slice:
            return slice(self.arg(a.start), self.arg(a.stop), self.arg(a.step))
        if isinstance(a, _LITERALS):
            return a
        name = f"_const_{self.consts}"
        self.consts += 1
        self.attrs[name] = a
        return self.graph.get_attr(name)

    def define(self, index: int, node) -> None:
        self.local[index] = node
        self.defined.append(index)
        self._describe(node, index)

    def step(self, step: Step) -> None:
        make = self.graph.call_method if step.kind == "call_method" else self.graph.call_function
        node = make(step.fn, self.arg(step.args), self.arg(step.kwargs))
        if step.out_spec is None:  # one result
            if step.outputs[0] is not None:
                self.define(step.outputs[0], node)
            return
        for path, index in zip(_leaf_paths(step.out_spec), step.outputs):
            if index is not None:
                leaf = node
                for k in path:
                    leaf = self.graph.call_function(operator.getitem, (leaf, k))
                self.define(index, leaf)

    def finish(self, outputs, result=None):
        """The graph module returning ``outputs`` (value indices) as a tuple, or, given
        ``result`` ((spec, refs)), the program's own result structure."""
        from .. import fx
        if result is None:
            self.graph.output(tuple(self.node_of(i) for i in outputs))
        else:
            spec, refs = result
            value = tree_unflatten([self.node_of(r.index) if isinstance(r, _Ref) else r for r in refs], spec)
            self.graph.output(value)
        return fx.GraphModule(self.attrs, self.graph)


def build_segments(capture: Capture, result, names: dict[int, str], traced: bool = False, keep=()):
    """The segments of ``capture`` in order (each the only child of the one before).
    ``result`` is what the call returned; ``names`` the placeholder names of inputs and
    externals. ``traced`` (jit.trace): externals are attributes of the graph module
    (``get_attr``: parameters and buffers by their path) instead of inputs, and the graph
    returns the program's result as it was structured. ``keep``: value indices the last
    segment returns besides the result (the tensors its guards read after a replay)."""
    leaves, spec = tree_flatten(result, dataclasses=True)  # a returned dataclass is rebuilt with new tensors
    result_refs = [_Ref(capture.value_of(x)) if _is_tensor(x) else _Ref(capture.expr_value(x.expr))
                   if isinstance(x, (SymInt, SymFloat)) and x.owner is capture else x
                   for x in leaves]  # a size or a symbolic float returned
    # a number argument returned as it came is read from the call, not from the graph
    numbers = set(capture.symbolic_args()) if not traced else set()
    graph_refs = [r for r in result_refs if not (isinstance(r, _Ref) and r.index in numbers)]
    chunks = _chunks(capture.items)
    available = set(range(capture.num_inputs)) | {i for i, e in capture.externals.items() if not e.late}
    segments = []
    as_attrs = {i: e for i, e in capture.externals.items() if not e.late} if traced else {}
    for n, (items, brk) in enumerate(chunks):
        last = n == len(chunks) - 1
        b = _Builder(names, capture._values, as_attrs, capture.dynamic,
                     capture.value_exprs())
        for i in sorted(_reads(items, brk, graph_refs if last else ()) & available):
            b.node_of(i)  # the values read from before first, in order, as torch's graphs list inputs
        mode = capture.start_mode  # each graph starts and ends in the modes of the call
        for item in items:
            if isinstance(item, Step):
                if item.mode is not None and item.mode != mode:  # the program entered or left no_grad
                    mode = item.mode
                    b.graph.call_function(set_modes, mode)
                b.step(item)
            elif capture.externals[item[1]].late:  # ("external", index): read where it is first used
                b.define(item[1], b.graph.call_method("fetch", (b.arg(capture.externals[item[1]]),)))
        if mode != capture.start_mode:
            b.graph.call_function(set_modes, capture.start_mode)
        if last:
            outputs = sorted({r.index for r in graph_refs if isinstance(r, _Ref)} | (set(keep) & set(b.defined)))
        else:
            outputs = list(dict.fromkeys(b.defined))
        available |= set(b.defined)
        structured = (spec, result_refs) if last and traced else None
        segments.append(Segment(b.finish(outputs, structured), b.inputs, outputs, brk,
                                [item.name for item in items if isinstance(item, Step)],
                                (spec, result_refs) if last else None))
    for a, b in zip(segments, segments[1:]):
        a.children.append((a.brk.expected, b))
    return segments


def _reads(items, brk, extra):
    """The value indices a chunk's steps (and its break, and ``extra``) read."""
    found: set[int] = set()

    def walk(a):
        if isinstance(a, _Ref):
            found.add(a.index)
        elif isinstance(a, (list, tuple)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)
        elif isinstance(a, slice):
            walk((a.start, a.stop, a.step))

    for item in items:
        if isinstance(item, Step):
            walk(item.args)
            walk(item.kwargs)
    if brk is not None:
        walk(brk.args)
        walk(brk.kwargs)
    walk(list(extra))
    return found


def _leaf_paths(spec, prefix=()):
    """The index path of each leaf of a ``tree_flatten`` spec."""
    if spec is None:
        return [prefix]
    kind, keys, children = spec
    out = []
    for k, child in enumerate(children):
        out += _leaf_paths(child, prefix + ((keys[k] if keys is not None else k),))
    return out


def _is_tensor(x) -> bool:
    from .._tensor import Tensor
    return isinstance(x, Tensor)

