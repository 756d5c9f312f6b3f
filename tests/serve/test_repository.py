"""Triton's model repository extension through tritonclient: only with --model-control explicit."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import ServerProcess, http_json, make_echo_archive, make_linear_archive, torch_linear
from tritonclient.utils import InferenceServerException

TOKEN = {"Authorization": "Bearer tok"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = tmp_path_factory.mktemp("repo")
    _, state = make_linear_archive(store / "src", name="lin", version="3")
    (store / "lin.emar").write_bytes((store / "src" / "lin-3.emar").read_bytes())
    (store / "broken.emar").write_bytes(b"not a zip")
    s = ServerProcess(["--model-store", str(store), "--model-control", "explicit"], env={"EMBER_SERVE_TOKEN": "tok"})
    s.state = state
    yield s
    s.stop()


def test_index_load_infer_unload(server):
    c = httpclient.InferenceServerClient(server.hostport)
    assert "model_repository" in c.get_server_metadata()["extensions"]
    index = {m["name"]: m for m in c.get_model_repository_index(headers=TOKEN)}
    assert index["lin"] == {"name": "lin", "version": "3", "state": "UNAVAILABLE", "reason": ""}
    assert index["broken"]["reason"] == "unreadable archive"
    c.load_model("lin", headers=TOKEN)
    assert c.is_model_ready("lin", "3")
    assert {m["name"]: m for m in c.get_model_repository_index(headers=TOKEN)}["lin"]["state"] == "READY"
    x = np.ones((1, 4), np.float32)
    inp = httpclient.InferInput("input__0", [1, 4], "FP32")
    inp.set_data_from_numpy(x)
    np.testing.assert_allclose(c.infer("lin", [inp]).as_numpy("output__0"), torch_linear(server.state)(x),
                               rtol=1e-5, atol=1e-6)
    c.load_model("lin", headers=TOKEN)  # loading a loaded model reloads it
    assert c.is_model_ready("lin")
    c.unload_model("lin", headers=TOKEN)
    assert not c.is_model_ready("lin")
    with pytest.raises(InferenceServerException, match="failed to load 'broken'"):
        c.load_model("broken", headers=TOKEN)
    with pytest.raises(InferenceServerException, match="holds no nosuch.emar"):
        c.load_model("nosuch", headers=TOKEN)


def test_repository_needs_the_token(server):
    c = httpclient.InferenceServerClient(server.hostport)
    with pytest.raises(InferenceServerException, match="needs 'Authorization: Bearer <token>'"):
        c.load_model("lin")
    status, _ = http_json("POST", server.inference + "/v2/repository/index", b"{}", {"Authorization": "Bearer no"})
    assert status == 401


def test_repository_routes_absent_without_explicit_control(tmp_path):
    path = make_echo_archive(tmp_path)
    s = ServerProcess(["--models", f"echo={path}"])
    try:
        status, resp = http_json("POST", s.inference + "/v2/repository/index", b"{}")
        assert status == 404 and "no route" in resp["error"]
        assert "model_repository" not in http_json("GET", s.inference + "/v2")[1]["extensions"]
    finally:
        s.stop()


def test_explicit_control_beyond_loopback_needs_a_token():
    env = {k: v for k, v in os.environ.items() if k != "EMBER_SERVE_TOKEN"}
    r = subprocess.run([sys.executable, "-m", "ember_serve", "--host", "0.0.0.0", "--model-control", "explicit"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "--model-control explicit would let anyone reaching 0.0.0.0" in r.stderr


def test_grpc_repository_index_matches_rest(tmp_path):
    from test_grpc import GrpcClient
    store = tmp_path / "store"
    make_linear_archive(store / "src", name="lin", version="3")
    (store / "lin.emar").write_bytes((store / "src" / "lin-3.emar").read_bytes())
    make_echo_archive(store, name="echo")  # echo-1.emar: served as "echo-1"
    (store / "broken.emar").write_bytes(b"not a zip")
    s = ServerProcess(["--model-store", str(store), "--model-control", "explicit", "--grpc-port", "0"],
                      env={"EMBER_SERVE_TOKEN": "tok"})
    c = GrpcClient(s.urls["grpc"])
    try:
        httpclient.InferenceServerClient(s.hostport).load_model("lin", headers=TOKEN)
        got = c.ask(op="repository_index", token="tok")
        status, rest = http_json("POST", s.inference + "/v2/repository/index", b"{}", TOKEN)
        assert got["ok"] and status == 200
        assert got["value"]["models"] == rest
        by_name = {m["name"]: m for m in rest}
        assert by_name["lin"]["state"] == "READY" and by_name["echo-1"]["state"] == "UNAVAILABLE"
        assert by_name["broken"]["reason"] == "unreadable archive"
        ready = c.ask(op="repository_index", token="tok", ready=True)
        status, rest_ready = http_json("POST", s.inference + "/v2/repository/index", b'{"ready": true}', TOKEN)
        assert ready["value"]["models"] == rest_ready == [by_name["lin"]]
        for token in (None, "wrong"):
            answer = c.ask(op="repository_index", token=token)
            assert answer["ok"] is False and answer["code"] == "UNAUTHENTICATED", answer
        assert "model_repository" in c.ask(op="server_metadata")["value"]["extensions"]
    finally:
        c.close()
        s.stop()
