"""The main job end to end: examples/fashion_mnist.py trains, saves, reloads; PyTorch opens
what it saved and, running the same architecture on those weights, predicts the same."""

import importlib.util
import os
import pathlib
import re

import numpy as np
import pytest
import torch

from ember_vision.datasets.idx import write_idx

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEBIAN_COPY = "/usr/share/datasets/fashion-mnist"


def _load_demo():
    spec = importlib.util.spec_from_file_location("fashion_mnist_demo", ROOT / "examples" / "fashion_mnist.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _torch_twin():
    """The demo's FashionCNN written in PyTorch (same layer order, so the same state_dict keys)."""
    nn = torch.nn
    model = nn.Module()
    model.features = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                   nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
    model.classifier = nn.Sequential(nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    model.forward = lambda x: model.classifier(model.features(x))
    return model


def _write_fake_fashion(folder, rng, n_train=320, n_test=100):
    """Images whose class is written in their brightness, so a few batches learn it."""
    folder.mkdir(parents=True)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = (rng.integers(0, 40, (n, 28, 28)) + labels[:, None, None] * 20).astype(np.uint8)
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels)


def test_demo_runs_on_generated_idx_files(tmp_path, capsys):
    source = tmp_path / "source"
    _write_fake_fashion(source, np.random.default_rng(0))
    out = tmp_path / "weights.pt"
    demo = _load_demo()
    accuracy = demo.main(["--data-dir", str(tmp_path / "data"), "--source-dir", str(source), "--epochs", "3",
                          "--batch-size", "32", "--out", str(out)])
    text = capsys.readouterr().out
    assert re.search(r"^test accuracy: \d+\.\d\d%$", text, re.M)
    assert f"reloaded from {out}: test accuracy: {accuracy:.2f}%" in text
    assert accuracy > 50.0  # chance is 10%; the brightness code is easy to learn
    assert (tmp_path / "data" / "FashionMNIST" / "raw" / "t10k-labels-idx1-ubyte.gz").exists()


def test_demo_on_real_fashion_mnist_slice(tmp_path, capsys):
    if not os.path.isdir(DEBIAN_COPY):
        pytest.skip(f"{DEBIAN_COPY} missing: install the Debian package dataset-fashion-mnist")
    out = tmp_path / "weights.pt"
    demo = _load_demo()
    accuracy = demo.main(["--data-dir", str(tmp_path / "data"), "--source-dir", DEBIAN_COPY, "--epochs", "1",
                          "--limit-batches", "60", "--out", str(out)])
    assert accuracy > 60.0  # 60 batches of Adam reach about 75%; chance is 10%

    # PyTorch opens the checkpoint and, with the same architecture, gives the same logits
    state = torch.load(out, weights_only=True)
    twin = _torch_twin()
    twin.load_state_dict(state)
    twin.eval()
    images = np.random.default_rng(1).random((8, 1, 28, 28), dtype=np.float32)
    import ember
    model = demo.FashionCNN()
    model.load_state_dict(ember.load(out))
    model.eval()
    with torch.no_grad(), ember.no_grad():
        ref = twin(torch.from_numpy(images)).numpy()
        got = model(ember.from_numpy(images)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
