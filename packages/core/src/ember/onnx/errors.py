"""torch.onnx.errors: the exporter's exception types.

Source: torch.onnx.errors (PyTorch 2.13)."""

from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """The model could not be exported (an op with no ONNX form, an argument ONNX cannot hold)."""


class OnnxExporterWarning(UserWarning):
    """Something the exporter did that the user may not expect."""


class UnsupportedOperatorError(OnnxExporterError):
    """An op of the model has no ONNX mapping; the message names the op and the module
    path where it was met."""
