"""VGG 11/13/16/19, with or without batch normalization (torchvision.models.vgg).

Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
Recognition", arXiv:1409.1556 (configurations A, B, D, E). State_dict keys and shapes are
torchvision's.
"""

from functools import partial
from typing import Any, Optional, Union

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
           "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn",
           "vgg16", "vgg16_bn", "vgg19", "vgg19_bn"]


class VGG(nn.Module):
    """VGG: a convolutional ``features`` stack, adaptive pooling to 7x7, three linear layers.

    Input ``[N, 3, H, W]`` float (H, W >= 32), output logits ``[N, num_classes]``
    (Simonyan & Zisserman, 2014, arXiv:1409.1556; torchvision.models.VGG).
    ``init_weights``: Kaiming-normal convolutions, N(0, 0.01) linear weights, zero biases;
    ``dropout``: probability of the classifier's two dropout layers; ``num_classes``: outputs.
    """

    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def make_layers(cfg: list[Union[str, int]], batch_norm: bool = False) -> nn.Sequential:
    """The feature stack of a configuration: an int is a 3x3 convolution (+ BatchNorm) + ReLU
    with that many output channels, ``"M"`` a 2x2 max pool."""
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


# the paper's configurations: A (11 weight layers), B (13), D (16), E (19)
cfgs: dict[str, list[Union[str, int]]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _vgg(cfg: str, batch_norm: bool, weights: Optional[WeightsEnum], progress: bool, **kwargs: Any) -> VGG:
    if weights is not None:
        kwargs["init_weights"] = False  # overwritten by the checkpoint anyway
        if weights.meta["categories"] is not None:  # feature-extractor weights fix no class count
            _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs), weights, progress)


_COMMON_META = {
    "min_size": (32, 32),
    "categories": _IMAGENET_CATEGORIES,
}


class VGG11_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg11` (torchvision's checkpoint,
    torchvision.models.VGG11_Weights): ``IMAGENET1K_V1`` (acc@1 69.02 %, acc@5 88.628 %; resize
    256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification (bilinear
    resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 132,863,336
    and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg11-8a719046.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 132863336,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 69.02, "acc@5": 88.628}},
            "_ops": 7.609,
            "_file_size": 506.84,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg11_bn` (torchvision's checkpoint,
    torchvision.models.VGG11_BN_Weights): ``IMAGENET1K_V1`` (acc@1 70.37 %, acc@5 89.81 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    132,868,840 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg11_bn-6002323d.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 132868840,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 70.37, "acc@5": 89.81}},
            "_ops": 7.609,
            "_file_size": 506.881,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg13` (torchvision's checkpoint,
    torchvision.models.VGG13_Weights): ``IMAGENET1K_V1`` (acc@1 69.928 %, acc@5 89.246 %; resize
    256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification (bilinear
    resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 133,047,848
    and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg13-19584684.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 133047848,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 69.928, "acc@5": 89.246}},
            "_ops": 11.308,
            "_file_size": 507.545,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg13_bn` (torchvision's checkpoint,
    torchvision.models.VGG13_BN_Weights): ``IMAGENET1K_V1`` (acc@1 71.586 %, acc@5 90.374 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    133,053,736 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg13_bn-abd245e5.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 133053736,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 71.586, "acc@5": 90.374}},
            "_ops": 11.308,
            "_file_size": 507.59,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg16` (torchvision's checkpoints,
    torchvision.models.VGG16_Weights): ``IMAGENET1K_V1`` (acc@1 71.592 %, acc@5 90.382 %; resize
    256, crop 224), ``IMAGENET1K_FEATURES`` (the SSD feature extractor's weights, no classifier:
    the preset keeps pixel values in [0, 255] minus the mean); ``DEFAULT`` is ``IMAGENET1K_V1``.
    Presets are ImageClassification (bilinear resize in pixels, center crop, ImageNet mean/std);
    ``meta`` has ``num_params`` = 138,357,544 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg16-397923af.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 138357544,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 71.592, "acc@5": 90.382}},
            "_ops": 15.47,
            "_file_size": 527.796,
        },
    )
    IMAGENET1K_FEATURES = Weights(
        url="https://download.pytorch.org/models/vgg16_features-amdegroot-88682ab5.pth",
        # the SSD feature extractor's preprocessing: pixel values in [0, 255] minus the mean
        transforms=partial(ImageClassification, crop_size=224, mean=(0.48235, 0.45882, 0.40784),
                           std=(1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0)),
        meta={
            **_COMMON_META,
            "categories": None,
            "num_params": 138357544,
            "recipe": "https://github.com/amdegroot/ssd.pytorch#training-ssd",
            "_metrics": {"ImageNet-1K": {"acc@1": float("nan"), "acc@5": float("nan")}},
            "_ops": 15.47,
            "_file_size": 527.802,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg16_bn` (torchvision's checkpoint,
    torchvision.models.VGG16_BN_Weights): ``IMAGENET1K_V1`` (acc@1 73.36 %, acc@5 91.516 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    138,365,992 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg16_bn-6c64b313.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 138365992,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 73.36, "acc@5": 91.516}},
            "_ops": 15.47,
            "_file_size": 527.866,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg19` (torchvision's checkpoint,
    torchvision.models.VGG19_Weights): ``IMAGENET1K_V1`` (acc@1 72.376 %, acc@5 90.876 %; resize
    256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification (bilinear
    resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 143,667,240
    and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg19-dcbb9e9d.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 143667240,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 72.376, "acc@5": 90.876}},
            "_ops": 19.632,
            "_file_size": 548.051,
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`vgg19_bn` (torchvision's checkpoint,
    torchvision.models.VGG19_BN_Weights): ``IMAGENET1K_V1`` (acc@1 74.218 %, acc@5 91.842 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    143,678,248 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vgg19_bn-c79401a0.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 143678248,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg",
            "_metrics": {"ImageNet-1K": {"acc@1": 74.218, "acc@5": 91.842}},
            "_ops": 19.632,
            "_file_size": 548.143,
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG11_Weights.IMAGENET1K_V1))
def vgg11(*, weights: Optional[VGG11_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (configuration "A"), arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG11_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG11_Weights.verify(weights)
    return _vgg("A", False, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG11_BN_Weights.IMAGENET1K_V1))
def vgg11_bn(*, weights: Optional[VGG11_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (configuration "A") with batch normalization, arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG11_BN_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG11_BN_Weights.verify(weights)
    return _vgg("A", True, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG13_Weights.IMAGENET1K_V1))
def vgg13(*, weights: Optional[VGG13_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 (configuration "B"), arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG13_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG13_Weights.verify(weights)
    return _vgg("B", False, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG13_BN_Weights.IMAGENET1K_V1))
def vgg13_bn(*, weights: Optional[VGG13_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 (configuration "B") with batch normalization, arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG13_BN_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG13_BN_Weights.verify(weights)
    return _vgg("B", True, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG16_Weights.IMAGENET1K_V1))
def vgg16(*, weights: Optional[VGG16_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (configuration "D"), arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG16_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG16_Weights.verify(weights)
    return _vgg("D", False, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG16_BN_Weights.IMAGENET1K_V1))
def vgg16_bn(*, weights: Optional[VGG16_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (configuration "D") with batch normalization, arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG16_BN_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG16_BN_Weights.verify(weights)
    return _vgg("D", True, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG19_Weights.IMAGENET1K_V1))
def vgg19(*, weights: Optional[VGG19_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 (configuration "E"), arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG19_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG19_Weights.verify(weights)
    return _vgg("E", False, weights, progress, **kwargs)

@register_model()
@handle_legacy_interface(weights=("pretrained", VGG19_BN_Weights.IMAGENET1K_V1))
def vgg19_bn(*, weights: Optional[VGG19_BN_Weights] = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 (configuration "E") with batch normalization, arXiv:1409.1556.

    Args (keyword-only): ``weights`` (a ``VGG19_BN_Weights`` member or its name; default None),
    ``progress`` (download progress bar), ``**kwargs`` passed to ``VGG``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = VGG19_BN_Weights.verify(weights)
    return _vgg("E", True, weights, progress, **kwargs)
