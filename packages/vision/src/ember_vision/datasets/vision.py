"""VisionDataset: the base of the vision datasets (root, transform, target_transform)."""

from __future__ import annotations

import os

from ember.utils.data import Dataset


class VisionDataset(Dataset):
    """Base class: holds ``root`` and applies ``transforms`` (to the pair) or
    ``transform`` / ``target_transform`` (to the sample and the target), as torchvision's.

    Raises ValueError when ``transforms`` is given together with either of the others.
    """

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        self.root = os.fspath(root) if root is not None else None
        if transforms is not None and (transform is not None or target_transform is not None):
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = transforms if transforms is not None else _PairTransform(transform, target_transform)

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"Root location: {self.root}")
        lines += [line for line in self.extra_repr().splitlines() if line]
        if self.transform is not None:
            lines.append("Transform: " + repr(self.transform).replace("\n", "\n" + " " * self._repr_indent))
        if self.target_transform is not None:
            lines.append("Target transform: " + repr(self.target_transform))
        body = "\n".join(" " * self._repr_indent + line for line in lines)
        return f"Dataset {type(self).__name__}\n{body}"


class _PairTransform:
    def __init__(self, transform, target_transform):
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, sample, target):
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target
