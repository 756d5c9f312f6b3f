"""SVHN, the Street View House Numbers, cropped-digits format (torchvision.datasets.SVHN).

Files (http://ufldl.stanford.edu/housenumbers/): MATLAB ``.mat`` files holding ``X``
(uint8 ``[32, 32, 3, N]``) and ``y`` (``[N, 1]``, digit 0 stored as label 10). URLs and
checksums as torchvision's.
"""

from __future__ import annotations

import os

import numpy as np
from PIL import Image

from .utils import check_integrity, download_url, verify_str_arg
from .vision import VisionDataset


class SVHN(VisionDataset):
    """SVHN digits: 32x32 colour crops of house numbers, 10 classes.

    Samples are ``(PIL.Image mode "RGB", int digit)`` before transforms. ``data`` is a
    uint8 numpy array ``[N, 3, 32, 32]``, ``labels`` an int64 array ``[N]`` in 0..9
    (the files' label 10 becomes 0, as in torchvision).

    Args:
        root: directory holding ``<split>_32x32.mat``.
        split: ``train``, ``test`` or ``extra``.
        transform, target_transform: applied to the image and to the label.
        download: fetch the file (md5-checked) when it is missing.

    Raises:
        ValueError: unknown ``split``.
        RuntimeError: the file missing or failing its md5 check.
    """

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root, split: str = "train", transform=None, target_transform=None,
                 download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        import scipy.io as sio  # imported here: only SVHN needs scipy

        loaded = sio.loadmat(os.path.join(self.root, self.filename))
        self.data = np.transpose(loaded["X"], (3, 2, 0, 1))  # [H, W, C, N] -> [N, C, H, W]
        self.labels = loaded["y"].astype(np.int64).reshape(-1)
        np.place(self.labels, self.labels == 10, 0)

    def __getitem__(self, index: int):
        img = Image.fromarray(np.transpose(self.data[index], (1, 2, 0)))
        target = int(self.labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self) -> None:
        download_url(self.url, self.root, self.filename, self.file_md5)

    def extra_repr(self) -> str:
        return f"Split: {self.split}"
