"""VisionDataset and StandardTransform: argument rules and torchvision's repr layout."""

import os
import pathlib

import pytest

from ember_vision import datasets
from ember_vision.datasets.vision import StandardTransform


class _Tiny(datasets.VisionDataset):
    def __init__(self, root, n=3, **kwargs):
        super().__init__(root, **kwargs)
        self.n = n

    def __getitem__(self, index):
        return self.transforms(index, index * 10) if self.transforms is not None else (index, index * 10)

    def __len__(self):
        return self.n

    def extra_repr(self):
        return "Split: a\nMore: b"


class _Named:
    """A transform with a two-line repr, like Compose."""

    def __init__(self, name):
        self.name = name

    def __call__(self, x):
        return (self.name, x)

    def __repr__(self):
        return f"{self.name}(\n    inner()\n)"


def test_transforms_exclusive_with_transform():
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform can be passed"):
        _Tiny("r", transforms=lambda x, y: (x, y), transform=abs)
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform can be passed"):
        _Tiny("r", transforms=lambda x, y: (x, y), target_transform=abs)


def test_transform_application():
    assert _Tiny("r")[2] == (2, 20)
    assert _Tiny("r").transforms is None
    ds = _Tiny("r", transform=lambda x: x + 1, target_transform=lambda y: -y)
    assert isinstance(ds.transforms, StandardTransform) and ds[2] == (3, -20)
    assert _Tiny("r", transforms=lambda x, y: (y, x))[2] == (20, 2)


def test_root_handling():
    assert _Tiny("~/data").root == os.path.expanduser("~/data")
    p = pathlib.Path("some/dir")
    assert _Tiny(p).root is p  # path-like roots are kept as given, as torchvision does
    assert _Tiny(None).root is None


def test_repr_layout():
    ds = _Tiny("/data/x", n=5)
    assert repr(ds) == ("Dataset _Tiny\n    Number of datapoints: 5\n    Root location: /data/x\n"
                        "    Split: a\n    More: b")
    assert repr(_Tiny(None, n=1)) == "Dataset _Tiny\n    Number of datapoints: 1\n    Split: a\n    More: b"
    # torchvision appends the StandardTransform repr as one entry: only its first line is indented
    ds = _Tiny("/d", n=2, transform=_Named("T"), target_transform=_Named("U"))
    assert repr(ds) == ("Dataset _Tiny\n    Number of datapoints: 2\n    Root location: /d\n    Split: a\n    More: b\n"
                        "    StandardTransform\n"
                        "Transform: T(\n               inner()\n           )\n"
                        "Target transform: U(\n                      inner()\n                  )")


def test_base_is_abstract():
    ds = datasets.VisionDataset("r")
    with pytest.raises(NotImplementedError):
        ds[0]
    with pytest.raises(NotImplementedError):
        len(ds)
