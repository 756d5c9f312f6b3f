"""ResNet, ResNeXt and Wide ResNet (torchvision.models.resnet).

He et al., "Deep Residual Learning for Image Recognition", arXiv:1512.03385 (the stride
of a downsampling bottleneck sits on its 3x3 convolution, "ResNet v1.5");
Xie et al., "Aggregated Residual Transformations", arXiv:1611.05431 (ResNeXt);
Zagoruyko and Komodakis, "Wide Residual Networks", arXiv:1605.07146.
State_dict keys and shapes are torchvision's.
"""

from collections.abc import Callable
from functools import partial
from typing import Any, Optional, Union

import ember
from ember import nn

from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _load_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["ResNet", "BasicBlock", "Bottleneck", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights",
           "ResNet101_Weights", "ResNet152_Weights", "ResNeXt50_32X4D_Weights", "Wide_ResNet50_2_Weights",
           "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "wide_resnet50_2"]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution without bias, padded to keep the size (at stride 1)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution without bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a shortcut (ResNet-18/34; He et al., 2015, arXiv:1512.03385;
    torchvision.models.resnet.BasicBlock). ``[N, inplanes, H, W]`` -> ``[N, planes, H / stride,
    W / stride]``.

    Args:
        inplanes: input channels.
        planes: output channels.
        stride: stride of the first convolution.
        downsample: module applied to the shortcut when the shape changes (None: identity).
        groups, base_width: must be 1 and 64 (ValueError otherwise).
        dilation: must be 1 (NotImplementedError otherwise).
        norm_layer: normalization layer factory (default ``nn.BatchNorm2d``).
    """

    expansion: int = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Optional[nn.Module] = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError(f"BasicBlock only supports groups=1 and base_width=64, got groups={groups} and "
                             f"base_width={base_width}")
        if dilation > 1:
            raise NotImplementedError(f"Dilation > 1 not supported in BasicBlock, got dilation={dilation}")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped for ResNeXt, strided when downsampling), 1x1 expand, with a
    shortcut (He et al., 2015, arXiv:1512.03385; torchvision.models.resnet.Bottleneck).
    ``[N, inplanes, H, W]`` -> ``[N, planes * 4, H / stride, W / stride]``.

    Args:
        inplanes: input channels.
        planes: base channels; the inner width is ``int(planes * base_width / 64) * groups``.
        stride: stride of the 3x3 convolution.
        downsample: module applied to the shortcut when the shape changes (None: identity).
        groups: groups of the 3x3 convolution (ResNeXt's cardinality).
        base_width: width of each group at ``planes = 64``.
        dilation: dilation of the 3x3 convolution.
        norm_layer: normalization layer factory (default ``nn.BatchNorm2d``).
    """

    expansion: int = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Optional[nn.Module] = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(out + shortcut)


class ResNet(nn.Module):
    """A residual network: stem (7x7 conv, max pool), four stages of ``layers[i]`` blocks,
    global average pool, linear classifier.

    Input ``[N, 3, H, W]`` float, output logits ``[N, num_classes]``.

    Args:
        block: ``BasicBlock`` or ``Bottleneck``.
        layers: number of blocks in each of the four stages.
        num_classes: classifier outputs.
        zero_init_residual: start each block's last BatchNorm scale at 0 (the block starts as
            the identity; Goyal et al., arXiv:1706.02677).
        groups, width_per_group: ResNeXt's cardinality and width of each group.
        replace_stride_with_dilation: three flags, for stages 2-4: dilate instead of striding.
        norm_layer: the normalization layer factory (default ``nn.BatchNorm2d``).

    Raises ValueError when ``replace_stride_with_dilation`` does not hold three flags.
    """

    def __init__(self, block: type[Union[BasicBlock, Bottleneck]], layers: list[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: Optional[list[bool]] = None,
                 norm_layer: Optional[Callable[..., nn.Module]] = None) -> None:
        super().__init__()
        norm_layer = norm_layer or nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, got "
                             f"{replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                last_bn = m.bn3 if isinstance(m, Bottleneck) else m.bn2 if isinstance(m, BasicBlock) else None
                if last_bn is not None and last_bn.weight is not None:
                    nn.init.constant_(last_bn.weight, 0)

    def _make_layer(self, block: type[Union[BasicBlock, Bottleneck]], planes: int, blocks: int, stride: int = 1,
                    dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                         dilation=self.dilation, norm_layer=norm_layer) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(ember.flatten(self.avgpool(x), 1))


def _resnet(block: type[Union[BasicBlock, Bottleneck]], layers: list[int], weights: Optional[WeightsEnum],
            progress: bool, **kwargs: Any) -> ResNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    return _load_weights(ResNet(block, layers, **kwargs), weights, progress)


_COMMON_META = {
    "min_size": (1, 1),
    "categories": _IMAGENET_CATEGORIES,
}


class ResNet18_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`resnet18` (torchvision's checkpoint,
    torchvision.models.ResNet18_Weights): ``IMAGENET1K_V1`` (acc@1 69.758 %, acc@5 89.078 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    11,689,512 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet18-f37072fd.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 11689512,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#resnet",
            "_metrics": {"ImageNet-1K": {"acc@1": 69.758, "acc@5": 89.078}},
            "_ops": 1.814,
            "_file_size": 44.661,
        },
    )
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`resnet34` (torchvision's checkpoint,
    torchvision.models.ResNet34_Weights): ``IMAGENET1K_V1`` (acc@1 73.314 %, acc@5 91.42 %;
    resize 256, crop 224); ``DEFAULT`` is ``IMAGENET1K_V1``. Presets are ImageClassification
    (bilinear resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` =
    21,797,672 and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet34-b627a593.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 21797672,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#resnet",
            "_metrics": {"ImageNet-1K": {"acc@1": 73.314, "acc@5": 91.42}},
            "_ops": 3.664,
            "_file_size": 83.275,
        },
    )
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`resnet50` (torchvision's checkpoints,
    torchvision.models.ResNet50_Weights): ``IMAGENET1K_V1`` (acc@1 76.13 %, acc@5 92.862 %;
    resize 256, crop 224), ``IMAGENET1K_V2`` (acc@1 80.858 %, acc@5 95.434 %; resize 232, crop
    224); ``DEFAULT`` is ``IMAGENET1K_V2``. Presets are ImageClassification (bilinear resize in
    pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 25,557,032 and the
    categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet50-0676ba61.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 25557032,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#resnet",
            "_metrics": {"ImageNet-1K": {"acc@1": 76.13, "acc@5": 92.862}},
            "_ops": 4.089,
            "_file_size": 97.781,
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnet50-11ad3fa6.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 25557032,
            "recipe": "https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621",
            "_metrics": {"ImageNet-1K": {"acc@1": 80.858, "acc@5": 95.434}},
            "_ops": 4.089,
            "_file_size": 97.79,
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`resnet101` (torchvision's checkpoints,
    torchvision.models.ResNet101_Weights): ``IMAGENET1K_V1`` (acc@1 77.374 %, acc@5 93.546 %;
    resize 256, crop 224), ``IMAGENET1K_V2`` (acc@1 81.886 %, acc@5 95.78 %; resize 232, crop
    224); ``DEFAULT`` is ``IMAGENET1K_V2``. Presets are ImageClassification (bilinear resize in
    pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 44,549,160 and the
    categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet101-63fe2227.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 44549160,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#resnet",
            "_metrics": {"ImageNet-1K": {"acc@1": 77.374, "acc@5": 93.546}},
            "_ops": 7.801,
            "_file_size": 170.511,
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnet101-cd907fc2.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 44549160,
            "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe",
            "_metrics": {"ImageNet-1K": {"acc@1": 81.886, "acc@5": 95.78}},
            "_ops": 7.801,
            "_file_size": 170.53,
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`resnet152` (torchvision's checkpoints,
    torchvision.models.ResNet152_Weights): ``IMAGENET1K_V1`` (acc@1 78.312 %, acc@5 94.046 %;
    resize 256, crop 224), ``IMAGENET1K_V2`` (acc@1 82.284 %, acc@5 96.002 %; resize 232, crop
    224); ``DEFAULT`` is ``IMAGENET1K_V2``. Presets are ImageClassification (bilinear resize in
    pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 60,192,808 and the
    categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnet152-394f9c45.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 60192808,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#resnet",
            "_metrics": {"ImageNet-1K": {"acc@1": 78.312, "acc@5": 94.046}},
            "_ops": 11.514,
            "_file_size": 230.434,
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnet152-f82ba261.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 60192808,
            "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe",
            "_metrics": {"ImageNet-1K": {"acc@1": 82.284, "acc@5": 96.002}},
            "_ops": 11.514,
            "_file_size": 230.474,
        },
    )
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`resnext50_32x4d` (torchvision's checkpoints,
    torchvision.models.ResNeXt50_32X4D_Weights): ``IMAGENET1K_V1`` (acc@1 77.618 %, acc@5 93.698
    %; resize 256, crop 224), ``IMAGENET1K_V2`` (acc@1 81.198 %, acc@5 95.34 %; resize 232, crop
    224); ``DEFAULT`` is ``IMAGENET1K_V2``. Presets are ImageClassification (bilinear resize in
    pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 25,028,904 and the
    categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/resnext50_32x4d-7cdf4587.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 25028904,
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#resnext",
            "_metrics": {"ImageNet-1K": {"acc@1": 77.618, "acc@5": 93.698}},
            "_ops": 4.23,
            "_file_size": 95.789,
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/resnext50_32x4d-1a0047aa.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 25028904,
            "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe",
            "_metrics": {"ImageNet-1K": {"acc@1": 81.198, "acc@5": 95.34}},
            "_ops": 4.23,
            "_file_size": 95.833,
        },
    )
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet50_2_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`wide_resnet50_2` (torchvision's checkpoints,
    torchvision.models.Wide_ResNet50_2_Weights): ``IMAGENET1K_V1`` (acc@1 78.468 %, acc@5 94.086
    %; resize 256, crop 224), ``IMAGENET1K_V2`` (acc@1 81.602 %, acc@5 95.758 %; resize 232,
    crop 224); ``DEFAULT`` is ``IMAGENET1K_V2``. Presets are ImageClassification (bilinear
    resize in pixels, center crop, ImageNet mean/std); ``meta`` has ``num_params`` = 68,883,240
    and the categories.
    """
    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/wide_resnet50_2-95faca4d.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            **_COMMON_META,
            "num_params": 68883240,
            "recipe": "https://github.com/pytorch/vision/pull/912#issue-445437439",
            "_metrics": {"ImageNet-1K": {"acc@1": 78.468, "acc@5": 94.086}},
            "_ops": 11.398,
            "_file_size": 131.82,
        },
    )
    IMAGENET1K_V2 = Weights(
        url="https://download.pytorch.org/models/wide_resnet50_2-9ba9bcbe.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232),
        meta={
            **_COMMON_META,
            "num_params": 68883240,
            "recipe": "https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres",
            "_metrics": {"ImageNet-1K": {"acc@1": 81.602, "acc@5": 95.758}},
            "_ops": 11.398,
            "_file_size": 263.124,
        },
    )
    DEFAULT = IMAGENET1K_V2


def _builder_doc(title: str, enum: str) -> str:
    return (f"{title}.\n\n    Keyword Args:\n        weights: a ``{enum}`` member or its name (default None: "
            "random initialization).\n        progress: show a progress bar while downloading the weights.\n"
            "        **kwargs: passed to ``ResNet`` (``num_classes``, ``zero_init_residual``...).\n\n"
            "    Raises ValueError when ``num_classes`` differs from the weights' category count.\n    ")


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet18_Weights.IMAGENET1K_V1))
def resnet18(*, weights: Optional[ResNet18_Weights] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    weights = ResNet18_Weights.verify(weights)
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet34_Weights.IMAGENET1K_V1))
def resnet34(*, weights: Optional[ResNet34_Weights] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    weights = ResNet34_Weights.verify(weights)
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet50_Weights.IMAGENET1K_V1))
def resnet50(*, weights: Optional[ResNet50_Weights] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    weights = ResNet50_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet101_Weights.IMAGENET1K_V1))
def resnet101(*, weights: Optional[ResNet101_Weights] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    weights = ResNet101_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet152_Weights.IMAGENET1K_V1))
def resnet152(*, weights: Optional[ResNet152_Weights] = None, progress: bool = True, **kwargs: Any) -> ResNet:
    weights = ResNet152_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 8, 36, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt50_32X4D_Weights.IMAGENET1K_V1))
def resnext50_32x4d(*, weights: Optional[ResNeXt50_32X4D_Weights] = None, progress: bool = True,
                    **kwargs: Any) -> ResNet:
    weights = ResNeXt50_32X4D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 32)
    _ovewrite_named_param(kwargs, "width_per_group", 4)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Wide_ResNet50_2_Weights.IMAGENET1K_V1))
def wide_resnet50_2(*, weights: Optional[Wide_ResNet50_2_Weights] = None, progress: bool = True,
                    **kwargs: Any) -> ResNet:
    weights = Wide_ResNet50_2_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "width_per_group", 64 * 2)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


resnet18.__doc__ = _builder_doc("ResNet-18 (He et al., arXiv:1512.03385)", "ResNet18_Weights")
resnet34.__doc__ = _builder_doc("ResNet-34 (He et al., arXiv:1512.03385)", "ResNet34_Weights")
resnet50.__doc__ = _builder_doc("ResNet-50 (He et al., arXiv:1512.03385)", "ResNet50_Weights")
resnet101.__doc__ = _builder_doc("ResNet-101 (He et al., arXiv:1512.03385)", "ResNet101_Weights")
resnet152.__doc__ = _builder_doc("ResNet-152 (He et al., arXiv:1512.03385)", "ResNet152_Weights")
resnext50_32x4d.__doc__ = _builder_doc("ResNeXt-50 32x4d (Xie et al., arXiv:1611.05431)", "ResNeXt50_32X4D_Weights")
wide_resnet50_2.__doc__ = _builder_doc("Wide ResNet-50-2: bottlenecks twice as wide (arXiv:1605.07146)",
                                       "Wide_ResNet50_2_Weights")
