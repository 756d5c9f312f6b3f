"""ToTensor / Normalize / Compose against PyTorch computing the same definition."""

import numpy as np
import pytest
import torch
from PIL import Image

import ember
from ember_vision import transforms
from ember_vision.transforms import functional as F


def test_to_tensor_pil_gray_and_rgb():
    rng = np.random.default_rng(0)
    gray = rng.integers(0, 256, (5, 7), dtype=np.uint8)
    rgb = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    for arr in (gray, rgb):
        out = transforms.ToTensor()(Image.fromarray(arr))
        ref = torch.from_numpy(arr.reshape(5, 7, -1)).permute(2, 0, 1).float().div(255)
        assert out.dtype is ember.float32 and tuple(out.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(out.numpy(), ref.numpy())


def test_to_tensor_ndarray_float_kept():
    arr = np.random.default_rng(1).random((4, 3, 2)).astype(np.float64)
    out = F.to_tensor(arr)
    assert out.dtype is ember.float64
    np.testing.assert_array_equal(out.numpy(), arr.transpose(2, 0, 1))


def test_to_tensor_rejects():
    with pytest.raises(TypeError):
        F.to_tensor([1, 2, 3])
    with pytest.raises(ValueError):
        F.to_tensor(np.zeros((1, 2, 3, 4), np.uint8))


def test_pil_to_tensor():
    arr = np.random.default_rng(2).integers(0, 256, (3, 4, 3), dtype=np.uint8)
    out = transforms.PILToTensor()(Image.fromarray(arr))
    assert out.dtype is ember.uint8
    np.testing.assert_array_equal(out.numpy(), arr.transpose(2, 0, 1))


def test_normalize_matches_definition():
    x = np.random.default_rng(3).random((2, 3, 4, 5)).astype(np.float32)
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    out = transforms.Normalize(mean, std)(ember.from_numpy(x.copy()))
    ref = (torch.from_numpy(x) - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)


def test_normalize_inplace_and_errors():
    x = ember.ones(3, 2, 2)
    y = F.normalize(x, (1.0, 0.0, 0.5), (1.0, 2.0, 0.5), inplace=True)
    assert y is x
    np.testing.assert_allclose(x.numpy()[:, 0, 0], [0.0, 0.5, 1.0])
    with pytest.raises(TypeError):
        F.normalize(ember.ones(3, 2, 2, dtype=ember.uint8), (0.5,), (0.5,))
    with pytest.raises(ValueError, match="std evaluated to zero"):
        F.normalize(ember.ones(3, 2, 2), (0.5,), (0.0,))


def test_compose_order_and_repr():
    c = transforms.Compose([transforms.Lambda(lambda v: v * 2), transforms.Lambda(lambda v: v + 1)])
    assert c(3) == 7
    assert repr(c).startswith("Compose(")
    with pytest.raises(TypeError):
        transforms.Lambda(3)
