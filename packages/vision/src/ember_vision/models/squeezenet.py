"""SqueezeNet 1.0 and 1.1 (torchvision.models.squeezenet).

Iandola et al., "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB
model size", arXiv:1602.07360; version 1.1 is the cheaper variant from the authors'
repository. State_dict keys and shapes are torchvision's.
"""

from functools import partial
from typing import Any, Optional

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["SqueezeNet", "SqueezeNet1_0_Weights", "SqueezeNet1_1_Weights", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    """A 1x1 squeeze convolution, then 1x1 and 3x3 expand convolutions concatenated on the
    channel dimension (``expand1x1_planes + expand3x3_planes`` outputs)."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return ember.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


def _pool() -> nn.MaxPool2d:
    return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)


class SqueezeNet(nn.Module):
    """SqueezeNet: a stem convolution, Fire modules between max pools, and a 1x1
    convolution classifier averaged over space.

    Input ``[N, 3, H, W]`` float (H, W >= 21 for 1.0, >= 17 for 1.1), output logits
    ``[N, num_classes]`` (Iandola et al., 2016, arXiv:1602.07360; torchvision.models.SqueezeNet).
    ``dropout``: probability of the dropout before the classifier convolution; ``num_classes``:
    outputs.

    Raises ValueError for a ``version`` other than ``"1_0"`` or ``"1_1"``.
    """

    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2), nn.ReLU(inplace=True), _pool(),
                Fire(96, 16, 64, 64), Fire(128, 16, 64, 64), Fire(128, 32, 128, 128), _pool(),
                Fire(256, 32, 128, 128), Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
                _pool(), Fire(512, 64, 256, 256),
            )
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2), nn.ReLU(inplace=True), _pool(),
                Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), _pool(),
                Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), _pool(),
                Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256), Fire(512, 64, 256, 256),
            )
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:  # small start for the classifier
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return ember.flatten(self.classifier(self.features(x)), 1)


def _squeezenet(version: str, weights: Optional[WeightsEnum], progress: bool, **kwargs: Any) -> SqueezeNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(SqueezeNet(version, **kwargs), weights, progress)


_COMMON_META = {
    "categories": _IMAGENET_CATEGORIES,
    "recipe": "https://github.com/pytorch/vision/pull/49#issuecomment-277560717",
}


class SqueezeNet1_0_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`squeezenet1_0` (torchvision's checkpoint,
    torchvision.models.SqueezeNet1_0_Weights): ``IMAGENET1K_V1`` (acc@1 58.092 %, acc@5 80.42 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    1,248,424 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/squeezenet1_0-b66bff10.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "min_size": (21, 21),
            "num_params": 1248424,
            "_metrics": {"ImageNet-1K": {"acc@1": 58.092, "acc@5": 80.420}},
            "_ops": 0.819,
            "_file_size": 4.778,
        },
    )
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`squeezenet1_1` (torchvision's checkpoint,
    torchvision.models.SqueezeNet1_1_Weights): ``IMAGENET1K_V1`` (acc@1 58.178 %, acc@5 80.624
    %; resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    1,235,496 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "min_size": (17, 17),
            "num_params": 1235496,
            "_metrics": {"ImageNet-1K": {"acc@1": 58.178, "acc@5": 80.624}},
            "_ops": 0.349,
            "_file_size": 4.729,
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", SqueezeNet1_0_Weights.IMAGENET1K_V1))
def squeezenet1_0(*, weights: Optional[SqueezeNet1_0_Weights] = None, progress: bool = True,
                  **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.0 (arXiv:1602.07360).

    Args (keyword-only): ``weights`` (a ``SqueezeNet1_0_Weights`` member or its name; default
    None), ``progress`` (download progress bar), ``**kwargs`` passed to ``SqueezeNet``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = SqueezeNet1_0_Weights.verify(weights)
    return _squeezenet("1_0", weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", SqueezeNet1_1_Weights.IMAGENET1K_V1))
def squeezenet1_1(*, weights: Optional[SqueezeNet1_1_Weights] = None, progress: bool = True,
                  **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.1: 2.4x less computation than 1.0 at the same accuracy.

    Args (keyword-only): ``weights`` (a ``SqueezeNet1_1_Weights`` member or its name; default
    None), ``progress`` (download progress bar), ``**kwargs`` passed to ``SqueezeNet``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = SqueezeNet1_1_Weights.verify(weights)
    return _squeezenet("1_1", weights, progress, **kwargs)
