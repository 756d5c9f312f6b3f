"""Vision Transformer (ViT), after Dosovitskiy et al., "An Image is Worth 16x16 Words:
Transformers for Image Recognition at Scale" (https://arxiv.org/abs/2010.11929).

Layer names and state_dict keys follow torchvision's ``VisionTransformer``, so its
checkpoints load unchanged.
"""

import math
from collections import OrderedDict
from functools import partial
from typing import Any, Callable, Optional

import ember
from ember import nn

from ..transforms.functional import InterpolationMode
from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _ovewrite_named_param, handle_legacy_interface

# As torchvision's: interpolate_embeddings and vit_ti_16 stay reachable through this module only.
__all__ = ["VisionTransformer", "ViT_B_16_Weights", "vit_b_16"]


def _layer_norm_1e6(dim: int) -> nn.Module:
    return nn.LayerNorm(dim, eps=1e-6)


def _check(condition: bool, message: str) -> None:
    # torchvision checks these shapes with torch._assert (AssertionError), which symbolic
    # tracing keeps as a graph node instead of evaluating it
    ember._assert(condition, message)


class MLPBlock(nn.Sequential):
    """Transformer feed-forward block: Linear -> GELU -> Dropout -> Linear -> Dropout.

    Children are numbered ``0`` to ``4`` as in torchvision's ``MLPBlock`` (an ``MLP``), so
    the weights sit at ``mlp.0`` and ``mlp.3``. Input and output: ``[..., in_dim]``.
    """

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float):
        super().__init__(
            nn.Linear(in_dim, mlp_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(mlp_dim, in_dim),
            nn.Dropout(dropout),
        )
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block; input and output ``[N, S, hidden_dim]``."""

    def __init__(
        self,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float,
        attention_dropout: float,
        norm_layer: Callable[..., nn.Module] = _layer_norm_1e6,
    ):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        _check(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Learned position embedding, a stack of ``EncoderBlock``, a final norm.

    Input and output ``[N, seq_length, hidden_dim]``.
    """

    def __init__(
        self,
        seq_length: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float,
        attention_dropout: float,
        norm_layer: Callable[..., nn.Module] = _layer_norm_1e6,
    ):
        super().__init__()
        # std 0.02 as in BERT, which torchvision follows.
        self.pos_embedding = nn.Parameter(ember.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(
                num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer
            )
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input):
        _check(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(nn.Module):
    """Vision Transformer (https://arxiv.org/abs/2010.11929), torchvision's layout.

    Input ``[N, 3, image_size, image_size]`` (float), output logits ``[N, num_classes]``.
    Images of another size raise ``AssertionError``, as in torchvision; load a checkpoint
    made for another size through ``interpolate_embeddings``.

    Args:
        image_size: side of the square input; must be a multiple of ``patch_size``.
        patch_size: side of the square patches (the stride of ``conv_proj``).
        num_layers, num_heads, hidden_dim, mlp_dim: encoder depth and widths.
        dropout, attention_dropout: dropout probabilities. Default 0.0.
        num_classes: size of the head. Default 1000.
        representation_size: when given, a ``pre_logits`` Linear + Tanh before the head.
        norm_layer: normalization factory. Default ``LayerNorm(eps=1e-6)``.
        conv_stem_configs: not supported (torchvision's convolutional stem, which no
            builder uses); passing one raises ``NotImplementedError``.
    """

    def __init__(
        self,
        image_size: int,
        patch_size: int,
        num_layers: int,
        num_heads: int,
        hidden_dim: int,
        mlp_dim: int,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        num_classes: int = 1000,
        representation_size: Optional[int] = None,
        norm_layer: Callable[..., nn.Module] = _layer_norm_1e6,
        conv_stem_configs: Optional[list] = None,
    ):
        super().__init__()
        _check(image_size % patch_size == 0, "Input shape indivisible by patch size!")
        if conv_stem_configs is not None:
            raise NotImplementedError("VisionTransformer: conv_stem_configs is not supported; pass None")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer

        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        # One extra position for the class token.
        seq_length = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(
            seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer
        )
        self.seq_length = seq_length

        heads = OrderedDict()
        if representation_size is None:
            heads["head"] = nn.Linear(hidden_dim, num_classes)
        else:
            heads["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads["act"] = nn.Tanh()
            heads["head"] = nn.Linear(representation_size, num_classes)
        self.heads = nn.Sequential(heads)

        fan_in = 3 * patch_size * patch_size
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        nn.init.zeros_(self.conv_proj.bias)
        if representation_size is not None:
            nn.init.trunc_normal_(self.heads.pre_logits.weight, std=math.sqrt(1 / hidden_dim))
            nn.init.zeros_(self.heads.pre_logits.bias)
        nn.init.zeros_(self.heads.head.weight)
        nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x):
        """``[N, 3, H, W]`` -> patch tokens ``[N, (H/p)*(W/p), hidden_dim]``."""
        n, _, h, w = x.shape
        p = self.patch_size
        _check(h == self.image_size, f"Wrong image height! Expected {self.image_size} but got {h}!")
        _check(w == self.image_size, f"Wrong image width! Expected {self.image_size} but got {w}!")
        x = self.conv_proj(x)
        return x.reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)

    def forward(self, x):
        x = self._process_input(x)
        n = x.shape[0]
        x = ember.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        x = self.encoder(x)
        # The class token's output is the image representation.
        return self.heads(x[:, 0])


def _vision_transformer(
    patch_size: int,
    num_layers: int,
    num_heads: int,
    hidden_dim: int,
    mlp_dim: int,
    weights,
    progress: bool,
    **kwargs: Any,
) -> VisionTransformer:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
        _ovewrite_named_param(kwargs, "image_size", weights.meta["min_size"][0])
    image_size = kwargs.pop("image_size", 224)
    model = VisionTransformer(
        image_size=image_size,
        patch_size=patch_size,
        num_layers=num_layers,
        num_heads=num_heads,
        hidden_dim=hidden_dim,
        mlp_dim=mlp_dim,
        **kwargs,
    )
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_COMMON_SWAG_META = {
    "categories": _IMAGENET_CATEGORIES,
    "recipe": "https://github.com/facebookresearch/SWAG",
    "license": "https://github.com/facebookresearch/SWAG/blob/main/LICENSE",
}


class ViT_B_16_Weights(WeightsEnum):
    """Pretrained ViT-B/16 weights, as listed by torchvision."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_16-c867db91.pth",
        transforms=partial(ImageClassification, crop_size=224),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 86567656,
            "min_size": (224, 224),
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#vit_b_16",
            "_metrics": {"ImageNet-1K": {"acc@1": 81.072, "acc@5": 95.318}},
            "_ops": 17.564,
            "_file_size": 330.285,
        },
    )
    IMAGENET1K_SWAG_E2E_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_16_swag-9ac1b537.pth",
        transforms=partial(ImageClassification, crop_size=384, resize_size=384,
                           interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_SWAG_META,
            "num_params": 86859496,
            "min_size": (384, 384),
            "_metrics": {"ImageNet-1K": {"acc@1": 85.304, "acc@5": 97.650}},
            "_ops": 55.484,
            "_file_size": 331.398,
        },
    )
    IMAGENET1K_SWAG_LINEAR_V1 = Weights(
        url="https://download.pytorch.org/models/vit_b_16_lc_swag-4e70ced5.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=224,
                           interpolation=InterpolationMode.BICUBIC),
        meta={
            **_COMMON_SWAG_META,
            "recipe": "https://github.com/pytorch/vision/pull/5793",
            "num_params": 86567656,
            "min_size": (224, 224),
            "_metrics": {"ImageNet-1K": {"acc@1": 81.886, "acc@5": 96.180}},
            "_ops": 17.564,
            "_file_size": 330.285,
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", ViT_B_16_Weights.IMAGENET1K_V1))
def vit_b_16(*, weights: Optional[ViT_B_16_Weights] = None, progress: bool = True,
             **kwargs: Any) -> VisionTransformer:
    """ViT-B/16 (https://arxiv.org/abs/2010.11929): patch 16, 12 layers, 12 heads,
    hidden 768, MLP 3072; input ``[N, 3, 224, 224]`` unless ``image_size`` is given
    (pretrained weights fix ``image_size`` to their ``min_size``).

    Args:
        weights: a ``ViT_B_16_Weights`` member or its name, or None (random init).
        progress: show a download progress bar. Default True.
        **kwargs: passed to :class:`VisionTransformer`.

    Raises:
        ValueError: ``num_classes`` or ``image_size`` contradicts the weights.
    """
    weights = ViT_B_16_Weights.verify(weights)
    return _vision_transformer(16, 12, 12, 768, 3072, weights, progress, **kwargs)


def vit_ti_16(*, weights=None, progress: bool = True, **kwargs: Any) -> VisionTransformer:
    """ViT-Ti/16, the "tiny" size of DeiT (Touvron et al., https://arxiv.org/abs/2012.12877,
    Table 1): patch 16, 12 layers, 3 heads, hidden 192, MLP 768; input
    ``[N, 3, 224, 224]`` unless ``image_size`` is given (e.g. ``image_size=32``).

    torchvision has no such builder; the name follows its ``vit_<size>_<patch>`` pattern.
    No pretrained weights exist, so ``weights`` must be None (else ``ValueError``).
    """
    if weights is not None:
        raise ValueError(f"vit_ti_16 has no pretrained weights; expected weights=None, got {weights!r}")
    return _vision_transformer(16, 12, 3, 192, 768, None, progress, **kwargs)


def interpolate_embeddings(
    image_size: int,
    patch_size: int,
    model_state: "OrderedDict[str, ember.Tensor]",
    interpolation_mode: str = "bicubic",
    reset_heads: bool = False,
) -> "OrderedDict[str, ember.Tensor]":
    """Resize ``encoder.pos_embedding`` of a ViT state dict for a new ``image_size``.

    The class-token position is kept; the ``[1, g*g, D]`` grid of patch positions is
    resized to ``(image_size // patch_size)`` per side with ``F.interpolate(...,
    mode=interpolation_mode, align_corners=True)`` (torchvision's rule). With
    ``reset_heads`` the ``heads.*`` entries are dropped (only when a resize happens, as
    in torchvision). Returns the (possibly same) state dict.

    Raises:
        ValueError: the embedding's batch dim is not 1, or its grid is not square.
    """
    pos_embedding = model_state["encoder.pos_embedding"]
    n, seq_length, hidden_dim = pos_embedding.shape
    if n != 1:
        raise ValueError(f"Unexpected position embedding shape: {tuple(pos_embedding.shape)}")
    new_seq_length = (image_size // patch_size) ** 2 + 1
    if new_seq_length == seq_length:
        return model_state

    grid = seq_length - 1
    side = int(math.sqrt(grid))
    if side * side != grid:
        raise ValueError(f"seq_length is not a perfect square! Expected a square grid, got {grid} positions")
    new_side = image_size // patch_size
    token = pos_embedding[:, :1, :]
    img = pos_embedding[:, 1:, :].permute(0, 2, 1).reshape(1, hidden_dim, side, side)
    img = nn.functional.interpolate(img, size=new_side, mode=interpolation_mode, align_corners=True)
    img = img.reshape(1, hidden_dim, new_side * new_side).permute(0, 2, 1)
    model_state["encoder.pos_embedding"] = ember.cat([token, img], dim=1)

    if reset_heads:
        model_state = OrderedDict((k, v) for k, v in model_state.items() if not k.startswith("heads"))
    return model_state
