"""FakeData: deterministic per index; float-to-image conversion against torch's
``mul(255).byte()`` (what torchvision's ToPILImage applies to a float tensor)."""

import numpy as np
import pytest
import torch
from PIL import Image

from ember_vision import datasets
from ember_vision.datasets.fakedata import float_to_pil


@pytest.mark.parametrize("shape,mode", [((1, 5, 6), "L"), ((2, 5, 6), "LA"), ((3, 5, 6), "RGB"),
                                        ((4, 5, 6), "RGBA"), ((5, 6), "L")])
def test_conversion_matches_torch(shape, mode):
    values = (np.random.default_rng(0).standard_normal(shape) * 2).astype(np.float32)
    img = float_to_pil(values)
    expected = torch.from_numpy(values).mul(255).byte().numpy()  # wraps negatives, as torch does
    if expected.ndim == 3:
        expected = expected.transpose(1, 2, 0)
        expected = expected[:, :, 0] if expected.shape[2] == 1 else expected
    assert img.mode == mode and img.size == (6, 5)
    np.testing.assert_array_equal(np.asarray(img), expected)


def test_deterministic_per_index():
    ds = datasets.FakeData(size=6, image_size=(3, 8, 10), num_classes=4)
    assert len(ds) == 6
    first = [ds[i] for i in range(6)]
    again = [ds[i] for i in reversed(range(6))][::-1]  # order of access does not matter
    for (a, ya), (b, yb) in zip(first, again):
        assert isinstance(a, Image.Image) and a.mode == "RGB" and a.size == (10, 8)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert ya == yb and isinstance(ya, int) and 0 <= ya < 4
    assert not np.array_equal(np.asarray(first[0][0]), np.asarray(first[1][0]))
    # sample i of offset k is sample i + k of offset 0
    shifted = datasets.FakeData(size=6, image_size=(3, 8, 10), num_classes=4, random_offset=2)
    np.testing.assert_array_equal(np.asarray(shifted[1][0]), np.asarray(first[3][0]))
    assert shifted[1][1] == first[3][1]


def test_targets_cover_classes_and_transforms():
    ds = datasets.FakeData(size=60, image_size=(1, 2, 2), num_classes=3,
                           transform=lambda im: np.asarray(im).shape, target_transform=lambda y: -y)
    targets = [ds[i][1] for i in range(60)]
    assert set(targets) == {0, -1, -2} and ds[0][0] == (2, 2)


def test_errors_and_repr():
    ds = datasets.FakeData(size=3)
    with pytest.raises(IndexError, match="FakeData index out of range"):
        ds[3]
    with pytest.raises(ValueError, match="pic should not have > 4 channels. Got 5 channels."):
        datasets.FakeData(image_size=(5, 4, 4))
    with pytest.raises(ValueError, match="image_size"):
        datasets.FakeData(image_size=(4,))
    assert repr(ds) == "Dataset FakeData\n    Number of datapoints: 3"
    assert ds[0][0].size == (224, 224)
