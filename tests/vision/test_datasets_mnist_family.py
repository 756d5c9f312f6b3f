"""KMNIST, EMNIST and QMNIST on small IDX files written here in their real formats."""

import string

import numpy as np
import pytest
from PIL import Image

import ember
from ember_vision import datasets
from ember_vision.datasets.idx import write_idx


def _images(rng, n):
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)


def test_kmnist(tmp_path):
    rng = np.random.default_rng(0)
    raw = tmp_path / "KMNIST" / "raw"
    raw.mkdir(parents=True)
    arrays = {}
    for prefix, n in (("train", 6), ("t10k", 4)):
        arrays[prefix] = (_images(rng, n), rng.integers(0, 10, n, dtype=np.uint8))
        write_idx(raw / f"{prefix}-images-idx3-ubyte.gz", arrays[prefix][0])
        write_idx(raw / f"{prefix}-labels-idx1-ubyte.gz", arrays[prefix][1])
    for train, prefix in ((True, "train"), (False, "t10k")):
        ds = datasets.KMNIST(tmp_path, train=train)
        np.testing.assert_array_equal(ds.data.numpy(), arrays[prefix][0])
        np.testing.assert_array_equal(ds.targets.numpy(), arrays[prefix][1].astype(np.int64))
        img, y = ds[1]
        np.testing.assert_array_equal(np.asarray(img), arrays[prefix][0][1])
        assert y == int(arrays[prefix][1][1])
    assert ds.classes[3] == "tsu" and ds.class_to_idx["wo"] == 9
    with pytest.warns(UserWarning, match="test_labels has been renamed targets"):
        assert ds.test_labels is ds.targets
    with pytest.warns(UserWarning, match="train_data has been renamed data"):
        assert ds.train_data is ds.data


EMNIST_CLASS_COUNTS = {"byclass": 62, "bymerge": 47, "balanced": 47, "letters": 27, "digits": 10, "mnist": 10}


def _write_emnist(raw, split, rng, n_train=5, n_test=3):
    arrays = {}
    for part, n in (("train", n_train), ("test", n_test)):
        images, labels = _images(rng, n), rng.integers(0, EMNIST_CLASS_COUNTS[split], n, dtype=np.uint8)
        write_idx(raw / f"emnist-{split}-{part}-images-idx3-ubyte", images)
        write_idx(raw / f"emnist-{split}-{part}-labels-idx1-ubyte.gz", labels)
        arrays[part] = images, labels
    return arrays


@pytest.mark.parametrize("split", sorted(EMNIST_CLASS_COUNTS))
def test_emnist_splits(tmp_path, split):
    raw = tmp_path / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    arrays = _write_emnist(raw, split, np.random.default_rng(1))
    for train, part in ((True, "train"), (False, "test")):
        ds = datasets.EMNIST(tmp_path, split=split, train=train)
        images, labels = arrays[part]
        # the files' (transposed) orientation is kept, as torchvision keeps it
        np.testing.assert_array_equal(ds.data.numpy(), images)
        assert ds.targets.dtype is ember.int64
        np.testing.assert_array_equal(ds.targets.numpy(), labels.astype(np.int64))
        img, y = ds[2]
        assert isinstance(img, Image.Image) and img.mode == "L"
        np.testing.assert_array_equal(np.asarray(img), images[2])
        assert y == int(labels[2])
    assert len(ds.classes) == EMNIST_CLASS_COUNTS[split]
    assert ds.class_to_idx[ds.classes[-1]] == len(ds.classes) - 1


def test_emnist_class_names():
    d = datasets.EMNIST.classes_split_dict
    assert d["byclass"] == sorted(string.digits + string.ascii_letters)
    assert d["letters"][:3] == ["N/A", "a", "b"]
    assert "c" not in d["balanced"] and "C" in d["balanced"] and "a" in d["balanced"]


def test_emnist_errors(tmp_path):
    with pytest.raises(ValueError, match="Unknown value 'bogus' for argument split"):
        datasets.EMNIST(tmp_path, split="bogus")
    with pytest.raises(RuntimeError, match="Dataset not found"):
        datasets.EMNIST(tmp_path, split="letters")


N_QMNIST_TEST = 10003  # past 10,000 so that test10k / test50k both hold rows


def _qmnist_arrays(n, seed):
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 28, 28), dtype=np.uint8)  # mostly zeros: small files, quick to write
    images[:, 0, 0] = np.arange(n) % 256
    images[:, 5, 7] = np.arange(n) // 256
    images[:, 10:14, 10:14] = rng.integers(0, 256, (n, 4, 4), dtype=np.uint8)
    targets = rng.integers(0, 100000, (n, 8)).astype(np.int32)
    targets[:, 0] = rng.integers(0, 10, n)
    return images, targets


@pytest.fixture(scope="module")
def qmnist_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("q")
    raw = root / "QMNIST" / "raw"
    raw.mkdir(parents=True)
    arrays = {"train": _qmnist_arrays(7, 2), "test": _qmnist_arrays(N_QMNIST_TEST, 3), "nist": _qmnist_arrays(6, 4)}
    for name, suffix, key in (("qmnist-train", ".gz", "train"), ("qmnist-test", "", "test"), ("xnist", ".xz", "nist")):
        write_idx(raw / f"{name}-images-idx3-ubyte{suffix}", arrays[key][0])
        write_idx(raw / f"{name}-labels-idx2-int{suffix}", arrays[key][1])
    return root, arrays


@pytest.mark.parametrize("what,key,rows", [("train", "train", slice(None)), ("test", "test", slice(None)),
                                           ("test10k", "test", slice(0, 10000)),
                                           ("test50k", "test", slice(10000, None)), ("nist", "nist", slice(None))])
def test_qmnist_subsets(qmnist_root, what, key, rows):
    root, arrays = qmnist_root
    images, targets = arrays[key][0][rows], arrays[key][1][rows]
    ds = datasets.QMNIST(root, what=what)
    assert len(ds) == len(images)
    np.testing.assert_array_equal(ds.data.numpy(), images)
    assert ds.targets.dtype is ember.int64 and tuple(ds.targets.shape) == targets.shape
    np.testing.assert_array_equal(ds.targets.numpy(), targets.astype(np.int64))
    img, y = ds[len(ds) - 1]
    np.testing.assert_array_equal(np.asarray(img), images[-1])
    assert y == int(targets[-1, 0]) and isinstance(y, int)
    assert f"Split: {what}" in repr(ds)


def test_qmnist_full_targets_and_train_flag(qmnist_root):
    root, arrays = qmnist_root
    ds = datasets.QMNIST(root, compat=False)  # what defaults from train=True
    assert ds.what == "train"
    _, y = ds[3]
    assert isinstance(y, ember.Tensor) and y.dtype is ember.int64
    np.testing.assert_array_equal(y.numpy(), arrays["train"][1][3].astype(np.int64))
    assert datasets.QMNIST(root, train=False).what == "test"
    with pytest.raises(ValueError, match="Unknown value 'val' for argument what"):
        datasets.QMNIST(root, what="val")
