"""ONNX import: ``load_model`` turns an ONNX file into an ember module.

Source: the ONNX IR specification and operator specification (onnx.ai)."""

from __future__ import annotations

from .errors import OnnxImportError, UnsupportedOnnxOperatorError

__all__ = ["load_model", "OnnxImportError", "UnsupportedOnnxOperatorError"]


def load_model(path_or_bytes):
    """Read an ONNX model and return it as an ``ember.fx.GraphModule`` computing the same
    outputs, with the initializers as its state.

    ``path_or_bytes``: a file path (external data files next to it are read), serialized
    bytes, a binary file object or an ``onnx.ModelProto``. The model is validated with
    ``onnx.checker``, its local functions are inlined and its ai.onnx opset (13 to 23) is
    converted to opset 21 with ``onnx.version_converter`` when it differs.

    The module's ``forward`` takes one tensor per graph input, in the graph's order, named
    after the inputs (made into identifiers: ``input.1`` -> ``input_1``) and returns the
    outputs in order: one tensor, or a tuple when the graph has several. Each ONNX node
    becomes calls of ember ops (``gm.code`` shows them). Float initializers of one dim or
    more become ``nn.Parameter`` s, so the module trains; other initializers and a
    BatchNormalization's running statistics become buffers, and 0-d float initializers
    (constants such as a softmax scale, which torch's dynamo exporter stores as
    initializers) are constants. Their attribute paths are
    the initializer names where these are state_dict-like (``layer1.0.conv1.weight``),
    else identifiers made from them; ``gm.initializer_names`` maps each ONNX initializer
    name to its path. Shape computations (``Shape``, ``Gather``, ``Concat`` feeding a
    ``Reshape``) run as int64 tensor ops, so the module follows the batch size its input
    has; values computed only from constants are computed once, at import. The module
    computes inference: a BatchNormalization uses its running statistics, Dropout is the
    identity.

    Raises ``onnx.checker.ValidationError`` naming the file for bytes that are not an ONNX
    model or a model the checker rejects; ``FileNotFoundError`` for a missing path;
    ``UnsupportedOnnxOperatorError`` (a ``NotImplementedError`` and an
    ``ember.onnx.OnnxExporterError``) naming the operator type, its domain and the node for
    an operator or attribute value with no conversion; ``OnnxImportError`` for an opset
    outside 13..23 or one the version converter cannot convert."""
    try:
        import onnx  # noqa: F401
    except ImportError as exc:
        raise ImportError("ember.onnx.load_model needs the onnx package: pip install 'ember-core[onnx]'") from exc
    from . import _reader, _table
    from ._builder import Builder
    model, source = _reader.read(path_or_bytes)
    model = _reader.prepare(model, source)
    graph = model.graph
    builder = Builder(graph, _reader.TARGET_OPSET, _reader.value_types(model), source)
    builder.add_initializers(graph.initializer)
    initializer_names = {init.name for init in graph.initializer}
    for value in graph.input:
        if value.name not in initializer_names:  # an initializer listed as an input is a default: state
            builder.add_input(value.name)
    converters = _table.load_all()
    for node in graph.node:
        builder.add_node(node, converters)
    builder.add_output([o.name for o in graph.output])
    return builder.module(_class_name(graph.name))


def _class_name(graph_name: str) -> str:
    """The generated class's name: the graph's, in CamelCase (``main_graph`` -> ``MainGraph``)."""
    import re
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", graph_name or "") if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts)
    return name if name and not name[0].isdigit() else "OnnxModule"
