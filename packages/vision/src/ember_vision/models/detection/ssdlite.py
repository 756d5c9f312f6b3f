"""SSDlite320 with a MobileNetV3-Large backbone (torchvision.models.detection.ssdlite), with
torchvision's state_dict layout.

Sources: Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
https://arxiv.org/abs/1801.04381 (SSDlite, section 6.2); Howard et al., "Searching for
MobileNetV3", https://arxiv.org/abs/1905.02244 (detection heads, section 6.3).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from functools import partial
from typing import Any, Callable, List, Optional

import ember
from ember import nn

from .._api import Weights, WeightsEnum, register_model
from .._meta import _COCO_CATEGORIES
from .._presets import ObjectDetection
from .._utils import _load_weights, _ovewrite_value_param, handle_legacy_interface
from ..mobilenetv2 import Conv2dNormActivation
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from . import _utils as det_utils
from .anchor_utils import DefaultBoxGenerator
from .ssd import SSD, SSDScoringHead

__all__ = ["SSDLite320_MobileNet_V3_Large_Weights", "ssdlite320_mobilenet_v3_large"]


def _prediction_block(in_channels: int, out_channels: int, kernel_size: int,
                      norm_layer: Callable[..., nn.Module]) -> nn.Sequential:
    # depthwise kxk (BN, ReLU6), then a 1x1 projection with bias
    return nn.Sequential(
        Conv2dNormActivation(in_channels, in_channels, kernel_size=kernel_size, groups=in_channels,
                             norm_layer=norm_layer, activation_layer=nn.ReLU6),
        nn.Conv2d(in_channels, out_channels, 1),
    )


def _extra_block(in_channels: int, out_channels: int, norm_layer: Callable[..., nn.Module]) -> nn.Sequential:
    # 1x1 to half the width, 3x3 depthwise stride 2, 1x1 to the width; each with BN and ReLU6
    mid = out_channels // 2
    return nn.Sequential(
        Conv2dNormActivation(in_channels, mid, kernel_size=1, norm_layer=norm_layer, activation_layer=nn.ReLU6),
        Conv2dNormActivation(mid, mid, kernel_size=3, stride=2, groups=mid, norm_layer=norm_layer,
                             activation_layer=nn.ReLU6),
        Conv2dNormActivation(mid, out_channels, kernel_size=1, norm_layer=norm_layer, activation_layer=nn.ReLU6),
    )


def _normal_init(module: nn.Module) -> None:
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, mean=0.0, std=0.03)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDLiteClassificationHead(SSDScoringHead):
    """A prediction block per map giving ``num_classes`` logits per anchor."""

    def __init__(self, in_channels: List[int], num_anchors: List[int], num_classes: int,
                 norm_layer: Callable[..., nn.Module]) -> None:
        blocks = nn.ModuleList(_prediction_block(c, num_classes * a, 3, norm_layer)
                               for c, a in zip(in_channels, num_anchors))
        _normal_init(blocks)
        super().__init__(blocks, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    """A prediction block per map giving 4 box codes per anchor."""

    def __init__(self, in_channels: List[int], num_anchors: List[int], norm_layer: Callable[..., nn.Module]) -> None:
        blocks = nn.ModuleList(_prediction_block(c, 4 * a, 3, norm_layer) for c, a in zip(in_channels, num_anchors))
        _normal_init(blocks)
        super().__init__(blocks, 4)


class SSDLiteHead(nn.Module):
    """SSDlite's head: ``{"bbox_regression": [N, A, 4], "cls_logits": [N, A, num_classes]}``."""

    def __init__(self, in_channels: List[int], num_anchors: List[int], num_classes: int,
                 norm_layer: Callable[..., nn.Module]) -> None:
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(in_channels, num_anchors, num_classes, norm_layer)
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x: List[ember.Tensor]):
        return {"bbox_regression": self.regression_head(x), "cls_logits": self.classification_head(x)}


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """The MobileNet features split at the C4 block's expansion layer (two maps, strides 16
    and 32), then four extra blocks of stride 2: six maps as an ordered dict ``"0"``..``"5"``.

    Raises ValueError when ``backbone[c4_pos]`` has a residual connection.
    """

    def __init__(self, backbone: nn.Module, c4_pos: int, norm_layer: Callable[..., nn.Module],
                 width_mult: float = 1.0, min_depth: int = 16) -> None:
        super().__init__()
        if backbone[c4_pos].use_res_connect:
            raise ValueError(f"backbone[c4_pos].use_res_connect should be False (c4_pos={c4_pos})")
        self.features = nn.Sequential(
            nn.Sequential(*backbone[:c4_pos], backbone[c4_pos].block[0]),
            nn.Sequential(backbone[c4_pos].block[1:], *backbone[c4_pos + 1:]),
        )

        def depth(d: int) -> int:
            return max(min_depth, int(d * width_mult))

        self.extra = nn.ModuleList([
            _extra_block(backbone[-1].out_channels, depth(512), norm_layer),
            _extra_block(depth(512), depth(256), norm_layer),
            _extra_block(depth(256), depth(256), norm_layer),
            _extra_block(depth(256), depth(128), norm_layer),
        ])
        _normal_init(self.extra)

    def forward(self, x: ember.Tensor):
        output = []
        for block in self.features:
            x = block(x)
            output.append(x)
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict((str(i), v) for i, v in enumerate(output))


def _mobilenet_extractor(backbone: nn.Module, trainable_layers: int,
                         norm_layer: Callable[..., nn.Module]) -> SSDLiteFeatureExtractorMobileNet:
    features = backbone.features
    # the stem, every strided block and the last layer start a stage
    stage_indices = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        raise ValueError(f"trainable_layers should be in the range [0, {num_stages}], instead got {trainable_layers}")
    freeze_before = len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in features[:freeze_before]:
        for p in b.parameters():
            p.requires_grad_(False)
    return SSDLiteFeatureExtractorMobileNet(features, stage_indices[-2], norm_layer)


class SSDLite320_MobileNet_V3_Large_Weights(WeightsEnum):
    """COCO weights of :func:`ssdlite320_mobilenet_v3_large` (torchvision's checkpoint)."""

    COCO_V1 = Weights(
        url="https://download.pytorch.org/models/ssdlite320_mobilenet_v3_large_coco-a79551df.pth",
        transforms=ObjectDetection,
        meta={
            "num_params": 3440060,
            "categories": _COCO_CATEGORIES,
            "min_size": (1, 1),
            "recipe": "https://github.com/pytorch/vision/tree/main/references/detection#ssdlite320-mobilenetv3-large",
            "_metrics": {"COCO-val2017": {"box_map": 21.3}},
            "_ops": 0.583,
            "_file_size": 13.418,
        },
    )
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", SSDLite320_MobileNet_V3_Large_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1),
)
def ssdlite320_mobilenet_v3_large(*, weights: Optional[SSDLite320_MobileNet_V3_Large_Weights] = None,
                                  progress: bool = True, num_classes: Optional[int] = None,
                                  weights_backbone: Optional[MobileNet_V3_Large_Weights] = (
                                      MobileNet_V3_Large_Weights.IMAGENET1K_V1),
                                  trainable_backbone_layers: Optional[int] = None,
                                  norm_layer: Optional[Callable[..., nn.Module]] = None, **kwargs: Any) -> SSD:
    """SSDlite with input size 320x320 and a MobileNetV3-Large backbone
    (torchvision.models.detection.ssdlite320_mobilenet_v3_large); inputs and outputs as :class:`SSD`.

    As torchvision's, the default backbone starts from ImageNet weights (downloaded once into
    the hub cache); ``weights_backbone=None`` builds it from scratch, with the reduced tail
    (MobileNetV3 paper, table 6).

    Args:
        weights: a :class:`SSDLite320_MobileNet_V3_Large_Weights` member or its name, or None.
        progress: show a download progress bar.
        num_classes: classes including the background (default 91, fixed by ``weights``).
        weights_backbone: a :class:`~ember_vision.models.MobileNet_V3_Large_Weights` member for the backbone (ignored
            when ``weights`` is given).
        trainable_backbone_layers: trainable backbone stages counted from the last, 0 to 6
            (default 6; all trainable when no weights are used).
        norm_layer: normalisation layer (default BatchNorm2d with eps 0.001, momentum 0.03).
        **kwargs: passed to :class:`SSD` (``score_thresh``, ``nms_thresh``, ...); defaults
            ``score_thresh=0.001``, ``nms_thresh=0.55``, ``detections_per_img=300``,
            ``topk_candidates=300``, mean and std 0.5 (inputs mapped to [-1, 1]).

    Raises:
        ValueError: ``num_classes`` other than the weights' 91, or ``trainable_backbone_layers``
            outside [0, 6].
    """
    weights = SSDLite320_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    if "size" in kwargs:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.", stacklevel=2)
        kwargs.pop("size")
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
    elif num_classes is None:
        num_classes = 91
    trainable_backbone_layers = det_utils._validate_trainable_layers(
        weights is not None or weights_backbone is not None, trainable_backbone_layers, 6, 6)
    reduce_tail = weights_backbone is None
    if norm_layer is None:
        norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer,
                                  reduced_tail=reduce_tail, **kwargs)
    if weights_backbone is None:
        _normal_init(backbone)
    backbone = _mobilenet_extractor(backbone, trainable_backbone_layers, norm_layer)

    size = (320, 320)
    anchor_generator = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    out_channels = det_utils.retrieve_out_channels(backbone, size)
    num_anchors = anchor_generator.num_anchors_per_location()
    if len(out_channels) != len(anchor_generator.aspect_ratios):
        raise ValueError(f"The length of the output channels from the backbone {len(out_channels)} do not match "
                         f"the length of the anchor generator aspect ratios {len(anchor_generator.aspect_ratios)}")
    defaults = {"score_thresh": 0.001, "nms_thresh": 0.55, "detections_per_img": 300, "topk_candidates": 300,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    model = SSD(backbone, anchor_generator, size, num_classes,
                head=SSDLiteHead(out_channels, num_anchors, num_classes, norm_layer), **{**defaults, **kwargs})
    return _load_weights(model, weights, progress)
