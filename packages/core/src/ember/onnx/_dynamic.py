"""Dynamic axes without symbolic shapes in the IR: the model is recorded once more per
declared dynamic axis, with that axis one longer, and the recordings are compared node by
node. A result dim that changes with an axis becomes a ``Sym`` (a constant times a product
of axis sizes), which the emitters turn into a Shape/Gather computation at run time; a
constant argument that changes with an axis (a slice bound, a size given to a creation op)
cannot follow it, and the export fails naming the axis and the op that fixed it."""

from __future__ import annotations

from fractions import Fraction

from .errors import OnnxExporterError


class Sym:
    """A dim equal to ``coef * prod(sizes of axes)`` at run time; ``value`` is its traced size."""

    __slots__ = ("coef", "axes", "value")

    def __init__(self, coef: Fraction, axes: tuple, value: int):
        self.coef, self.axes, self.value = coef, axes, value

    def __eq__(self, other):
        return isinstance(other, Sym) and (self.coef, self.axes) == (other.coef, other.axes)

    def __hash__(self):
        return hash((self.coef, self.axes))

    def __repr__(self):
        return self.param

    @property
    def param(self) -> str:
        """The dim's name in the file (ONNX dim_param)."""
        prefix = "" if self.coef == 1 else f"{self.coef}*"
        return prefix + "*".join(self.axes)


def resized(tensor, axis: int):
    """``tensor`` one longer along ``axis``, its values taken cyclically from the original
    (so token ids stay valid ids)."""
    import ember
    size = tensor.shape[axis]
    if size == 0:
        raise OnnxExporterError(f"dynamic axis {axis} of an input has size 0 in the example; give a size >= 1")
    index = ember.arange(size + 1) % size
    return ember.index_select(tensor, axis, index)


# ops whose emitters build their shape arguments from the result's dims, at run time where
# those are Syms: their recorded arguments may change with an axis
SHAPE_FROM_RESULT = {"view", "reshape", "_unsafe_view", "expand", "flatten", "operator.getitem"}


def symbolic_dims(gm, others, axes, op_name):
    """``{node name: tuple of int | Sym}`` for the nodes whose result changes with an axis.

    ``gm``: the recording at the example sizes; ``others``: ``[(axis name, base size,
    recording with that axis one longer)]``."""
    from ..fx.node import map_arg
    nodes = list(gm.graph.nodes)
    out: dict = {}
    varied: dict = {}  # node name -> {dim: [axis names]}
    for name, base, other in others:
        alt = list(other.graph.nodes)
        if [(n.op, n.target if n.op == "call_function" else None) for n in alt] != \
                [(n.op, n.target if n.op == "call_function" else None) for n in nodes]:
            raise OnnxExporterError(f"the model records other ops when dynamic axis {name!r} changes size from {base} "
                                    f"to {base + 1} (control flow on the shape): this axis cannot stay dynamic")
        for n1, n2 in zip(nodes, alt):
            if n1.op == "call_function":
                leaves1, leaves2 = [], []
                _leaves(map_arg((n1.args, n1.kwargs), lambda n: "<node>"), leaves1)
                _leaves(map_arg((n2.args, n2.kwargs), lambda n: "<node>"), leaves2)
                op = op_name(n1.target)
                if leaves1 != leaves2 and op not in SHAPE_FROM_RESULT:
                    changed = next((a, b) for a, b in zip(leaves1, leaves2) if a != b) if len(leaves1) == len(leaves2) \
                        else (leaves1, leaves2)
                    raise OnnxExporterError(
                        f"dynamic axis {name!r} is fixed by the op {op!r} (node {n1.name!r}): its argument "
                        f"{changed[0]!r} becomes {changed[1]!r} when the axis changes size from {base} to {base + 1}, "
                        f"and the exported {op} cannot compute it from the input's shape")
            m1, m2 = n1.meta.get("tensor_meta"), n2.meta.get("tensor_meta")
            if m1 is None or m2 is None:
                continue
            s1, s2 = tuple(m1.shape), tuple(m2.shape)
            if len(s1) != len(s2):
                raise OnnxExporterError(f"dynamic axis {name!r} is fixed by the op {_maker(n1, op_name)!r} (node "
                                        f"{n1.name!r}): its result has rank {len(s1)} at size {base} and {len(s2)} "
                                        f"at size {base + 1}")
            for d, (a, b) in enumerate(zip(s1, s2)):
                if a != b:
                    if a * (base + 1) != b * base:  # not proportional to the axis
                        raise OnnxExporterError(
                            f"dynamic axis {name!r} is fixed by the op {_maker(n1, op_name)!r} (node {n1.name!r}): dim "
                            f"{d} of its result is {a} at size {base} and {b} at size {base + 1}, not a multiple of "
                            f"the axis")
                    varied.setdefault(n1.name, {}).setdefault(d, []).append(name)
    for n in nodes:
        if n.name not in varied:
            continue
        shape = list(n.meta["tensor_meta"].shape)
        for d, names in varied[n.name].items():
            prod = 1
            for name in names:
                prod *= axes[name]
            shape[d] = Sym(Fraction(shape[d], prod), tuple(sorted(names)), shape[d])
        out[n.name] = tuple(shape)
    return out


def _maker(node, op_name) -> str:
    """The op that made the node's value (for an element of a multi-output op, that op)."""
    import operator
    if node.op != "call_function":
        return node.op
    if node.target is operator.getitem and hasattr(node.args[0], "target"):
        return op_name(node.args[0].target)
    return op_name(node.target)


def _leaves(value, out):
    if isinstance(value, (tuple, list)):
        for v in value:
            _leaves(v, out)
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            _leaves(value[k], out)
    elif isinstance(value, slice):
        out.extend((value.start, value.stop, value.step))
    else:
        out.append(value)


def declared(dynamic_axes, dynamic_shapes, input_names, output_names, placeholders, n_args):
    """``({input index: {axis: name}}, {output name: {axis: name}})`` from torch's two spellings."""
    inputs: dict = {}
    outputs: dict = {}
    names = list(input_names or []) + [p.name for p in placeholders[len(input_names or []):]]

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
        forward_names = [p.name for p in placeholders]
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
