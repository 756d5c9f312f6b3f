"""MNIST and Fashion-MNIST (torchvision.datasets.MNIST / FashionMNIST).

Files live in torchvision's layout, ``root/<ClassName>/raw/``, as the original IDX files,
gzipped or not. Sources: http://yann.lecun.com/exdb/mnist/ and
https://github.com/zalandoresearch/fashion-mnist (file names, checksums, classes).
"""

from __future__ import annotations

import os

from PIL import Image

import ember

from .idx import read_idx
from .utils import download_from_mirrors
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
        prefix = "train" if train else "t10k"
        images = read_idx(self._find(f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(self._find(f"{prefix}-labels-idx1-ubyte"))
        if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
            raise RuntimeError(f"{self.raw_folder}: images {images.shape} and labels {labels.shape} do not match")
        self._images, self._labels = images.astype("uint8", copy=False), labels.astype("int64")
        self.data = ember.from_numpy(self._images)
        self.targets = ember.from_numpy(self._labels)

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self) -> dict:
        return {c: i for i, c in enumerate(self.classes)}

    def _find(self, stem: str) -> str:
        for name in (stem, stem + ".gz"):
            path = os.path.join(self.raw_folder, name)
            if os.path.isfile(path):
                return path
        raise RuntimeError(f"{stem} not found in {self.raw_folder}")

    def _check_exists(self) -> bool:
        return all(os.path.isfile(os.path.join(self.raw_folder, name)) or
                   os.path.isfile(os.path.join(self.raw_folder, name[:-3]))
                   for name, _ in self.resources)

    def download(self) -> None:
        """Download the four files that are missing, each checked against its md5."""
        if self._check_exists():
            return
        for name, md5 in self.resources:
            download_from_mirrors(self.mirrors, name, self.raw_folder, md5)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        img = Image.fromarray(self._images[index])  # uint8 [28, 28] gives mode "L"
        target = int(self._labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Fashion-MNIST: Zalando's 28x28 grayscale clothing images, 10 classes, same layout
    and format as MNIST (a drop-in replacement)."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
