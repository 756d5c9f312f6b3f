"""Transform classes and conversions: torch-computed references, torchvision reprs/errors,
get_params replayed through the functional form, statistics and seeding."""

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


# --- transform classes: reprs, get_params + functional, statistics, reproducibility ---

IMG_U8 = ember.from_numpy(np.random.default_rng(7).integers(0, 256, (3, 20, 24), dtype=np.uint8))


@pytest.mark.parametrize("t, expected", [
    (transforms.Resize(10), "Resize(size=10, interpolation=bilinear, max_size=None, antialias=True)"),
    (transforms.CenterCrop(5), "CenterCrop(size=(5, 5))"),
    (transforms.RandomCrop(8, padding=2), "RandomCrop(size=(8, 8), padding=2)"),
    (transforms.RandomHorizontalFlip(0.3), "RandomHorizontalFlip(p=0.3)"),
    (transforms.RandomResizedCrop(8), "RandomResizedCrop(size=(8, 8), scale=(0.08, 1.0), "
     "ratio=(0.75, 1.3333), interpolation=bilinear, antialias=True)"),
    (transforms.ColorJitter(0.5, hue=0.1), "ColorJitter(brightness=(0.5, 1.5), contrast=None, "
     "saturation=None, hue=(-0.1, 0.1))"),
    (transforms.RandomRotation(10), "RandomRotation(degrees=[-10.0, 10.0], interpolation=nearest, "
     "expand=False, fill=0)"),
    (transforms.RandomAffine(5, scale=(0.9, 1.1)), "RandomAffine(degrees=[-5.0, 5.0], scale=(0.9, 1.1))"),
    (transforms.GaussianBlur(3), "GaussianBlur(kernel_size=(3, 3), sigma=(0.1, 2.0))"),
    (transforms.Pad(2), "Pad(padding=2, fill=0, padding_mode=constant)"),
    (transforms.AutoAugment(), "AutoAugment(policy=AutoAugmentPolicy.IMAGENET, fill=None)"),
])
def test_repr_matches_torchvision(t, expected):
    assert repr(t) == expected


@pytest.mark.parametrize("make, bad", [
    (lambda: transforms.Resize(10.5), TypeError),
    (lambda: transforms.Resize([1, 2, 3]), ValueError),
    (lambda: transforms.ColorJitter(brightness=-1), ValueError),
    (lambda: transforms.ColorJitter(hue=0.7), ValueError),
    (lambda: transforms.RandomRotation(-3), ValueError),
    (lambda: transforms.RandomAffine(3, translate=(2.0, 0.1)), ValueError),
    (lambda: transforms.GaussianBlur(4), ValueError),
    (lambda: transforms.RandomErasing(p=2), ValueError),
    (lambda: transforms.AugMix(severity=11), ValueError),
    (lambda: F.resize(IMG_U8, 10, interpolation="bilinear"), TypeError),
    (lambda: F.adjust_hue(IMG_U8, 0.7), ValueError),
    (lambda: F.five_crop(IMG_U8, 30), ValueError),
    (lambda: F.posterize(IMG_U8.float(), 3), TypeError),
    (lambda: F.pad(IMG_U8, 2, padding_mode="wrap"), ValueError),
])
def test_bad_arguments_raise_torchvision_errors(make, bad):
    with pytest.raises(bad):
        make()


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))


@pytest.mark.parametrize("t, replay", [
    (transforms.RandomCrop(9), lambda img: F.crop(img, *transforms.RandomCrop.get_params(img, (9, 9)))),
    (transforms.RandomResizedCrop(8), lambda img: F.resized_crop(
        img, *transforms.RandomResizedCrop.get_params(img, (0.08, 1.0), (3 / 4, 4 / 3)), [8, 8])),
    (transforms.RandomRotation(40), lambda img: F.rotate(
        img, transforms.RandomRotation.get_params([-40.0, 40.0]), fill=[0.0] * 3)),
    (transforms.RandomAffine(20, (0.1, 0.2), (0.8, 1.2), (-5, 5, -3, 3)), lambda img: F.affine(
        img, *transforms.RandomAffine.get_params([-20.0, 20.0], (0.1, 0.2), (0.8, 1.2), [-5.0, 5.0, -3.0, 3.0],
                                                 [24, 20]), fill=[0.0] * 3)),
    (transforms.GaussianBlur(5, (0.5, 1.5)), lambda img: F.gaussian_blur(
        img, [5, 5], [transforms.GaussianBlur.get_params(0.5, 1.5)] * 2)),
])
def test_class_equals_get_params_then_functional(t, replay):
    for seed in range(3):
        ember.manual_seed(seed)
        out = t(IMG_U8)
        ember.manual_seed(seed)
        _same(out, replay(IMG_U8))


@pytest.mark.parametrize("t", [
    transforms.ColorJitter(0.4, 0.4, 0.4, 0.1), transforms.RandomPerspective(p=1.0),
    transforms.AutoAugment(transforms.AutoAugmentPolicy.CIFAR10), transforms.RandAugment(),
    transforms.TrivialAugmentWide(), transforms.AugMix(), transforms.RandomErasing(p=1.0, value="random"),
    transforms.ElasticTransform(alpha=20.0, sigma=2.0),
    transforms.RandomOrder([transforms.RandomHorizontalFlip(), transforms.RandomInvert()]),
])
def test_reproducible_under_manual_seed(t):
    x = IMG_U8 if not isinstance(t, transforms.RandomErasing) else IMG_U8.float() / 255
    ember.manual_seed(11)
    a = [t(x) for _ in range(3)]
    ember.manual_seed(11)
    b = [t(x) for _ in range(3)]
    for u, v in zip(a, b):
        _same(u, v)
    assert a[0].shape == x.shape


def test_param_ranges():
    ember.manual_seed(0)
    img = ember.zeros(3, 30, 40)
    for _ in range(200):
        i, j, h, w = transforms.RandomResizedCrop.get_params(img, (0.2, 0.6), (0.5, 2.0))
        assert 0 <= i <= 30 - h and 0 <= j <= 40 - w and 0 < h <= 30 and 0 < w <= 40
        ratio_ok = 0.5 - 0.1 <= w / h <= 2.0 + 0.15
        assert ratio_ok and 0.2 * 1200 * 0.8 <= h * w <= 0.6 * 1200 * 1.2
        angle, (tx, ty), s, (sx, sy) = transforms.RandomAffine.get_params(
            [-10.0, 10.0], (0.1, 0.2), (0.5, 1.5), [-4.0, 4.0, 1.0, 2.0], [40, 30])
        assert -10 <= angle <= 10 and abs(tx) <= 4 and abs(ty) <= 6 and 0.5 <= s <= 1.5
        assert -4 <= sx <= 4 and 1 <= sy <= 2
        start, end = transforms.RandomPerspective.get_params(40, 30, 0.5)
        assert start == [[0, 0], [39, 0], [39, 29], [0, 29]]
        assert 0 <= end[0][0] <= 10 and 0 <= end[0][1] <= 7 and 29 <= end[1][0] <= 39 and 22 <= end[2][1] <= 29
        order, b, c, s2, hh = transforms.ColorJitter.get_params((0.5, 1.5), None, (0.0, 2.0), (-0.1, 0.1))
        assert sorted(order.tolist()) == [0, 1, 2, 3] and c is None
        assert 0.5 <= b <= 1.5 and 0 <= s2 <= 2 and -0.1 <= hh <= 0.1
        i, j, h, w, v = transforms.RandomErasing.get_params(img, (0.02, 0.33), (0.3, 3.3), [0.5])
        assert h < 30 and w < 40 and 0 <= i <= 30 - h and 0 <= j <= 40 - w
    d = transforms.ElasticTransform.get_params([50.0, 50.0], [5.0, 5.0], [30, 40])
    assert tuple(d.shape) == (1, 30, 40, 2)


@pytest.mark.parametrize("t, p", [
    (transforms.RandomHorizontalFlip(0.3), 0.3), (transforms.RandomVerticalFlip(0.7), 0.7),
    (transforms.RandomGrayscale(0.4), 0.4), (transforms.RandomApply([transforms.Lambda(lambda x: x + 1)], 0.6), 0.6),
])
def test_probability_statistics(t, p):
    ember.manual_seed(3)
    x = ember.arange(3 * 2 * 2, dtype=ember.float32).reshape(3, 2, 2)
    hits = sum(not bool((t(x) == x).all()) for _ in range(600))
    # binomial(600, p): 5 standard deviations
    assert abs(hits / 600 - p) < 5 * (p * (1 - p) / 600) ** 0.5


def test_random_choice_weights():
    ember.manual_seed(5)
    t = transforms.RandomChoice([transforms.Lambda(lambda _: 0), transforms.Lambda(lambda _: 1)], p=[0.2, 0.8])
    share = sum(t(None) for _ in range(1000)) / 1000
    assert abs(share - 0.8) < 5 * (0.16 / 1000) ** 0.5


def test_pil_and_tensor_paths_agree_on_geometry():
    arr = IMG_U8.numpy().transpose(1, 2, 0)
    pil = Image.fromarray(arr)
    for fn, args in ((F.hflip, ()), (F.vflip, ()), (F.center_crop, ([7, 9],)), (F.crop, (2, 3, 5, 6))):
        np.testing.assert_array_equal(np.asarray(fn(pil, *args)), fn(IMG_U8, *args).numpy().transpose(1, 2, 0))


def test_to_pil_image_round_trip_and_modes():
    x = IMG_U8
    img = transforms.ToPILImage()(x)
    assert img.mode == "RGB" and img.size == (24, 20)
    np.testing.assert_array_equal(F.pil_to_tensor(img).numpy(), x.numpy())
    assert F.to_pil_image(x[:1]).mode == "L"
    assert F.to_pil_image(ember.ones(1, 4, 4), mode="F").mode == "F"
    # float images are scaled by 255 and truncated, as torch's .mul(255).byte()
    f = ember.tensor([[[0.5, 1.0]]])
    ref = (torch.tensor([[0.5, 1.0]]) * 255).to(torch.uint8).numpy()
    np.testing.assert_array_equal(np.asarray(F.to_pil_image(f)), ref)
    with pytest.raises(TypeError):
        F.to_pil_image([1, 2])


def test_float_kernels_are_differentiable():
    x = ember.rand(1, 3, 6, 7, dtype=ember.float64, requires_grad=True)
    out = F.rotate(F.adjust_contrast(F.resize(x, [5, 5]), 1.3), 15.0, interpolation=F.InterpolationMode.BILINEAR)
    out.sum().backward()
    assert x.grad is not None and tuple(x.grad.shape) == (1, 3, 6, 7)
    assert ember.autograd.gradcheck(lambda t: F.adjust_saturation(F.gaussian_blur(t, [3, 3], [1.0, 1.0]), 0.5), (x,))
