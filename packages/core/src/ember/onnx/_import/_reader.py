"""Reading an ONNX file: decode, validate with onnx.checker, inline model-local functions,
convert to the importer's opset, infer value types.

Sources: the ONNX IR specification (onnx.ai/onnx/repo-docs/IR.html: opset imports,
initializers, external data) and the ``onnx`` package's checker, inliner,
version_converter and shape_inference."""

from __future__ import annotations

import os

TARGET_OPSET = 21  # every file is converted to this opset; the converters follow its definitions
MIN_OPSET = 13
MAX_OPSET = 23
DEFAULT_DOMAINS = ("", "ai.onnx")


def read(path_or_bytes):
    """The ``onnx.ModelProto`` of a path, a binary file object or serialized bytes, with
    external initializers loaded and checked; returns ``(model, source name)``."""
    import onnx
    from google.protobuf.message import DecodeError
    if isinstance(path_or_bytes, (str, os.PathLike)):
        source = os.fspath(path_or_bytes)
        if not os.path.isfile(source):
            raise FileNotFoundError(f"ember.onnx.load_model: no such file: {source!r}")
        loader = lambda: onnx.load(source)  # noqa: E731 - external data is read relative to the file
    elif isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        source, data = "<bytes>", bytes(path_or_bytes)
        loader = lambda: onnx.load_model_from_string(data)  # noqa: E731
    elif hasattr(path_or_bytes, "read"):
        source, data = getattr(path_or_bytes, "name", "<file object>"), path_or_bytes.read()
        loader = lambda: onnx.load_model_from_string(data)  # noqa: E731
    elif isinstance(path_or_bytes, onnx.ModelProto):
        source, loader = f"<ModelProto {path_or_bytes.graph.name!r}>", lambda: path_or_bytes
    else:
        raise TypeError(f"ember.onnx.load_model expects a path, bytes, a binary file object or an onnx.ModelProto, "
                        f"got {type(path_or_bytes).__name__}")
    try:
        model = loader()
    except DecodeError as exc:
        raise onnx.checker.ValidationError(f"{source}: not an ONNX model (protobuf could not decode it: {exc})") \
            from None
    except OSError as exc:  # an external data file that is missing
        raise onnx.checker.ValidationError(f"{source}: its external data could not be read: {exc}") from None
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise onnx.checker.ValidationError(f"{source}: not a valid ONNX model: {exc}") from None
    return model, source


def opset_of(model) -> int:
    for entry in model.opset_import:
        if entry.domain in DEFAULT_DOMAINS:
            return entry.version
    return TARGET_OPSET  # a model of other domains only: nothing of ai.onnx to convert


def prepare(model, source: str):
    """Inline local functions and convert the ai.onnx opset to ``TARGET_OPSET``."""
    from onnx import inliner, version_converter

    from .errors import OnnxImportError
    if model.functions:
        model = inliner.inline_local_functions(model)
    opset = opset_of(model)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise OnnxImportError(f"{source}: opset {opset} of ai.onnx; ember.onnx.load_model reads opsets "
                              f"{MIN_OPSET} to {MAX_OPSET}")
    if opset != TARGET_OPSET:
        try:
            model = version_converter.convert_version(model, TARGET_OPSET)
        except Exception as exc:  # noqa: BLE001 - the converter raises bare RuntimeErrors from C++
            raise OnnxImportError(f"{source}: onnx.version_converter could not convert opset {opset} to "
                                  f"{TARGET_OPSET}: {exc}") from None
    return model


def value_types(model) -> dict:
    """ONNX value name -> ``(elem_type, rank or None)`` from shape inference (best effort:
    an empty dict where inference fails)."""
    import onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - types are a convenience; conversion works without them
        return {}
    out = {}
    graph = inferred.graph
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        t = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            continue
        rank = len(t.shape.dim) if t.HasField("shape") else None
        out[info.name] = (t.elem_type, rank)
    for init in graph.initializer:
        out[init.name] = (init.data_type, len(init.dims))
    return out
