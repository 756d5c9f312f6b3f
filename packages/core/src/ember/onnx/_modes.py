"""torch.onnx's enums for the legacy exporter's arguments (torch._C._onnx in torch)."""

from __future__ import annotations

import enum

__all__ = ["TrainingMode", "OperatorExportTypes"]


class TrainingMode(enum.IntEnum):
    """``export(training=)``: with ``dynamo=False``, EVAL runs the export in eval mode, PRESERVE
    keeps the module's mode, TRAINING (a training graph) is not exported by ember."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """``export(operator_export_type=)``: only ONNX (standard ops) is supported."""

    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3
