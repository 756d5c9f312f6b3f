"""Build an ``ember.fx`` graph from an ONNX graph, node by node.

Each ONNX node is handed to its converter (``_table.CONVERTERS``) with its inputs and its
attributes (the schema's defaults filled in). A converter asks the builder for its inputs
(``tensor``, ``operand``, ``ints``) and makes calls (``call``, ``method``); the builder
turns them into graph nodes, or, when every input of the ONNX node is a constant, runs
them at once and keeps the result as a constant (so shape arithmetic on constants leaves
no trace in the code while a Shape of an input stays a computation).

Initializers become the module's state: float ones with at least one dim
``nn.Parameter``s (they train), the rest, and a BatchNormalization's running statistics,
buffers; 0-d floats are constants."""

from __future__ import annotations

import keyword
import re

import numpy as np

from .errors import OnnxImportError, UnsupportedOnnxOperatorError

_BAD_CHARS = re.compile(r"[^0-9A-Za-z_]+")
_OUTPUT_SUFFIX = re.compile(r"_output_(\d+)$")


def sanitize(name: str, fallback: str = "value") -> str:
    """An identifier for an ONNX value name: ``/layer1/conv1/Conv_output_0`` ->
    ``layer1_conv1_conv``, ``onnx::MatMul_12`` -> ``matmul_12``, ``input.1`` -> ``input_1``."""
    s = name[len("onnx::"):] if name.startswith("onnx::") else name
    s = _OUTPUT_SUFFIX.sub(lambda m: "" if m.group(1) == "0" else f"_{m.group(1)}", s)
    s = _BAD_CHARS.sub("_", s).strip("_").lower() or fallback
    if s[0].isdigit():
        s = f"{fallback}_{s}"
    return f"{s}_" if keyword.iskeyword(s) else s


def _attribute_path(name: str) -> str:
    """A dotted attribute path for an initializer name: state_dict-like names
    (``layer1.0.conv1.weight``) stay as they are, so the module's state_dict keys are
    the initializer names; others are flattened into one identifier."""
    parts = name.split(".")
    if all(re.fullmatch(r"[A-Za-z_][0-9A-Za-z_]*|[0-9]+", p) and not keyword.iskeyword(p) for p in parts) \
            and not parts[-1].isdigit() and not parts[0].isdigit():
        return name
    return sanitize(name, "param")


class OnnxNode:
    """One ONNX node as the converters see it: ``inputs``/``outputs`` (names, "" for an
    omitted optional input), ``attrs`` (every attribute of the schema, defaults filled)."""

    def __init__(self, proto, attrs: dict):
        self.proto = proto
        self.op_type, self.domain = proto.op_type, proto.domain
        self.name = proto.name or (proto.output[0] if proto.output else proto.op_type)
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attrs = attrs

    def input(self, i: int) -> str:
        """The name of input ``i``, "" when it is omitted."""
        return self.inputs[i] if i < len(self.inputs) else ""

    def unsupported(self, detail: str) -> UnsupportedOnnxOperatorError:
        return UnsupportedOnnxOperatorError(self.op_type, self.domain, self.name, detail)


def attributes(proto, opset: int) -> dict:
    """The node's attributes by name, with the schema's default for each one left out."""
    import onnx
    out = {}
    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, proto.domain)
    except onnx.defs.SchemaError:
        schema = None
    if schema is not None:
        for name, attr in schema.attributes.items():
            if attr.default_value.type != onnx.AttributeProto.UNDEFINED:
                out[name] = _attribute_value(attr.default_value)
    for attr in proto.attribute:
        out[attr.name] = _attribute_value(attr)
    return out


def _attribute_value(attr):
    import onnx
    value = onnx.helper.get_attribute_value(attr)
    if attr.type == onnx.AttributeProto.FLOAT:  # float32 in the file: its shortest spelling (1e-05)
        return float(str(np.float32(value)))
    if attr.type == onnx.AttributeProto.FLOATS:
        return [float(str(np.float32(v))) for v in value]
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode() for v in value]
    return value


class Builder:
    """The fx graph under construction, the module state and each ONNX value's handle."""

    def __init__(self, graph_proto, opset: int, types: dict, source: str):
        from ...fx import Graph
        self.graph = Graph()
        self.opset = opset
        self.types = types  # ONNX value name -> (elem_type, rank or None)
        self.source = source
        self.nodes: dict = {}  # ONNX value name -> fx Node
        self.static: dict = {}  # ONNX value name -> numpy array: a constant, an int initializer, a folded value
        self.root: dict = {}  # attribute path -> Parameter or buffer tensor
        self.initializer_names: dict = {}  # ONNX initializer name -> attribute path
        self._initializers: dict = {}  # ONNX initializer name -> (array, is a parameter)
        self._attr_nodes: dict = {}  # attribute path -> its get_attr node
        self._eager = False
        self._created: list = []
        self._missing: dict = {}  # ONNX value name -> the node that cannot compute it
        self._statistics = _batch_norm_statistics(graph_proto)

    # ---- what the converters call -------------------------------------------------------

    def tensor(self, name: str):
        """The value ``name`` as a tensor (a graph node; an ember tensor while folding);
        None for an omitted input."""
        if not name:
            return None
        if self._eager:
            from ... import from_numpy
            return from_numpy(np.array(self.static[name]))
        if name in self.nodes:
            return self.nodes[name]
        if name in self._initializers:
            return self._get_attr(_attribute_path(name), name)
        if name in self.static:
            return self._get_attr(sanitize(name, "const"), name)
        if name in self._missing:
            raise self._missing[name].unsupported(f"cannot compute its output {name!r}")
        raise OnnxImportError(f"{self.source}: value {name!r} is used before any node computes it")

    def operand(self, name: str, others=()):
        """``name`` as a Python number where it is a 0-d constant and some of ``others`` is
        not (``x * 0.5`` reads better than a buffer), else as a tensor."""
        array = self.static.get(name)  # parameters are never static: they stay tensors
        if array is not None and array.ndim == 0 and array.dtype.kind in "iuf" and \
                any(o and o not in self.static for o in others):
            return array.item()
        return self.tensor(name)

    def const(self, name: str):
        """The numpy value of ``name`` when it is known at import time, else None."""
        return self.static.get(name) if name else None

    def ints(self, name: str):
        """A constant integer input as a list of Python ints, else None."""
        array = self.const(name)
        return None if array is None else [int(v) for v in np.asarray(array).reshape(-1)]

    def dtype(self, name: str):
        """The ember dtype of ``name`` where it is known (constant or inferred), else None."""
        from ._dtypes import from_onnx
        if name in self.static:
            from ... import from_numpy
            return from_numpy(np.zeros((), self.static[name].dtype)).dtype
        if name in self._initializers:
            from ... import from_numpy
            return from_numpy(np.zeros((), self._initializers[name][0].dtype)).dtype
        t = self.types.get(name)
        return None if t is None else from_onnx(t[0], missing_ok=True)

    def is_parameter(self, name: str) -> bool:
        """Whether ``name`` is a float initializer (a parameter of the module)."""
        return name in self._initializers and self._initializers[name][1]

    def rank(self, name: str):
        if name in self.static:
            return self.static[name].ndim
        if name in self._initializers:
            return self._initializers[name][0].ndim
        t = self.types.get(name)
        return None if t is None else t[1]

    def shape(self, name: str):
        """The static shape of a constant or initializer, else None."""
        array = self.static.get(name)
        if array is None and name in self._initializers:
            array = self._initializers[name][0]
        return None if array is None else tuple(array.shape)

    def call(self, fn, *args, **kwargs):
        if self._eager:
            return fn(*args, **kwargs)
        node = self.graph.call_function(fn, args, kwargs)
        self._created.append(node)
        return node

    def method(self, name: str, obj, *args, **kwargs):
        if self._eager:
            return getattr(obj, name)(*args, **kwargs)
        node = self.graph.call_method(name, (obj, *args), kwargs)
        self._created.append(node)
        return node

    def item(self, obj, index):
        import operator
        return self.call(operator.getitem, obj, index)

    # ---- building -------------------------------------------------------------------------

    def add_initializers(self, initializers):
        import onnx
        for init in initializers:
            array = onnx.numpy_helper.to_array(init)
            # a 0-d float is a constant the exporter lifted (a softmax scale, GELU's 0.5, a
            # mask's fill value), not a weight: it folds like any constant
            is_param = array.dtype.kind == "f" and array.ndim > 0 and init.name not in self._statistics
            self._initializers[init.name] = (array, is_param)
            if not is_param:
                self.static[init.name] = array  # shape arithmetic on it folds

    def add_input(self, name: str):
        base = candidate = sanitize(name, "input")
        taken = {n.target for n in self.graph.nodes if n.op == "placeholder"}
        i = 1
        while candidate in taken:  # the parameters of forward must differ
            candidate, i = f"{base}_{i}", i + 1
        self.nodes[name] = self.graph.placeholder(candidate)

    def add_node(self, proto, converters):
        from ._reader import DEFAULT_DOMAINS
        domain = proto.domain if proto.domain not in DEFAULT_DOMAINS else ""
        node = OnnxNode(proto, attributes(proto, self.opset) if not domain else
                        {a.name: _attribute_value(a) for a in proto.attribute})
        convert = converters.get(proto.op_type) if not domain else None
        if convert is None:
            raise UnsupportedOnnxOperatorError(proto.op_type, proto.domain, node.name)
        if any(a.type in (5, 10) for a in proto.attribute):  # GRAPH, GRAPHS: If, Loop, Scan
            raise node.unsupported("has a subgraph attribute, which is not supported")
        if proto.op_type == "Constant":
            self.static[proto.output[0]] = convert(self, node)
            return
        used = [i for i in node.inputs if i]
        self._eager = bool(used) and all(i in self.static for i in used)
        self._created = []
        try:
            results = convert(self, node)
            if not isinstance(results, (list, tuple)):
                results = [results]
            for name, value in zip(node.outputs, list(results) + [None] * len(node.outputs)):
                if not name:
                    continue
                if value is None:  # an optional output the converter does not make: an error if used
                    self._missing[name] = node
                    continue
                if self._eager:
                    self.static[name] = value.detach().cpu().numpy()
                    continue
                self.nodes[name] = value
                if any(value is c for c in self._created):  # named after the ONNX value it computes
                    value._rename(sanitize(name))
        except UnsupportedOnnxOperatorError:
            raise
        except (OnnxImportError, NotImplementedError) as exc:
            raise OnnxImportError(f"ember.onnx.load_model: {proto.op_type} node {node.name!r}: {exc}") from exc
        finally:
            self._eager = False

    def add_output(self, names):
        values = [self.tensor(n) if n not in self.nodes else self.nodes[n] for n in names]
        self.graph.output(values[0] if len(values) == 1 else tuple(values))

    def module(self, class_name: str):
        from ...fx import GraphModule
        self.graph.eliminate_dead_code()
        gm = GraphModule(self.root, self.graph, class_name=class_name)
        used = {n.target for n in self.graph.nodes if n.op == "get_attr"}
        gm.initializer_names = {k: v for k, v in self.initializer_names.items() if v in used}
        return gm

    def _get_attr(self, path: str, name: str):
        if name in self._initializers and name in self.initializer_names:
            return self._attr_nodes[self.initializer_names[name]]
        from ... import from_numpy
        from ...nn import Parameter
        if name in self._initializers:
            array, is_param = self._initializers[name]
            value = from_numpy(np.array(array))
            value = Parameter(value) if is_param else value
        else:
            value = from_numpy(np.array(self.static[name]))
        path = self._free_path(path)
        self.root[path] = value
        node = self.graph.get_attr(path)
        self._attr_nodes[path] = node
        if name in self._initializers:
            self.initializer_names[name] = path
        else:  # a constant's node serves every later use of it
            self.nodes[name] = node
        return node

    def _free_path(self, path: str) -> str:
        """``path``, or a flat variant when it clashes with a registered path (one being the
        other's prefix: a tensor cannot also be a module); a part that names an attribute of
        the module class (``half``, ``code``) gets a trailing underscore."""
        from ...fx import GraphModule
        reserved = set(dir(GraphModule))
        path = ".".join(f"{p}_" if p in reserved else p for p in path.split("."))

        def clashes(p):
            return any(p == q or q.startswith(p + ".") or p.startswith(q + ".") for q in self.root)
        if not clashes(path):
            return path
        base, i = path.replace(".", "_"), 1
        candidate = base
        while clashes(candidate):
            candidate = f"{base}_{i}"
            i += 1
        return candidate


def _batch_norm_statistics(graph_proto) -> set:
    """Initializers fed to a BatchNormalization's running mean and variance: buffers, as in
    torch's BatchNorm modules (they do not train)."""
    out = set()
    for node in graph_proto.node:
        if node.op_type == "BatchNormalization" and node.domain in ("", "ai.onnx"):
            out.update(node.input[3:5])
    return out
