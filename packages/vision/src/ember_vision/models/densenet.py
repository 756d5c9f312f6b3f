"""DenseNet-121 (torchvision.models.densenet).

Huang et al., "Densely Connected Convolutional Networks", arXiv:1608.06993. State_dict keys
and shapes are torchvision's; the published checkpoint's older key names
(``denselayer1.norm.1.weight``) are renamed on load as torchvision does.
"""

import re
from collections import OrderedDict
from functools import partial
from typing import Any, Optional

import ember
from ember import nn
from ember.nn import functional as F
from ember.utils.checkpoint import checkpoint

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _ovewrite_named_param, handle_legacy_interface

__all__ = ["DenseNet", "DenseNet121_Weights", "densenet121"]


class _DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv (to ``bn_size * growth_rate``), BN-ReLU-3x3 conv (to ``growth_rate``)
    over the concatenation of every earlier feature map of its block."""

    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: list[ember.Tensor]) -> ember.Tensor:
        return self.conv1(self.relu1(self.norm1(ember.cat(list(inputs), 1))))

    def forward(self, input) -> ember.Tensor:
        prev = [input] if isinstance(input, ember.Tensor) else list(input)
        if self.memory_efficient and any(t.requires_grad for t in prev):
            # the concatenation and bottleneck are recomputed in backward instead of kept
            bottleneck = checkpoint(lambda *ts: self.bn_function(ts), *prev, use_reentrant=False)
        else:
            bottleneck = self.bn_function(prev)
        out = self.conv2(self.relu2(self.norm2(bottleneck)))
        if self.drop_rate > 0:
            out = F.dropout(out, p=self.drop_rate, training=self.training)
        return out


class _DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int,
                 drop_rate: float, memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}", _DenseLayer(num_input_features + i * growth_rate, growth_rate,
                                                              bn_size, drop_rate, memory_efficient))

    def forward(self, init_features: ember.Tensor) -> ember.Tensor:
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """DenseNet-BC: a stem, four dense blocks joined by halving transitions, a classifier.

    Input ``[N, 3, H, W]`` float (H, W >= 29), output logits ``[N, num_classes]``.

    Args:
        growth_rate: channels each dense layer adds (``k`` in the paper).
        block_config: dense layers in each of the four blocks.
        num_init_features: channels of the stem convolution.
        bn_size: bottleneck width, as a multiple of ``growth_rate``.
        drop_rate: dropout after each dense layer.
        num_classes: classifier outputs.
        memory_efficient: recompute each layer's concatenation in backward (activation
            checkpointing, arXiv:1707.06990) instead of keeping it; same results.
    """

    def __init__(self, growth_rate: int = 32, block_config: tuple[int, int, int, int] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        channels = num_init_features
        for i, num_layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", _DenseBlock(num_layers, channels, bn_size, growth_rate,
                                                                       drop_rate, memory_efficient))
            channels += num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(channels, channels // 2))
                channels //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(channels))
        self.classifier = nn.Linear(channels, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        out = F.adaptive_avg_pool2d(F.relu(self.features(x)), (1, 1))
        return self.classifier(ember.flatten(out, 1))


# the published checkpoints name ``norm1`` as ``norm.1`` (and so on) inside dense layers
_OLD_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _rename_old_keys(state_dict: dict) -> dict:
    renamed = {}
    for key, value in state_dict.items():
        m = _OLD_KEY.match(key)
        renamed[m.group(1) + m.group(2) if m else key] = value
    return renamed


def _densenet(growth_rate: int, block_config: tuple[int, int, int, int], num_init_features: int,
              weights: Optional[WeightsEnum], progress: bool, **kwargs: Any) -> DenseNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = DenseNet(growth_rate, block_config, num_init_features, **kwargs)
    if weights is not None:
        model.load_state_dict(_rename_old_keys(weights.get_state_dict(progress=progress, check_hash=True)))
    return model


_COMMON_META = {
    "min_size": (29, 29),
    "categories": _IMAGENET_CATEGORIES,
}


class DenseNet121_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`densenet121` (torchvision's checkpoint,
    torchvision.models.DenseNet121_Weights): ``IMAGENET1K_V1`` (acc@1 74.434 %, acc@5 91.972 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    7,978,856 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/densenet121-a639ec97.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 7978856,
            "recipe": "https://github.com/pytorch/vision/pull/116",
            "_metrics": {"ImageNet-1K": {"acc@1": 74.434, "acc@5": 91.972}},
            "_ops": 2.834,
            "_file_size": 30.845,
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet121_Weights.IMAGENET1K_V1))
def densenet121(*, weights: Optional[DenseNet121_Weights] = None, progress: bool = True,
                **kwargs: Any) -> DenseNet:
    """DenseNet-121 (growth 32, blocks 6-12-24-16, 64 stem channels), arXiv:1608.06993.

    Args (keyword-only): ``weights`` (a ``DenseNet121_Weights`` member or its name; default
    None), ``progress`` (download progress bar), ``**kwargs`` passed to ``DenseNet``.
    Raises ValueError when ``num_classes`` differs from the weights' category count.
    """
    weights = DenseNet121_Weights.verify(weights)
    return _densenet(32, (6, 12, 24, 16), 64, weights, progress, **kwargs)
