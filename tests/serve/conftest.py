"""Helpers for the serve tests: small models and archives written in the real format, and a
server started as its own process on 127.0.0.1 (free ports) and driven over the socket."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
import torch

from ember_serve import create_archive

LINEAR_MODEL = textwrap.dedent('''
    from ember import nn


    class Net(nn.Module):
        def __init__(self, n_in=4, n_out=3):
            super().__init__()
            self.fc = nn.Linear(n_in, n_out)

        def forward(self, x):
            return self.fc(x)
''')

FASHION_MODEL = textwrap.dedent('''
    from ember import nn


    class FashionCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            )
            self.classifier = nn.Sequential(
                nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
            )

        def forward(self, x):
            return self.classifier(self.features(x))
''')

# A handler inside an archive: echoes every input back as an output named out_<input>,
# sleeping ``sleep_s`` per batch and reporting the batch's rows; raises on request.
ECHO_HANDLER = textwrap.dedent('''
    import threading
    import time

    import numpy as np

    from ember_serve.handlers import BaseHandler, InvalidInput


    class Echo(BaseHandler):
        def initialize(self, context):
            super().initialize(context)
            self.sleep_s = float(context.config.handler_config.get("sleep_s", 0.0))

        def preprocess(self, requests):
            for r in requests:
                if r.kind == "predict":
                    if r.body == b"boom":
                        raise RuntimeError("the handler was told to fail")
                    if r.body == b"bad":
                        raise InvalidInput("this request cannot be read")
            return requests

        def inference(self, requests):
            time.sleep(self.sleep_s)
            return requests

        def postprocess(self, requests, _):
            rows = sum(r.rows for r in requests)
            out = []
            for r in requests:
                if r.kind == "predict":
                    out.append({"echo": r.body.decode(), "batch_rows": rows,
                                "worker": threading.current_thread().name})
                else:
                    d = {"out_" + k: v for k, v in r.inputs.items()}
                    n = r.rows if self.context.config.max_batch_size else 1
                    d["batch_rows"] = np.full((n,), rows, dtype=np.int64)
                    out.append(d)
            return out
''')


def torch_linear_state(n_in=4, n_out=3, seed=0):
    torch.manual_seed(seed)
    lin = torch.nn.Linear(n_in, n_out)
    return {f"fc.{k}": v.detach().clone() for k, v in lin.state_dict().items()}


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def make_linear_archive(folder, name="lin", version="1", config=None, seed=0, example=True):
    """An archive of a Linear(4, 3) with torch-made weights; returns (path, torch state_dict)."""
    os.makedirs(folder, exist_ok=True)
    model = write(os.path.join(folder, f"model_{name}_{version}.py"), LINEAR_MODEL)
    state = torch_linear_state(seed=seed)
    weights = os.path.join(folder, f"w_{name}_{version}.pt")
    torch.save(state, weights)
    ex = None
    if example:
        ex = os.path.join(folder, f"ex_{name}_{version}.npz")
        np.savez(ex, np.random.default_rng(0).random((2, 4), dtype=np.float32))
    cfg = {"max_batch_size": 8, "max_batch_delay_ms": 2}
    cfg.update(config or {})
    path = create_archive(os.path.join(folder, f"{name}-{version}.emar"), name=name, version=version,
                          handler="tensor", model_file=model, model_class="Net", weights=weights,
                          example_input=ex, config=cfg)
    return path, state


def make_echo_archive(folder, name="echo", version="1", config=None):
    os.makedirs(folder, exist_ok=True)
    handler = write(os.path.join(folder, "echo_handler.py"), ECHO_HANDLER)
    return create_archive(os.path.join(folder, f"{name}-{version}.emar"), name=name, version=version,
                          handler="echo_handler:Echo", extra_files=[handler], config=config or {})


class ServerProcess:
    """``python -m ember_serve`` on 127.0.0.1 with free ports; ``urls`` from its first line."""

    def __init__(self, args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "ember_serve", "--port", "0", "--management-port", "0",
                                      "--metrics-port", "0", "--log-level", "warning", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.stderr_lines: list[str] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        line = self.proc.stdout.readline()
        if not line.startswith("ember-serve listening:"):
            self.proc.wait(10)
            raise RuntimeError(f"server did not start: {line!r}\n{''.join(self.stderr_lines)}")
        self.urls = dict(p.split("=", 1) for p in line.split(":", 1)[1].split())
        self.inference = self.urls["inference"]
        self.management = self.urls["management"]
        self.metrics = self.urls["metrics"]
        self.hostport = self.inference.split("//", 1)[1]

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def http(method, url, body=None, headers=None, timeout=30):
    """(status, headers (case-insensitive), body bytes) of a plain HTTP request (urllib: an independent client)."""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def http_json(method, url, body=None, headers=None, timeout=30):
    status, hdrs, raw = http(method, url, body, headers, timeout)
    return status, json.loads(raw) if raw else None


def wait_until(pred, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


@pytest.fixture
def tmp_store(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    return store


class TorchFashionCNN(torch.nn.Module):
    """The same layout as FASHION_MODEL, in torch: the oracle and the source of the weights."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.features = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"]
FASHION_MEAN, FASHION_STD = 0.2860, 0.3530


def make_fashion_archive(folder, handler="image_classifier", config=None, seed=0):
    """The demo's CNN with random torch weights; returns (archive path, torch model)."""
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(seed)
    tm = TorchFashionCNN().eval()
    weights = os.path.join(folder, "fashion.pt")
    torch.save(tm.state_dict(), weights)
    model = write(os.path.join(folder, "fashion.py"), FASHION_MODEL)
    index = write(os.path.join(folder, "index_to_name.json"),
                  json.dumps({str(i): c for i, c in enumerate(FASHION_CLASSES)}))
    cfg = {"max_batch_size": 16, "max_batch_delay_ms": 5,
           "handler_config": {"topk": 3, "preprocess": {"grayscale": True, "mean": [FASHION_MEAN],
                                                        "std": [FASHION_STD]}}}
    cfg.update(config or {})
    path = create_archive(os.path.join(folder, "fashion.emar"), name="fashion", version="1", handler=handler,
                          model_file=model, model_class="FashionCNN", weights=weights, extra_files=[index],
                          config=cfg, force=True)
    return path, tm


def png_bytes(pixels: np.ndarray) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG")
    return buf.getvalue()


def torch_fashion_topk(tm, pixels_list, k=3):
    """[{category: probability}] for grayscale uint8 images, computed with torch alone."""
    x = torch.stack([torch.from_numpy(p.astype(np.float32) / 255.0)[None] for p in pixels_list])
    x = (x - FASHION_MEAN) / FASHION_STD
    with torch.no_grad():
        probs = torch.softmax(tm(x), dim=1)
    values, indices = probs.topk(k, dim=1)
    return [{FASHION_CLASSES[int(j)]: float(v) for v, j in zip(vs, js)} for vs, js in zip(values, indices)], probs


@pytest.fixture(scope="session")
def main_server(tmp_path_factory):
    """One server for the protocol tests: lin versions 1 and 2, echo, fashion, a small-body model."""
    d = tmp_path_factory.mktemp("main")
    store = d / "store"
    lin1, state1 = make_linear_archive(store, version="1", seed=0)
    lin2, state2 = make_linear_archive(store, version="2", seed=1)
    echo = make_echo_archive(store)
    small = make_echo_archive(store, name="small", config={"max_request_bytes": 1024})
    fashion, tm = make_fashion_archive(d / "fashion")
    server = ServerProcess(["--model-store", str(store), "--models", f"lin={lin1}", f"lin={lin2}", f"echo={echo}",
                            f"small={small}", f"fashion={fashion}"])
    server.torch = {"lin1": state1, "lin2": state2, "fashion": tm}
    yield server
    server.stop()


def torch_linear(state):
    tl = torch.nn.Linear(4, 3)
    tl.load_state_dict({k[3:]: v for k, v in state.items()})
    return lambda x: tl(torch.from_numpy(np.asarray(x, dtype=np.float32))).detach().numpy()


@pytest.fixture(scope="session")
def text_archives(tmp_path_factory):
    from text_archives import make_text_archives
    return make_text_archives(tmp_path_factory.mktemp("text"))


@pytest.fixture(scope="session")
def text_server(text_archives):
    """A server of the text archives: cls (text_classifier), emb (sentence_embedder), gen
    (text_generation with a ChatML template) and plain (text_generation, no template)."""
    server = ServerProcess(["--models", *[f"{name}={path}" for name, (path, _) in text_archives.items()]])
    server.folders = {name: folder for name, (_, folder) in text_archives.items()}
    yield server
    server.stop()
