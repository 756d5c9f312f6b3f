"""fashion_resnet and its weights shipped inside the package: no network, hash-checked, and
the accuracy the weights' meta claims, measured again on the real Fashion-MNIST test set
(Debian's dataset-fashion-mnist, which CI installs)."""

import os
import shutil

import numpy as np
import pytest

import ember
from ember_vision import datasets, models, transforms
from ember_vision.models import fashion_mnist

DEBIAN_COPY = "/usr/share/datasets/fashion-mnist"


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("EMBER_HUB_OFFLINE", "1")  # nothing may be downloaded


def test_default_weights_load_without_network():
    model = models.get_model("fashion_resnet", weights="DEFAULT")
    weights = models.get_model_weights("fashion_resnet").DEFAULT
    assert weights is fashion_mnist.FashionResNet_Weights.FASHIONMNIST_V1
    assert weights.meta["categories"] == datasets.FashionMNIST.classes
    assert weights.meta["num_params"] == sum(p.numel() for p in model.parameters())
    assert os.path.getsize(weights.value.path()) < 2_000_000  # a small file in the wheel


def test_claimed_accuracy_holds_on_the_real_test_set(tmp_path):
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    for name in os.listdir(DEBIAN_COPY):
        shutil.copyfile(os.path.join(DEBIAN_COPY, name), raw / name)
    weights = fashion_mnist.FashionResNet_Weights.DEFAULT
    test_set = datasets.FashionMNIST(str(tmp_path), train=False, transform=weights.transforms())
    model = fashion_mnist.fashion_resnet(weights=weights).eval()
    loader = ember.utils.data.DataLoader(test_set, batch_size=1000)
    correct = 0
    with ember.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum().item()
    accuracy = correct / len(test_set)
    assert len(test_set) == 10_000
    assert accuracy >= 0.93
    # the same images, the same weights: only float summation order may move a borderline image
    assert abs(accuracy - weights.meta["_metrics"]["FashionMNIST"]["acc@1"]) <= 5e-4


def test_preset_equals_to_tensor_then_normalize():
    rng = np.random.default_rng(0)
    from PIL import Image
    image = Image.fromarray(rng.integers(0, 256, (28, 28), dtype=np.uint8), mode="L")
    preset = fashion_mnist.FashionResNet_Weights.DEFAULT.transforms()
    expected = transforms.Normalize((fashion_mnist.MEAN,), (fashion_mnist.STD,))(transforms.ToTensor()(image))
    np.testing.assert_allclose(preset(image).numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
    as_tensor = transforms.PILToTensor()(image)
    np.testing.assert_allclose(preset(as_tensor).numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("size", [(28, 28), (45, 60)])
def test_preset_takes_colour_images_of_any_size(size):
    rng = np.random.default_rng(1)
    from PIL import Image
    rgb = Image.fromarray(rng.integers(0, 256, size + (3,), dtype=np.uint8), mode="RGB")
    preset = fashion_mnist.FashionResNet_Weights.DEFAULT.transforms()
    expected = transforms.Compose([transforms.Grayscale(), transforms.Resize(28), transforms.CenterCrop(28),
                                   transforms.ToTensor(),
                                   transforms.Normalize((fashion_mnist.MEAN,), (fashion_mnist.STD,))])(rgb)
    got = preset(rgb)
    assert got.shape == (1, 28, 28)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
    # a uint8 RGB tensor takes the tensor kernels (compared with torchvision's elsewhere)
    tensor = transforms.PILToTensor()(rgb)
    expected = transforms.Compose([transforms.Grayscale(), transforms.Resize(28), transforms.CenterCrop(28),
                                   transforms.ConvertImageDtype(ember.float32),
                                   transforms.Normalize((fashion_mnist.MEAN,), (fashion_mnist.STD,))])(tensor)
    np.testing.assert_allclose(preset(tensor).numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)


def test_num_classes_must_match_the_weights():
    with pytest.raises(ValueError, match="num_classes"):
        fashion_mnist.fashion_resnet(weights="DEFAULT", num_classes=5)
    assert fashion_mnist.fashion_resnet(num_classes=5)(ember.zeros(2, 1, 28, 28)).shape == (2, 5)


def test_a_tampered_file_is_refused(tmp_path, monkeypatch):
    weights = fashion_mnist.FashionResNet_Weights.DEFAULT
    copy = tmp_path / weights.url
    shutil.copyfile(weights.value.path(), copy)
    with open(copy, "r+b") as fh:
        fh.seek(-8, os.SEEK_END)
        fh.write(b"tampered")
    monkeypatch.setattr(fashion_mnist, "_WEIGHTS_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="invalid hash value"):
        weights.get_state_dict()
