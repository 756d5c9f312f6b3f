"""MNIST / FashionMNIST on small IDX files written here in the real format."""

import functools
import gzip
import hashlib
import http.server
import os
import threading

import numpy as np
import pytest
from PIL import Image

import ember
from ember_vision import datasets, transforms
from ember_vision.datasets.idx import read_idx, write_idx

NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _write_split(raw, rng, n_train=7, n_test=5, gz=True):
    os.makedirs(raw, exist_ok=True)
    arrays = {
        NAMES[0]: rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        NAMES[1]: rng.integers(0, 10, n_train, dtype=np.uint8),
        NAMES[2]: rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        NAMES[3]: rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    for name, arr in arrays.items():
        write_idx(os.path.join(raw, name + (".gz" if gz else "")), arr)
    return arrays


@pytest.mark.parametrize("cls", [datasets.MNIST, datasets.FashionMNIST])
@pytest.mark.parametrize("gz", [True, False])
def test_reads_both_splits(tmp_path, cls, gz):
    arrays = _write_split(tmp_path / cls.__name__ / "raw", np.random.default_rng(0), gz=gz)
    train = cls(tmp_path, train=True)
    test = cls(tmp_path, train=False)
    assert len(train) == 7 and len(test) == 5
    assert train.data.dtype is ember.uint8 and tuple(train.data.shape) == (7, 28, 28)
    assert train.targets.dtype is ember.int64
    np.testing.assert_array_equal(train.data.numpy(), arrays[NAMES[0]])
    np.testing.assert_array_equal(test.targets.numpy(), arrays[NAMES[3]].astype(np.int64))
    img, label = test[3]
    assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
    np.testing.assert_array_equal(np.asarray(img), arrays[NAMES[2]][3])
    assert label == int(arrays[NAMES[3]][3]) and isinstance(label, int)


def test_transforms_applied(tmp_path):
    arrays = _write_split(tmp_path / "FashionMNIST" / "raw", np.random.default_rng(1))
    ds = datasets.FashionMNIST(tmp_path, transform=transforms.Compose([transforms.ToTensor(),
                                                                       transforms.Normalize((0.5,), (0.25,))]),
                               target_transform=lambda y: y + 100)
    x, y = ds[2]
    expected = (arrays[NAMES[0]][2].astype(np.float32) / 255 - 0.5) / 0.25
    assert tuple(x.shape) == (1, 28, 28) and x.dtype is ember.float32
    np.testing.assert_allclose(x.numpy()[0], expected, rtol=1e-6, atol=1e-6)
    assert y == int(arrays[NAMES[1]][2]) + 100
    assert ds.classes[9] == "Ankle boot" and "Split: Train" in repr(ds)


def test_missing_files_name_the_folder(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.MNIST(tmp_path)


def test_truncated_file_raises_naming_it(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    _write_split(raw, np.random.default_rng(2), gz=False)
    path = raw / NAMES[0]
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(RuntimeError, match=str(path).replace("\\", "\\\\")):
        datasets.MNIST(tmp_path)


def test_bad_magic_raises(tmp_path):
    bad = tmp_path / "x-idx1-ubyte"
    bad.write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(RuntimeError, match="not an IDX file"):
        read_idx(bad)


def test_corrupt_gzip_raises(tmp_path):
    bad = tmp_path / "x-idx1-ubyte.gz"
    data = gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x05abcde")
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="x-idx1-ubyte.gz"):
        read_idx(bad)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.float32, np.float64])
def test_idx_round_trip(tmp_path, dtype):
    arr = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    write_idx(tmp_path / "a.gz", arr)
    out = read_idx(tmp_path / "a.gz")
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, arr)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path):
    """An HTTP server on loopback serving a folder: a dataset mirror without the network."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=folder))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _md5(path):
    return hashlib.md5(path.read_bytes()).hexdigest()


def test_download_checks_md5_and_leaves_no_partial_file(tmp_path, mirror, monkeypatch):
    folder, url = mirror
    arrays = _write_split(folder, np.random.default_rng(3))
    resources = [(n + ".gz", _md5(folder / (n + ".gz"))) for n in NAMES]
    monkeypatch.setattr(datasets.FashionMNIST, "mirrors", ["http://127.0.0.1:9/", url])  # first mirror refuses
    monkeypatch.setattr(datasets.FashionMNIST, "resources", resources)
    root = tmp_path / "root"
    ds = datasets.FashionMNIST(root, train=False, download=True)
    np.testing.assert_array_equal(ds.data.numpy(), arrays[NAMES[2]])
    raw = root / "FashionMNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted(n + ".gz" for n in NAMES)

    # a corrupted mirror: the checksum fails and nothing is left behind
    bad_root = tmp_path / "bad"
    (folder / (NAMES[0] + ".gz")).write_bytes(b"garbage")
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        datasets.FashionMNIST(bad_root, download=True)
    assert NAMES[0] + ".gz" not in os.listdir(bad_root / "FashionMNIST" / "raw")
    assert not [f for f in os.listdir(bad_root / "FashionMNIST" / "raw") if f.endswith(".part")]
