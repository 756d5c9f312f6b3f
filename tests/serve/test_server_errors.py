"""Bad input gets a 4xx with a clear message and leaves the server healthy; handler errors are 500s."""

import json

import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import http, http_json
from tritonclient.utils import InferenceServerException

INFER = "/v2/models/lin/infer"
GOOD = {"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}


def post(server, path, body, headers=None):
    status, hdrs, raw = http("POST", server.inference + path, body, headers)
    return status, hdrs, (json.loads(raw) if raw else None)


def assert_healthy(server):
    assert http("GET", server.inference + "/v2/health/ready")[0] == 200
    status, _, resp = post(server, INFER, GOOD)
    assert status == 200 and resp["outputs"][0]["shape"] == [1, 3]


@pytest.mark.parametrize("body, message", [
    (b"{not json", "malformed JSON in the infer request"),
    (b"[1, 2]", "must be a JSON object, got list"),
    ({"inputs": []}, "needs 'inputs'"),
    ({"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [1, 5], "data": [0] * 5}]},
     r"shape [1, 5] does not match the model's [-1, 4]"),
    ({"inputs": [{"name": "input__0", "datatype": "INT32", "shape": [1, 4], "data": [1, 2, 3, 4]}]},
     "datatype INT32 given, the model takes FP32"),
    ({"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3]}]},
     "holds 4 elements, 'data' has 3"),
    ({"inputs": [{"name": "nope", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]},
     "unknown input(s) ['nope']"),
    ({"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [9, 4], "data": [0] * 36}]},
     "holds 9 rows; model lin takes at most 8"),
    ({"inputs": GOOD["inputs"], "outputs": [{"name": "zzz"}]}, "unknown output 'zzz'"),
    ({"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [1, 4]}]}, "neither 'data' nor"),
])
def test_bad_requests_are_400_with_a_message(main_server, body, message):
    status, headers, resp = post(main_server, INFER, body, {"Content-Type": "application/json"})
    assert status == 400
    assert message in resp["error"]
    assert_healthy(main_server)


def test_truncated_binary_payload(main_server):
    header = json.dumps({"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [2, 4],
                                     "parameters": {"binary_data_size": 32}}]}).encode()
    blob = np.zeros((2, 4), np.float32).tobytes()
    for tail, message in [(blob[:20], "only 20 bytes of binary data remain (truncated payload?)"),
                          (blob + b"xx", "2 bytes of binary data follow")]:
        status, _, resp = post(main_server, INFER, header + tail, {"Inference-Header-Content-Length": str(len(header))})
        assert status == 400 and message in resp["error"]
    status, _, resp = post(main_server, INFER, header + blob, {"Inference-Header-Content-Length": "99999"})
    assert status == 400 and "Inference-Header-Content-Length is 99999" in resp["error"]
    status, _, resp = post(main_server, INFER, header + blob, {"Inference-Header-Content-Length": "ten"})
    assert status == 400 and "must be an integer" in resp["error"]
    assert_healthy(main_server)


def test_unknown_model_version_and_route(main_server):
    status, _, resp = post(main_server, "/v2/models/nosuch/infer", GOOD)
    assert status == 404 and resp == {"error": "unknown model 'nosuch'"}
    status, _, resp = post(main_server, "/v2/models/lin/versions/7/infer", GOOD)
    assert status == 404 and "has no version '7'" in resp["error"]
    status, resp = http_json("GET", main_server.inference + "/v2/nothing/here")
    assert status == 404 and "no route GET /v2/nothing/here" in resp["error"]
    with pytest.raises(InferenceServerException, match="unknown model"):
        c = httpclient.InferenceServerClient(main_server.hostport)
        inp = httpclient.InferInput("input__0", [1, 4], "FP32")
        inp.set_data_from_numpy(np.zeros((1, 4), np.float32))
        c.infer("nosuch", [inp])


def test_oversized_body_is_413(main_server):
    big = {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "data": ["a" * 2000]}]}
    status, _, resp = post(main_server, "/v2/models/small/infer", big)
    assert status == 413 and "the limit is 1024 (max_request_bytes)" in resp["error"]
    status, _, resp = post(main_server, "/predictions/small", b"a" * 5000)
    assert status == 413
    status, _, resp = post(main_server, "/v2/models/small/infer",
                           {"inputs": [{"name": "x", "datatype": "BYTES", "shape": [1], "data": ["ok"]}]})
    assert status == 200


def test_compressed_request_body(main_server):
    import gzip
    body = gzip.compress(json.dumps(GOOD).encode())
    status, _, resp = post(main_server, INFER, body, {"Content-Encoding": "gzip"})
    assert status == 200 and resp["outputs"][0]["shape"] == [1, 3]
    status, _, resp = post(main_server, INFER, b"garbage", {"Content-Encoding": "gzip"})
    assert status == 400 and "does not decompress" in resp["error"]


def test_handler_exception_is_500_and_the_worker_lives_on(main_server):
    status, _, resp = post(main_server, "/predictions/echo", b"boom")
    assert status == 500
    assert resp == {"error": "RuntimeError: the handler was told to fail"}
    status, _, resp = post(main_server, "/predictions/echo", b"bad")
    assert status == 400 and resp == {"error": "this request cannot be read"}
    status, _, resp = post(main_server, "/predictions/echo", b"fine")
    assert status == 200 and resp["echo"] == "fine"
    assert_healthy(main_server)
