"""Dynamic axes from the symbolic capture: the model is recorded once with its declared
dynamic axes as symbolic sizes (``ember.fx._symbolic_shapes``), so the sizes it computes
from them are graph nodes (``call_method size``, ``operator.*``) that become
Shape/Gather and integer arithmetic in the file, and each value's dims carry their
expression (``node.meta["dynamic_dims"]``), which becomes a ``Sym`` here.

A declared axis that the model fixes cannot stay dynamic: a decision its Python code took
on the size (a comparison, ``int()``, ``range``), an op that fixes it (a ``view`` to static
sizes, a split along the axis), or a symbolic size given to an op whose ONNX form cannot
take a computed size: the export fails naming the axis and the op or line (torch's
exporter would make the axis fixed silently)."""

from __future__ import annotations

from ..fx._symbolic_shapes import _OPS, evaluate_sizes, leaves, render
from .errors import OnnxExporterError


class Sym:
    """A dim computed at run time: ``expr`` (a size expression over the recording's values),
    ``param`` its name in the file (ONNX dim_param: the axis name, ``4*batch``), ``value``
    its size in the example."""

    __slots__ = ("expr", "param", "value")

    def __init__(self, expr, param: str, value: int):
        self.expr, self.param, self.value = expr, param, value

    def __eq__(self, other):
        return isinstance(other, Sym) and self.expr == other.expr

    def __hash__(self):
        return hash(self.expr)

    def __repr__(self):
        return self.param


class Namer:
    """Names of size leaves: a declared axis by its name, another value's own size as
    ``<node>_dim<d>``."""

    dims = True

    def __init__(self, axis_names, node_names):
        self.axis_names = axis_names  # (input leaf index, dim) -> axis name
        self.node_names = node_names  # value index -> graph node name

    def __call__(self, value, dim):
        name = self.axis_names.get((value, dim))
        return name if name is not None else f"{self.node_names.get(value, f'v{value}')}_dim{dim}"

    def axes(self, expr) -> list:
        """The declared axes ``expr`` depends on (every declared axis for a size of a value
        the model made, which may derive from any of them)."""
        found = set()
        for v in leaves(expr):
            own = {n for (k, _), n in self.axis_names.items() if k == v}
            found |= own if own else set(self.axis_names.values())
        return sorted(found)


def input_dims(args, kwargs, dyn_inputs):
    """Per flattened input, the dims declared dynamic, after checking them; and the
    ``(leaf index, dim) -> axis name`` map."""
    from ..func._pytree import tree_flatten
    leaves_, _ = tree_flatten((args, kwargs))
    offsets, k = [], 0
    for a in args:
        offsets.append(k)
        k += len(tree_flatten(a)[0])
    dims = [None] * len(leaves_)
    names, sizes = {}, {}
    for i, spec in dyn_inputs.items():
        for axis, name in spec.items():
            if not 0 <= axis < args[i].dim():
                raise OnnxExporterError(f"dynamic axis {axis} ({name!r}) of input {i} is out of range for its "
                                        f"{args[i].dim()} dims")
            size = args[i].shape[axis]
            if sizes.setdefault(name, size) != size:
                raise OnnxExporterError(f"dynamic axis {name!r} has size {sizes[name]} in one input and {size} in "
                                        f"another")
            if size < 2:
                raise OnnxExporterError(f"dynamic axis {name!r} has size {size} in the example; give a size of 2 or "
                                        f"more (sizes 0 and 1 are specialized, as torch's exporter does)")
            leaf = offsets[i]
            dims[leaf] = (dims[leaf] or frozenset()) | {axis}
            names[(leaf, axis)] = name
    return dims, names


def check_guards(guards, namer) -> None:
    """Raise for the first decision the model took on a dynamic axis's size that the
    declarations do not imply (dims declared under one name are one size)."""
    for g in guards:
        if _implied(g, namer.axis_names):
            continue
        axes = namer.axes(g.expr) + [a for a in namer.axes(g.other) if a not in namer.axes(g.expr)]
        shown = ", ".join(repr(a) for a in axes)
        raise OnnxExporterError(
            f"dynamic axis {shown} is fixed by {g.where}: the model requires {g.describe(_plain(namer))} "
            f"(at the example's sizes), so the exported graph would hold only for such sizes")


# sizes given to the declared axes to test a guard: distinct, and 2 or more (torch's dynamic
# dims are assumed never 0 or 1)
_TRIALS = ((7, 11, 13, 17, 19, 23, 29, 31), (37, 41, 43, 47, 53, 59, 61, 67))


def _implied(guard, axis_names) -> bool:
    """Whether ``guard`` holds whatever sizes the declared axes take: it reads only declared
    input dims, and holds with every axis name at each size of ``_TRIALS`` (an equality of
    two dims declared under one name does; one fixing a size does not)."""
    names = sorted(set(axis_names.values()))
    for trial in _TRIALS:
        sizes = {n: trial[i % len(trial)] * (1 + i // len(trial)) for i, n in enumerate(names)}

        def size_of(value, dim, sizes=sizes):
            return sizes[axis_names[(value, dim)]]
        try:
            outcome = _OPS[guard.op](evaluate_sizes(guard.expr, size_of), evaluate_sizes(guard.other, size_of))
        except KeyError:  # a size the model made, or a static dim
            return False
        if outcome != guard.outcome:
            return False
    return True


def _plain(namer):
    def name_of(value):
        return namer.node_names.get(value, f"v{value}")
    return name_of


def symbolic_dims(gm, namer) -> dict:
    """``{node name: dims}`` for the nodes with symbolic sizes, each such dim a ``Sym``."""
    out = {}
    for node in gm.graph.nodes:
        dims = node.meta.get("dynamic_dims")
        tm = node.meta.get("tensor_meta")
        if not dims or tm is None:
            continue
        shape = list(tm.shape)
        for d, expr in dims.items():
            shape[d] = Sym(expr, render(expr, namer), shape[d])
        out[node.name] = tuple(shape)
    return out


def declared(dynamic_axes, dynamic_shapes, input_names, output_names, placeholders, n_args):
    """``({input index: {axis: name}}, {output name: {axis: name}})`` from torch's two spellings."""
    inputs: dict = {}
    outputs: dict = {}
    names = list(input_names or []) + [p.target for p in placeholders[len(input_names or []):]]

    def axes_of(spec, who):
        if isinstance(spec, dict):
            return {int(a): (n if isinstance(n, str) else getattr(n, "__name__", None) or f"{who}_dim{a}")
                    for a, n in spec.items() if n is not None}
        if isinstance(spec, (list, tuple)):
            if all(isinstance(a, int) for a in spec):  # dynamic_axes' list of axes
                return {a: f"{who}_dim{a}" for a in spec}
            return {a: (n if isinstance(n, str) else getattr(n, "__name__", None) or f"{who}_dim{a}")
                    for a, n in enumerate(spec) if n is not None}
        raise OnnxExporterError(f"the dynamic axes of {who!r} must be a dict or a list, got {type(spec).__name__}")

    for key, spec in (dynamic_axes or {}).items():
        if key in names:
            inputs[names.index(key)] = axes_of(spec, key)
        elif output_names is not None and key in output_names:
            outputs[key] = axes_of(spec, key)
        else:
            outputs[key] = axes_of(spec, key)  # checked against the output names once they are known
    if dynamic_shapes is not None:
        forward_names = [p.target for p in placeholders]  # the argument's name (the node's may differ: input_1)
        items = dynamic_shapes.items() if isinstance(dynamic_shapes, dict) else enumerate(dynamic_shapes)
        for key, spec in items:
            index = forward_names.index(key) if isinstance(key, str) and key in forward_names else key
            if not isinstance(index, int) or not 0 <= index < len(placeholders):
                raise OnnxExporterError(f"dynamic_shapes names {key!r}, which is not an input of the model "
                                        f"(inputs: {forward_names})")
            if spec is not None:
                inputs.setdefault(index, {}).update(axes_of(spec, names[index]))
    for index in inputs:
        if index >= n_args:
            raise OnnxExporterError("dynamic axes are supported on positional tensor inputs only")
    return inputs, outputs
