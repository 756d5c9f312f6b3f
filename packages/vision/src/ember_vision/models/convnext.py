"""ConvNeXt (torchvision.models.convnext) with torchvision's state_dict layout; builder
``convnext_tiny``.

Source: Liu et al., "A ConvNet for the 2020s", https://arxiv.org/abs/2201.03545; layout and
initialisation as torchvision 0.29.
"""

from __future__ import annotations

from functools import partial
from typing import Callable, List, Optional, Sequence

import ember
from ember import nn

from ..ops.stochastic_depth import StochasticDepth
from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface
from .mobilenetv2 import Conv2dNormActivation

__all__ = ["ConvNeXt", "CNBlockConfig", "LayerNorm2d", "ConvNeXt_Tiny_Weights", "convnext_tiny"]


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of ``[N, C, H, W]`` (``normalized_shape`` is ``C``;
    torchvision.models.convnext.LayerNorm2d): ``nn.LayerNorm``'s arguments.

    Args:
        normalized_shape: C, the channel count.
        eps: added to the variance.
        elementwise_affine: learn a per-channel scale (and ``bias``, when True).
        bias: learn a per-channel shift.
        device, dtype: of the parameters.
    """

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class Permute(nn.Module):
    """``x.permute(*dims)`` as a module (torchvision.ops.misc.Permute)."""

    def __init__(self, dims: List[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return ember.permute(x, self.dims)


class CNBlock(nn.Module):
    """ConvNeXt block: depthwise 7x7, LayerNorm, Linear 4x, GELU, Linear back, scaled by the
    learned ``layer_scale`` ``[dim, 1, 1]``, stochastic depth, residual."""

    def __init__(self, dim: int, layer_scale: float, stochastic_depth_prob: float,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(dim, 4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(4 * dim, dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        return self.stochastic_depth(self.layer_scale * self.block(input)) + input


class CNBlockConfig:
    """One ConvNeXt stage (torchvision.models.convnext.CNBlockConfig).

    Args:
        input_channels: the stage's width.
        out_channels: the width after the stage's downsampling layer (None for the last stage).
        num_layers: the stage's number of blocks.
    """

    def __init__(self, input_channels: int, out_channels: Optional[int], num_layers: int) -> None:
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(input_channels={self.input_channels}, "
                f"out_channels={self.out_channels}, num_layers={self.num_layers})")


class ConvNeXt(nn.Module):
    """ConvNeXt classifier (Liu et al., 2022, "A ConvNet for the 2020s", arXiv:2201.03545;
    torchvision.models.ConvNeXt): input ``[N, 3, H, W]`` float (H, W >= 32), output logits
    ``[N, num_classes]``.

    Args:
        block_setting: one :class:`CNBlockConfig` per stage.
        stochastic_depth_prob: block ``i`` of ``n`` drops its branch with probability
            ``stochastic_depth_prob * i / (n - 1)``.
        layer_scale: initial value of each block's learned residual scale.
        num_classes: classifier outputs.
        block: block factory (default the ConvNeXt block).
        norm_layer: normalization factory (default :class:`LayerNorm2d` with eps 1e-6).

    Raises ValueError for an empty ``block_setting`` and TypeError when it is not a sequence
    of :class:`CNBlockConfig`.
    """

    def __init__(self, block_setting: Sequence[CNBlockConfig], stochastic_depth_prob: float = 0.0,
                 layer_scale: float = 1e-6, num_classes: int = 1000,
                 block: Optional[Callable[..., nn.Module]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None, **kwargs) -> None:
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        if not (isinstance(block_setting, Sequence) and all(isinstance(s, CNBlockConfig) for s in block_setting)):
            raise TypeError(f"The block_setting should be List[CNBlockConfig], got {type(block_setting).__name__}")
        block = CNBlock if block is None else block
        norm_layer = partial(LayerNorm2d, eps=1e-6) if norm_layer is None else norm_layer
        layers: List[nn.Module] = [Conv2dNormActivation(3, block_setting[0].input_channels, kernel_size=4, stride=4,
                                                        padding=0, norm_layer=norm_layer, activation_layer=None,
                                                        bias=True)]
        total = sum(cnf.num_layers for cnf in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                stage.append(block(cnf.input_channels, layer_scale,
                                   stochastic_depth_prob * block_id / (total - 1.0)))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        last_out = last.out_channels if last.out_channels is not None else last.input_channels
        self.classifier = nn.Sequential(norm_layer(last_out), nn.Flatten(1), nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)))


class ConvNeXt_Tiny_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`convnext_tiny` (torchvision's checkpoint)."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/convnext_tiny-983f1562.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=236),
        meta={"min_size": (32, 32), "categories": _IMAGENET_CATEGORIES, "num_params": 28589128,
              "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#convnext",
              "_metrics": {"ImageNet-1K": {"acc@1": 82.52, "acc@5": 96.146}}, "_ops": 4.456, "_file_size": 109.119},
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", ConvNeXt_Tiny_Weights.IMAGENET1K_V1))
def convnext_tiny(*, weights: Optional[ConvNeXt_Tiny_Weights] = None, progress: bool = True,
                  **kwargs) -> ConvNeXt:
    """ConvNeXt-T (torchvision.models.convnext_tiny): widths 96-192-384-768, depths 3-3-9-3,
    stochastic depth 0.1.

    Args:
        weights: a :class:`ConvNeXt_Tiny_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: passed to :class:`ConvNeXt`.
    """
    weights = ConvNeXt_Tiny_Weights.verify(weights)
    setting = [CNBlockConfig(96, 192, 3), CNBlockConfig(192, 384, 3), CNBlockConfig(384, 768, 9),
               CNBlockConfig(768, None, 3)]
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = ConvNeXt(setting, stochastic_depth_prob=kwargs.pop("stochastic_depth_prob", 0.1), **kwargs)
    return _load_weights(model, weights, progress)
