"""``download=True`` of each dataset against a loopback mirror serving small files in the
real archive layouts (no network)."""

import functools
import gzip
import hashlib
import http.server
import io
import lzma
import pickle
import tarfile
import threading
import zipfile

import numpy as np
import pytest
import scipy.io

from ember_vision import datasets
from ember_vision.datasets.idx import write_idx


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def mirror(tmp_path):
    folder = tmp_path / "mirror"
    folder.mkdir()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=folder))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{srv.server_address[1]}/"
    srv.shutdown()
    srv.server_close()


def _md5(data):
    return hashlib.md5(data).hexdigest()


def _tar_gz(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_cifar10_download(tmp_path, mirror, monkeypatch):
    folder, url = mirror
    rng = np.random.default_rng(0)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    batches = {n: pickle.dumps({"labels": [i % 10], "data": rng.integers(0, 256, (1, 3072), dtype=np.uint8)})
               for i, n in enumerate(names)}
    batches["batches.meta"] = pickle.dumps({"label_names": [str(i) for i in range(10)]})
    archive = _tar_gz({"cifar-10-batches-py/" + n: d for n, d in batches.items()})
    (folder / "c10.tar.gz").write_bytes(archive)
    cls = datasets.CIFAR10
    monkeypatch.setattr(cls, "url", url + "c10.tar.gz")
    monkeypatch.setattr(cls, "tgz_md5", _md5(archive))
    monkeypatch.setattr(cls, "train_list", [[n, _md5(batches[n])] for n in names[:5]])
    monkeypatch.setattr(cls, "test_list", [["test_batch", _md5(batches["test_batch"])]])
    monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": _md5(batches["batches.meta"])})
    ds = cls(tmp_path / "root", train=True, download=True)
    assert len(ds) == 5 and ds.targets == [0, 1, 2, 3, 4]
    assert (tmp_path / "root" / cls.filename).exists()


def test_emnist_download(tmp_path, mirror, monkeypatch):
    folder, url = mirror
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (3, 28, 28), dtype=np.uint8)
    labels = np.array([1, 2, 3], dtype=np.uint8)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for part in ("train", "test"):
            for kind, arr in (("images-idx3", images), ("labels-idx1", labels)):
                write_idx(tmp_path / "plain-idx", arr)
                zf.writestr(f"gzip/emnist-letters-{part}-{kind}-ubyte.gz",
                            gzip.compress((tmp_path / "plain-idx").read_bytes()))
    (folder / "gzip.zip").write_bytes(buf.getvalue())
    monkeypatch.setattr(datasets.EMNIST, "url", url + "gzip.zip")
    monkeypatch.setattr(datasets.EMNIST, "md5", _md5(buf.getvalue()))
    ds = datasets.EMNIST(tmp_path / "root", split="letters", train=False, download=True)
    np.testing.assert_array_equal(ds.data.numpy(), images)
    assert ds.targets.tolist() == [1, 2, 3] and ds.classes[1] == "a"
    assert not (tmp_path / "root" / "EMNIST" / "raw" / "gzip").exists()


def test_qmnist_download_keeps_xz(tmp_path, mirror, monkeypatch):
    folder, url = mirror
    images = np.arange(2 * 28 * 28, dtype=np.int64).reshape(2, 28, 28).astype(np.uint8)
    targets = np.arange(16, dtype=np.int32).reshape(2, 8)
    blobs = {}
    for name, arr in (("xnist-images-idx3-ubyte", images), ("xnist-labels-idx2-int", targets)):
        write_idx(tmp_path / name, arr)
        blobs[name + ".xz"] = lzma.compress((tmp_path / name).read_bytes())
        (folder / (name + ".xz")).write_bytes(blobs[name + ".xz"])
    monkeypatch.setitem(datasets.QMNIST.resources, "nist", [(url + n, _md5(d)) for n, d in blobs.items()])
    ds = datasets.QMNIST(tmp_path / "root", what="nist", download=True)
    np.testing.assert_array_equal(ds.data.numpy(), images)
    np.testing.assert_array_equal(ds.targets.numpy(), targets)
    assert ds[1][1] == 8


def test_svhn_and_stl10_download(tmp_path, mirror, monkeypatch):
    folder, url = mirror
    scipy.io.savemat(folder / "test_32x32.mat", {"X": np.full((32, 32, 3, 2), 7, np.uint8), "y": [[10], [4]]})
    data = (folder / "test_32x32.mat").read_bytes()
    monkeypatch.setitem(datasets.SVHN.split_list, "test", [url + "test_32x32.mat", "test_32x32.mat", _md5(data)])
    ds = datasets.SVHN(tmp_path / "svhn", split="test", download=True)
    assert ds.labels.tolist() == [0, 4]

    images = np.random.default_rng(2).integers(0, 256, (1, 3, 96, 96), dtype=np.uint8)
    files = {"train_X.bin": images.transpose(0, 1, 3, 2).tobytes(), "train_y.bin": bytes([3]),
             "unlabeled_X.bin": images.tobytes(), "test_X.bin": images.tobytes(), "test_y.bin": bytes([10])}
    archive = _tar_gz({"stl10_binary/" + n: d for n, d in files.items()})
    (folder / "stl.tar.gz").write_bytes(archive)
    cls = datasets.STL10
    monkeypatch.setattr(cls, "url", url + "stl.tar.gz")
    monkeypatch.setattr(cls, "tgz_md5", _md5(archive))
    monkeypatch.setattr(cls, "train_list", [[n, _md5(files[n])] for n, _ in cls.train_list])
    monkeypatch.setattr(cls, "test_list", [[n, _md5(files[n])] for n, _ in cls.test_list])
    ds = cls(tmp_path / "stl", split="train", download=True)
    np.testing.assert_array_equal(ds.data, images)
    assert ds.labels.tolist() == [2]


def test_bad_archive_checksum_fails_download(tmp_path, mirror, monkeypatch):
    folder, url = mirror
    (folder / "c10.tar.gz").write_bytes(_tar_gz({"x": b"y"}))
    monkeypatch.setattr(datasets.CIFAR10, "url", url + "c10.tar.gz")
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        datasets.CIFAR10(tmp_path / "root", download=True)  # the real archive's md5 differs
    assert [p.name for p in (tmp_path / "root").iterdir()] == []
