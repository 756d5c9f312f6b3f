"""CIFAR-10 and CIFAR-100 (torchvision.datasets.CIFAR10 / CIFAR100).

The python version of the files (https://www.cs.toronto.edu/~kriz/cifar.html): pickled
dicts holding ``data`` (uint8 ``[N, 3072]``, each row the 1024 red, then green, then
blue values of a 32x32 image, row-major) and ``labels`` (CIFAR-10) or ``fine_labels``
(CIFAR-100); a meta file names the classes. They are read with a data-only unpickler
that runs no code. File names, URLs and checksums as torchvision's.
"""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from ._safe_pickle import load_data_pickle
from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset


class CIFAR10(VisionDataset):
    """CIFAR-10: 60,000 32x32 colour images in 10 classes (50,000 train, 10,000 test).

    Samples are ``(PIL.Image mode "RGB", int class)`` before transforms. ``data`` is a
    uint8 numpy array ``[N, 32, 32, 3]`` (HWC), ``targets`` a list of ints, ``classes``
    the names of the meta file.

    Args:
        root: directory holding ``cifar-10-batches-py/``.
        train: the five training batches (True) or the test batch.
        transform, target_transform: applied to the image and to the class.
        download: fetch and unpack the archive (md5-checked) when the files are missing.

    Raises:
        RuntimeError: a batch or the meta file missing or failing its md5 check.
        pickle.UnpicklingError: a file holding anything but plain data and arrays.
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}

    def __init__(self, root, train: bool = True, transform=None, target_transform=None,
                 download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        data, self.targets = [], []
        for name, _ in (self.train_list if train else self.test_list):
            path = os.path.join(self.root, self.base_folder, name)
            entry = load_data_pickle(path)
            data.append(np.asarray(entry["data"], dtype=np.uint8))
            self.targets.extend(int(t) for t in (entry["labels"] if "labels" in entry else entry["fine_labels"]))
        # rows are channel planes: [N, 3, 32, 32] -> HWC for PIL
        self.data = np.vstack(data).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self._load_meta()

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError("Dataset metadata file not found or corrupted. You can use download=True to download it")
        self.classes = list(load_data_pickle(path)[self.meta["key"]])
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __getitem__(self, index: int):
        img, target = Image.fromarray(self.data[index]), self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5)
                   for name, md5 in self.train_list + self.test_list)

    def download(self) -> None:
        """Download and unpack the archive unless every batch is there and intact."""
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: as :class:`CIFAR10` with 100 fine classes; ``targets`` are the fine
    labels and ``classes`` the fine label names (torchvision.datasets.CIFAR100).

    Args:
        root: directory holding ``cifar-100-python/``.
        train: the 50,000 training images (True) or the 10,000 test images.
        transform, target_transform: applied to the image and to the class.
        download: fetch and unpack the archive (md5-checked) when the files are missing.

    Raises:
        RuntimeError: a file missing or failing its md5 check.
        pickle.UnpicklingError: a file holding anything but plain data and arrays.
    """

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
