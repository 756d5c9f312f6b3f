"""CIFAR10 / CIFAR100 on small batch files pickled here with the real files' structure,
and the data-only unpickler that reads them."""

import hashlib
import os
import pickle

import numpy as np
import pytest
from PIL import Image

from ember_vision import datasets
from ember_vision.datasets._safe_pickle import load_data_pickle

CIFAR10_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def _md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


def _dump(path, obj, protocol):
    data = pickle.dumps(obj, protocol=protocol)
    if protocol == 2:
        # the real files come from numpy 1 under Python 2 and name numpy.core
        data = data.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    path.write_bytes(data)


def _write_cifar10(root, rng, protocol, n=(4, 3, 2, 3, 2), n_test=5):
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    batches = {}
    for i, k in enumerate(n, 1):
        batches[f"data_batch_{i}"] = {"batch_label": f"training batch {i} of 5",
                                      "labels": [int(v) for v in rng.integers(0, 10, k)],
                                      "data": rng.integers(0, 256, (k, 3072), dtype=np.uint8),
                                      "filenames": [f"img_{i}_{j}.png" for j in range(k)]}
    batches["test_batch"] = {"batch_label": "testing batch 1 of 1",
                             "labels": [int(v) for v in rng.integers(0, 10, n_test)],
                             "data": rng.integers(0, 256, (n_test, 3072), dtype=np.uint8),
                             "filenames": [f"t_{j}.png" for j in range(n_test)]}
    for name, batch in batches.items():
        _dump(folder / name, batch, protocol)
    _dump(folder / "batches.meta", {"num_cases_per_batch": 10000, "label_names": CIFAR10_NAMES, "num_vis": 3072},
          protocol)
    return folder, batches


def _patch_md5s(monkeypatch, cls, folder):
    monkeypatch.setattr(cls, "train_list", [[n, _md5(folder / n)] for n, _ in cls.train_list])
    monkeypatch.setattr(cls, "test_list", [[n, _md5(folder / n)] for n, _ in cls.test_list])
    monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": _md5(folder / cls.meta["filename"])})


def _hwc(rows):
    return rows.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_cifar10(tmp_path, monkeypatch, protocol):
    folder, batches = _write_cifar10(tmp_path, np.random.default_rng(protocol), protocol)
    _patch_md5s(monkeypatch, datasets.CIFAR10, folder)
    train = datasets.CIFAR10(tmp_path, train=True)
    rows = np.concatenate([batches[f"data_batch_{i}"]["data"] for i in range(1, 6)])
    labels = sum((batches[f"data_batch_{i}"]["labels"] for i in range(1, 6)), [])
    assert len(train) == 14 and train.data.shape == (14, 32, 32, 3) and train.data.dtype == np.uint8
    np.testing.assert_array_equal(train.data, _hwc(rows))
    assert train.targets == labels
    img, y = train[9]
    assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (32, 32)
    # pixel (r, c) of channel k is byte k*1024 + r*32 + c of the row
    np.testing.assert_array_equal(np.asarray(img)[4, 7], rows[9][[0 * 1024 + 4 * 32 + 7, 1024 + 135, 2048 + 135]])
    assert y == labels[9] and isinstance(y, int)
    assert train.classes == CIFAR10_NAMES and train.class_to_idx["truck"] == 9

    test = datasets.CIFAR10(tmp_path, train=False, target_transform=lambda t: t + 100)
    np.testing.assert_array_equal(test.data, _hwc(batches["test_batch"]["data"]))
    assert test[4][1] == batches["test_batch"]["labels"][4] + 100
    assert repr(test).splitlines()[:4] == ["Dataset CIFAR10", "    Number of datapoints: 5",
                                           f"    Root location: {tmp_path}", "    Split: Test"]


def test_cifar100(tmp_path, monkeypatch):
    rng = np.random.default_rng(7)
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    fine = [f"fine_{i}" for i in range(100)]
    splits = {}
    for name, n in (("train", 6), ("test", 4)):
        splits[name] = {"filenames": [f"{name}{j}.png" for j in range(n)], "batch_label": name,
                        "fine_labels": [int(v) for v in rng.integers(0, 100, n)],
                        "coarse_labels": [int(v) for v in rng.integers(0, 20, n)],
                        "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8)}
        _dump(folder / name, splits[name], 4)
    _dump(folder / "meta", {"fine_label_names": fine, "coarse_label_names": [f"c{i}" for i in range(20)]}, 4)
    _patch_md5s(monkeypatch, datasets.CIFAR100, folder)
    for train, name in ((True, "train"), (False, "test")):
        ds = datasets.CIFAR100(tmp_path, train=train)
        np.testing.assert_array_equal(ds.data, _hwc(splits[name]["data"]))
        assert ds.targets == splits[name]["fine_labels"]
    assert ds.classes == fine and ds.class_to_idx["fine_42"] == 42


def test_integrity_errors(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.CIFAR10(tmp_path)
    folder, _ = _write_cifar10(tmp_path, np.random.default_rng(0), 4)
    _patch_md5s(monkeypatch, datasets.CIFAR10, folder)
    with open(folder / "data_batch_3", "ab") as f:
        f.write(b"tampered")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.CIFAR10(tmp_path)
    _patch_md5s(monkeypatch, datasets.CIFAR10, folder)
    monkeypatch.setattr(datasets.CIFAR10, "meta", {**datasets.CIFAR10.meta, "md5": "0" * 32})
    with pytest.raises(RuntimeError, match="metadata file not found or corrupted"):
        datasets.CIFAR10(tmp_path)


class _Payload:
    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (os.mkdir, (self.target,))


@pytest.mark.parametrize("protocol", [0, 2, 5])
def test_code_in_a_pickle_is_refused(tmp_path, protocol):
    marker = tmp_path / "ran"
    bad = tmp_path / "data_batch_1"
    bad.write_bytes(pickle.dumps({"data": np.zeros((1, 3072), np.uint8), "labels": [_Payload(str(marker))]},
                                 protocol=protocol))
    with pytest.raises(pickle.UnpicklingError, match=r"refusing to load (posix|os)\.mkdir"):
        load_data_pickle(bad)
    assert not marker.exists()


def test_other_numpy_names_are_refused(tmp_path):
    bad = tmp_path / "p"
    bad.write_bytes(b"cnumpy\nload\n(S'x'\ntR.")  # numpy.load is not a reconstructor
    with pytest.raises(pickle.UnpicklingError, match="refusing to load numpy.load"):
        load_data_pickle(bad)
    bad.write_bytes(b"\x80\x02}q\x00")  # cut before its STOP opcode
    with pytest.raises(pickle.UnpicklingError, match="not a valid data pickle"):
        load_data_pickle(bad)


def test_plain_data_round_trips(tmp_path):
    obj = {"a": [1, 2.5, "s", b"b", (3, None, True)], "arr": np.arange(6, dtype=np.float32).reshape(2, 3),
           "scalar": np.int64(7)}
    for protocol in (2, 4, 5):
        (tmp_path / "p").write_bytes(pickle.dumps(obj, protocol=protocol))
        out = load_data_pickle(tmp_path / "p")
        assert out["a"] == obj["a"] and out["scalar"] == 7
        np.testing.assert_array_equal(out["arr"], obj["arr"])
        assert out["arr"].dtype == np.float32
