"""torch.onnx for ember: ``export`` writes a model as an ONNX file.

The model is captured with ``ember.jit.trace``'s recording (one straight-line graph of
ember ops, parameters and buffers as initializers) and each op is written with the
``onnx`` package's helpers (the ``onnx`` extra: ``pip install ember-core[onnx]``).

Source: torch.onnx documentation (PyTorch 2.13)."""

from __future__ import annotations

import contextlib
import threading

from . import errors
from ._export import ONNX_DEFAULT_OPSET, ONNX_MAX_OPSET, ONNX_MIN_OPSET
from ._import import OnnxImportError, UnsupportedOnnxOperatorError, load_model
from ._modes import OperatorExportTypes, TrainingMode
from ._program import ONNXProgram
from .errors import OnnxExporterError, UnsupportedOperatorError

__all__ = ["export", "ONNXProgram", "OnnxExporterError", "UnsupportedOperatorError", "errors",
           "is_in_onnx_export", "ONNX_DEFAULT_OPSET", "ONNX_MIN_OPSET", "ONNX_MAX_OPSET", "TrainingMode",
           "OperatorExportTypes", "load_model", "OnnxImportError", "UnsupportedOnnxOperatorError"]


class _Local(threading.local):
    exporting = 0


_LOCAL = _Local()


def is_in_onnx_export() -> bool:
    """True while ``export`` runs the model."""
    return _LOCAL.exporting > 0


@contextlib.contextmanager
def _exporting():
    _LOCAL.exporting += 1
    try:
        yield
    finally:
        _LOCAL.exporting -= 1


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, dynamo=True, external_data=True, dynamic_shapes=None, custom_translation_table=None,
           report=False, optimize=True, verify=False, profile=False, dump_exported_program=False, artifacts_dir=".",
           export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None, training=TrainingMode.EVAL,
           operator_export_type=OperatorExportTypes.ONNX, do_constant_folding=True, custom_opsets=None,
           export_modules_as_functions=False, autograd_inlining=True):
    """Export ``model`` (a Module or a function of tensors) run on ``args`` (a tuple, or one
    tensor) and ``kwargs`` as an ONNX model.

    ``f``: a path or a binary file object to write; with ``f=None`` nothing is written and
    the ``ONNXProgram`` is returned (``.model_proto``, ``.save(path)``); it is returned in
    every case, as torch 2.13 does. ``input_names``/``output_names`` name the graph's
    inputs and outputs in order (default: the forward's parameter names, the output
    nodes' names). ``opset_version``: 17 to 21, default 20 (torch's ONNX_DEFAULT_OPSET).
    ``export_params=False`` leaves the weights out of the file and lists them as inputs;
    ``keep_initializers_as_inputs`` lists them as inputs as well as storing them.
    ``external_data`` (when ``f`` is a path) writes the weights to ``<f>.data`` beside it.
    ``dynamic_axes`` (``{input or output name: {axis: name} or [axes]}``) and
    ``dynamic_shapes`` (``{forward parameter name: {axis: name or Dim}}``, or a tuple per
    positional input) keep those axes dynamic: the model is recorded once more per axis, one
    longer, and a size the ops take from that axis (a ``view``'s batch size) becomes a
    Shape/Gather computation in the file. Where it cannot (a slice bound, a size given to a
    creation op, a split along the axis) the export raises OnnxExporterError naming the
    axis and the op; torch's exporter would silently make the axis fixed.
    ``dynamo`` is accepted either way (one exporter serves both); ``verbose`` prints the
    graph. The model runs in the mode it is in (call ``model.eval()`` first: dropout and batch
    norm in training mode raise OnnxExporterError), except that with ``dynamo=False`` and
    ``training=TrainingMode.EVAL`` (the default) it is put in eval mode for the export, as
    torch's legacy exporter does. The other arguments are accepted for torch's
    signature and do not change the result: ``report``/``profile``/``dump_exported_program``
    /``artifacts_dir`` (torch's debugging artifacts), ``optimize``/``do_constant_folding``
    (the graph is written as recorded), ``verify`` (no ONNX runtime is run),
    ``autograd_inlining`` (the ops a custom Function's forward runs are recorded either way),
    ``custom_translation_table``/``custom_opsets``/
    ``operator_export_type``/``export_modules_as_functions`` must keep their defaults.

    Raises ValueError for an opset outside 17..21 or more names than inputs/outputs;
    UnsupportedOperatorError naming the op and the module path for an op with no ONNX
    mapping; OnnxExporterError for arguments an op's ONNX form cannot hold."""
    from ..nn.modules.module import Module
    from . import _export
    if custom_translation_table or custom_opsets or export_modules_as_functions:
        raise OnnxExporterError("custom_translation_table, custom_opsets and export_modules_as_functions are "
                                "not supported by ember's exporter")
    if operator_export_type != OperatorExportTypes.ONNX:
        raise OnnxExporterError(f"operator_export_type must be OperatorExportTypes.ONNX, got {operator_export_type!r}")
    if training == TrainingMode.TRAINING:
        raise OnnxExporterError("training=TrainingMode.TRAINING: ember exports inference graphs only")
    opset = _export.check_opset(opset_version)
    if not isinstance(args, tuple):
        args = (args,)
    was_training = isinstance(model, Module) and model.training
    if not dynamo and training == TrainingMode.EVAL and was_training:
        model.train(False)
    try:
        with _exporting():
            proto = _export.build(model, args, kwargs or {}, input_names=input_names,
                                  output_names=output_names, opset=opset, export_params=export_params,
                                  keep_initializers_as_inputs=keep_initializers_as_inputs,
                                  dynamic_axes=dynamic_axes, dynamic_shapes=dynamic_shapes)
    finally:
        if was_training and not model.training:
            model.train(True)
    program = ONNXProgram(proto)
    if verbose:
        print(program)
    if f is not None:
        program.save(f, external_data=bool(external_data) and _export.is_path(f))
    return program
