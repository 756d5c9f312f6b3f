"""Open Inference Protocol v2 (REST) infer requests and responses, JSON and binary.

A request body is a JSON object ``{"id", "parameters", "inputs": [{"name", "shape",
"datatype", "parameters", "data"}], "outputs": [{"name", "parameters"}]}``. With the binary
tensor data extension the ``Inference-Header-Content-Length`` header gives the JSON's length,
and the raw tensors follow it in input order, each input saying its byte count in
``parameters.binary_data_size`` (and then carrying no ``data``). Outputs come back binary when
the request asks (``outputs[i].parameters.binary_data`` or the request parameter
``binary_data_output``), the same way round.

Source: https://kserve.github.io/website/latest/modelserving/data_plane/v2_protocol/ and
https://github.com/triton-inference-server/server/blob/main/docs/protocol/extension_binary_data.md
"""

from __future__ import annotations

import json

import numpy as np

from ..datatypes import ProtocolError, datatype_of, from_binary, from_json_data, to_binary, to_json_data
from ..handlers import Request

__all__ = ["parse_infer_request", "encode_infer_response", "check_inputs", "HEADER_LENGTH"]

HEADER_LENGTH = "Inference-Header-Content-Length"


def _json_object(raw: bytes, what: str) -> dict:
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ProtocolError(f"malformed JSON in the {what}: {e}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"the {what} must be a JSON object, got {type(obj).__name__}")
    return obj


def parse_infer_request(body: bytes, header_length: str | None, model) -> tuple[Request, dict]:
    """``(Request, output options)`` from an infer request body, checked against ``model``'s inputs.

    Output options: ``{"names": [...] or None, "binary": {name: bool}, "binary_default": bool}``.
    Raises ProtocolError (400) naming the input and what was wrong."""
    if header_length is not None:
        try:
            n = int(header_length)
        except ValueError:
            raise ProtocolError(f"{HEADER_LENGTH} must be an integer, got {header_length!r}") from None
        if n < 0 or n > len(body):
            raise ProtocolError(f"{HEADER_LENGTH} is {n} but the body holds {len(body)} bytes")
        header, binary = body[:n], memoryview(body)[n:]
    else:
        header, binary = body, memoryview(b"")
    req = _json_object(header, "infer request")
    inputs = req.get("inputs")
    if not isinstance(inputs, list) or not inputs:
        raise ProtocolError("the infer request needs 'inputs': a non-empty list of tensors")
    params = req.get("parameters") or {}
    if not isinstance(params, dict):
        raise ProtocolError("'parameters' must be an object")
    arrays: dict[str, np.ndarray] = {}
    offset = 0
    for i, t in enumerate(inputs):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise ProtocolError(f"input {i} must be an object with a string 'name'")
        name = t["name"]
        where = f"input {name!r}"
        if name in arrays:
            raise ProtocolError(f"{where} appears twice")
        for key in ("datatype", "shape"):
            if key not in t:
                raise ProtocolError(f"{where} lacks {key!r}")
        tparams = t.get("parameters") or {}
        size = tparams.get("binary_data_size") if isinstance(tparams, dict) else None
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise ProtocolError(f"{where}: binary_data_size must be a non-negative integer, got {size!r}")
            if offset + size > len(binary):
                raise ProtocolError(f"{where}: binary_data_size is {size} but only {len(binary) - offset} bytes of "
                                    "binary data remain (truncated payload?)")
            arrays[name] = from_binary(binary[offset:offset + size], t["datatype"], t["shape"], where)
            offset += size
        else:
            if "data" not in t:
                raise ProtocolError(f"{where} has neither 'data' nor parameters.binary_data_size")
            arrays[name] = from_json_data(t["data"], t["datatype"], t["shape"], where)
    if offset != len(binary):
        raise ProtocolError(f"{len(binary) - offset} bytes of binary data follow the tensors the header describes")
    check_inputs(arrays, inputs, model)

    binary_default = bool(params.get("binary_data_output", False))
    names, binary_flags = None, {}
    outputs = req.get("outputs")
    if outputs is not None:
        if not isinstance(outputs, list):
            raise ProtocolError("'outputs' must be a list")
        names = []
        known = [s.name for s in model.outputs]
        for o in outputs:
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise ProtocolError("each requested output must be an object with a string 'name'")
            if known and o["name"] not in known:
                raise ProtocolError(f"unknown output {o['name']!r}: model {model.name} has {known}")
            op = o.get("parameters") or {}
            if op.get("classification"):
                raise ProtocolError("the classification extension is not supported; ask the handler for top-k")
            names.append(o["name"])
            if "binary_data" in op:
                binary_flags[o["name"]] = bool(op["binary_data"])
    rid = req.get("id")
    # without an id of its own, the caller gives the request the one it logs (X-Request-ID or a new one)
    request = Request(id=str(rid) if rid is not None else "", kind="infer", inputs=arrays,
                      parameters=params, outputs=names)
    return request, {"names": names, "binary": binary_flags, "binary_default": binary_default,
                     "id": rid}


def check_inputs(arrays: dict, raw_inputs: list, model) -> None:
    """The request's tensors against the model's declared inputs (names, datatypes, shapes) and,
    for a batching model, a shared first dimension; ``raw_inputs`` are ``{"name", "datatype"}``
    dicts in request order. Raises ProtocolError (400)."""
    specs = {s.name: s for s in model.inputs}
    if specs:
        unknown = [n for n in arrays if n not in specs]
        missing = [n for n in specs if n not in arrays]
        if unknown:
            raise ProtocolError(f"unknown input(s) {unknown}: model {model.name} takes {list(specs)}")
        if missing:
            raise ProtocolError(f"missing input(s) {missing}: model {model.name} takes {list(specs)}")
        for t in raw_inputs:
            s = specs[t["name"]]
            if t["datatype"] != s.datatype:
                raise ProtocolError(f"input {s.name!r}: datatype {t['datatype']} given, the model takes {s.datatype}")
            if not s.matches(arrays[s.name].shape):
                raise ProtocolError(f"input {s.name!r}: shape {list(arrays[s.name].shape)} does not match the "
                                    f"model's {s.shape} (-1: any size)")
    if model.config.max_batch_size > 0:
        firsts = {a.shape[0] if a.ndim else None for a in arrays.values()}
        if None in firsts or len(firsts) != 1:
            raise ProtocolError(f"the inputs of a batching model must share their first (batch) dimension, got "
                                f"shapes {[list(a.shape) for a in arrays.values()]}")


def encode_infer_response(model, answer: dict, options: dict, request_id) -> tuple[bytes, dict]:
    """``(body, headers)`` of an infer response; binary outputs after the JSON when asked."""
    if not isinstance(answer, dict):
        raise TypeError(f"the handler answered {type(answer).__name__}; an infer answer is a dict of output arrays")
    names = options["names"] if options["names"] is not None else list(answer)
    specs = {s.name: s for s in model.outputs}
    outputs, blobs = [], []
    for name in names:
        if name not in answer:
            raise ProtocolError(f"unknown output {name!r}: the model answered {list(answer)}")
        arr = np.asarray(answer[name])
        datatype = specs[name].datatype if name in specs else datatype_of(arr.dtype)
        out = {"name": name, "datatype": datatype, "shape": list(arr.shape)}
        if options["binary"].get(name, options["binary_default"]):
            blob = to_binary(arr, datatype)
            out["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            out["data"] = to_json_data(arr, datatype)
        outputs.append(out)
    resp = {"model_name": model.name, "model_version": model.version, "outputs": outputs}
    if request_id is not None:
        resp["id"] = request_id
    header = json.dumps(resp, separators=(",", ":")).encode()
    if not blobs:
        return header, {"content-type": "application/json"}
    return header + b"".join(blobs), {"content-type": "application/octet-stream", HEADER_LENGTH: str(len(header))}
