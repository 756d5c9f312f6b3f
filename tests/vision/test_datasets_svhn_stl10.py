"""SVHN (.mat written with scipy.io.savemat) and STL10 (its binary format) on small files."""

import hashlib

import numpy as np
import pytest
import scipy.io
from PIL import Image

from ember_vision import datasets


def _md5(path):
    return hashlib.md5(open(path, "rb").read()).hexdigest()


@pytest.mark.parametrize("label_dtype", [np.uint8, np.float64])
@pytest.mark.parametrize("split", ["train", "test", "extra"])
def test_svhn(tmp_path, monkeypatch, split, label_dtype):
    rng = np.random.default_rng(0)
    n = 6
    x = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)  # the files' [H, W, C, N]
    y = np.array([[10], [1], [5], [10], [9], [3]], dtype=label_dtype)
    url, filename, _ = datasets.SVHN.split_list[split]
    scipy.io.savemat(tmp_path / filename, {"X": x, "y": y})
    monkeypatch.setitem(datasets.SVHN.split_list, split, [url, filename, _md5(tmp_path / filename)])
    ds = datasets.SVHN(tmp_path, split=split)
    assert len(ds) == n and ds.data.shape == (n, 3, 32, 32) and ds.data.dtype == np.uint8
    np.testing.assert_array_equal(ds.data, x.transpose(3, 2, 0, 1))
    assert ds.labels.dtype == np.int64
    np.testing.assert_array_equal(ds.labels, [0, 1, 5, 0, 9, 3])  # label 10 stands for digit 0
    img, target = ds[4]
    assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (32, 32)
    np.testing.assert_array_equal(np.asarray(img), x[:, :, :, 4])
    assert target == 9 and isinstance(target, int)
    assert f"Split: {split}" in repr(ds)


def test_svhn_errors(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        datasets.SVHN(tmp_path, split="val")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.SVHN(tmp_path)
    scipy.io.savemat(tmp_path / "train_32x32.mat", {"X": np.zeros((32, 32, 3, 1), np.uint8), "y": [[1]]})
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):  # md5 differs from the real file's
        datasets.SVHN(tmp_path)


FOLDS = ["0 2", "1 3", "3", "0 1 2 3", "2", "1", "0", "3 2", "1 0", "2 3 0"]


@pytest.fixture
def stl_root(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    folder = tmp_path / "stl10_binary"
    folder.mkdir()
    arrays = {}
    for name, n in (("train", 4), ("test", 3), ("unlabeled", 2)):
        images = rng.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8)
        # the files store each channel column-major
        (folder / f"{name}_X.bin").write_bytes(images.transpose(0, 1, 3, 2).tobytes())
        labels = rng.integers(1, 11, n, dtype=np.uint8)
        if name != "unlabeled":
            (folder / f"{name}_y.bin").write_bytes(labels.tobytes())
        arrays[name] = images, labels.astype(np.int64) - 1
    (folder / "fold_indices.txt").write_text("\n".join(FOLDS) + "\n")
    names = ["airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"]
    (folder / "class_names.txt").write_text("\n".join(names) + "\n")
    cls = datasets.STL10
    monkeypatch.setattr(cls, "train_list", [[n, _md5(folder / n)] for n, _ in cls.train_list])
    monkeypatch.setattr(cls, "test_list", [[n, _md5(folder / n)] for n, _ in cls.test_list])
    return tmp_path, arrays, names


@pytest.mark.parametrize("split", ["train", "test", "unlabeled", "train+unlabeled"])
def test_stl10_splits(stl_root, split):
    root, arrays, names = stl_root
    if split == "train+unlabeled":
        images = np.concatenate([arrays["train"][0], arrays["unlabeled"][0]])
        labels = np.concatenate([arrays["train"][1], [-1, -1]])
    elif split == "unlabeled":
        images, labels = arrays["unlabeled"][0], np.array([-1, -1])
    else:
        images, labels = arrays[split]
    ds = datasets.STL10(root, split=split)
    assert len(ds) == len(images) and ds.data.dtype == np.uint8
    assert ds.labels.dtype == (np.uint8 if split in ("train", "test") else np.int64)
    np.testing.assert_array_equal(ds.data, images)
    np.testing.assert_array_equal(ds.labels, labels)
    for i in (0, len(ds) - 1):
        img, target = ds[i]
        assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (96, 96)
        np.testing.assert_array_equal(np.asarray(img), images[i].transpose(1, 2, 0))
        assert target == labels[i] and isinstance(target, int)
    assert ds.classes == names
    assert f"Split: {split}" in repr(ds)


@pytest.mark.parametrize("fold", range(10))
def test_stl10_folds(stl_root, fold):
    root, arrays, _ = stl_root
    index = [int(v) for v in FOLDS[fold].split()]
    ds = datasets.STL10(root, split="train", folds=fold)
    np.testing.assert_array_equal(ds.data, arrays["train"][0][index])
    np.testing.assert_array_equal(ds.labels, arrays["train"][1][index])
    both = datasets.STL10(root, split="train+unlabeled", folds=fold)
    assert len(both) == len(index) + 2
    np.testing.assert_array_equal(both.labels[: len(index)], arrays["train"][1][index])


def test_stl10_errors(stl_root, tmp_path):
    root, _, _ = stl_root
    with pytest.raises(ValueError, match=r"folds should be in the range \[0, 10\), but got 10"):
        datasets.STL10(root, folds=10)
    with pytest.raises(ValueError, match="Expected type None or int for argument folds"):
        datasets.STL10(root, folds="1")
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        datasets.STL10(root, split="val")
    with open(root / "stl10_binary" / "test_y.bin", "ab") as f:
        f.write(b"\x01")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        datasets.STL10(root, split="test")
