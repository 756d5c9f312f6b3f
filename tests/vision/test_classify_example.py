"""examples/vision/classify.py: run as a program on a small image with local weights files
(ember's zip checkpoint and safetensors), and its errors."""

from __future__ import annotations

import gzip
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import ember
from ember_vision import models

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "vision", "classify.py")
_spec = importlib.util.spec_from_file_location("classify_example", SCRIPT)
classify = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(classify)

LINE = re.compile(r"^([^\t\n]+)\t(0\.\d{6}|1\.000000)$")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A 48x40 image, a randomly initialised mobilenet_v3_small saved two ways, and the
    probabilities the model gives that image (computed here, in-process)."""
    d = tmp_path_factory.mktemp("classify")
    rng = np.random.default_rng(0)
    image = d / "small.png"
    Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(image)
    ember.manual_seed(0)
    model = models.mobilenet_v3_small().eval()
    zip_file = d / "mnv3s.pth"
    ember.save(model.state_dict(), zip_file)
    st_file = d / "mnv3s.safetensors"
    from safetensors.numpy import save_file
    save_file({k: v.numpy() for k, v in model.state_dict().items()}, str(st_file))
    weights = models.MobileNet_V3_Small_Weights.DEFAULT
    with Image.open(image) as img:
        x = weights.transforms()(img.convert("RGB")).unsqueeze(0)
    with ember.no_grad():
        probs = ember.softmax(model(x), dim=1)[0].numpy()
    return image, zip_file, st_file, probs, weights.meta["categories"]


def _check_output(stdout: str, k: int, probs, categories):
    lines = stdout.splitlines()
    assert len(lines) == k
    order = np.argsort(-probs, kind="stable")[:k]
    for line, idx in zip(lines, order):
        m = LINE.match(line)
        assert m, repr(line)
        assert m.group(1) == categories[idx]
        assert abs(float(m.group(2)) - probs[idx]) <= 1e-6


def test_runs_as_a_program_with_an_ember_checkpoint(setup):
    image, zip_file, _, probs, categories = setup
    done = subprocess.run([sys.executable, SCRIPT, str(image), "--model", "mobilenet_v3_small", "--weights",
                           str(zip_file), "--topk", "3"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    _check_output(done.stdout, 3, probs, categories)


def test_reads_safetensors_weights(setup, capsys):
    image, _, st_file, probs, categories = setup
    assert classify.main([str(image), "--model", "mobilenet_v3_small", "--weights", str(st_file)]) == 0
    _check_output(capsys.readouterr().out, 5, probs, categories)


def test_fashion_resnet_classifies_a_colour_image(tmp_path, capsys):
    # a real Fashion-MNIST test image saved as an RGB PNG: the model's preset makes it grayscale
    from ember_vision.models import fashion_mnist
    debian_copy = "/usr/share/datasets/fashion-mnist"
    with gzip.open(os.path.join(debian_copy, "t10k-images-idx3-ubyte.gz"), "rb") as fh:
        fh.seek(16)  # the IDX header
        pixels = np.frombuffer(fh.read(28 * 28), dtype=np.uint8).reshape(28, 28)
    with gzip.open(os.path.join(debian_copy, "t10k-labels-idx1-ubyte.gz"), "rb") as fh:
        fh.seek(8)
        label = fh.read(1)[0]
    image = tmp_path / "item.png"
    Image.fromarray(np.stack([pixels] * 3, axis=-1)).save(image)
    weights = fashion_mnist.FashionResNet_Weights.DEFAULT
    model = fashion_mnist.fashion_resnet(weights=weights).eval()
    with ember.no_grad():
        probs = ember.softmax(model(weights.transforms()(Image.fromarray(pixels)).unsqueeze(0)), dim=1)[0].numpy()
    assert int(np.argmax(probs)) == label  # the first test image, an ankle boot, is an easy one
    assert classify.main([str(image), "--model", "fashion_resnet", "--topk", "3"]) == 0
    _check_output(capsys.readouterr().out, 3, probs, weights.meta["categories"])


def test_default_weights_unavailable_is_one_line_error(setup, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")
    monkeypatch.setenv("EMBER_HOME", str(tmp_path))
    assert classify.main([str(setup[0]), "--model", "mobilenet_v3_small"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "cannot load the default weights of mobilenet_v3_small" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("case,message", [
    ("unknown_model", "unknown model 'no_such_net'"),
    ("missing_image", "image file not found"),
    ("missing_weights", "weights file not found"),
    ("not_an_image", "cannot read image"),
    ("wrong_weights", "does not fit"),
])
def test_errors_go_to_stderr_with_nonzero_exit(setup, tmp_path, capsys, case, message):
    image, zip_file, *_ = setup
    args = [str(image), "--model", "mobilenet_v3_small", "--weights", str(zip_file)]
    if case == "unknown_model":
        args[2] = "no_such_net"
    elif case == "missing_image":
        args[0] = str(tmp_path / "absent.jpg")
    elif case == "missing_weights":
        args[4] = str(tmp_path / "absent.pth")
    elif case == "not_an_image":
        (tmp_path / "text.jpg").write_text("not an image")
        args[0] = str(tmp_path / "text.jpg")
    else:
        args[2] = "mobilenet_v2"
    assert classify.main(args) == 1
    out, err = capsys.readouterr()
    assert out == "" and message in err
