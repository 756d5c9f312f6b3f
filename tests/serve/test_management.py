"""The management API over its own socket: model-store names only, workers, versions, token."""

import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import ServerProcess, http_json, make_echo_archive, make_linear_archive, torch_linear
from tritonclient.utils import InferenceServerException


@pytest.fixture(scope="module")
def managed(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    _, s1 = make_linear_archive(store, version="1", seed=0)
    _, s2 = make_linear_archive(store, version="2", seed=1)
    good, _ = make_linear_archive(store / "src", name="tampered")
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(store / "tampered.emar", "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info.filename, data.replace(b"self.fc(x)", b"__import__('os').system('id')")
                          if info.filename.endswith(".py") else data)
    outside = make_echo_archive(tmp_path_factory.mktemp("outside"), name="outside")
    os.symlink(outside, store / "linked.emar")
    server = ServerProcess(["--model-store", str(store)])
    server.store, server.states = store, {"1": s1, "2": s2}
    yield server
    server.stop()


def mgmt(server, method, path, body=None, headers=None):
    return http_json(method, server.management + path, body, headers)


def infer(server, version=None):
    c = httpclient.InferenceServerClient(server.hostport)
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    inp = httpclient.InferInput("input__0", [2, 4], "FP32")
    inp.set_data_from_numpy(x)
    return x, c.infer("lin", [inp], model_version=version or "").as_numpy("output__0")


def test_register_describe_scale_version_delete(managed):
    assert mgmt(managed, "GET", "/models") == (200, {"models": []})
    status, resp = mgmt(managed, "POST", "/models?url=lin-1.emar&initial_workers=2&batch_size=4&max_batch_delay=10")
    assert status == 200 and resp == {"status": 'Model "lin" Version: 1 registered with 2 initial workers'}
    status, resp = mgmt(managed, "POST", "/models?url=lin-1.emar")
    assert status == 409 and "registered already" in resp["message"]
    status, (desc,) = mgmt(managed, "GET", "/models/lin")
    assert (desc["modelName"], desc["modelVersion"], desc["minWorkers"], desc["batchSize"], desc["maxBatchDelay"]) \
        == ("lin", "1", 2, 4, 10.0)
    assert len(desc["workers"]) == 2 and desc["jobQueueStatus"]["pendingRequests"] == 0
    x, y = infer(managed)
    np.testing.assert_allclose(y, torch_linear(managed.states["1"])(x), rtol=1e-5, atol=1e-6)

    assert mgmt(managed, "PUT", "/models/lin?min_worker=3")[0] == 200
    assert mgmt(managed, "GET", "/models/lin")[1][0]["minWorkers"] == 3
    assert mgmt(managed, "PUT", "/models/lin/1?min_worker=1")[0] == 200
    assert mgmt(managed, "GET", "/models/lin/1")[1][0]["minWorkers"] == 1
    status, resp = mgmt(managed, "PUT", "/models/lin?min_worker=lots")
    assert status == 400 and "must be an integer" in resp["message"]

    assert mgmt(managed, "POST", "/models?url=lin-2.emar")[0] == 200
    assert [d["modelVersion"] for d in mgmt(managed, "GET", "/models/lin/all")[1]] == ["1", "2"]
    assert mgmt(managed, "GET", "/models") == (200, {"models": [{"modelName": "lin", "modelUrl": "lin-1.emar"}]})
    x, y = infer(managed)
    np.testing.assert_allclose(y, torch_linear(managed.states["1"])(x), rtol=1e-5, atol=1e-6)  # default: first
    status, resp = mgmt(managed, "PUT", "/models/lin/2/set-default")
    assert status == 200 and resp["status"] == 'Default version successfully updated for model "lin" to "2"'
    x, y = infer(managed)
    np.testing.assert_allclose(y, torch_linear(managed.states["2"])(x), rtol=1e-5, atol=1e-6)

    assert mgmt(managed, "DELETE", "/models/lin/1") == (200, {"status": 'Model "lin" version "1" unregistered'})
    with pytest.raises(InferenceServerException, match="has no version '1'"):
        infer(managed, "1")
    assert mgmt(managed, "DELETE", "/models/lin")[0] == 200
    assert mgmt(managed, "GET", "/models/lin")[0] == 404
    assert mgmt(managed, "GET", "/models") == (200, {"models": []})


@pytest.mark.parametrize("url", ["http://attacker.example/evil.emar", "https://x/y.emar", "../lin-1.emar",
                                 "/etc/passwd", "src/tampered-1.emar", "file:lin-1.emar", ".hidden"])
def test_urls_and_paths_are_refused(managed, url):
    from urllib.parse import quote
    status, resp = mgmt(managed, "POST", "/models?url=" + quote(url, safe=""))
    assert status == 400 and resp["type"] == "InvalidModelUrlException"
    assert "only the name of an archive in the model store" in resp["message"]


def test_register_an_unpacked_folder(managed):
    folder = managed.store / "unpacked"
    with zipfile.ZipFile(managed.store / "lin-2.emar") as zf:
        zf.extractall(folder)
    status, resp = mgmt(managed, "POST", "/models?url=unpacked&model_name=folder")
    assert status == 200 and resp["status"].startswith('Model "folder" Version: 2 registered')
    body = {"inputs": [{"name": "input__0", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}
    status, out = http_json("POST", managed.inference + "/v2/models/folder/infer", body)
    np.testing.assert_allclose(out["outputs"][0]["data"], torch_linear(managed.states["2"])([[1, 2, 3, 4]])[0],
                               rtol=1e-5, atol=1e-6)
    assert mgmt(managed, "DELETE", "/models/folder")[0] == 200
    assert folder.is_dir()  # the store's folder is left as it was


def test_unknown_name_symlink_out_and_tampered_archive(managed):
    status, resp = mgmt(managed, "POST", "/models?url=missing.emar")
    assert status == 404 and "holds no 'missing.emar'" in resp["message"]
    status, resp = mgmt(managed, "POST", "/models?url=linked.emar")
    assert status == 400 and "resolves outside the model store" in resp["message"]
    status, resp = mgmt(managed, "POST", "/models?url=tampered.emar")
    assert status == 400 and "corrupt or tampered" in resp["message"]
    assert http_json("GET", managed.inference + "/v2/health/ready")[0] == 200
    assert mgmt(managed, "GET", "/models/tampered")[0] == 404


def test_token_is_required_when_set(tmp_path):
    store = tmp_path / "s"
    make_linear_archive(store)
    server = ServerProcess(["--model-store", str(store)], env={"EMBER_SERVE_TOKEN": "s3cret"})
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            status, resp = http_json("GET", server.management + "/models", headers=headers)
            assert status == 401 and "Authorization: Bearer" in resp["message"]
        status, resp = http_json("GET", server.management + "/models", headers={"Authorization": "Bearer s3cret"})
        assert status == 200
        status, _ = http_json("POST", server.management + "/models?url=lin-1.emar",
                              headers={"Authorization": "Bearer s3cret"})
        assert status == 200
        assert http_json("GET", server.inference + "/v2/models/lin")[0] == 200  # inference needs no token
    finally:
        server.stop()


def test_management_beyond_loopback_needs_a_token():
    env = {k: v for k, v in os.environ.items() if k != "EMBER_SERVE_TOKEN"}
    exe = os.path.join(os.path.dirname(sys.executable), "ember-serve")  # the console script
    r = subprocess.run([exe, "--management-host", "0.0.0.0", "--port", "0"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2
    assert "beyond loopback, without a token" in r.stderr


def test_a_bad_startup_archive_stops_the_server_with_its_reason(tmp_path):
    junk = tmp_path / "junk.emar"
    junk.write_bytes(b"not a zip at all")
    r = subprocess.run([sys.executable, "-m", "ember_serve", "--models", f"bad={junk}", "--port", "0",
                        "--management-port", "0", "--metrics-port", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 3  # uvicorn's status for a failed startup
    assert "is not a readable zip archive" in r.stderr and "ember-serve listening" not in r.stdout
