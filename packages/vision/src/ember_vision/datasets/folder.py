"""Datasets read from a folder per class (torchvision.datasets.DatasetFolder / ImageFolder).

Layout: ``root/<class name>/**/<file>``; classes are the sorted sub-folder names, and
every file under a class folder (symlinks followed) that passes the filter is a sample.
"""

from __future__ import annotations

import os

from PIL import Image

from .vision import VisionDataset

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions) -> bool:
    """True when ``filename`` ends (case-insensitively) with one of ``extensions``
    (a str or a tuple of str)."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename: str) -> bool:
    """True when ``filename`` has one of ``IMG_EXTENSIONS``."""
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory) -> tuple:
    """``(classes, class_to_idx)``: the sorted sub-folder names of ``directory`` and
    their indices.

    Raises:
        FileNotFoundError: ``directory`` has no sub-folder.
    """
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory, class_to_idx: dict | None = None, extensions=None, is_valid_file=None,
                 allow_empty: bool = False) -> list:
    """The ``(path, class_index)`` pairs under ``directory``, classes in sorted order and
    files sorted within each folder.

    Exactly one of ``extensions`` (str or tuple, matched case-insensitively) and
    ``is_valid_file`` (a predicate on the path) selects the files.

    Raises:
        ValueError: ``class_to_idx`` empty, or both / neither of ``extensions`` and
            ``is_valid_file`` given.
        FileNotFoundError: a class folder without any valid file, unless ``allow_empty``.
    """
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(path: str) -> bool:
            return has_file_allowed_extension(path, extensions)

    instances, available = [], set()
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    available.add(target_class)
    empty = set(class_to_idx) - available
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(VisionDataset):
    """Samples loaded by ``loader`` from ``root/<class>/**/<file>``.

    Attributes: ``classes`` (sorted folder names), ``class_to_idx``, ``samples`` (list of
    ``(path, class_index)``), ``targets`` (the class indices), ``extensions``, ``loader``.

    Args:
        root: the folder of class folders (str or path-like).
        loader: callable reading a sample from its path.
        extensions: allowed file suffixes (str or tuple); exclusive with ``is_valid_file``.
        transform, target_transform: applied to the sample and to the class index.
        is_valid_file: predicate on a file's path; exclusive with ``extensions``.
        allow_empty: accept class folders without any valid file.

    Raises:
        FileNotFoundError: no class folder, or an empty class folder (unless ``allow_empty``).
        ValueError: both or neither of ``extensions`` and ``is_valid_file``.
    """

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None,
                 is_valid_file=None, allow_empty: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx=class_to_idx, extensions=extensions,
                                    is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory, class_to_idx: dict, extensions=None, is_valid_file=None,
                     allow_empty: bool = False) -> list:
        """:func:`make_dataset` with the class mapping required (override to customise)."""
        if class_to_idx is None:
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions=extensions, is_valid_file=is_valid_file,
                            allow_empty=allow_empty)

    def find_classes(self, directory) -> tuple:
        """:func:`find_classes` (override to customise the class folders)."""
        return find_classes(directory)

    def __getitem__(self, index: int):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


def pil_loader(path) -> Image.Image:
    """The image at ``path`` converted to RGB (file closed before returning)."""
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


def default_loader(path) -> Image.Image:
    """The default image loader: :func:`pil_loader`."""
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """Images in ``root/<class>/**/<file>`` with one of ``IMG_EXTENSIONS`` (unless
    ``is_valid_file`` is given), loaded as RGB PIL images by default (torchvision.datasets.ImageFolder).

    Args:
        root: the folder of class folders (str or path-like).
        transform, target_transform: applied to the image and to the class index.
        loader: callable reading an image from its path (default ``default_loader``).
        is_valid_file: predicate on a file's path, replacing the extension check.
        allow_empty: accept class folders without any valid file.

    Attributes are :class:`DatasetFolder`'s, with ``imgs`` an alias of ``samples``.

    Raises:
        FileNotFoundError: no class folder, or an empty class folder (unless ``allow_empty``).
    """

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader,
                 is_valid_file=None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
