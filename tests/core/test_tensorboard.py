"""SummaryWriter: what it writes, read back with TensorBoard's own event reader and from a
real ``tensorboard`` server on loopback, compared with what torch's SummaryWriter writes."""

import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import matplotlib
import numpy as np
import pytest
import torch
import torch.utils.tensorboard
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import ember
from ember.utils.tensorboard import SummaryWriter

matplotlib.use("Agg")

RNG = np.random.default_rng(0)
VALUES = RNG.standard_normal(2000).astype(np.float32)
IMAGE = RNG.random((3, 10, 12)).astype(np.float32)
IMAGES = (RNG.random((11, 1, 6, 5)) * 255).astype(np.uint8)


def _figure():
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(2, 1.5), dpi=50)
    plt.plot([0, 1, 2], [1, 0, 1])
    return fig


def _log(lib, writer_cls, log_dir):
    as_tensor = (lambda a: torch.from_numpy(a.copy())) if lib is torch else (lambda a: ember.tensor(a))
    with writer_cls(log_dir) as w:
        for step in range(4):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_scalar("acc", as_tensor(np.array(step / 4, dtype=np.float32)), step)
        w.add_scalars("lr", {"group0": 0.1, "group1": 0.01}, 0)
        w.add_histogram("weights", as_tensor(VALUES), 0)
        w.add_histogram("weights_auto", as_tensor(VALUES), 1, bins="auto", max_bins=7)
        w.add_image("image", as_tensor(IMAGE), 0)
        w.add_image("image_hwc", as_tensor(IMAGE.transpose(1, 2, 0)), 0, dataformats="HWC")
        w.add_images("batch", as_tensor(IMAGES), 0)
        w.add_figure("figure", _figure(), 0)
        w.add_text("note", "**ember** wrote this", 2)


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tb")
    _log(torch, torch.utils.tensorboard.SummaryWriter, str(root / "torch"))
    _log(ember, SummaryWriter, str(root / "ember"))
    readers = {}
    for name in ("torch", "ember"):
        reader = EventAccumulator(str(root / name), size_guidance={"images": 0, "histograms": 0, "tensors": 0})
        reader.Reload()
        readers[name] = reader
    return root, readers


def test_same_tags_and_runs(logs):
    root, r = logs
    assert r["ember"].Tags() == r["torch"].Tags()
    runs = {name: sorted(d for d in os.listdir(root / name) if os.path.isdir(root / name / d))
            for name in ("torch", "ember")}
    assert runs["ember"] == runs["torch"] == ["lr_group0", "lr_group1"]


def test_scalars(logs):
    _, r = logs
    for tag in ("loss", "acc"):
        ours, theirs = r["ember"].Scalars(tag), r["torch"].Scalars(tag)
        assert [(e.step, e.value) for e in ours] == [(e.step, e.value) for e in theirs]
    sub = EventAccumulator(str(logs[0] / "ember" / "lr_group1"))
    sub.Reload()
    assert [(e.step, pytest.approx(e.value)) for e in sub.Scalars("lr")] == [(0, 0.01)]


def test_histogram_protos(logs):
    _, r = logs
    for tag in ("weights", "weights_auto"):
        (ours,), (theirs,) = r["ember"].Histograms(tag), r["torch"].Histograms(tag)
        assert ours.step == theirs.step
        a, b = ours.histogram_value, theirs.histogram_value
        assert (a.min, a.max, a.num) == (b.min, b.max, b.num)
        assert a.sum == pytest.approx(b.sum, rel=1e-9) and a.sum_squares == pytest.approx(b.sum_squares, rel=1e-9)
        assert list(a.bucket_limit) == pytest.approx(list(b.bucket_limit), rel=1e-12)
        assert list(a.bucket) == list(b.bucket)
        assert sum(a.bucket) == len(VALUES)


def _pixels(event):
    return np.asarray(Image.open(io.BytesIO(event.encoded_image_string)))


def test_images(logs):
    _, r = logs
    for tag in ("image", "image_hwc", "batch", "figure"):
        (ours,), (theirs,) = r["ember"].Images(tag), r["torch"].Images(tag)
        assert (ours.width, ours.height) == (theirs.width, theirs.height)
        if tag != "figure":  # a figure's pixels depend on the font cache; its size does not
            np.testing.assert_array_equal(_pixels(ours), _pixels(theirs))
    (batch,) = r["ember"].Images("batch")
    assert (batch.height, batch.width) == (6 * 2, 5 * 8)  # 11 images, 8 to a row


def test_text(logs):
    _, r = logs
    (ours,), (theirs,) = r["ember"].Tensors("note/text_summary"), r["torch"].Tensors("note/text_summary")
    assert ours.step == theirs.step == 2
    assert ours.tensor_proto.string_val == theirs.tensor_proto.string_val == [b"**ember** wrote this"]
    assert r["ember"].SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"


def test_errors_as_torchs(tmp_path):
    for writer_cls, lib in ((torch.utils.tensorboard.SummaryWriter, torch), (SummaryWriter, ember)):
        with writer_cls(str(tmp_path / lib.__name__)) as w:
            with pytest.raises(AssertionError, match="Tensor should contain one element"):
                w.add_scalar("bad", lib.ones(2), 0)
            with pytest.raises(ValueError, match="The input has no element"):
                w.add_histogram("empty", lib.ones(0), 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_tensorboard_server_serves_the_scalars(logs):
    root, _ = logs
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(root / "ember"),
                               "--host", "127.0.0.1", "--port", str(port), "--load_fast", "false"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/data/plugin/scalars/scalars?run=.&tag=loss"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    points = json.loads(response.read())
                if points:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "tensorboard did not serve the scalars in 90 s"
            assert server.poll() is None, "tensorboard exited"
            time.sleep(0.5)
        assert [(step, pytest.approx(value)) for _, step, value in points] == [(s, 1.0 / (s + 1)) for s in range(4)]
    finally:
        server.terminate()
        server.wait(timeout=30)
