"""RegNet (torchvision.models.regnet) with torchvision's state_dict layout; builder
``regnet_y_400mf``.

Source: Radosavovic et al., "Designing Network Design Spaces", https://arxiv.org/abs/2003.13678;
layout and initialisation as torchvision 0.29.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from functools import partial
from typing import Callable, List, Optional, Tuple

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _make_divisible, _ovewrite_named_param, handle_legacy_interface
from .mobilenetv2 import Conv2dNormActivation
from .mobilenetv3 import SqueezeExcitation

__all__ = ["RegNet", "BlockParams", "RegNet_Y_400MF_Weights", "regnet_y_400mf"]


class SimpleStemIN(Conv2dNormActivation):
    """3x3 stride-2 convolution, norm, activation."""

    def __init__(self, width_in: int, width_out: int, norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module]) -> None:
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """1x1 (``a``), grouped 3x3 (``b``), optional SE (``se``), linear 1x1 (``c``)."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module], group_width: int, bottleneck_multiplier: float,
                 se_ratio: Optional[float]) -> None:
        layers: "OrderedDict[str, nn.Module]" = OrderedDict()
        w_b = int(round(width_out * bottleneck_multiplier))
        g = w_b // group_width
        layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1, stride=1, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride, groups=g, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        if se_ratio:
            # the squeeze width follows the block's input width, as in the paper's code
            layers["se"] = SqueezeExcitation(input_channels=w_b, squeeze_channels=int(round(se_ratio * width_in)),
                                             activation=activation_layer)
        layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, stride=1, norm_layer=norm_layer,
                                           activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """Residual bottleneck: ``activation(proj(x) + f(x))``, ``proj`` (1x1 conv + norm) only
    when the width or resolution changes."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module], group_width: int = 1,
                 bottleneck_multiplier: float = 1.0, se_ratio: Optional[float] = None) -> None:
        super().__init__()
        self.proj = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride,
                                             norm_layer=norm_layer, activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer, group_width,
                                     bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=True)

    def forward(self, x):
        x = self.proj(x) + self.f(x) if self.proj is not None else x + self.f(x)
        return self.activation(x)


class AnyStage(nn.Sequential):
    """``depth`` blocks named ``block<stage>-<i>``; the first one changes width and stride."""

    def __init__(self, width_in: int, width_out: int, stride: int, depth: int,
                 block_constructor: Callable[..., nn.Module], norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module], group_width: int, bottleneck_multiplier: float,
                 se_ratio: Optional[float] = None, stage_index: int = 0) -> None:
        super().__init__()
        for i in range(depth):
            self.add_module(f"block{stage_index}-{i}",
                            block_constructor(width_in if i == 0 else width_out, width_out, stride if i == 0 else 1,
                                              norm_layer, activation_layer, group_width, bottleneck_multiplier,
                                              se_ratio))


class BlockParams:
    """The stages of a RegNet (torchvision.models.regnet.BlockParams), one entry per stage in
    each list.

    Args:
        depths: blocks per stage.
        widths: output channels per stage.
        group_widths: channels per group of each stage's 3x3 group convolution.
        bottleneck_multipliers: bottleneck width over output width per stage.
        strides: stride of each stage's first block.
        se_ratio: squeeze-and-excitation ratio of the blocks (None: no SE).
    """

    def __init__(self, depths: List[int], widths: List[int], group_widths: List[int],
                 bottleneck_multipliers: List[float], strides: List[int], se_ratio: Optional[float] = None) -> None:
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(cls, depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                         bottleneck_multiplier: float = 1.0, se_ratio: Optional[float] = None,
                         **kwargs) -> "BlockParams":
        """The stages of the quantized linear width rule
        ``w_j = w_0 * w_m ** round(log((w_0 + j * w_a) / w_0) / log(w_m))`` (rounded to multiples
        of 8), grouped into stages of equal width.

        The arithmetic runs in float32 tensors, as torchvision's does, so that the rounding
        lands the same way. Raises ValueError for ``w_a < 0``, ``w_0 <= 0``, ``w_m <= 1`` or
        ``w_0`` not a multiple of 8.
        """
        quant, stride = 8, 2
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError(f"Invalid RegNet settings: expected w_a >= 0, w_0 > 0 and a multiple of 8, w_m > 1; "
                             f"got w_a={w_a}, w_0={w_0}, w_m={w_m}")
        widths_cont = ember.arange(depth) * w_a + w_0
        block_capacity = ember.round(ember.log(widths_cont / w_0) / math.log(w_m))
        block_widths = (ember.round(ember.divide(w_0 * ember.pow(w_m, block_capacity), quant)) * quant).int().tolist()
        num_stages = len(set(block_widths))
        splits = [w != wp for w, wp in zip(block_widths + [0], [0] + block_widths)]
        stage_widths = [w for w, t in zip(block_widths, splits[:-1]) if t]
        starts = [d for d, t in enumerate(splits) if t]
        stage_depths = [b - a for a, b in zip(starts, starts[1:])]
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(
            stage_widths, [bottleneck_multiplier] * num_stages, [group_width] * num_stages)
        return cls(depths=stage_depths, widths=stage_widths, group_widths=group_widths,
                   bottleneck_multipliers=[bottleneck_multiplier] * num_stages, strides=[stride] * num_stages,
                   se_ratio=se_ratio)

    def _get_expanded_params(self):
        return zip(self.widths, self.strides, self.depths, self.group_widths, self.bottleneck_multipliers)

    @staticmethod
    def _adjust_widths_groups_compatibilty(stage_widths: List[int], bottleneck_ratios: List[float],
                                           group_widths: List[int]) -> Tuple[List[int], List[int]]:
        # bottleneck widths must be divisible by their (possibly shrunk) group width
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios)]
        group_widths_min = [min(g, w_bot) for g, w_bot in zip(group_widths, widths)]
        ws_bot = [_make_divisible(w_bot, g) for w_bot, g in zip(widths, group_widths_min)]
        return [int(w_bot / b) for w_bot, b in zip(ws_bot, bottleneck_ratios)], group_widths_min


class RegNet(nn.Module):
    """RegNet classifier (Radosavovic et al., 2020, "Designing Network Design Spaces",
    arXiv:2003.13678; torchvision.models.RegNet): input ``[N, 3, H, W]`` float, output logits
    ``[N, num_classes]``; modules ``stem``, ``trunk_output`` (stages ``block1`` ...),
    ``avgpool``, ``fc``.

    Args:
        block_params: the stages, a :class:`BlockParams`.
        num_classes: classifier outputs.
        stem_width: output channels of the stem.
        stem_type: stem factory (default a strided 3x3 conv, norm, activation).
        block_type: block factory (default the residual bottleneck block).
        norm_layer: normalization factory (default BatchNorm2d).
        activation: activation factory (default ReLU).
    """

    def __init__(self, block_params: BlockParams, num_classes: int = 1000, stem_width: int = 32,
                 stem_type: Optional[Callable[..., nn.Module]] = None,
                 block_type: Optional[Callable[..., nn.Module]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None,
                 activation: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        stem_type = SimpleStemIN if stem_type is None else stem_type
        norm_layer = nn.BatchNorm2d if norm_layer is None else norm_layer
        block_type = ResBottleneckBlock if block_type is None else block_type
        activation = nn.ReLU if activation is None else activation
        self.stem = stem_type(3, stem_width, norm_layer, activation)
        current_width = stem_width
        blocks = []
        for i, (width_out, stride, depth, group_width, bottleneck_multiplier) in \
                enumerate(block_params._get_expanded_params()):
            blocks.append((f"block{i + 1}", AnyStage(current_width, width_out, stride, depth, block_type, norm_layer,
                                                     activation, group_width, bottleneck_multiplier,
                                                     block_params.se_ratio, stage_index=i + 1)))
            current_width = width_out
        self.trunk_output = nn.Sequential(OrderedDict(blocks))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=current_width, out_features=num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.trunk_output(self.stem(x)))
        return self.fc(x.flatten(start_dim=1))


class RegNet_Y_400MF_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`regnet_y_400mf` (torchvision's checkpoints)."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/regnet_y_400mf-c65dace8.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES, "num_params": 4344144,
              "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#small-models",
              "_metrics": {"ImageNet-1K": {"acc@1": 74.046, "acc@5": 91.716}}, "_ops": 0.402, "_file_size": 16.806},
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/regnet_y_400mf-e6988f5f.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES, "num_params": 4344144,
              "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe",
              "_metrics": {"ImageNet-1K": {"acc@1": 75.804, "acc@5": 92.742}}, "_ops": 0.402, "_file_size": 16.806},
    )
    DEFAULT = IMAGENET1K_V2


@register_model()
@handle_legacy_interface(weights=("pretrained", RegNet_Y_400MF_Weights.IMAGENET1K_V1))
def regnet_y_400mf(*, weights: Optional[RegNet_Y_400MF_Weights] = None, progress: bool = True,
                   **kwargs) -> RegNet:
    """RegNetY-400MF (torchvision.models.regnet_y_400mf): depth 16, w_0 48, w_a 27.89,
    w_m 2.09, group width 8, SE ratio 0.25.

    Args:
        weights: a :class:`RegNet_Y_400MF_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: passed to :class:`RegNet` (``norm_layer`` defaults to BatchNorm2d).
    """
    weights = RegNet_Y_400MF_Weights.verify(weights)
    params = BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25,
                                          **kwargs)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    norm_layer = kwargs.pop("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return _load_weights(RegNet(params, norm_layer=norm_layer, **kwargs), weights, progress)
