"""ONNXProgram: the exported model in memory, written out by ``save``.

Source: torch.onnx.ONNXProgram (PyTorch 2.13): ``model_proto``, ``save(destination, *,
include_initializers, keep_initializers_as_inputs, external_data)``."""

from __future__ import annotations

import copy
import os

_LARGE_MODEL = 2 * 1024 ** 3  # protobuf's file size limit: larger weights must go to an external file


class ONNXProgram:
    """An exported model. ``model_proto`` is the ``onnx.ModelProto`` (weights included as
    initializers)."""

    def __init__(self, model_proto):
        self._proto = model_proto
        self._session = None

    def __call__(self, *args, **kwargs):
        """Run the model in onnxruntime (a test-time dependency, not the extra's) on tensors
        given in the graph's input order (or by input name); returns the list of outputs as
        ember tensors. Raises ImportError without onnxruntime."""
        import numpy as np

        from .. import from_numpy
        if self._session is None:
            import onnxruntime
            self._session = onnxruntime.InferenceSession(self._proto.SerializeToString(),
                                                         providers=["CPUExecutionProvider"])
        names = [i.name for i in self._session.get_inputs()]
        if len(args) > len(names):
            raise ValueError(f"the model has {len(names)} inputs, got {len(args)} arguments")
        feeds = {**dict(zip(names, args)), **kwargs}
        outputs = self._session.run(None, {k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
                                           for k, v in feeds.items()})
        return [from_numpy(o) for o in outputs]

    @property
    def model_proto(self):
        return self._proto

    def __repr__(self) -> str:
        import onnx
        return f"ONNXProgram(\n{onnx.printer.to_text(self._proto.graph)}\n)"

    def save(self, destination, *, include_initializers: bool = True, keep_initializers_as_inputs: bool = False,
             external_data: bool | None = None) -> None:
        """Write the model to ``destination`` (a path, or a binary file object). With
        ``external_data`` True, or weights over 2 GB, the weights go to ``<file name>.data``
        beside the file (then ``destination`` must be a path: TypeError otherwise).
        ``include_initializers=False`` leaves the weights out; ``keep_initializers_as_inputs``
        also lists them as graph inputs, so a runtime may override them."""
        import onnx
        proto = self._proto
        if not include_initializers or keep_initializers_as_inputs:
            proto = copy.deepcopy(proto)
            if keep_initializers_as_inputs:
                proto.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                                         for t in proto.graph.initializer)
            if not include_initializers:
                del proto.graph.initializer[:]
        size = sum(len(t.raw_data) for t in proto.graph.initializer)
        is_path = isinstance(destination, (str, os.PathLike))
        if (external_data or size > _LARGE_MODEL) and include_initializers:
            if not is_path:
                raise TypeError(f"saving the weights as external data needs a file path as destination, "
                                f"got {type(destination).__name__}")
            proto = copy.deepcopy(proto) if proto is self._proto else proto
            location = os.path.basename(os.fspath(destination)) + ".data"
            data_path = os.path.join(os.path.dirname(os.fspath(destination)), location)
            if os.path.exists(data_path):
                os.remove(data_path)  # onnx appends to an existing data file
            onnx.save_model(proto, destination, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=location, size_threshold=0)
            return
        if is_path:
            onnx.save_model(proto, destination)
        else:
            destination.write(proto.SerializeToString())
