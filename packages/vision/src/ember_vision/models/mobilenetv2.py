"""MobileNetV2 (torchvision.models.mobilenetv2), with torchvision's state_dict layout.

Source: Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
https://arxiv.org/abs/1801.04381; layout and initialisation as torchvision 0.29.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, List, Optional

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _make_divisible, _ovewrite_named_param, handle_legacy_interface

__all__ = ["MobileNetV2", "MobileNet_V2_Weights", "mobilenet_v2"]


class Conv2dNormActivation(nn.Sequential):
    """Conv2d, then a norm layer, then an activation, as one Sequential
    (torchvision.ops.misc.Conv2dNormActivation): keys ``0.weight``, ``1.weight`` ...

    ``padding`` defaults to ``(kernel_size - 1) // 2 * dilation`` (same size at stride 1);
    the convolution has a bias only when ``norm_layer`` is None, unless ``bias`` says so.
    Input ``[N, in_channels, H, W]``, output ``[N, out_channels, H', W']``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size=3, stride=1, padding=None,
                 groups: int = 1, norm_layer: Optional[Callable[..., nn.Module]] = nn.BatchNorm2d,
                 activation_layer: Optional[Callable[..., nn.Module]] = nn.ReLU, dilation=1,
                 inplace: Optional[bool] = True, bias: Optional[bool] = None) -> None:
        if padding is None:
            if isinstance(kernel_size, int) and isinstance(dilation, int):
                padding = (kernel_size - 1) // 2 * dilation
            else:
                ks = (kernel_size,) * 2 if isinstance(kernel_size, int) else tuple(kernel_size)
                dl = (dilation,) * 2 if isinstance(dilation, int) else tuple(dilation)
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, dl))
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                            groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


class InvertedResidual(nn.Module):
    """1x1 expansion (skipped when ``expand_ratio`` is 1), 3x3 depthwise, linear 1x1
    projection; a residual connection when the stride is 1 and the width is kept."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers: List[nn.Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers += [
            Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer,
                                 activation_layer=nn.ReLU6),
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup),
        ]
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 classifier (Sandler et al., 2018, arXiv:1801.04381; torchvision.models.MobileNetV2):
    input ``[N, 3, H, W]`` float, output logits ``[N, num_classes]``.

    Args:
        num_classes: classifier outputs.
        width_mult: channel multiplier.
        inverted_residual_setting: a list of ``[t, c, n, s]`` rows (expansion, channels,
            repeats, first stride); default the paper's table.
        round_nearest: channel counts (scaled by ``width_mult``) are rounded to a multiple of it.
        block: block factory (default the inverted residual block).
        norm_layer: normalization factory (default BatchNorm2d).
        dropout: dropout before the classifier.

    Raises ValueError for a malformed setting.
    """

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, inverted_residual_setting=None,
                 round_nearest: int = 8, block: Optional[Callable[..., nn.Module]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None, dropout: float = 0.2) -> None:
        super().__init__()
        if block is None:
            block = InvertedResidual
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        input_channel, last_channel = 32, 1280
        if inverted_residual_setting is None:
            inverted_residual_setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2],
                                         [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError(f"inverted_residual_setting should be non-empty and a 4-element list, "
                             f"got {inverted_residual_setting}")
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features: List[nn.Module] = [Conv2dNormActivation(3, input_channel, stride=2, norm_layer=norm_layer,
                                                          activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                features.append(block(input_channel, output_channel, s if i == 0 else 1, expand_ratio=t,
                                      norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1,
                                             norm_layer=norm_layer, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        _init_weights(self)

    def forward(self, x):
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = ember.flatten(x, 1)
        return self.classifier(x)


def _init_weights(model: nn.Module, linear_std: float = 0.01) -> None:
    """torchvision's init for the mobile families: He-normal (fan_out) convolutions,
    unit norms, N(0, linear_std) linear layers, zero biases."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, linear_std)
            nn.init.zeros_(m.bias)


_COMMON_META = {"num_params": 3504872, "min_size": (1, 1), "categories": _IMAGENET_CATEGORIES}


class MobileNet_V2_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`mobilenet_v2` (torchvision's checkpoints)."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v2-b0353104.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={**_COMMON_META,
              "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#mobilenetv2",
              "_metrics": {"ImageNet-1K": {"acc@1": 71.878, "acc@5": 90.286}},
              "_ops": 0.301, "_file_size": 13.555},
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/mobilenet_v2-7ebf99e0.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={**_COMMON_META, "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe-with-reg-tuning",
              "_metrics": {"ImageNet-1K": {"acc@1": 72.154, "acc@5": 90.822}},
              "_ops": 0.301, "_file_size": 13.598},
    )
    DEFAULT = IMAGENET1K_V2


@register_model()
@handle_legacy_interface(weights=("pretrained", MobileNet_V2_Weights.IMAGENET1K_V1))
def mobilenet_v2(*, weights: Optional[MobileNet_V2_Weights] = None, progress: bool = True,
                 **kwargs) -> MobileNetV2:
    """MobileNetV2 (torchvision.models.mobilenet_v2).

    Args:
        weights: a :class:`MobileNet_V2_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: passed to :class:`MobileNetV2`; ``num_classes`` must match the weights.
    """
    weights = MobileNet_V2_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(MobileNetV2(**kwargs), weights, progress)
