"""ONNX operator type -> converter. A converter takes the builder and one ``OnnxNode`` and
returns the node's output values (one, or a list with None for an optional output it does
not compute). The converters live beside this table by family and register here."""

from __future__ import annotations

CONVERTERS: dict = {}


def converts(*op_types):
    def register(fn):
        for op_type in op_types:
            CONVERTERS[op_type] = fn
        return fn
    return register


def load_all() -> dict:
    from . import _convert_math, _convert_nn, _convert_rnn, _convert_shape  # noqa: F401 - they register
    return CONVERTERS
