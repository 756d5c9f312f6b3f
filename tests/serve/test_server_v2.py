"""Open Inference Protocol v2 over a real socket, driven by tritonclient[http] and urllib."""

import json

import ml_dtypes
import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import http, http_json, png_bytes, torch_fashion_topk, torch_linear
from tritonclient.utils import InferenceServerException

ALL_DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16", "FP32",
                 "FP64", "BF16", "BYTES"]


@pytest.fixture(scope="module")
def client(main_server):
    c = httpclient.InferenceServerClient(main_server.hostport)
    yield c
    c.close()


def sample(datatype, shape=(2, 3)):
    rng = np.random.default_rng(7)
    if datatype == "BYTES":
        return np.array([f"s{i}\u00e9".encode() for i in range(int(np.prod(shape)))], dtype=object).reshape(shape)
    if datatype == "BF16":
        return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    if datatype == "BOOL":
        return rng.random(shape) > 0.5
    dt = np.dtype({"UINT8": "u1", "UINT16": "u2", "UINT32": "u4", "UINT64": "u8", "INT8": "i1", "INT16": "i2",
                   "INT32": "i4", "INT64": "i8", "FP16": "f2", "FP32": "f4", "FP64": "f8"}[datatype])
    if dt.kind in "iu":
        return rng.integers(0 if dt.kind == "u" else -100, 100, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def test_server_health_and_metadata(client):
    assert client.is_server_live() and client.is_server_ready()
    meta = client.get_server_metadata()
    assert meta["name"] == "ember-serve" and meta["version"] == "0.1.0" and "binary_tensor_data" in meta["extensions"]


def test_model_metadata_and_readiness(client):
    meta = client.get_model_metadata("lin")
    assert meta == {"name": "lin", "versions": ["1", "2"], "platform": "ember",
                    "inputs": [{"name": "input__0", "datatype": "FP32", "shape": [-1, 4]}],
                    "outputs": [{"name": "output__0", "datatype": "FP32", "shape": [-1, 3]}]}
    assert client.get_model_metadata("lin", model_version="2")["versions"] == ["2"]
    assert client.is_model_ready("lin") and client.is_model_ready("lin", "2")
    assert not client.is_model_ready("nosuch")
    with pytest.raises(InferenceServerException, match="unknown model 'nosuch'") as e:
        client.get_model_metadata("nosuch")
    assert e.value.status() == "404"
    with pytest.raises(InferenceServerException, match="has no version '9'"):
        client.get_model_metadata("lin", model_version="9")


@pytest.mark.parametrize("binary", [True, False])
def test_infer_matches_torch(client, main_server, binary):
    x = np.random.default_rng(1).random((5, 4), dtype=np.float32)
    inp = httpclient.InferInput("input__0", [5, 4], "FP32")
    inp.set_data_from_numpy(x, binary_data=binary)
    out = httpclient.InferRequestedOutput("output__0", binary_data=binary)
    r = client.infer("lin", [inp], outputs=[out], request_id="req-1")
    np.testing.assert_allclose(r.as_numpy("output__0"), torch_linear(main_server.torch["lin1"])(x), rtol=1e-5,
                               atol=1e-6)
    resp = r.get_response()
    assert resp["model_name"] == "lin" and resp["model_version"] == "1" and resp["id"] == "req-1"
    r2 = client.infer("lin", [inp], model_version="2")
    np.testing.assert_allclose(r2.as_numpy("output__0"), torch_linear(main_server.torch["lin2"])(x), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("datatype", ALL_DATATYPES)
@pytest.mark.parametrize("binary", [True, False])
def test_every_datatype_round_trips(client, datatype, binary):
    if datatype == "BF16" and not binary:
        binary = True  # tritonclient sends BF16 only as binary; the JSON form is tested with urllib below
    x = sample(datatype)
    inp = httpclient.InferInput("x", list(x.shape), datatype)
    inp.set_data_from_numpy(x, binary_data=binary)
    r = client.infer("echo", [inp], outputs=[httpclient.InferRequestedOutput("out_x", binary_data=binary)])
    got = r.as_numpy("out_x")
    assert r.get_output("out_x")["datatype"] == datatype
    if datatype == "BF16":
        np.testing.assert_array_equal(got.astype(np.float32), x.astype(np.float32))
    elif datatype == "BYTES" and not binary:  # JSON carries BYTES as strings; the client hands back str
        np.testing.assert_array_equal(got, np.vectorize(bytes.decode, otypes=[object])(x))
    else:
        np.testing.assert_array_equal(got, x)


def test_bf16_and_bytes_in_json(main_server):
    body = {"inputs": [{"name": "b", "datatype": "BF16", "shape": [2], "data": [1.5, -0.25]},
                       {"name": "s", "datatype": "BYTES", "shape": [1, 2], "data": [["ab", "\u00e9"]]}]}
    status, resp = http_json("POST", main_server.inference + "/v2/models/echo/infer", body)
    assert status == 200
    outs = {o["name"]: o for o in resp["outputs"]}
    assert outs["out_b"] == {"name": "out_b", "datatype": "BF16", "shape": [2], "data": [1.5, -0.25]}
    assert outs["out_s"] == {"name": "out_s", "datatype": "BYTES", "shape": [1, 2], "data": ["ab", "\u00e9"]}


def test_binary_data_output_parameter_and_output_selection(main_server):
    body = {"id": "abc", "parameters": {"binary_data_output": True},
            "inputs": [{"name": "x", "datatype": "INT32", "shape": [3], "data": [1, 2, 3]}],
            "outputs": [{"name": "out_x"}]}
    status, headers, raw = http("POST", main_server.inference + "/v2/models/echo/infer", body,
                                {"Content-Type": "application/json"})
    assert status == 200
    n = int(headers["Inference-Header-Content-Length"])
    header = json.loads(raw[:n])
    assert header["id"] == "abc"
    assert header["outputs"] == [{"name": "out_x", "datatype": "INT32", "shape": [3],
                                  "parameters": {"binary_data_size": 12}}]
    assert raw[n:] == np.array([1, 2, 3], "<i4").tobytes()


def test_batched_request_through_tritonclient_async(client, main_server):
    xs = [np.random.default_rng(i).random((2, 4), dtype=np.float32) for i in range(6)]
    pending = []
    for x in xs:
        inp = httpclient.InferInput("input__0", [2, 4], "FP32")
        inp.set_data_from_numpy(x)
        pending.append(client.async_infer("lin", [inp]))
    f = torch_linear(main_server.torch["lin1"])
    for x, p in zip(xs, pending):
        np.testing.assert_allclose(p.get_result().as_numpy("output__0"), f(x), rtol=1e-5, atol=1e-6)


def test_image_classifier_over_the_protocol(client, main_server):
    rng = np.random.default_rng(5)
    images = [rng.integers(0, 256, (28, 28), dtype=np.uint8) for _ in range(2)]
    want, probs = torch_fashion_topk(main_server.torch["fashion"], images)
    inp = httpclient.InferInput("image", [2], "BYTES")
    inp.set_data_from_numpy(np.array([png_bytes(i) for i in images], dtype=object))
    r = client.infer("fashion", [inp])
    np.testing.assert_allclose(r.as_numpy("probabilities"), probs.numpy(), rtol=1e-4, atol=1e-6)
    labels = [[s.decode().split(":", 2)[2] for s in row] for row in r.as_numpy("topk")]
    assert labels == [list(w) for w in want]
    meta = client.get_model_metadata("fashion")
    assert meta["inputs"] == [{"name": "image", "datatype": "BYTES", "shape": [-1]}]


def test_requests_without_an_id_get_distinct_new_ones(main_server):
    body = {"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [1, 4], "data": [0.0, 1.0, 2.0, 3.0]}]}
    ids = set()
    for _ in range(3):
        status, headers, raw = http("POST", main_server.inference + "/v2/models/lin/infer", body,
                                    {"Content-Type": "application/json"})
        assert status == 200 and "id" not in json.loads(raw)  # the answer echoes an id only when one was sent
        rid = headers["X-Request-ID"]
        assert len(rid) == 32 and int(rid, 16) >= 0
        ids.add(rid)
    assert len(ids) == 3
    status, headers, raw = http("POST", main_server.inference + "/v2/models/lin/infer", {**body, "id": "mine"},
                                {"Content-Type": "application/json", "X-Request-ID": "trace-1"})
    assert status == 200 and json.loads(raw)["id"] == "mine" and headers["X-Request-ID"] == "trace-1"
