"""ember.hub against torch.hub, served by a local HTTP server (no network)."""

import hashlib
import http.server
import os
import sys
import threading
import zipfile
from collections import Counter
from functools import partial

import numpy as np
import pytest
import torch
import torch.hub
from conftest import assert_same

import ember
import ember.hub as hub

FLAKY = bytes(range(256)) * 400  # 102400 bytes


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder and counts requests per path. ``/truncated`` always sends 1000 of the
    100000 bytes it promises; ``/flaky`` and ``/flaky-norange`` send half of ``FLAKY`` on the
    first request, then the rest for a Range request (``/flaky``) or everything again."""

    def do_GET(self):
        self.server.requests[self.path] += 1
        if self.path == "/truncated":
            return self._send(200, b"x" * 1000, total=100000)
        if self.path.startswith("/flaky"):
            first = self.server.requests[self.path] == 1
            asked = self.headers.get("Range")
            self.server.ranges.append(asked)
            if first:
                return self._send(200, FLAKY[:len(FLAKY) // 2], total=len(FLAKY))
            if asked and self.path == "/flaky":
                start = int(asked.split("=")[1].rstrip("-"))
                return self._send(206, FLAKY[start:], total=len(FLAKY) - start,
                                  extra={"Content-Range": f"bytes {start}-{len(FLAKY) - 1}/{len(FLAKY)}"})
            return self._send(200, FLAKY, total=len(FLAKY))
        super().do_GET()

    def _send(self, status, body, total, extra=None):
        self.send_response(status)
        self.send_header("Content-Length", str(total))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "srv"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Handler, directory=str(root)))
    httpd.requests = Counter()
    httpd.ranges = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.root = root
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("EMBER_HOME", "XDG_CACHE_HOME", "EMBER_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub, "_hub_dir", None)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _torch_state():
    g = torch.Generator().manual_seed(0)
    return {"w": torch.randn(3, 4, generator=g), "b": torch.arange(5), "h": torch.randn(2, generator=g).half()}


def _publish(server, state, stem="weights", ext=".pth", legacy=False):
    """torch.save ``state`` into the server folder as ``stem-<sha8>.ext``; its URL."""
    tmp = server.root / f"{stem}.tmp"
    torch.save(state, tmp, _use_new_zipfile_serialization=not legacy)
    name = f"{stem}-{_sha(tmp)[:8]}{ext}"
    tmp.rename(server.root / name)
    return f"{server.url}/{name}"


def _assert_state(e, t):
    assert list(e) == list(t)
    for k in t:
        assert_same(e[k], t[k])


def _leftovers(folder):
    return [p for p in os.listdir(folder) if p.endswith(".partial")]


# ---- cache folder ---------------------------------------------------------------------

def test_get_dir_default_env_and_set_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hub.get_dir() == os.path.join(str(tmp_path), ".cache", "ember", "hub")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert hub.get_dir() == str(tmp_path / "xdg" / "ember" / "hub")
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    assert hub.get_dir() == str(tmp_path / "home" / "hub")
    hub.set_dir("~/elsewhere")
    assert hub.get_dir() == str(tmp_path / "elsewhere")
    assert ember.hub is hub


# ---- download_url_to_file -------------------------------------------------------------

@pytest.mark.parametrize("prefix_len", [None, 8, 64])
def test_download_matches_torch(server, tmp_path, prefix_len):
    payload = np.random.default_rng(0).bytes(300_000)
    (server.root / "blob.bin").write_bytes(payload)
    digest = hashlib.sha256(payload).hexdigest()
    prefix = None if prefix_len is None else digest[:prefix_len]
    hub.download_url_to_file(f"{server.url}/blob.bin", str(tmp_path / "e.bin"), prefix, progress=False)
    torch.hub.download_url_to_file(f"{server.url}/blob.bin", str(tmp_path / "t.bin"), prefix, progress=False)
    assert (tmp_path / "e.bin").read_bytes() == (tmp_path / "t.bin").read_bytes() == payload
    assert _leftovers(tmp_path) == []


def test_download_bad_hash_keeps_nothing(server, tmp_path):
    (server.root / "blob.bin").write_bytes(b"abc" * 1000)
    actual = _sha(server.root / "blob.bin")
    bad = "0" * 8 if not actual.startswith("0" * 8) else "f" * 8
    with pytest.raises(RuntimeError) as t_err:
        torch.hub.download_url_to_file(f"{server.url}/blob.bin", str(tmp_path / "t.bin"), bad, progress=False)
    with pytest.raises(RuntimeError) as e_err:
        hub.download_url_to_file(f"{server.url}/blob.bin", str(tmp_path / "e.bin"), bad, progress=False)
    assert type(e_err.value) is type(t_err.value)
    assert bad in str(e_err.value) and actual in str(e_err.value)
    assert not (tmp_path / "e.bin").exists() and _leftovers(tmp_path) == []


def test_failed_download_leaves_old_file_untouched(server, tmp_path):
    dst = tmp_path / "e.bin"
    dst.write_bytes(b"previous good file")
    # torch keeps the truncated body; ember asks again (this server ignores ranges), then refuses it
    with pytest.raises(RuntimeError, match="expected 100000 bytes, got 1000"):
        hub.download_url_to_file(f"{server.url}/truncated", str(dst), progress=False)
    assert server.requests["/truncated"] == hub.RESUME_ATTEMPTS + 1
    assert dst.read_bytes() == b"previous good file"
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("path, ranges", [("/flaky", [None, "bytes=51200-"]),
                                          ("/flaky-norange", [None, "bytes=51200-"])])
def test_dropped_connection_is_resumed(server, tmp_path, path, ranges):
    digest = hashlib.sha256(FLAKY).hexdigest()
    hub.download_url_to_file(f"{server.url}{path}", str(tmp_path / "e.bin"), digest[:10], progress=False)
    assert (tmp_path / "e.bin").read_bytes() == FLAKY
    assert server.ranges == ranges and _leftovers(tmp_path) == []


def test_missing_url_raises_as_torch(server, tmp_path):
    with pytest.raises(Exception) as t_err:
        torch.hub.download_url_to_file(f"{server.url}/nope.bin", str(tmp_path / "t.bin"), progress=False)
    with pytest.raises(Exception) as e_err:
        hub.download_url_to_file(f"{server.url}/nope.bin", str(tmp_path / "e.bin"), progress=False)
    assert type(e_err.value) is type(t_err.value)
    assert not (tmp_path / "e.bin").exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize("progress", [True, False])
def test_progress_bar_goes_to_stderr(server, tmp_path, capfd, progress):
    (server.root / "blob.bin").write_bytes(b"z" * 5000)
    hub.download_url_to_file(f"{server.url}/blob.bin", str(tmp_path / "e.bin"), progress=progress)
    out, err = capfd.readouterr()
    assert out == ""
    assert ("100%" in err) is progress


# ---- load_state_dict_from_url ---------------------------------------------------------

@pytest.mark.parametrize("legacy", [False, True])
def test_load_state_dict_matches_torch_and_is_cached(server, tmp_path, legacy):
    state = _torch_state()
    url = _publish(server, state, legacy=legacy)
    expected = torch.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "t"), progress=False,
                                                  check_hash=True, weights_only=True)
    server.requests.clear()
    got = hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "e"), progress=False, check_hash=True)
    _assert_state(got, expected)
    again = hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "e"), progress=False, check_hash=True)
    _assert_state(again, expected)
    assert sum(server.requests.values()) == 1  # the second call read the cache


def test_legacy_zip_checkpoint_matches_torch(server, tmp_path):
    state = _torch_state()
    torch.save(state, tmp_path / "inner.pth", _use_new_zipfile_serialization=False)
    with zipfile.ZipFile(server.root / "old.zip", "w") as zf:
        zf.write(tmp_path / "inner.pth", "inner.pth")
    url = f"{server.url}/old.zip"
    with pytest.warns(FutureWarning):
        expected = torch.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "t"), progress=False,
                                                      weights_only=True)
    with pytest.warns(FutureWarning):
        got = hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "e"), progress=False)
    _assert_state(got, expected)


def test_default_cache_location_and_file_name(server, tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_HOME", str(tmp_path / "home"))
    url = _publish(server, _torch_state())
    hub.load_state_dict_from_url(url, progress=False)
    assert os.listdir(tmp_path / "home" / "hub" / "checkpoints") == [url.rsplit("/", 1)[1]]
    hub.load_state_dict_from_url(url, progress=False, file_name="renamed.pth")
    assert sorted(os.listdir(tmp_path / "home" / "hub" / "checkpoints")) == sorted(
        [url.rsplit("/", 1)[1], "renamed.pth"])


def test_check_hash_mismatch_caches_nothing(server, tmp_path):
    url = _publish(server, _torch_state())
    name = url.rsplit("/", 1)[1]
    forged = name.split("-")[0] + "-" + ("0" * 8 if not name.split("-")[1].startswith("0" * 8) else "1" * 8) + ".pth"
    (server.root / name).rename(server.root / forged)
    furl = f"{server.url}/{forged}"
    with pytest.raises(RuntimeError) as t_err:
        torch.hub.load_state_dict_from_url(furl, model_dir=str(tmp_path / "t"), progress=False, check_hash=True)
    with pytest.raises(RuntimeError) as e_err:
        hub.load_state_dict_from_url(furl, model_dir=str(tmp_path / "e"), progress=False, check_hash=True)
    assert type(e_err.value) is type(t_err.value)
    assert os.listdir(tmp_path / "e") == []
    # without check_hash, as torch, the name is not checked
    _assert_state(hub.load_state_dict_from_url(furl, model_dir=str(tmp_path / "e"), progress=False),
                  torch.hub.load_state_dict_from_url(furl, model_dir=str(tmp_path / "t"), progress=False))


def test_offline_mode_names_url_and_cache_path(server, tmp_path, monkeypatch):
    url = _publish(server, _torch_state())
    cache = tmp_path / "cache"
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError) as err:
        hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False)
    expected_path = str(cache / url.rsplit("/", 1)[1])
    assert url in str(err.value) and expected_path in str(err.value)
    with pytest.raises(RuntimeError, match="offline"):
        hub.download_url_to_file(url, str(tmp_path / "x.pth"), progress=False)
    assert sum(server.requests.values()) == 0
    # the user places the file by hand: it now loads without a request
    cache.mkdir()
    (server.root / url.rsplit("/", 1)[1]).rename(expected_path)
    _assert_state(hub.load_state_dict_from_url(url, model_dir=str(cache), progress=False, check_hash=True),
                  torch.load(expected_path, weights_only=True))
    assert sum(server.requests.values()) == 0


def test_local_path(tmp_path):
    state = _torch_state()
    torch.save(state, tmp_path / "local.pth")
    _assert_state(hub.load_state_dict_from_url(str(tmp_path / "local.pth"), model_dir=str(tmp_path / "c")), state)
    assert not (tmp_path / "c").exists()
    with pytest.raises(FileNotFoundError, match="missing.pth"):
        hub.load_state_dict_from_url(str(tmp_path / "missing.pth"))


# ---- safetensors ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["model.safetensors", "model-noext.bin"])
def test_safetensors_weights(server, tmp_path, name):
    from safetensors.torch import save_file

    state = _torch_state()
    state["bf"] = torch.tensor([1.5, -2.0, 3.25]).bfloat16()
    save_file(state, str(server.root / name))
    got = hub.load_state_dict_from_url(f"{server.url}/{name}", model_dir=str(tmp_path), progress=False)
    assert sorted(got) == sorted(state)
    for k in state:
        assert_same(got[k], state[k])
    got["w"].add_(1)  # tensors own writable memory
    moved = hub.load_state_dict_from_url(f"{server.url}/{name}", model_dir=str(tmp_path), progress=False,
                                         map_location="cpu")
    assert moved["w"].device == ember.device("cpu")


def test_safetensors_missing_package_is_a_clear_error(tmp_path, monkeypatch):
    from safetensors.torch import save_file

    save_file({"a": torch.ones(2)}, str(tmp_path / "w.safetensors"))
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    with pytest.raises(ImportError, match=r"ember-core\[safetensors\]"):
        hub.load_state_dict_from_url(str(tmp_path / "w.safetensors"))
