"""A gRPC client of the Open Inference Protocol for the serve tests, run in a venv of its own.

tritonclient[grpc] pins protobuf (and ml-dtypes) below what ember-serve's grpc extra needs, so
it runs in a separate venv (the nox serve session builds one) and talks to the server over the
socket. It imports neither ember nor ember_serve: the messages are Triton's own
(``tritonclient.grpc.service_pb2``), an independent reading of the protocol.

    python grpc_client.py HOST:PORT

reads one JSON command per line on stdin and writes one JSON answer per line on stdout:

- ``{"op": "live" | "ready" | "server_metadata"}``, ``{"op": "model_ready" | "model_metadata" |
  "model_config", "model", "version"}`` through tritonclient.grpc's InferenceServerClient;
- ``{"op": "infer", "model", "version", "id", "inputs": [{"name", "datatype", "shape", "data"}],
  "outputs": [names] | null}`` through ``InferenceServerClient.infer`` (raw_input_contents, as
  tritonclient always sends), outputs read back with ``InferResult.as_numpy``;
- ``{"op": "stream", "requests": [infer commands, with "parameters" and "empty_final"], "until_final":
  bool}``: the requests sent one after another on one stream (``start_stream`` /
  ``async_stream_infer``), the answers collected from the stream's callback as ``{"answers":
  [...]}`` in the order they came, each an infer answer (with its response ``parameters``) or
  ``{"ok": false, "message"}`` (the stream's error_message); it waits for one answer per request,
  or with ``until_final`` for one answer flagged ``triton_final_response`` (or an error) per request;
- ``{"op": "statistics", "model", "version"}``: ``get_inference_statistics``, and ``{"op":
  "repository_index", "ready", "token"}``: ``get_model_repository_index`` (through the stub when
  ``ready`` is asked: tritonclient has no argument for it), as dicts with every field, 64-bit
  integers as numbers;
- ``{"op": "message", "model", "version", "inputs": [{"name", "datatype", "shape", "contents":
  {field: values}}], "raw": [base64] | null, "outputs": [names] | null}``: a ModelInferRequest
  built field by field (typed contents, or raw bytes as given) and sent through the generated
  stub; outputs decoded from raw_output_contents or from the typed contents, whichever came.

An answer is ``{"ok": true, ...}`` or ``{"ok": false, "code": "NOT_FOUND", "message": ...}``.
"""

from __future__ import annotations

import base64
import json
import struct
import sys
import threading

import grpc
import numpy as np
import tritonclient.grpc as grpcclient
from google.protobuf import json_format
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

NUMPY = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
         "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
         "FP32": np.float32, "FP64": np.float64}
TYPED = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
         "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents", "UINT32": "uint_contents",
         "UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}


def to_json(arr: np.ndarray, datatype: str) -> list:
    flat = np.asarray(arr).reshape(-1)
    if datatype == "BYTES":
        return [x.decode("utf-8") if isinstance(x, bytes) else str(x) for x in flat]
    return flat.tolist()


def decode_raw(raw: bytes, datatype: str, shape) -> np.ndarray:
    if datatype == "BYTES":
        out, pos = [], 0
        while pos < len(raw):
            (n,) = struct.unpack_from("<I", raw, pos)
            out.append(raw[pos + 4:pos + 4 + n])
            pos += 4 + n
        return np.array(out, dtype=object).reshape(shape)
    if datatype == "BF16":  # the upper half of an FP32
        bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(NUMPY[datatype]).newbyteorder("<")).reshape(shape)


def as_dict(message) -> dict:
    """A message with every field, its 64-bit integers as numbers (protobuf's JSON form writes strings)."""
    def fix(value, field=None):
        if isinstance(value, dict):
            return {k: fix(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v, field) for v in value]
        if isinstance(value, str) and field in INT_FIELDS:
            return int(value)
        return value
    return fix(json_format.MessageToDict(message, preserving_proto_field_name=True,
                                         always_print_fields_with_no_presence=True))


INT_FIELDS = {"count", "ns", "last_inference", "inference_count", "execution_count", "batch_size", "id", "byte_size"}


def input_array(spec: dict) -> np.ndarray:
    if spec["datatype"] == "BYTES":
        return np.array([s.encode("utf-8") for s in spec["data"]], dtype=object).reshape(spec["shape"])
    return np.array(spec["data"], dtype=NUMPY[spec["datatype"]]).reshape(spec["shape"])


def response_outputs(resp) -> dict:
    """{name: {"datatype", "shape", "data"}} from a ModelInferResponse message, raw or typed."""
    out = {}
    for i, o in enumerate(resp.outputs):
        shape = list(o.shape)
        if resp.raw_output_contents:
            arr = decode_raw(resp.raw_output_contents[i], o.datatype, shape)
        else:
            values = list(getattr(o.contents, TYPED[o.datatype]))
            arr = np.array(values, dtype=object if o.datatype == "BYTES" else NUMPY[o.datatype]).reshape(shape)
        out[o.name] = {"datatype": o.datatype, "shape": shape, "data": to_json(arr, o.datatype)}
    return out


class Client:
    def __init__(self, url: str):
        self.triton = grpcclient.InferenceServerClient(url)
        self.stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(url))

    def run(self, cmd: dict) -> dict:
        op = cmd["op"]
        model, version = cmd.get("model", ""), cmd.get("version", "") or ""
        try:
            if op == "live":
                return {"ok": True, "value": self.triton.is_server_live()}
            if op == "ready":
                return {"ok": True, "value": self.triton.is_server_ready()}
            if op == "model_ready":
                return {"ok": True, "value": self.triton.is_model_ready(model, version)}
            if op == "server_metadata":
                return {"ok": True, "value": self.triton.get_server_metadata(as_json=True)}
            if op == "model_metadata":
                return {"ok": True, "value": self.triton.get_model_metadata(model, version, as_json=True)}
            if op == "model_config":
                return {"ok": True, "value": self.triton.get_model_config(model, version, as_json=True)}
            if op == "infer":
                return self.infer(cmd)
            if op == "message":
                return self.message(cmd)
            if op == "stream":
                return self.stream(cmd)
            if op == "statistics":
                resp = self.triton.get_inference_statistics(model, version)
                return {"ok": True, "value": as_dict(resp)}
            if op == "repository_index":
                headers = {"authorization": f"Bearer {cmd['token']}"} if cmd.get("token") else None
                if cmd.get("ready"):
                    resp = self.stub.RepositoryIndex(service_pb2.RepositoryIndexRequest(ready=True), timeout=60,
                                                     metadata=list((headers or {}).items()))
                else:
                    resp = self.triton.get_model_repository_index(headers=headers)
                return {"ok": True, "value": as_dict(resp)}
        except InferenceServerException as e:
            return {"ok": False, "code": str(e.status()).rsplit(".", 1)[-1], "message": e.message()}
        except grpc.RpcError as e:
            return {"ok": False, "code": e.code().name, "message": e.details()}
        raise ValueError(f"unknown op {op!r}")

    @staticmethod
    def _infer_args(cmd: dict) -> tuple[list, list | None]:
        inputs = []
        for spec in cmd["inputs"]:
            t = grpcclient.InferInput(spec["name"], list(spec["shape"]), spec["datatype"])
            t.set_data_from_numpy(input_array(spec))
            inputs.append(t)
        outputs = None
        if cmd.get("outputs") is not None:
            outputs = [grpcclient.InferRequestedOutput(n) for n in cmd["outputs"]]
        return inputs, outputs

    def infer(self, cmd: dict) -> dict:
        inputs, outputs = self._infer_args(cmd)
        r = self.triton.infer(cmd["model"], inputs, model_version=cmd.get("version", "") or "", outputs=outputs,
                              request_id=cmd.get("id", "") or "")
        return self._result(r)

    def stream(self, cmd: dict) -> dict:
        answers, done = [], threading.Condition()

        def callback(result, error):
            with done:
                if error is not None:
                    # the stream's error_message; the request it names comes with it in infer_response
                    answers.append({"ok": False, "message": error.message()})
                else:
                    answers.append(self._result(result))
                done.notify_all()

        self.triton.start_stream(callback=callback)
        try:
            for req in cmd["requests"]:
                inputs, outputs = self._infer_args(req)
                self.triton.async_stream_infer(req["model"], inputs, model_version=req.get("version", "") or "",
                                               outputs=outputs, request_id=req.get("id", "") or "",
                                               parameters=req.get("parameters"),
                                               enable_empty_final_response=req.get("empty_final", False))
            def finished():
                if not cmd.get("until_final"):
                    return len(answers) >= len(cmd["requests"])
                ends = [a for a in answers if not a["ok"] or a["parameters"].get("triton_final_response")]
                return len(ends) >= len(cmd["requests"])

            with done:
                done.wait_for(finished, timeout=cmd.get("timeout", 60))
        finally:
            self.triton.stop_stream()
        return {"ok": True, "answers": answers}

    @staticmethod
    def _result(r) -> dict:
        resp = r.get_response()
        out = {}
        for o in resp.outputs:
            arr = r.as_numpy(o.name)
            out[o.name] = {"datatype": o.datatype, "shape": list(o.shape), "data": to_json(arr, o.datatype)}
        params = {k: getattr(v, v.WhichOneof("parameter_choice")) for k, v in resp.parameters.items()
                  if v.WhichOneof("parameter_choice")}
        return {"ok": True, "id": resp.id, "model_name": resp.model_name, "model_version": resp.model_version,
                "raw": len(resp.raw_output_contents) > 0, "outputs": out, "parameters": params}

    def message(self, cmd: dict) -> dict:
        req = service_pb2.ModelInferRequest(model_name=cmd["model"], model_version=cmd.get("version", "") or "",
                                            id=cmd.get("id", "") or "")
        for spec in cmd["inputs"]:
            t = req.inputs.add(name=spec["name"], datatype=spec["datatype"], shape=spec["shape"])
            for field, values in (spec.get("contents") or {}).items():
                if field == "bytes_contents":
                    values = [v.encode("utf-8") for v in values]
                getattr(t.contents, field).extend(values)
        for b in cmd.get("raw") or []:
            req.raw_input_contents.append(base64.b64decode(b))
        for name in cmd.get("outputs") or []:
            req.outputs.add(name=name)
        for k, v in (cmd.get("parameters") or {}).items():
            p = req.parameters[k]
            if isinstance(v, bool):
                p.bool_param = v
            elif isinstance(v, int):
                p.int64_param = v
            elif isinstance(v, float):
                p.double_param = v
            else:
                p.string_param = v
        resp = self.stub.ModelInfer(req, timeout=60)
        return {"ok": True, "id": resp.id, "model_name": resp.model_name, "model_version": resp.model_version,
                "raw": len(resp.raw_output_contents) > 0, "outputs": response_outputs(resp)}


def main() -> int:
    client = Client(sys.argv[1])
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = client.run(json.loads(line))
        except Exception as e:  # a bug in a command: report it, keep serving the others
            answer = {"ok": False, "code": "CLIENT_ERROR", "message": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
