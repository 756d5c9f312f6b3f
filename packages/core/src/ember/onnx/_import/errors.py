"""The importer's exception types (``ember.onnx.load_model``)."""

from __future__ import annotations

from ..errors import OnnxExporterError

__all__ = ["OnnxImportError", "UnsupportedOnnxOperatorError"]


class OnnxImportError(OnnxExporterError):
    """An ONNX model could not be turned into an ember module (an attribute value or an
    input the importer cannot express, an opset it cannot convert)."""


class UnsupportedOnnxOperatorError(OnnxImportError, NotImplementedError):
    """A node of the model has an operator the importer has no conversion for; the
    message names the operator type, its domain and the node."""

    def __init__(self, op_type: str, domain: str, node_name: str, detail: str = ""):
        self.op_type, self.domain, self.node_name = op_type, domain, node_name
        where = f"operator {op_type!r} (domain {domain or 'ai.onnx'!r}) of node {node_name!r}"
        super().__init__(f"ember.onnx.load_model: {where} {detail or 'is not supported'}")
