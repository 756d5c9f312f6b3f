"""The MNIST family: MNIST, FashionMNIST, KMNIST, EMNIST, QMNIST (torchvision.datasets).

Files live in torchvision's layout, ``root/<ClassName>/raw/``, as the original IDX files,
plain or compressed (``.gz``, ``.xz``). Sources for file names, checksums and classes:
http://yann.lecun.com/exdb/mnist/, https://github.com/zalandoresearch/fashion-mnist,
https://github.com/rois-codh/kmnist, the EMNIST paper (Cohen et al., 2017, arXiv:1702.05373)
and https://github.com/facebookresearch/qmnist.
"""

from __future__ import annotations

import os
import shutil
import string
import warnings

import numpy as np
from PIL import Image

import ember

from .idx import read_idx
from .utils import download_and_extract_archive, download_from_mirrors, download_url, verify_str_arg
from .vision import VisionDataset


class MNIST(VisionDataset):
    """The MNIST digits: 60,000 training and 10,000 test images, 28x28 grayscale.

    Samples are ``(PIL.Image mode "L", int label)`` before transforms. ``data`` is a uint8
    tensor ``[N, 28, 28]``, ``targets`` an int64 tensor ``[N]``.

    Args:
        root: directory holding ``<ClassName>/raw/``.
        train: the training split (True) or the test split.
        transform, target_transform: applied to the image and to the label.
        download: fetch the files (md5-checked) when they are missing.

    Raises:
        RuntimeError: files missing and ``download`` False, or a file corrupt/truncated.
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train: bool = True, transform=None, target_transform=None, download: bool = False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError(f"Dataset not found in {self.raw_folder}. You can use download=True to download it")
        images, labels = self._load_data()
        self._images, self._labels = images, labels
        self.data = ember.from_numpy(images)
        self.targets = ember.from_numpy(labels)

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "processed")

    # the names of torchvision's first releases, deprecated there in favour of data/targets
    @property
    def train_labels(self):
        warnings.warn("train_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def test_labels(self):
        warnings.warn("test_labels has been renamed targets", stacklevel=2)
        return self.targets

    @property
    def train_data(self):
        warnings.warn("train_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def test_data(self):
        warnings.warn("test_data has been renamed data", stacklevel=2)
        return self.data

    @property
    def class_to_idx(self) -> dict:
        return {c: i for i, c in enumerate(self.classes)}

    @property
    def _stems(self) -> tuple:
        """The (images, labels) file names of the selected split, without compression suffix."""
        prefix = "train" if self.train else "t10k"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    def _find(self, stem: str) -> str:
        for name in (stem, stem + ".gz", stem + ".xz"):
            path = os.path.join(self.raw_folder, name)
            if os.path.isfile(path):
                return path
        raise RuntimeError(f"{stem} not found in {self.raw_folder}")

    def _has(self, stem: str) -> bool:
        return any(os.path.isfile(os.path.join(self.raw_folder, stem + ext)) for ext in ("", ".gz", ".xz"))

    def _check_exists(self) -> bool:
        return all(self._has(os.path.splitext(os.path.basename(name))[0]) for name, _ in self.resources)

    def _load_data(self) -> tuple:
        image_stem, label_stem = self._stems
        images = _read_images(self._find(image_stem))
        labels = read_idx(self._find(label_stem))
        if labels.dtype != np.uint8 or labels.ndim != 1:
            raise RuntimeError(f"{self._find(label_stem)}: expected uint8 labels of 1 dimension, "
                               f"got {labels.dtype} of shape {labels.shape}")
        if len(images) != len(labels):
            raise RuntimeError(f"{self.raw_folder}: {len(images)} images but {len(labels)} labels")
        return images, labels.astype(np.int64)

    def download(self) -> None:
        """Download the files that are missing, each checked against its md5."""
        if self._check_exists():
            return
        for name, md5 in self.resources:
            download_from_mirrors(self.mirrors, name, self.raw_folder, md5)

    def __len__(self) -> int:
        return len(self._images)

    def __getitem__(self, index: int):
        img = Image.fromarray(self._images[index])  # uint8 [28, 28] gives mode "L"
        target = int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


def _read_images(path: str) -> np.ndarray:
    images = read_idx(path)
    if images.dtype != np.uint8 or images.ndim != 3:
        raise RuntimeError(f"{path}: expected uint8 images [N, H, W], got {images.dtype} of shape {images.shape}")
    return images


class FashionMNIST(MNIST):
    """Fashion-MNIST: Zalando's 28x28 grayscale clothing images, 10 classes, same layout
    and format as MNIST (a drop-in replacement; Xiao et al., 2017, arXiv:1708.07747;
    torchvision.datasets.FashionMNIST).

    Args:
        root: directory holding ``FashionMNIST/raw/``.
        train: the 60,000 training images (True) or the 10,000 test images.
        transform, target_transform: applied to the image and to the label.
        download: fetch the files (md5-checked) when they are missing.

    Raises:
        RuntimeError: files missing and ``download`` False, or a file corrupt/truncated.
    """

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: 28x28 grayscale cursive Japanese characters, 10 classes, in
    MNIST's layout and format (Clanuwat et al., 2018, arXiv:1812.01718; torchvision.datasets.KMNIST).

    Args:
        root: directory holding ``KMNIST/raw/``.
        train: the 60,000 training images (True) or the 10,000 test images.
        transform, target_transform: applied to the image and to the label.
        download: fetch the files (md5-checked) when they are missing.

    Raises:
        RuntimeError: files missing and ``download`` False, or a file corrupt/truncated.
    """

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """Extended MNIST: handwritten digits and letters from NIST Special Database 19.

    Args:
        root: directory holding ``EMNIST/raw/emnist-<split>-<train|test>-*-ubyte[.gz]``.
        split: one of ``byclass``, ``bymerge``, ``balanced``, ``letters``, ``digits``,
            ``mnist``; sets ``classes``.
        train, transform, target_transform, download: as :class:`MNIST`.

    The files store each image transposed (column-major) relative to MNIST. As in
    torchvision, ``data`` and the samples keep the files' orientation (so models and
    statistics carry over); transpose an image (``img.transpose(Image.TRANSPOSE)``) to see
    it upright.

    Raises:
        ValueError: unknown ``split``.
        RuntimeError: files missing or corrupt.
    """

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    # lower-case letters merged into their upper case in bymerge / balanced
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split: str, **kwargs) -> None:
        self.split = verify_str_arg(split, "split", self.splits)
        self.classes = self.classes_split_dict[self.split]
        super().__init__(root, **kwargs)

    @property
    def _stems(self) -> tuple:
        prefix = f"emnist-{self.split}-{'train' if self.train else 'test'}"
        return f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"

    def _check_exists(self) -> bool:
        return all(self._has(stem) for stem in self._stems)

    def download(self) -> None:
        """Download the zip of all splits (md5-checked) and keep its gzipped IDX files."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gzip_folder):
            if name.endswith(".gz"):
                os.replace(os.path.join(gzip_folder, name), os.path.join(self.raw_folder, name))
        shutil.rmtree(gzip_folder)


class QMNIST(MNIST):
    """QMNIST: MNIST reconstructed from NIST, with the full NIST metadata per image.

    Args:
        root: directory holding ``QMNIST/raw/``.
        what: ``train``, ``test`` (60k), ``test10k`` (its first 10k, MNIST's test set),
            ``test50k`` (the other 50k) or ``nist`` (all NIST digits); default ``train``
            or ``test`` as ``train`` says.
        compat: targets are class numbers (True) or the full 8-column int64 row
            ``[class, NIST hsf, writer id, digit index, NIST class, global index,
            duplicate, unused]``.
        train, transform, target_transform, download: as :class:`MNIST`.

    ``data`` is uint8 ``[N, 28, 28]``; ``targets`` int64 ``[N, 8]``.

    Raises:
        ValueError: unknown ``what``.
        RuntimeError: files missing or corrupt.
    """

    subsets = {"train": "train", "test": "test", "test10k": "test", "test50k": "test", "nist": "nist"}
    _base = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"
    resources = {
        "train": [(_base + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
                  (_base + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4")],
        "test": [(_base + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
                 (_base + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa")],
        "nist": [(_base + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
                 (_base + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d")],
    }
    del _base

    def __init__(self, root, what: str | None = None, compat: bool = True, train: bool = True, **kwargs) -> None:
        if what is None:
            what = "train" if train else "test"
        self.what = verify_str_arg(what, "what", tuple(self.subsets))
        self.compat = compat
        super().__init__(root, train, **kwargs)

    @property
    def _stems(self) -> tuple:
        return tuple(os.path.splitext(os.path.basename(url))[0] for url, _ in self.resources[self.subsets[self.what]])

    def _check_exists(self) -> bool:
        return all(self._has(stem) for stem in self._stems)

    def _load_data(self) -> tuple:
        image_stem, label_stem = self._stems
        images = _read_images(self._find(image_stem))
        targets = read_idx(self._find(label_stem))
        if targets.ndim != 2:
            raise RuntimeError(f"{self._find(label_stem)}: expected targets of 2 dimensions, got shape {targets.shape}")
        if len(images) != len(targets):
            raise RuntimeError(f"{self.raw_folder}: {len(images)} images but {len(targets)} targets")
        if self.what == "test10k":
            images, targets = images[:10000], targets[:10000]
        elif self.what == "test50k":
            images, targets = images[10000:], targets[10000:]
        return np.ascontiguousarray(images), np.ascontiguousarray(targets, dtype=np.int64)

    def download(self) -> None:
        """Download the two files of ``what`` (md5-checked), kept compressed."""
        if self._check_exists():
            return
        for url, md5 in self.resources[self.subsets[self.what]]:
            download_url(url, self.raw_folder, md5=md5)

    def __getitem__(self, index: int):
        img = Image.fromarray(self._images[index])
        target = int(self._labels[index][0]) if self.compat else self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {self.what}"
