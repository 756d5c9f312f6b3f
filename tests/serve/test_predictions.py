"""TorchServe-style routes over the socket: /ping and /predictions with raw bodies."""

import json

import numpy as np
from conftest import http, http_json, png_bytes, torch_fashion_topk, torch_linear


def test_ping(main_server):
    assert http_json("GET", main_server.inference + "/ping") == (200, {"status": "Healthy"})


def test_predictions_json_tensor(main_server):
    x = [[0.5, -1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]
    status, resp = http_json("POST", main_server.inference + "/predictions/lin", x)
    assert status == 200
    np.testing.assert_allclose(resp, torch_linear(main_server.torch["lin1"])(x), rtol=1e-5, atol=1e-6)
    status, resp = http_json("POST", main_server.inference + "/predictions/lin/2", x)
    np.testing.assert_allclose(resp, torch_linear(main_server.torch["lin2"])(x), rtol=1e-5, atol=1e-6)
    status, resp = http_json("POST", main_server.inference + "/predictions/lin", {"input__0": x})
    np.testing.assert_allclose(resp, torch_linear(main_server.torch["lin1"])(x), rtol=1e-5, atol=1e-6)


def test_predictions_image(main_server):
    pixels = np.random.default_rng(11).integers(0, 256, (28, 28), dtype=np.uint8)
    want, _ = torch_fashion_topk(main_server.torch["fashion"], [pixels])
    status, headers, raw = http("POST", main_server.inference + "/predictions/fashion", png_bytes(pixels),
                                {"Content-Type": "image/png", "X-Request-ID": "img-1"})
    assert status == 200 and headers["X-Request-ID"] == "img-1"
    got = json.loads(raw)
    assert list(got) == list(want[0])
    np.testing.assert_allclose(list(got.values()), list(want[0].values()), rtol=1e-4, atol=1e-6)
    status, resp = http_json("POST", main_server.inference + "/predictions/fashion", b"\x89PNG broken")
    assert status == 400 and "cannot decode the image" in resp["error"]


def test_predictions_unknown_model(main_server):
    assert http_json("POST", main_server.inference + "/predictions/none", b"x") == (404, {"error": "unknown model "
                                                                                                   "'none'"})
