"""STL-10 in its binary format (torchvision.datasets.STL10).

Files (https://cs.stanford.edu/~acoates/stl10/): ``*_X.bin`` hold uint8 images of
3x96x96, each channel stored column-major; ``*_y.bin`` hold one uint8 label 1..10 per
image; ``fold_indices.txt`` has ten lines of space-separated training indices;
``class_names.txt`` one class name a line. URLs and checksums as torchvision's.
"""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from .utils import check_integrity, download_and_extract_archive, verify_str_arg
from .vision import VisionDataset


class STL10(VisionDataset):
    """STL-10: 96x96 colour images, 10 classes; 5,000 labelled training images, 8,000
    test images and 100,000 unlabelled ones.

    Samples are ``(PIL.Image mode "RGB", int class)`` before transforms; unlabelled
    images have target -1. ``data`` is a uint8 numpy array ``[N, 3, 96, 96]``;
    ``labels`` a numpy array ``[N]``, as torchvision's: uint8 0..9 for ``train`` and
    ``test``, int64 -1 for ``unlabeled``, int64 for ``train+unlabeled``.

    Args:
        root: directory holding ``stl10_binary/``.
        split: ``train``, ``test``, ``unlabeled`` or ``train+unlabeled``.
        folds: one of the ten predefined training folds (0..9) to keep, or None for all;
            used by the ``train`` and ``train+unlabeled`` splits.
        transform, target_transform: applied to the image and to the class.
        download: fetch and unpack the archive (md5-checked) when files are missing.

    Raises:
        ValueError: unknown ``split``, or ``folds`` not None nor an int in [0, 10).
        RuntimeError: files missing or failing their md5 check.
    """

    base_folder = "stl10_binary"
    url = "http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz"
    filename = "stl10_binary.tar.gz"
    tgz_md5 = "91f7769df0f17e558f3565bffb0c7dfb"
    class_names_file = "class_names.txt"
    folds_list_file = "fold_indices.txt"
    train_list = [
        ["train_X.bin", "918c2871b30a85fa023e0c44e0bee87f"],
        ["train_y.bin", "5a34089d4802c674881badbb80307741"],
        ["unlabeled_X.bin", "5242ba1fed5e4be9e1e742405eb56ca4"],
    ]
    test_list = [["test_X.bin", "7f263ba9f9e0b06b93213547f721ac82"], ["test_y.bin", "36f9794fa4beb8a2c72628de14fa638e"]]
    splits = ("train", "train+unlabeled", "unlabeled", "test")

    def __init__(self, root, split: str = "train", folds: int | None = None, transform=None,
                 target_transform=None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self.splits)
        self.folds = self._verify_folds(folds)
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")

        if self.split in ("train", "train+unlabeled"):
            self.data, self.labels = self._load_file(self.train_list[0][0], self.train_list[1][0])
            self._load_folds(folds)
            if self.split == "train+unlabeled":
                unlabeled, _ = self._load_file(self.train_list[2][0])
                self.data = np.concatenate((self.data, unlabeled))
                self.labels = np.concatenate((self.labels, np.full(len(unlabeled), -1, dtype=np.int64)))
        elif self.split == "unlabeled":
            self.data, _ = self._load_file(self.train_list[2][0])
            self.labels = np.full(len(self.data), -1, dtype=np.int64)
        else:
            self.data, self.labels = self._load_file(self.test_list[0][0], self.test_list[1][0])

        class_file = os.path.join(self.root, self.base_folder, self.class_names_file)
        if os.path.isfile(class_file):
            with open(class_file) as f:
                self.classes = f.read().splitlines()

    @staticmethod
    def _verify_folds(folds):
        if folds is None:
            return folds
        if isinstance(folds, int) and not isinstance(folds, bool):
            if folds in range(10):
                return folds
            raise ValueError(f"Value for argument folds should be in the range [0, 10), but got {folds}.")
        raise ValueError(f"Expected type None or int for argument folds, but got type {type(folds)}.")

    def _load_file(self, data_file: str, labels_file: str | None = None):
        labels = None
        if labels_file is not None:
            path = os.path.join(self.root, self.base_folder, labels_file)
            labels = np.fromfile(path, dtype=np.uint8) - 1  # files count classes from 1; stays uint8
        path = os.path.join(self.root, self.base_folder, data_file)
        raw = np.fromfile(path, dtype=np.uint8)
        if raw.size % (3 * 96 * 96):
            raise RuntimeError(f"{path}: {raw.size} bytes is not a whole number of 3x96x96 images")
        # column-major channels: swap the last two axes to get [N, C, H, W]
        images = raw.reshape(-1, 3, 96, 96).transpose(0, 1, 3, 2)
        if labels is not None and len(labels) != len(images):
            raise RuntimeError(f"{path}: {len(images)} images but {len(labels)} labels")
        return images, labels

    def _load_folds(self, folds) -> None:
        if folds is None:
            return
        with open(os.path.join(self.root, self.base_folder, self.folds_list_file)) as f:
            line = f.read().splitlines()[folds]
        index = np.array(line.split(), dtype=np.int64)
        self.data, self.labels = self.data[index], self.labels[index]

    def __getitem__(self, index: int):
        target = int(self.labels[index])
        img = Image.fromarray(np.transpose(self.data[index], (1, 2, 0)))
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return self.data.shape[0]

    def _check_integrity(self) -> bool:
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5)
                   for name, md5 in self.train_list + self.test_list)

    def download(self) -> None:
        """Download and unpack the archive unless every file is there and intact."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
