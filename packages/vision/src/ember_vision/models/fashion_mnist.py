"""A small ResNet for Fashion-MNIST, with weights trained by the project's own example and
shipped inside the package, so ``fashion_resnet(weights="DEFAULT")`` needs no network.

The weights come from ``examples/vision/train_fashion_mnist.py`` (its docstring and the
README give the run: command, time, test accuracy); their measured accuracy on the 10,000
test images is ``FashionResNet_Weights.FASHIONMNIST_V1.meta["_metrics"]``.
Architecture: ResNet's basic blocks (He et al., "Deep Residual Learning for Image
Recognition", 2016) sized for 28x28 grayscale images.
"""

from __future__ import annotations

import os
from functools import partial

import ember
from ember import nn
from ember.nn import functional as F

from ._api import Weights, WeightsEnum, register_model
from ._utils import _check_sha256_prefix, _ovewrite_named_param

__all__ = ["FashionResNet", "FashionResNet_Weights", "fashion_resnet"]

FASHION_MNIST_CATEGORIES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
                            "Bag", "Ankle boot"]
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set pixel mean and std (in [0, 1])
SIZE = 28  # image side, pixels


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers with an identity (or 1x1 conv-BN) shortcut:
    ``[N, in, H, W] -> [N, out, H / stride, W / stride]``."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, stride, bias=False),
                                          nn.BatchNorm2d(out_channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class FashionResNet(nn.Module):
    """A 3x3 stem, three stages of one basic block each (``widths`` channels, the last two
    halving the resolution), global average pooling and a linear classifier (ember's own
    small model, no torchvision counterpart).
    Input ``[N, 1, 28, 28]`` (normalised by ``FashionMNISTClassification``), output
    logits ``[N, num_classes]`` (``num_classes`` classifier outputs, 10 for Fashion-MNIST)."""

    def __init__(self, widths=(24, 48, 96), num_classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, channels = [], widths[0]
        for i, width in enumerate(widths):
            blocks.append(BasicBlock(channels, width, stride=1 if i == 0 else 2))
            channels = width
        self.stages = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes))

    def forward(self, x):
        return self.head(self.stages(self.stem(x)))


class FashionMNISTClassification(nn.Module):
    """Inference preprocessing: a PIL image or a uint8/float tensor ``[..., C, H, W]``
    (uint8 in 0-255, float in [0, 1]; C 1 or 3) to a float32 ``[..., 1, 28, 28]``
    normalised by the training set's mean and std. Colour images become grayscale
    (ITU-R 601-2 luma, as ``transforms.Grayscale``); an image of another size is resized
    (bilinear, antialiased) so its shorter side is 28 pixels, then center-cropped to 28x28.
    Fashion-MNIST's own 28x28 grayscale images pass through unchanged.

    Raises:
        TypeError: ``img`` neither a PIL image nor a tensor (from the transforms' functions).
    """

    def forward(self, img):
        from ..transforms import functional as TF
        if TF.get_dimensions(img)[0] != 1:
            img = TF.rgb_to_grayscale(img)
        if TF.get_dimensions(img)[1:] != [SIZE, SIZE]:  # pillow's resampling for PIL images
            img = TF.center_crop(TF.resize(img, SIZE, antialias=True), SIZE)
        if not isinstance(img, ember.Tensor):
            img = TF.pil_to_tensor(img)
        img = TF.convert_image_dtype(img, ember.float32)
        return TF.normalize(img, [MEAN], [STD])

    def __repr__(self) -> str:
        lines = ["grayscale=True", f"resize_size=[{SIZE}]", f"crop_size=[{SIZE}]", f"mean=[{MEAN}]", f"std=[{STD}]",
                 "interpolation=InterpolationMode.BILINEAR"]
        return self.__class__.__name__ + "(\n" + "".join(f"    {line}\n" for line in lines) + ")"


_WEIGHTS_DIR = os.path.join(os.path.dirname(__file__), "weights")


class _PackagedWeights(Weights):
    """Weights whose checkpoint (``ember.save``'s format) ships in ``models/weights``."""

    def path(self) -> str:
        return os.path.join(_WEIGHTS_DIR, self.url)


class FashionResNet_Weights(WeightsEnum):
    """Fashion-MNIST weights of :func:`fashion_resnet`, inside the package (nothing is
    downloaded; ``url`` is the file's name in ``ember_vision/models/weights``)."""

    FASHIONMNIST_V1 = _PackagedWeights(
        url="fashion_resnet-89675a3c.pt",
        transforms=partial(FashionMNISTClassification),
        meta={"categories": FASHION_MNIST_CATEGORIES, "num_params": 173842, "min_size": (28, 28),
              "recipe": "examples/vision/train_fashion_mnist.py", "_metrics": {"FashionMNIST": {"acc@1": 0.9314}},
              "_docs": "16 epochs of examples/vision/train_fashion_mnist.py (defaults, seed 0): 5160 s on 2 CPU "
                       "cores; 93.14% on the 10,000 test images."},
    )
    DEFAULT = FASHIONMNIST_V1

    def get_state_dict(self, *args, check_hash: bool = True, **kwargs) -> dict:
        """The packaged checkpoint, its sha256 checked against the prefix in its name. The
        download arguments (``progress``...) are accepted and unused.

        Raises:
            RuntimeError: the file's sha256 does not start with the prefix in its name.
        """
        path = self.value.path()
        if check_hash:
            _check_sha256_prefix(path, self.url.rsplit("-", 1)[-1].split(".")[0])
        return ember.load(path, weights_only=True)


@register_model()
def fashion_resnet(*, weights: FashionResNet_Weights | None = None, progress: bool = True, **kwargs) -> FashionResNet:
    """The Fashion-MNIST ResNet; ``weights="DEFAULT"`` loads the packaged weights.

    Args:
        weights: None, a :class:`FashionResNet_Weights` member or its name.
        progress: accepted for torchvision's signature (nothing is downloaded).
        **kwargs: :class:`FashionResNet`'s arguments (``widths``, ``num_classes``).

    Raises:
        ValueError: ``num_classes`` other than the weights' 10 categories.
    """
    weights = FashionResNet_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = FashionResNet(**kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model
