"""MobileNetV3 small and large (torchvision.models.mobilenetv3), with torchvision's
state_dict layout.

Source: Howard et al., "Searching for MobileNetV3", https://arxiv.org/abs/1905.02244;
layout and initialisation as torchvision 0.29.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, List, Optional, Sequence

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _make_divisible, _ovewrite_named_param, handle_legacy_interface
from .mobilenetv2 import Conv2dNormActivation, _init_weights

__all__ = ["MobileNetV3", "MobileNet_V3_Large_Weights", "MobileNet_V3_Small_Weights", "mobilenet_v3_large",
           "mobilenet_v3_small"]


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation (Hu et al., https://arxiv.org/abs/1709.01507; torchvision.ops
    SqueezeExcitation): ``x * scale_activation(fc2(activation(fc1(avgpool(x)))))``,
    ``fc1``/``fc2`` being 1x1 convolutions. Input and output ``[N, input_channels, H, W]``."""

    def __init__(self, input_channels: int, squeeze_channels: int,
                 activation: Callable[..., nn.Module] = nn.ReLU,
                 scale_activation: Callable[..., nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        scale = self.activation(self.fc1(self.avgpool(input)))
        return self.scale_activation(self.fc2(scale))

    def forward(self, input):
        return self._scale(input) * input


class InvertedResidualConfig:
    """One bottleneck row of the MobileNetV3 tables; channels scaled by ``width_mult``."""

    def __init__(self, input_channels: int, kernel: int, expanded_channels: int, out_channels: int, use_se: bool,
                 activation: str, stride: int, dilation: int, width_mult: float) -> None:
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels: int, width_mult: float) -> int:
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """Expansion 1x1, depthwise kxk, optional SE (hard-sigmoid gate), linear 1x1 projection."""

    def __init__(self, cnf: InvertedResidualConfig, norm_layer: Callable[..., nn.Module],
                 se_layer: Callable[..., nn.Module] = partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError(f"illegal stride value: expected 1 or 2, got {cnf.stride}")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers: List[nn.Module] = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                           stride=stride, dilation=cnf.dilation, groups=cnf.expanded_channels,
                                           norm_layer=norm_layer, activation_layer=activation_layer))
        if cnf.use_se:
            layers.append(se_layer(cnf.expanded_channels, _make_divisible(cnf.expanded_channels // 4, 8)))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = result + input
        return result


class MobileNetV3(nn.Module):
    """MobileNetV3 classifier (Howard et al., 2019, "Searching for MobileNetV3",
    arXiv:1905.02244; torchvision.models.MobileNetV3): input ``[N, 3, H, W]`` float, output
    logits ``[N, num_classes]``.

    Args:
        inverted_residual_setting: the blocks, a sequence of ``InvertedResidualConfig``.
        last_channel: width of the classifier's hidden linear layer.
        num_classes: classifier outputs.
        block: block factory (default the inverted residual block).
        norm_layer: normalization factory (default BatchNorm2d, eps 0.001, momentum 0.01).
        dropout: dropout before the last linear layer.

    Raises ValueError for an empty ``inverted_residual_setting`` and TypeError when it is not
    a sequence of ``InvertedResidualConfig``.
    """

    def __init__(self, inverted_residual_setting: Sequence[InvertedResidualConfig], last_channel: int,
                 num_classes: int = 1000, block: Optional[Callable[..., nn.Module]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None, dropout: float = 0.2, **kwargs) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, Sequence)
                and all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig], "
                            f"got {type(inverted_residual_setting).__name__}")
        if block is None:
            block = InvertedResidual
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        first = inverted_residual_setting[0].input_channels
        layers: List[nn.Module] = [Conv2dNormActivation(3, first, kernel_size=3, stride=2, norm_layer=norm_layer,
                                                        activation_layer=nn.Hardswish)]
        layers += [block(cnf, norm_layer) for cnf in inverted_residual_setting]
        last_in = inverted_residual_setting[-1].out_channels
        last_out = 6 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(last_out, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True),
            nn.Linear(last_channel, num_classes),
        )
        _init_weights(self)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def _mobilenet_v3_conf(arch: str, width_mult: float = 1.0, reduced_tail: bool = False, dilated: bool = False,
                       **kwargs):
    """The bottleneck table and last channel count of ``arch`` (torchvision's tables)."""
    rd = 2 if reduced_tail else 1
    dil = 2 if dilated else 1
    c = partial(InvertedResidualConfig, width_mult=width_mult)
    if arch == "mobilenet_v3_large":
        setting = [
            c(16, 3, 16, 16, False, "RE", 1, 1), c(16, 3, 64, 24, False, "RE", 2, 1),
            c(24, 3, 72, 24, False, "RE", 1, 1), c(24, 5, 72, 40, True, "RE", 2, 1),
            c(40, 5, 120, 40, True, "RE", 1, 1), c(40, 5, 120, 40, True, "RE", 1, 1),
            c(40, 3, 240, 80, False, "HS", 2, 1), c(80, 3, 200, 80, False, "HS", 1, 1),
            c(80, 3, 184, 80, False, "HS", 1, 1), c(80, 3, 184, 80, False, "HS", 1, 1),
            c(80, 3, 480, 112, True, "HS", 1, 1), c(112, 3, 672, 112, True, "HS", 1, 1),
            c(112, 5, 672, 160 // rd, True, "HS", 2, dil),
            c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil),
            c(160 // rd, 5, 960 // rd, 160 // rd, True, "HS", 1, dil),
        ]
        last_channel = InvertedResidualConfig.adjust_channels(1280 // rd, width_mult)
    elif arch == "mobilenet_v3_small":
        setting = [
            c(16, 3, 16, 16, True, "RE", 2, 1), c(16, 3, 72, 24, False, "RE", 2, 1),
            c(24, 3, 88, 24, False, "RE", 1, 1), c(24, 5, 96, 40, True, "HS", 2, 1),
            c(40, 5, 240, 40, True, "HS", 1, 1), c(40, 5, 240, 40, True, "HS", 1, 1),
            c(40, 5, 120, 48, True, "HS", 1, 1), c(48, 5, 144, 48, True, "HS", 1, 1),
            c(48, 5, 288, 96 // rd, True, "HS", 2, dil),
            c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil),
            c(96 // rd, 5, 576 // rd, 96 // rd, True, "HS", 1, dil),
        ]
        last_channel = InvertedResidualConfig.adjust_channels(1024 // rd, width_mult)
    else:
        raise ValueError(f"Unsupported model type {arch}: expected mobilenet_v3_large or mobilenet_v3_small")
    return setting, last_channel


def _mobilenet_v3(arch: str, weights, progress: bool, **kwargs) -> MobileNetV3:
    setting, last_channel = _mobilenet_v3_conf(arch, **kwargs)
    for key in ("width_mult", "reduced_tail", "dilated"):
        kwargs.pop(key, None)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(MobileNetV3(setting, last_channel, **kwargs), weights, progress)


_COMMON_META = {"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES}
_V1_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv3-large--small"


class MobileNet_V3_Large_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`mobilenet_v3_large` (torchvision's checkpoints)."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v3_large-8738ca79.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={**_COMMON_META, "num_params": 5483032, "recipe": _V1_RECIPE,
              "_metrics": {"ImageNet-1K": {"acc@1": 74.042, "acc@5": 91.34}}, "_ops": 0.217, "_file_size": 21.114},
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v3_large-5c1a4163.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={**_COMMON_META, "num_params": 5483032,
              "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning",
              "_metrics": {"ImageNet-1K": {"acc@1": 75.274, "acc@5": 92.566}}, "_ops": 0.217, "_file_size": 21.107},
    )
    DEFAULT = IMAGENET1K_V2


class MobileNet_V3_Small_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`mobilenet_v3_small` (torchvision's checkpoint)."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v3_small-047dcff4.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={**_COMMON_META, "num_params": 2542856, "recipe": _V1_RECIPE,
              "_metrics": {"ImageNet-1K": {"acc@1": 67.668, "acc@5": 87.402}}, "_ops": 0.057, "_file_size": 9.829},
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def mobilenet_v3_large(*, weights: Optional[MobileNet_V3_Large_Weights] = None, progress: bool = True,
                       **kwargs) -> MobileNetV3:
    """MobileNetV3-Large (torchvision.models.mobilenet_v3_large).

    Args:
        weights: a :class:`MobileNet_V3_Large_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: ``width_mult``, ``reduced_tail``, ``dilated`` shape the table; the rest go to
            :class:`MobileNetV3`.
    """
    weights = MobileNet_V3_Large_Weights.verify(weights)
    return _mobilenet_v3("mobilenet_v3_large", weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", MobileNet_V3_Small_Weights.IMAGENET1K_V1))
def mobilenet_v3_small(*, weights: Optional[MobileNet_V3_Small_Weights] = None, progress: bool = True,
                       **kwargs) -> MobileNetV3:
    """MobileNetV3-Small (torchvision.models.mobilenet_v3_small).

    Args:
        weights: a :class:`MobileNet_V3_Small_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: ``width_mult``, ``reduced_tail``, ``dilated`` shape the table; the rest go to
            :class:`MobileNetV3`.
    """
    weights = MobileNet_V3_Small_Weights.verify(weights)
    return _mobilenet_v3("mobilenet_v3_small", weights, progress, **kwargs)
