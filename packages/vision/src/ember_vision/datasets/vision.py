"""VisionDataset: the base of the vision datasets (torchvision.datasets.VisionDataset)."""

from __future__ import annotations

import os

from ember.utils.data import Dataset


class VisionDataset(Dataset):
    """Base class of the vision datasets: holds ``root`` and the transforms.

    Args:
        root: the dataset's directory, a ``str`` (``~`` is expanded) or a path-like
            object (kept as given, as torchvision does); ``None`` for generated data.
        transforms: callable applied to the pair ``(sample, target)``.
        transform: callable applied to the sample alone.
        target_transform: callable applied to the target alone.

    ``self.transforms`` is the pair transform: the one given, a ``StandardTransform``
    built from ``transform``/``target_transform``, or ``None`` when nothing was given.

    Raises:
        ValueError: ``transforms`` given together with ``transform`` or ``target_transform``.
    """

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None) -> None:
        if isinstance(root, (str, bytes)):
            root = os.path.expanduser(root)
        self.root = root
        has_transforms = transforms is not None
        has_separate_transform = transform is not None or target_transform is not None
        if has_transforms and has_separate_transform:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if has_separate_transform:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index: int):
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        # torchvision's layout: the transforms' repr is one body entry, so only its first
        # line is indented.
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body.append(repr(self.transforms))
        lines = ["Dataset " + type(self).__name__] + [" " * self._repr_indent + line for line in body]
        return "\n".join(lines)

    def _format_transform_repr(self, transform, head: str) -> list:
        lines = repr(transform).splitlines()
        return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]

    def extra_repr(self) -> str:
        return ""


class StandardTransform:
    """Applies ``transform`` to the sample and ``target_transform`` to the target."""

    def __init__(self, transform=None, target_transform=None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input, target):
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def _format_transform_repr(self, transform, head: str) -> list:
        lines = repr(transform).splitlines()
        return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]

    def __repr__(self) -> str:
        body = [type(self).__name__]
        if self.transform is not None:
            body += self._format_transform_repr(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += self._format_transform_repr(self.target_transform, "Target transform: ")
        return "\n".join(body)
