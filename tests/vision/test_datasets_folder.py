"""ImageFolder / DatasetFolder on a class tree written here."""

import os

import numpy as np
import pytest
from PIL import Image

from ember_vision import datasets
from ember_vision.datasets import folder


def _png(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


@pytest.fixture
def tree(tmp_path):
    rng = np.random.default_rng(0)
    pics = {
        "cat/b.png": rng.integers(0, 256, (4, 5, 3), dtype=np.uint8),
        "cat/a.PNG": rng.integers(0, 256, (4, 5, 3), dtype=np.uint8),  # extensions match any case
        "cat/deep/c.png": rng.integers(0, 256, (3, 3, 3), dtype=np.uint8),
        "dog/x.png": rng.integers(0, 256, (2, 6), dtype=np.uint8),  # grayscale, loaded as RGB
        "ant/z.bmp": rng.integers(0, 256, (3, 2, 3), dtype=np.uint8),
    }
    for rel, arr in pics.items():
        _png(tmp_path / rel, arr)
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    (tmp_path / "stray.png").write_bytes(b"")  # files at the top level are not samples
    return tmp_path, pics


def test_image_folder(tree):
    root, pics = tree
    ds = datasets.ImageFolder(root)
    assert ds.classes == ["ant", "cat", "dog"] and ds.class_to_idx == {"ant": 0, "cat": 1, "dog": 2}
    order = ["ant/z.bmp", "cat/a.PNG", "cat/b.png", "cat/deep/c.png", "dog/x.png"]
    assert ds.samples == [(os.path.join(root, *p.split("/")), ds.class_to_idx[p.split("/")[0]]) for p in order]
    assert ds.imgs is ds.samples and ds.targets == [0, 1, 1, 1, 2]
    assert len(ds) == 5 and ds.extensions == folder.IMG_EXTENSIONS
    for i, rel in enumerate(order):
        img, target = ds[i]
        assert isinstance(img, Image.Image) and img.mode == "RGB"
        expected = pics[rel] if pics[rel].ndim == 3 else np.repeat(pics[rel][:, :, None], 3, axis=2)
        np.testing.assert_array_equal(np.asarray(img), expected)
        assert target == ds.targets[i]
    assert repr(ds).splitlines()[:3] == ["Dataset ImageFolder", "    Number of datapoints: 5",
                                         f"    Root location: {root}"]


def test_is_valid_file_and_transforms(tree):
    root, _ = tree
    ds = datasets.ImageFolder(root, is_valid_file=lambda p: p.endswith("b.png") or p.endswith(".bmp")
                              or p.endswith(".txt"), allow_empty=False,
                              transform=lambda im: im.size, target_transform=lambda t: t * 10)
    assert [os.path.basename(p) for p, _ in ds.samples] == ["z.bmp", "b.png", "notes.txt"]
    assert ds[1] == ((5, 4), 10)


def test_dataset_folder_with_loader_and_str_extension(tree):
    root, _ = tree
    ds = datasets.DatasetFolder(root, loader=lambda p: os.path.getsize(p), extensions=".txt", allow_empty=True)
    assert ds.samples == [(os.path.join(root, "dog", "notes.txt"), 2)]
    assert ds[0] == (len("not an image"), 2)


def test_empty_class_folder(tree):
    root, _ = tree
    (root / "eel").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes eel. Supported extensions "
                                                "are: .jpg, .jpeg, .png"):
        datasets.ImageFolder(root)
    with pytest.raises(FileNotFoundError, match=r"Found no valid file for the classes ant, eel. $"):
        datasets.DatasetFolder(root, loader=open, is_valid_file=lambda p: "/cat/" in p or "/dog/" in p)
    ds = datasets.ImageFolder(root, allow_empty=True)
    assert ds.classes == ["ant", "cat", "dog", "eel"] and 3 not in ds.targets


def test_argument_errors(tree, tmp_path):
    root, _ = tree
    msg = "Both extensions and is_valid_file cannot be None or not None at the same time"
    with pytest.raises(ValueError, match=msg):
        datasets.DatasetFolder(root, loader=open, extensions=".png", is_valid_file=lambda p: True)
    with pytest.raises(ValueError, match=msg):
        datasets.DatasetFolder(root, loader=open)
    with pytest.raises(ValueError, match="The class_to_idx parameter cannot be None."):
        datasets.DatasetFolder.make_dataset(root, None, extensions=".png")
    with pytest.raises(ValueError, match="'class_to_index' must have at least one entry"):
        folder.make_dataset(root, {}, extensions=".png")
    (tmp_path / "flat").mkdir()
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder in"):
        datasets.ImageFolder(tmp_path / "flat")


def test_find_classes_override_and_helpers(tree):
    root, _ = tree

    class OnlyCats(datasets.ImageFolder):
        def find_classes(self, directory):
            return ["cat"], {"cat": 0}

    ds = OnlyCats(root)
    assert ds.classes == ["cat"] and len(ds) == 3 and set(ds.targets) == {0}
    assert folder.is_image_file("X.JPEG") and not folder.is_image_file("x.gif")
    assert folder.has_file_allowed_extension("a.Txt", (".txt", ".md"))
    assert folder.find_classes(root) == (["ant", "cat", "dog"], {"ant": 0, "cat": 1, "dog": 2})


def test_symlinked_folders_are_followed(tree, tmp_path_factory):
    root, pics = tree
    outside = tmp_path_factory.mktemp("outside")
    _png(outside / "more" / "m.png", pics["cat/b.png"])
    os.symlink(outside / "more", root / "cat" / "linked")
    ds = datasets.ImageFolder(root)
    assert os.path.join(root, "cat", "linked", "m.png") in [p for p, _ in ds.samples]
