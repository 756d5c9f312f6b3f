"""ShuffleNetV2 (torchvision.models.shufflenetv2) with torchvision's state_dict layout;
builder ``shufflenet_v2_x1_0``.

Source: Ma et al., "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture
Design", https://arxiv.org/abs/1807.11164; layout as torchvision 0.29.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, List, Optional

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["ShuffleNetV2", "ShuffleNet_V2_X1_0_Weights", "shufflenet_v2_x1_0"]


def channel_shuffle(x, groups: int):
    """Interleave the channel groups of ``[N, C, H, W]``: view as ``[N, groups, C // groups, H, W]``,
    swap the two channel axes, flatten back."""
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    return ember.transpose(x, 1, 2).contiguous().view(n, -1, h, w)


def _depthwise_conv(i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0,
                    bias: bool = False) -> nn.Conv2d:
    return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)


class InvertedResidual(nn.Module):
    """ShuffleNetV2 unit: at stride 1 half the channels pass through and the other half go
    through ``branch2``; at stride 2 both branches see the whole input. Then a 2-group shuffle.

    Raises ValueError for a stride outside [1, 3], or, at stride 1, ``inp != (oup // 2) * 2``.
    """

    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        if not 1 <= stride <= 3:
            raise ValueError(f"illegal stride value: expected 1 to 3, got {stride}")
        self.stride = stride
        branch_features = oup // 2
        if self.stride == 1 and inp != branch_features << 1:
            raise ValueError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If stride == 1 "
                             "then inp should be equal to oup // 2 << 1.")
        if self.stride > 1:
            self.branch1 = nn.Sequential(
                _depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if self.stride > 1 else branch_features, branch_features, kernel_size=1, stride=1,
                      padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            _depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = ember.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = ember.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """ShuffleNetV2 classifier (Ma et al., 2018, arXiv:1807.11164; torchvision.models.ShuffleNetV2):
    input ``[N, 3, H, W]`` float, output logits ``[N, num_classes]``.

    Args:
        stages_repeats: units in stages 2-4 (3 ints).
        stages_out_channels: widths of conv1, the three stages and conv5 (5 ints).
        num_classes: classifier outputs.
        inverted_residual: unit factory ``(in_channels, out_channels, stride)``.

    Raises ValueError for other lengths. Parameters keep the layers' default initialisation, as
    torchvision does.
    """

    def __init__(self, stages_repeats: List[int], stages_out_channels: List[int], num_classes: int = 1000,
                 inverted_residual: Callable[..., nn.Module] = InvertedResidual) -> None:
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError(f"expected stages_repeats as list of 3 positive ints, got {stages_repeats}")
        if len(stages_out_channels) != 5:
            raise ValueError(f"expected stages_out_channels as list of 5 positive ints, got {stages_out_channels}")
        self._stage_out_channels = stages_out_channels
        input_channels, output_channels = 3, stages_out_channels[0]
        self.conv1 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
                                   nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
        input_channels = output_channels
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        for name, repeats, output_channels in zip(["stage2", "stage3", "stage4"], stages_repeats,
                                                  stages_out_channels[1:]):
            seq = [inverted_residual(input_channels, output_channels, 2)]
            seq += [inverted_residual(output_channels, output_channels, 1) for _ in range(repeats - 1)]
            setattr(self, name, nn.Sequential(*seq))
            input_channels = output_channels
        output_channels = stages_out_channels[-1]
        self.conv5 = nn.Sequential(nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
                                   nn.BatchNorm2d(output_channels), nn.ReLU(inplace=True))
        self.fc = nn.Linear(output_channels, num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.fc(x.mean([2, 3]))  # global average pool


class ShuffleNet_V2_X1_0_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`shufflenet_v2_x1_0` (torchvision's checkpoint)."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/shufflenetv2_x1-5666bf0f80.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES, "num_params": 2278604,
              "recipe": "https://github.com/ericsun99/Shufflenet-v2-Pytorch",
              "_metrics": {"ImageNet-1K": {"acc@1": 69.362, "acc@5": 88.316}}, "_ops": 0.145, "_file_size": 8.791},
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1))
def shufflenet_v2_x1_0(*, weights: Optional[ShuffleNet_V2_X1_0_Weights] = None, progress: bool = True,
                       **kwargs) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.0x widths (torchvision.models.shufflenet_v2_x1_0): repeats
    (4, 8, 4), widths (24, 116, 232, 464, 1024).

    Args:
        weights: a :class:`ShuffleNet_V2_X1_0_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: passed to :class:`ShuffleNetV2`.
    """
    weights = ShuffleNet_V2_X1_0_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(ShuffleNetV2([4, 8, 4], [24, 116, 232, 464, 1024], **kwargs), weights, progress)
