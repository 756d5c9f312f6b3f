"""The Open Inference Protocol over gRPC (``--grpc-port``), driven by tritonclient[grpc].

tritonclient[grpc] pins protobuf below ember-serve's grpc extra, so it runs in a venv of its own
(``EMBER_GRPC_CLIENT_PYTHON``; the nox serve session builds it): ``grpc_client.py`` there takes
one JSON command per line and answers one per line, over the socket. Expected answers come from
torch (the model's weights) and from the REST endpoint through tritonclient[http].
"""

import base64
import functools
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time

import ml_dtypes
import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import ServerProcess, http, http_json, make_echo_archive, make_linear_archive, torch_linear, wait_until

import ember_serve

HERE = os.path.dirname(os.path.abspath(__file__))
TYPED = {"BOOL": "bool_contents", "INT8": "int_contents", "INT16": "int_contents", "INT32": "int_contents",
         "INT64": "int64_contents", "UINT8": "uint_contents", "UINT16": "uint_contents", "UINT32": "uint_contents",
         "UINT64": "uint64_contents", "FP32": "fp32_contents", "FP64": "fp64_contents", "BYTES": "bytes_contents"}
NUMPY = {"BOOL": "?", "UINT8": "<u1", "UINT16": "<u2", "UINT32": "<u4", "UINT64": "<u8", "INT8": "<i1",
         "INT16": "<i2", "INT32": "<i4", "INT64": "<i8", "FP16": "<f2", "FP32": "<f4", "FP64": "<f8"}
SLOW_S = 3.0  # long enough for two requests to queue behind the first on a loaded machine


@functools.lru_cache(maxsize=None)
def client_python() -> str:
    path = os.environ.get("EMBER_GRPC_CLIENT_PYTHON")
    if path:
        return path
    # else this Python, when tritonclient.grpc imports here (tritonclient[http] ships it, unpinned)
    if subprocess.run([sys.executable, "-c", "import tritonclient.grpc"], capture_output=True).returncode == 0:
        return sys.executable
    pytest.fail("no gRPC client: set EMBER_GRPC_CLIENT_PYTHON to a Python with tritonclient[grpc] installed "
                "(nox -s \"tests(package='serve')\" builds one)")


class GrpcClient:
    """grpc_client.py in the client venv, kept running for the module; ``ask(cmd)`` -> its answer."""

    def __init__(self, url: str):
        self.proc = subprocess.Popen([client_python(), os.path.join(HERE, "grpc_client.py"), url],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        self._lock = threading.Lock()

    def ask(self, **cmd) -> dict:
        with self._lock:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise RuntimeError(f"the gRPC client exited: {self.proc.stderr.read()}")
        answer = json.loads(line)
        assert answer.get("code") != "CLIENT_ERROR", answer["message"]
        return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def grpc_server(tmp_path_factory):
    store = tmp_path_factory.mktemp("grpc") / "store"
    lin1, state1 = make_linear_archive(store, version="1", seed=0)
    lin2, state2 = make_linear_archive(store, version="2", seed=1)
    echo = make_echo_archive(store, config={"max_batch_size": 16})
    slow = make_echo_archive(store, name="slow", config={"max_batch_size": 16, "handler_config": {"sleep_s": SLOW_S}})
    small = make_echo_archive(store, name="small", config={"max_request_bytes": 1024})
    late = make_echo_archive(store, name="late", config={"response_timeout_s": 0.2, "handler_config": {"sleep_s": 1.0}})
    server = ServerProcess(["--grpc-port", "0", "--models", f"lin={lin1}", f"lin={lin2}", f"echo={echo}",
                            f"slow={slow}", f"small={small}", f"late={late}"])
    server.torch = {"1": torch_linear(state1), "2": torch_linear(state2)}
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client(grpc_server):
    c = GrpcClient(grpc_server.urls["grpc"])
    yield c
    c.close()


@pytest.fixture(scope="module")
def rest(grpc_server):
    c = httpclient.InferenceServerClient(grpc_server.hostport)
    yield c
    c.close()


def tensor(name, arr, datatype):
    data = [x.decode() for x in arr.reshape(-1)] if datatype == "BYTES" else arr.reshape(-1).tolist()
    return {"name": name, "datatype": datatype, "shape": list(arr.shape), "data": data}


def typed(name, arr, datatype, field=None):
    t = tensor(name, arr, datatype)
    return {"name": name, "datatype": datatype, "shape": t["shape"], "contents": {field or TYPED[datatype]: t["data"]}}


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def sample(datatype, shape=(2, 3)):
    rng = np.random.default_rng(3)
    if datatype == "BYTES":
        return np.array([f"w{i}\u00e9".encode() for i in range(int(np.prod(shape)))], dtype=object).reshape(shape)
    if datatype == "BOOL":
        return rng.random(shape) > 0.5
    dt = np.dtype(NUMPY[datatype])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def output_array(out) -> np.ndarray:
    if out["datatype"] == "BYTES":
        return np.array([s.encode() for s in out["data"]], dtype=object).reshape(out["shape"])
    return np.array(out["data"], dtype=NUMPY[out["datatype"]]).reshape(out["shape"])


def test_health_and_server_metadata(client, grpc_server):
    assert client.ask(op="live") == {"ok": True, "value": True}
    assert client.ask(op="ready") == {"ok": True, "value": True}
    meta = client.ask(op="server_metadata")["value"]
    status, rest_meta = http_json("GET", grpc_server.inference + "/v2")
    assert status == 200
    assert meta["name"] == rest_meta["name"] == "ember-serve"
    assert meta["version"] == rest_meta["version"] == ember_serve.__version__


def test_model_metadata_and_readiness_match_rest(client, grpc_server):
    for version in ("", "2"):
        got = client.ask(op="model_metadata", model="lin", version=version)["value"]
        path = "/v2/models/lin" + (f"/versions/{version}" if version else "")
        status, want = http_json("GET", grpc_server.inference + path)
        assert status == 200
        for t in got["inputs"] + got["outputs"]:  # protobuf's JSON form writes int64 as strings
            t["shape"] = [int(d) for d in t["shape"]]
        assert got == want
    assert client.ask(op="model_ready", model="lin")["value"] is True
    assert client.ask(op="model_ready", model="lin", version="2")["value"] is True
    # an unknown model is not ready, and asking is not an error (Triton's answer)
    assert client.ask(op="model_ready", model="nosuch") == {"ok": True, "value": False}
    assert client.ask(op="model_ready", model="lin", version="9") == {"ok": True, "value": False}


def test_unknown_model_is_not_found(client):
    x = np.zeros((1, 4), np.float32)
    for answer in (client.ask(op="model_metadata", model="nosuch"),
                   client.ask(op="infer", model="nosuch", inputs=[tensor("input__0", x, "FP32")]),
                   client.ask(op="message", model="nosuch", inputs=[typed("input__0", x, "FP32")])):
        assert answer["ok"] is False and answer["code"] == "NOT_FOUND"
        assert "unknown model 'nosuch'" in answer["message"]
    answer = client.ask(op="infer", model="lin", version="9", inputs=[tensor("input__0", x, "FP32")])
    assert answer["code"] == "NOT_FOUND" and "has no version '9'" in answer["message"]


@pytest.mark.parametrize("version", ["1", "2"])
def test_infer_raw_matches_rest_and_torch(client, rest, grpc_server, version):
    x = np.random.default_rng(int(version)).random((5, 4), dtype=np.float32)
    answer = client.ask(op="infer", model="lin", version=version, id="req-7", inputs=[tensor("input__0", x, "FP32")],
                        outputs=["output__0"])
    assert answer["ok"], answer
    assert (answer["id"], answer["model_name"], answer["model_version"], answer["raw"]) == ("req-7", "lin", version,
                                                                                           True)
    out = answer["outputs"]["output__0"]
    assert out["datatype"] == "FP32" and out["shape"] == [5, 3]
    got = output_array(out)
    inp = httpclient.InferInput("input__0", [5, 4], "FP32")
    inp.set_data_from_numpy(x)
    np.testing.assert_array_equal(got, rest.infer("lin", [inp], model_version=version).as_numpy("output__0"))
    np.testing.assert_allclose(got, grpc_server.torch[version](x), rtol=1e-5, atol=1e-6)


def test_infer_typed_contents_matches_raw_and_torch(client, grpc_server):
    x = np.random.default_rng(5).random((3, 4), dtype=np.float32)
    answer = client.ask(op="message", model="lin", inputs=[typed("input__0", x, "FP32")])
    assert answer["ok"], answer
    assert answer["raw"] is False  # a typed request is answered in typed contents
    got = output_array(answer["outputs"]["output__0"])
    raw = client.ask(op="infer", model="lin", inputs=[tensor("input__0", x, "FP32")])
    np.testing.assert_array_equal(got, output_array(raw["outputs"]["output__0"]))
    np.testing.assert_allclose(got, grpc_server.torch["1"](x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("datatype", sorted(TYPED))
def test_typed_contents_round_trip(client, datatype):
    x = sample(datatype)
    answer = client.ask(op="message", model="echo", inputs=[typed("x", x, datatype)], outputs=["out_x"])
    assert answer["ok"], answer
    assert answer["raw"] is False
    out = answer["outputs"]["out_x"]
    assert out["datatype"] == datatype and out["shape"] == list(x.shape)
    np.testing.assert_array_equal(output_array(out), x)


@pytest.mark.parametrize("datatype", sorted(NUMPY) + ["BYTES"])
def test_raw_contents_round_trip_through_tritonclient(client, datatype):
    x = sample(datatype)
    answer = client.ask(op="infer", model="echo", inputs=[tensor("x", x, datatype)], outputs=["out_x"])
    assert answer["ok"], answer
    assert answer["raw"] is True
    out = answer["outputs"]["out_x"]
    assert out["datatype"] == datatype and out["shape"] == list(x.shape)
    np.testing.assert_array_equal(output_array(out), x)


def test_raw_bf16_and_bytes_as_sent(client):
    # bytes written here by hand: BF16 is the upper half of an FP32; a BYTES element is a length then its bytes
    b = np.array([1.5, -0.25, 3.0], dtype=ml_dtypes.bfloat16)
    words = [b"ab", b"", "\u00e9t\u00e9".encode()]
    packed = b"".join(struct.pack("<I", len(w)) + w for w in words)
    answer = client.ask(op="message", model="echo", raw=[b64(b.tobytes()), b64(packed)],
                        inputs=[{"name": "b", "datatype": "BF16", "shape": [3]},
                                {"name": "s", "datatype": "BYTES", "shape": [3, 1]}])
    assert answer["ok"], answer
    assert answer["raw"] is True
    outs = answer["outputs"]
    assert outs["out_b"] == {"datatype": "BF16", "shape": [3], "data": b.astype(np.float32).tolist()}
    assert outs["out_s"] == {"datatype": "BYTES", "shape": [3, 1], "data": [w.decode() for w in words]}


def test_typed_answer_with_fp16_output_is_raw(client):
    # FP16 has no typed field: the answer comes raw even for a typed request (the forms never mix)
    x = np.array([1, 2, 3], np.int32)
    h = np.array([0.5, -2.0, 65504.0], np.float16)
    answer = client.ask(op="message", model="echo", inputs=[typed("x", x, "INT32")])
    assert answer["raw"] is False  # typed in, typed out: out_x and batch_rows have typed fields
    answer = client.ask(op="message", model="echo", raw=[b64(x.astype("<i4").tobytes()), b64(h.tobytes())],
                        inputs=[{"name": "x", "datatype": "INT32", "shape": [3]},
                                {"name": "h", "datatype": "FP16", "shape": [3]}])
    assert answer["ok"] and answer["raw"] is True
    np.testing.assert_array_equal(output_array(answer["outputs"]["out_h"]), h)
    np.testing.assert_array_equal(output_array(answer["outputs"]["out_x"]), x)


def _malformed():
    x = np.zeros((1, 4), np.float32)
    raw = x.tobytes()
    fp32 = {"name": "input__0", "datatype": "FP32", "shape": [1, 4]}
    return [
        ("raw too short", dict(raw=[b64(raw[:12])], inputs=[fp32]), "needs 16 bytes, got 12"),
        ("raw entries per input", dict(raw=[b64(raw), b64(raw)], inputs=[fp32]), "2 entries for 1 inputs"),
        ("raw and typed mixed", dict(raw=[b64(raw)], inputs=[typed("input__0", x, "FP32")]), "one form"),
        ("wrong typed field", dict(inputs=[typed("input__0", x.astype(np.int32), "FP32", "int_contents")]),
         "takes its elements in fp32_contents"),
        ("element count", dict(inputs=[{**fp32, "contents": {"fp32_contents": [1.0, 2.0, 3.0]}}]),
         "holds 4 elements, fp32_contents has 3"),
        ("datatype", dict(inputs=[typed("input__0", x.astype(np.int32), "INT32")]), "datatype INT32 given"),
        ("shape", dict(inputs=[typed("input__0", np.zeros((1, 5), np.float32), "FP32")]), "does not match"),
        ("unknown input", dict(inputs=[typed("nope", x, "FP32")]), "unknown input(s) ['nope']"),
        ("unknown output", dict(inputs=[typed("input__0", x, "FP32")], outputs=["nope"]), "unknown output 'nope'"),
        ("no inputs", dict(inputs=[]), "needs 'inputs'"),
        ("FP16 typed", dict(inputs=[{"name": "input__0", "datatype": "FP16", "shape": [1, 4],
                                     "contents": {"fp32_contents": [0.0] * 4}}]), "no typed contents field"),
        ("unknown datatype", dict(inputs=[{**fp32, "datatype": "FP8"}], raw=[b64(raw)]), "unknown datatype 'FP8'"),
    ]


@pytest.mark.parametrize("what,cmd,message", _malformed(), ids=[m[0] for m in _malformed()])
def test_malformed_request_is_invalid_argument(client, what, cmd, message):
    answer = client.ask(op="message", model="lin", **cmd)
    assert answer["ok"] is False and answer["code"] == "INVALID_ARGUMENT", answer
    assert message in answer["message"]


def test_out_of_range_narrow_integers_are_refused(client):
    x = {"name": "x", "datatype": "INT8", "shape": [2], "contents": {"int_contents": [1, 300]}}
    answer = client.ask(op="message", model="echo", inputs=[x])
    assert answer["code"] == "INVALID_ARGUMENT" and "out of the range of INT8" in answer["message"]


def test_request_over_the_model_limit(client):
    big = np.zeros(600, np.float32)  # 2400 bytes; the model takes at most 1024
    answer = client.ask(op="infer", model="small", inputs=[tensor("x", big, "FP32")])
    assert answer["code"] == "RESOURCE_EXHAUSTED" and "max_request_bytes" in answer["message"]


def test_answer_later_than_the_timeout_is_deadline_exceeded(client):
    answer = client.ask(op="infer", model="late", inputs=[tensor("x", np.zeros(2, np.float32), "FP32")])
    assert answer["code"] == "DEADLINE_EXCEEDED" and "response_timeout_s" in answer["message"]


def test_calls_beyond_the_protocol_are_unimplemented(client):
    answer = client.ask(op="model_config", model="lin")
    assert answer["ok"] is False and answer["code"] == "UNIMPLEMENTED"
    # the repository calls need --model-control explicit, as REST's routes do
    answer = client.ask(op="repository_index")
    assert answer["ok"] is False and answer["code"] == "UNIMPLEMENTED" and "explicit" in answer["message"]


def _metric(text, name, **labels):
    """The value of the sample ``name`` with exactly ``labels`` in a /metrics text (0 when absent)."""
    want = set(labels.items())
    for line in text.splitlines():
        m = re.fullmatch(r"(\w+)\{(.*)\} (\S+)", line)
        if m and m.group(1) == name and set(re.findall(r'(\w+)="([^"]*)"', m.group(2))) == want:
            return float(m.group(3))
    return 0.0


def test_server_stays_healthy_after_failures_and_counts_them(client, grpc_server):
    status, _, text = http("GET", grpc_server.metrics + "/metrics")
    before = text.decode()
    bad = client.ask(op="message", model="lin", raw=[b64(b"\0" * 3)],
                     inputs=[{"name": "input__0", "datatype": "FP32", "shape": [1, 4]}])
    assert bad["code"] == "INVALID_ARGUMENT"
    assert client.ask(op="live")["value"] and client.ask(op="ready")["value"]
    x = np.random.default_rng(9).random((2, 4), dtype=np.float32)
    good = client.ask(op="infer", model="lin", inputs=[tensor("input__0", x, "FP32")])
    np.testing.assert_allclose(output_array(good["outputs"]["output__0"]), grpc_server.torch["1"](x), rtol=1e-5,
                               atol=1e-6)
    status, _, text = http("GET", grpc_server.metrics + "/metrics")
    after = text.decode()
    assert status == 200
    for code, n in (("400", 1), ("200", 1)):
        labels = dict(model="lin", protocol="grpc", code=code)
        assert _metric(after, "ember_requests_total", **labels) == _metric(before, "ember_requests_total",
                                                                           **labels) + n
    for name in ("nv_inference_request_failure", "nv_inference_request_success"):
        assert _metric(after, name, model="lin", version="1") == _metric(before, name, model="lin", version="1") + 1


def test_grpc_and_rest_requests_share_a_batch(client, grpc_server):
    """A REST request occupies the one worker of ``slow``; a gRPC request of 2 rows and a REST one
    of 3 queue behind it and run as one batch of 5 rows."""
    results = {}

    def rest_infer(key, rows):
        inp = httpclient.InferInput("x", [rows, 1], "INT64")
        inp.set_data_from_numpy(np.arange(rows, dtype=np.int64).reshape(rows, 1))
        c = httpclient.InferenceServerClient(grpc_server.hostport)  # a client per thread
        try:
            results[key] = c.infer("slow", [inp]).as_numpy("batch_rows").tolist()
        finally:
            c.close()

    def grpc_infer():
        x = np.array([[10], [11]], np.int64)
        results["grpc"] = client.ask(op="infer", model="slow", inputs=[tensor("x", x, "INT64")])

    def queue_depth():
        status, _, text = http("GET", grpc_server.metrics + "/metrics")
        return _metric(text.decode(), "ember_queue_depth", model="slow", version="1")

    def busy_workers():
        status, described = http_json("GET", grpc_server.management + "/models/slow")
        return described[0]["busyWorkers"]

    blocker = threading.Thread(target=rest_infer, args=("blocker", 1))
    blocker.start()
    assert wait_until(lambda: busy_workers() == 1, timeout=SLOW_S / 2)
    threads = [threading.Thread(target=grpc_infer), threading.Thread(target=rest_infer, args=("rest", 3))]
    for t in threads:
        t.start()
    assert wait_until(lambda: queue_depth() == 2, timeout=SLOW_S), "both requests should wait behind the blocker"
    for t in [blocker, *threads]:
        t.join(60)
    assert results["blocker"] == [1]
    assert results["rest"] == [5, 5, 5]
    assert results["grpc"]["ok"] and results["grpc"]["outputs"]["batch_rows"]["data"] == [5, 5]
    np.testing.assert_array_equal(output_array(results["grpc"]["outputs"]["out_x"]), [[10], [11]])


def test_taken_grpc_port_stops_startup():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = subprocess.run([sys.executable, "-m", "ember_serve", "--port", "0", "--management-port", "0",
                            "--metrics-port", "0", "--grpc-port", str(port)], capture_output=True, text=True,
                           timeout=120)
    assert r.returncode == 1 and "ember-serve listening" not in r.stdout
    assert f"cannot listen on 127.0.0.1:{port} (gRPC)" in r.stderr


def test_sigterm_stops_rest_and_grpc_gracefully(tmp_path):
    echo = make_echo_archive(tmp_path)
    server = ServerProcess(["--grpc-port", "0", "--models", f"echo={echo}"])
    c = GrpcClient(server.urls["grpc"])
    try:
        answer = c.ask(op="infer", model="echo", inputs=[tensor("x", np.arange(3, dtype=np.int32), "INT32")])
        assert answer["ok"] and answer["outputs"]["out_x"]["data"] == [0, 1, 2]
    finally:
        c.close()
        code = server.stop()
    assert code == 0, "".join(server.stderr_lines)


def test_text_generation_takes_request_parameters(tmp_path):
    """BYTES in typed contents and an int64 request parameter reach the text_generation handler:
    the answer equals the REST one and ember-text's own generation on the folder."""
    from text_archives import gpt2_folder

    import ember_text
    from ember_serve import create_archive

    folder = gpt2_folder(tmp_path / "hf", seed=3)
    archive = create_archive(str(tmp_path / "gen.emar"), name="gen", version="1", handler="text_generation",
                             hf_folder=folder, config={"max_batch_size": 4})
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    model = ember_text.models.AutoModelForCausalLM.from_pretrained(folder)
    prompt = "To be, or not to be"
    ids = tok(prompt, return_tensors="ember")["input_ids"]
    want = tok.decode(model.generate(ids, max_new_tokens=9)[0, ids.shape[1]:].tolist(), skip_special_tokens=True,
                      clean_up_tokenization_spaces=False)
    server = ServerProcess(["--grpc-port", "0", "--models", f"gen={archive}"])
    c = GrpcClient(server.urls["grpc"])
    try:
        text = {"name": "text_input", "datatype": "BYTES", "shape": [1], "contents": {"bytes_contents": [prompt]}}
        answer = c.ask(op="message", model="gen", inputs=[text], parameters={"max_new_tokens": 9})
        inp = httpclient.InferInput("text_input", [1], "BYTES")
        inp.set_data_from_numpy(np.array([prompt.encode()], dtype=object))
        rest = httpclient.InferenceServerClient(server.hostport)
        rest_answer = rest.infer("gen", [inp], parameters={"max_new_tokens": 9}).as_numpy("text_output").tolist()
        rest.close()
    finally:
        c.close()
        server.stop()
    assert answer["ok"], answer
    assert answer["outputs"]["text_output"]["data"] == [want]
    assert rest_answer == [want.encode()]


def _by_id(answers):
    return {a["id"]: a for a in answers if a["ok"]}


def test_stream_infer_answers_every_request_on_the_stream(client, grpc_server):
    rng = np.random.default_rng(21)
    x1, x2 = rng.random((3, 4), dtype=np.float32), rng.random((2, 4), dtype=np.float32)
    words = np.array([b"a", "\u00e9".encode()], dtype=object)
    requests = [dict(model="lin", version="1", id="s-1", inputs=[tensor("input__0", x1, "FP32")]),
                dict(model="lin", version="2", id="s-2", inputs=[tensor("input__0", x2, "FP32")]),
                dict(model="echo", id="s-3", inputs=[tensor("w", words, "BYTES")], outputs=["out_w"])]
    answer = client.ask(op="stream", requests=requests)
    assert answer["ok"] and len(answer["answers"]) == 3 and all(a["ok"] for a in answer["answers"]), answer
    got = _by_id(answer["answers"])
    assert sorted(got) == ["s-1", "s-2", "s-3"]
    assert (got["s-1"]["model_name"], got["s-1"]["model_version"]) == ("lin", "1")
    assert got["s-2"]["model_version"] == "2"
    for rid, x, version in (("s-1", x1, "1"), ("s-2", x2, "2")):
        out = output_array(got[rid]["outputs"]["output__0"])
        np.testing.assert_allclose(out, grpc_server.torch[version](x), rtol=1e-5, atol=1e-6)
        unary = client.ask(op="infer", model="lin", version=version, inputs=[tensor("input__0", x, "FP32")])
        np.testing.assert_array_equal(out, output_array(unary["outputs"]["output__0"]))
    assert list(got["s-3"]["outputs"]) == ["out_w"]
    np.testing.assert_array_equal(output_array(got["s-3"]["outputs"]["out_w"]), words)


def test_stream_errors_are_messages_and_the_stream_goes_on(client, grpc_server):
    status, _, text = http("GET", grpc_server.metrics + "/metrics")
    before = text.decode()
    x = np.random.default_rng(22).random((1, 4), dtype=np.float32)
    good = [tensor("input__0", x, "FP32")]
    requests = [dict(model="lin", id="ok-1", inputs=good),
                dict(model="nosuch", id="bad-model", inputs=good),
                dict(model="lin", id="bad-shape", inputs=[tensor("input__0", np.zeros((1, 5), np.float32), "FP32")]),
                dict(model="late", id="bad-late", inputs=[tensor("x", np.zeros(2, np.float32), "FP32")]),
                dict(model="lin", id="ok-2", inputs=good)]
    answer = client.ask(op="stream", requests=requests)
    answers = answer["answers"]
    assert len(answers) == 5, answer  # one answer per request, errors included: the stream stayed open
    got = _by_id(answers)
    assert sorted(got) == ["ok-1", "ok-2"]
    for rid in got:
        np.testing.assert_allclose(output_array(got[rid]["outputs"]["output__0"]), grpc_server.torch["1"](x),
                                   rtol=1e-5, atol=1e-6)
    errors = sorted(a["message"] for a in answers if not a["ok"])
    assert len(errors) == 3
    assert any("unknown model 'nosuch'" in e for e in errors)
    assert any("does not match" in e for e in errors)
    assert any("response_timeout_s" in e for e in errors)
    # the same stream's failures are counted as ModelInfer's are, by the HTTP status of the outcome
    status, _, text = http("GET", grpc_server.metrics + "/metrics")
    after = text.decode()
    for model, code, n in (("lin", "200", 2), ("lin", "400", 1), ("late", "504", 1)):
        labels = dict(model=model, protocol="grpc", code=code)
        assert _metric(after, "ember_requests_total", **labels) == _metric(before, "ember_requests_total",
                                                                           **labels) + n
    assert client.ask(op="ready")["value"] is True


def test_stream_requests_run_concurrently_and_share_batches(client):
    """Three one-row requests to ``slow`` on one stream: answered one at a time they would each run
    alone (3 x SLOW_S); run concurrently, the later ones queue behind the first and share a batch."""
    requests = [dict(model="slow", id=f"c-{i}", inputs=[tensor("x", np.array([[i]], np.int64), "INT64")])
                for i in range(3)]
    answer = client.ask(op="stream", requests=requests, timeout=6 * SLOW_S)
    got = _by_id(answer["answers"])
    assert sorted(got) == ["c-0", "c-1", "c-2"], answer
    for i in range(3):
        np.testing.assert_array_equal(output_array(got[f"c-{i}"]["outputs"]["out_x"]), [[i]])
    rows = [output_array(got[f"c-{i}"]["outputs"]["batch_rows"])[0] for i in range(3)]
    assert max(rows) >= 2, rows


def _lin2_stats(client, grpc_server):
    """lin version 2's statistics over gRPC and over REST (they must agree: no request in between)."""
    got = client.ask(op="statistics", model="lin", version="2")
    assert got["ok"], got
    status, rest_stats = http_json("GET", grpc_server.inference + "/v2/models/lin/versions/2/stats")
    assert status == 200
    assert got["value"] == rest_stats
    (entry,) = rest_stats["model_stats"]
    return entry


def test_model_statistics_count_requests_batches_and_failures(client, grpc_server):
    before = _lin2_stats(client, grpc_server)
    started_ms = time.time() * 1000
    rng = np.random.default_rng(23)
    for rows in (2, 3):  # one after another: each runs as a batch of its own rows
        x = rng.random((rows, 4), dtype=np.float32)
        assert client.ask(op="infer", model="lin", version="2", inputs=[tensor("input__0", x, "FP32")])["ok"]
    bad = client.ask(op="infer", model="lin", version="2", inputs=[tensor("input__0", np.zeros((1, 5), np.float32),
                                                                          "FP32")])
    assert bad["code"] == "INVALID_ARGUMENT"
    after = _lin2_stats(client, grpc_server)
    assert (after["name"], after["version"]) == ("lin", "2")
    assert after["inference_count"] - before["inference_count"] == 5
    assert after["execution_count"] - before["execution_count"] == 2
    s0, s1 = before["inference_stats"], after["inference_stats"]
    for field, n in (("success", 2), ("fail", 1), ("queue", 2), ("compute_input", 2), ("compute_infer", 2),
                     ("compute_output", 2), ("cache_hit", 0), ("cache_miss", 0)):
        assert s1[field]["count"] - s0[field]["count"] == n, field
    assert s1["success"]["ns"] > s0["success"]["ns"] and s1["compute_infer"]["ns"] > s0["compute_infer"]["ns"]
    batches0 = {b["batch_size"]: b for b in before["batch_stats"]}
    for b in after["batch_stats"]:
        grew = b["compute_infer"]["count"] - batches0.get(b["batch_size"], {"compute_infer": {"count": 0}})[
            "compute_infer"]["count"]
        assert grew == (1 if b["batch_size"] in (2, 3) else 0), b
    assert after["last_inference"] >= started_ms - 1 and after["memory_usage"] == []


def test_model_statistics_of_every_model_and_unknown_ones(client, grpc_server):
    got = client.ask(op="statistics")
    status, rest_stats = http_json("GET", grpc_server.inference + "/v2/models/stats")
    assert got["ok"] and status == 200
    names = [(s["name"], s["version"]) for s in got["value"]["model_stats"]]
    assert names == [(s["name"], s["version"]) for s in rest_stats["model_stats"]]
    assert names == sorted([("echo", "1"), ("late", "1"), ("lin", "1"), ("lin", "2"), ("slow", "1"), ("small", "1")])
    status, rest_lin = http_json("GET", grpc_server.inference + "/v2/models/lin/stats")
    assert [s["version"] for s in rest_lin["model_stats"]] == ["1", "2"]
    for model, version in (("nosuch", ""), ("lin", "9")):
        answer = client.ask(op="statistics", model=model, version=version)
        assert answer["ok"] is False and answer["code"] == "NOT_FOUND", answer
        path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/stats"
        assert http_json("GET", grpc_server.inference + path)[0] == 404


def test_stream_of_a_text_generation_model_sends_the_pieces(tmp_path):
    """With the parameter ``stream`` true, a text_generation request is answered piece by piece on
    the stream (Triton's decoupled responses); the pieces add up to ember-text's own generation."""
    from text_archives import gpt2_folder

    import ember_text
    from ember_serve import create_archive

    folder = gpt2_folder(tmp_path / "hf", seed=3)
    archive = create_archive(str(tmp_path / "gen.emar"), name="gen", version="1", handler="text_generation",
                             hf_folder=folder, config={"max_batch_size": 4})
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    model = ember_text.models.AutoModelForCausalLM.from_pretrained(folder)
    prompts = {"p1": "To be, or not to be", "p2": "The quick brown fox", "p3": "Serving models"}
    want, reasons = {}, {}
    for rid, prompt in prompts.items():
        ids = tok(prompt, return_tensors="ember")["input_ids"]
        new = model.generate(ids, max_new_tokens=12)[0, ids.shape[1]:].tolist()
        want[rid] = tok.decode(new, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        reasons[rid] = "stop" if new[-1] == tok.eos_token_id else "length"

    def request(rid, stream, empty_final=False, texts=None):
        texts = texts or [prompts[rid]]
        inp = {"name": "text_input", "datatype": "BYTES", "shape": [len(texts)], "data": texts}
        params = {"max_new_tokens": 12, **({"stream": True} if stream else {})}
        return dict(model="gen", id=rid, inputs=[inp], parameters=params, empty_final=empty_final)

    server = ServerProcess(["--grpc-port", "0", "--models", f"gen={archive}"])
    c = GrpcClient(server.urls["grpc"])
    try:
        answer = c.ask(op="stream", until_final=True, requests=[
            request("p1", stream=True), request("p2", stream=True, empty_final=True),
            request("p4", stream=True, texts=["a", "b"])])
        plain = c.ask(op="stream", requests=[request("p3", stream=False)])
    finally:
        c.close()
        server.stop()
    answers = answer["answers"]
    errors = [a for a in answers if not a["ok"]]
    assert len(errors) == 1 and "one text" in errors[0]["message"], answers
    for rid, empty_final in (("p1", False), ("p2", True)):
        mine = [a for a in answers if a["ok"] and a["id"] == rid]
        assert len(mine) > 2, mine  # in pieces
        finals = [a["parameters"]["triton_final_response"] for a in mine]
        assert finals == [False] * (len(mine) - 1) + [True]
        assert mine[-1]["parameters"]["finish_reason"] == reasons[rid]
        texts = [a["outputs"]["text_output"]["data"][0] for a in mine if a["outputs"]]
        assert "".join(texts) == want[rid]
        # the final flag rides on the last piece, or on an empty response after them when asked
        assert (mine[-1]["outputs"] == {}) is empty_final
    (whole,) = plain["answers"]  # without "stream": one response with the whole text
    assert whole["ok"] and whole["outputs"]["text_output"]["data"] == [want["p3"]]
    assert "triton_final_response" not in whole["parameters"]
