"""Open Inference Protocol v2 over gRPC: ``ModelInferRequest`` -> arrays, answers -> ``ModelInferResponse``.

An input's elements come either in ``raw_input_contents`` (one bytes entry per input, in input
order: the little-endian elements, flat and row-major; a BYTES element as a 4-byte length then
its bytes, as in the REST binary extension) or in its ``contents``, in the repeated field of
its datatype (``fp32_contents`` for FP32, ``int_contents`` for INT8..INT32...). FP16 and BF16
have no such field and come raw only; one request uses one form for all its inputs.

The answer takes the form the request came in: raw outputs for a raw request (what
tritonclient sends), typed contents for a typed one, unless an output is FP16 or BF16, which
makes every output raw (the two forms never mix in a message).

Source: the Open Inference Protocol's gRPC specification
(https://github.com/open-inference/open-inference-protocol, specification/protocol/open_inference_grpc.proto).
"""

from __future__ import annotations

import numpy as np

from ..datatypes import ProtocolError, datatype_of, from_binary, numpy_dtype, to_binary
from ..handlers import Request
from ..protos import inference_pb2 as pb
from .protocol import check_inputs

__all__ = ["TYPED_FIELDS", "parse_model_infer_request", "encode_model_infer_response", "parameter_value",
           "from_contents", "to_contents"]

# datatype -> the InferTensorContents field holding its elements
TYPED_FIELDS = {
    "BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
    "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents", "UINT32": "uint_contents",
    "UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents",
}
_FIELDS = ("bool_contents", "int_contents", "int64_contents", "uint_contents", "uint64_contents", "fp32_contents",
           "fp64_contents", "bytes_contents")


def parameter_value(p: pb.InferParameter):
    """The Python value of an InferParameter (bool, int, str or float; None when unset)."""
    kind = p.WhichOneof("parameter_choice")
    return None if kind is None else getattr(p, kind)


def _shape(t, where: str) -> tuple[int, ...]:
    shape = tuple(t.shape)
    if any(d < 0 for d in shape):
        raise ProtocolError(f"{where}: 'shape' must hold non-negative sizes, got {list(shape)}")
    return shape


def _filled(contents: pb.InferTensorContents) -> list[str]:
    return [f for f in _FIELDS if len(getattr(contents, f))]


def from_contents(contents: pb.InferTensorContents, datatype: str, shape: tuple, where: str) -> np.ndarray:
    """The array ``[*shape]`` held by typed ``contents``. Raises ProtocolError for a datatype without
    a typed field, elements in another field, a count that does not match, or values out of range."""
    dt = numpy_dtype(datatype)
    field = TYPED_FIELDS.get(datatype)
    if field is None:
        raise ProtocolError(f"{where}: {datatype} has no typed contents field; send it in raw_input_contents")
    others = [f for f in _filled(contents) if f != field]
    if others:
        raise ProtocolError(f"{where}: a {datatype} tensor takes its elements in {field}, the request filled "
                            f"{', '.join(others)}")
    values = getattr(contents, field)
    n = int(np.prod(shape, dtype=np.int64))
    if len(values) != n:
        raise ProtocolError(f"{where}: shape {list(shape)} holds {n} elements, {field} has {len(values)}")
    if datatype == "BYTES":
        arr = np.empty(n, dtype=object)
        for i, x in enumerate(values):
            arr[i] = bytes(x)
        return arr.reshape(shape)
    if dt.kind in "iu" and dt.itemsize < 4:  # int_contents / uint_contents are 32-bit wide
        wide = np.array(values, dtype=np.int64)
        info = np.iinfo(dt)
        if wide.size and (wide.min() < info.min or wide.max() > info.max):
            raise ProtocolError(f"{where}: an element is out of the range of {datatype} [{info.min}, {info.max}]")
        return wide.astype(dt).reshape(shape)
    return np.array(values, dtype=dt).reshape(shape)


def to_contents(contents: pb.InferTensorContents, arr: np.ndarray, datatype: str) -> None:
    """Write ``arr``'s elements, flat and row-major, into the typed field of ``datatype``."""
    flat = np.asarray(arr).reshape(-1)
    target = getattr(contents, TYPED_FIELDS[datatype])
    if datatype == "BYTES":
        target.extend(x if isinstance(x, bytes) else str(x).encode("utf-8") for x in flat)
    else:
        target.extend(flat.astype(numpy_dtype(datatype)).tolist())


def parse_model_infer_request(msg: pb.ModelInferRequest, model) -> tuple[Request, dict]:
    """``(Request, output options)`` from a ModelInferRequest, checked against ``model``'s inputs
    as the REST route checks them. Raises ProtocolError (INVALID_ARGUMENT) naming what was wrong."""
    if not msg.inputs:
        raise ProtocolError("the infer request needs 'inputs': at least one tensor")
    raw = msg.raw_input_contents
    if raw and len(raw) != len(msg.inputs):
        raise ProtocolError(f"raw_input_contents holds {len(raw)} entries for {len(msg.inputs)} inputs; it needs one "
                            "per input, in input order")
    arrays: dict[str, np.ndarray] = {}
    described = []
    for i, t in enumerate(msg.inputs):
        if not t.name:
            raise ProtocolError(f"input {i} needs a name")
        where = f"input {t.name!r}"
        if t.name in arrays:
            raise ProtocolError(f"{where} appears twice")
        if not t.datatype:
            raise ProtocolError(f"{where} lacks 'datatype'")
        shape = _shape(t, where)
        if raw:
            if _filled(t.contents):
                raise ProtocolError(f"{where} has typed contents while the request carries raw_input_contents; "
                                    "use one form for every input")
            arrays[t.name] = from_binary(raw[i], t.datatype, shape, where)
        else:
            arrays[t.name] = from_contents(t.contents, t.datatype, shape, where)
        described.append({"name": t.name, "datatype": t.datatype})
    check_inputs(arrays, described, model)

    names = None
    if msg.outputs:
        names = []
        known = [s.name for s in model.outputs]
        for o in msg.outputs:
            if known and o.name not in known:
                raise ProtocolError(f"unknown output {o.name!r}: model {model.name} has {known}")
            if "classification" in o.parameters and parameter_value(o.parameters["classification"]):
                raise ProtocolError("the classification extension is not supported; ask the handler for top-k")
            names.append(o.name)
    params = {k: parameter_value(v) for k, v in msg.parameters.items()}
    rid = msg.id or None
    request = Request(id=rid or "", kind="infer", inputs=arrays, parameters=params, outputs=names)
    return request, {"names": names, "raw": bool(raw), "id": rid}


def encode_model_infer_response(model, answer: dict, options: dict) -> pb.ModelInferResponse:
    """The ModelInferResponse of a handler's answer (a dict of output arrays)."""
    if not isinstance(answer, dict):
        raise TypeError(f"the handler answered {type(answer).__name__}; an infer answer is a dict of output arrays")
    names = options["names"] if options["names"] is not None else list(answer)
    specs = {s.name: s for s in model.outputs}
    outputs = []
    for name in names:
        if name not in answer:
            raise ProtocolError(f"unknown output {name!r}: the model answered {list(answer)}")
        arr = np.asarray(answer[name])
        outputs.append((name, arr, specs[name].datatype if name in specs else datatype_of(arr.dtype)))
    raw = options["raw"] or any(d not in TYPED_FIELDS for _, _, d in outputs)
    resp = pb.ModelInferResponse(model_name=model.name, model_version=model.version, id=options["id"] or "")
    for name, arr, datatype in outputs:
        out = resp.outputs.add(name=name, datatype=datatype, shape=list(arr.shape))
        if raw:
            resp.raw_output_contents.append(to_binary(arr, datatype))
        else:
            to_contents(out.contents, arr, datatype)
    return resp
