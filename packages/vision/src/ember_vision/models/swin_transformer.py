"""Swin Transformer, after Liu et al., "Swin Transformer: Hierarchical Vision Transformer
using Shifted Windows" (https://arxiv.org/abs/2103.14030).

Layer names and state_dict keys follow torchvision's ``SwinTransformer`` (``features.N...``,
``relative_position_bias_table``, the ``relative_position_index`` buffer), so its
checkpoints load unchanged.
"""

from functools import partial
from typing import Any, Callable, Optional

import ember
import ember.fx
from ember import nn
from ember.nn import functional as F

from ..ops.stochastic_depth import StochasticDepth
from ..transforms.functional import InterpolationMode
from ._api import Weights, WeightsEnum, register_model
from ._meta import _IMAGENET_CATEGORIES
from ._presets import ImageClassification
from ._utils import _ovewrite_named_param, handle_legacy_interface

__all__ = ["SwinTransformer", "Swin_T_Weights", "swin_t"]


def _layer_norm(dim: int) -> nn.Module:
    return nn.LayerNorm(dim, eps=1e-5)


class Permute(nn.Module):
    """Returns ``input.permute(dims)`` (torchvision.ops.misc.Permute)."""

    def __init__(self, dims: list):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return x.permute(*self.dims)


class MLP(nn.Sequential):
    """Linear -> GELU -> Dropout -> Linear -> Dropout, numbered ``0`` to ``4`` as
    torchvision.ops.misc.MLP builds it for two layers. Input/output ``[..., in_channels]``."""

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, dropout: float = 0.0):
        super().__init__(
            nn.Linear(in_channels, hidden_channels),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_channels, out_channels),
            nn.Dropout(dropout),
        )


def _patch_merging_pad(x):
    """``[..., H, W, C]`` -> ``[..., ceil(H/2), ceil(W/2), 4*C]``, zero-padding odd sides."""
    H, W = x.shape[-3], x.shape[-2]
    x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
    x0 = x[..., 0::2, 0::2, :]
    x1 = x[..., 1::2, 0::2, :]
    x2 = x[..., 0::2, 1::2, :]
    x3 = x[..., 1::2, 1::2, :]
    return ember.cat([x0, x1, x2, x3], -1)


ember.fx.wrap("_patch_merging_pad")  # as torchvision: shape arithmetic a symbolic trace cannot follow


class PatchMerging(nn.Module):
    """Halves the resolution, doubles the channels: ``[..., H, W, C]`` -> ``[..., ceil(H/2),
    ceil(W/2), 2*C]`` (2x2 neighbours concatenated, normed, projected without bias)."""

    def __init__(self, dim: int, norm_layer: Callable[..., nn.Module] = nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        return self.reduction(self.norm(_patch_merging_pad(x)))


def _relative_position_index(window_size: list):
    """``[Wh*Ww * Wh*Ww]`` int64: the row of the bias table for each (query, key) pair."""
    wh, ww = window_size
    coords = ember.stack(ember.meshgrid(ember.arange(wh), ember.arange(ww), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)  # [N, N, 2]
    # Shift both offsets to start at 0, then flatten (dh, dw) row-major.
    return ((rel[:, :, 0] + (wh - 1)) * (2 * ww - 1) + (rel[:, :, 1] + (ww - 1))).flatten()


def _shift_attention_mask(pad_H: int, pad_W: int, window_size: list, shift_size: list, like):
    """``[num_windows, N, N]``: 0 where query and key came from the same region before the
    cyclic shift, -100 elsewhere (the paper's masking of wrapped-around tokens)."""
    wh, ww = window_size
    region = ember.zeros((pad_H, pad_W), dtype=like.dtype, device=like.device)
    h_slices = ((0, -wh), (-wh, -shift_size[0]), (-shift_size[0], None))
    w_slices = ((0, -ww), (-ww, -shift_size[1]), (-shift_size[1], None))
    count = 0
    for h in h_slices:
        for w in w_slices:
            region[h[0]:h[1], w[0]:w[1]] = count
            count += 1
    num_windows = (pad_H // wh) * (pad_W // ww)
    region = region.view(pad_H // wh, wh, pad_W // ww, ww).permute(0, 2, 1, 3).reshape(num_windows, wh * ww)
    diff = region.unsqueeze(1) - region.unsqueeze(2)
    return ember.where(diff != 0, -100.0, 0.0).to(like.dtype)


def shifted_window_attention(
    input,
    qkv_weight,
    proj_weight,
    relative_position_bias,
    window_size: list,
    num_heads: int,
    shift_size: list,
    attention_dropout: float = 0.0,
    dropout: float = 0.0,
    qkv_bias=None,
    proj_bias=None,
    logit_scale=None,
    training: bool = True,
):
    """Window multi-head self-attention with relative position bias, optionally on
    cyclically shifted windows (torchvision.models.swin_transformer.shifted_window_attention).

    Args:
        input: ``[B, H, W, C]``; padded at the bottom/right to whole windows, unpadded after.
        qkv_weight ``[3C, C]``, proj_weight ``[C, C]``, qkv_bias ``[3C]``, proj_bias ``[C]``.
        relative_position_bias: ``[1, num_heads, N, N]`` with ``N = Wh*Ww``.
        window_size, shift_size: ``[Wh, Ww]``; a shift is dropped along a side that one
            window already covers.
        logit_scale: ``[num_heads, 1, 1]`` for Swin V2's cosine attention, else None.
    Returns:
        ``[B, H, W, C]``.
    """
    B, H, W, C = input.shape
    wh, ww = window_size
    pad_r = (ww - W % ww) % ww
    pad_b = (wh - H % wh) % wh
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_H, pad_W, _ = x.shape

    shift_size = list(shift_size)
    if wh >= pad_H:
        shift_size[0] = 0
    if ww >= pad_W:
        shift_size[1] = 0
    shifted = sum(shift_size) > 0
    if shifted:
        x = ember.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))

    # Partition into windows: [B*nW, Wh*Ww, C].
    num_windows = (pad_H // wh) * (pad_W // ww)
    x = x.view(B, pad_H // wh, wh, pad_W // ww, ww, C).permute(0, 1, 3, 2, 4, 5).reshape(B * num_windows, wh * ww, C)
    n_tok = wh * ww

    if logit_scale is not None and qkv_bias is not None:
        # Swin V2 keeps the key bias at zero.
        length = qkv_bias.numel() // 3
        qkv_bias = ember.cat([qkv_bias[:length], ember.zeros_like(qkv_bias[length:2 * length]),
                              qkv_bias[2 * length:]])
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(x.shape[0], n_tok, 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * ember.clamp(logit_scale, max=4.605170185988092).exp()  # log(100)
    else:
        attn = (q * (C // num_heads) ** -0.5) @ k.transpose(-2, -1)
    attn = attn + relative_position_bias

    if shifted:
        mask = _shift_attention_mask(pad_H, pad_W, window_size, shift_size, x)
        attn = attn.view(B, num_windows, num_heads, n_tok, n_tok) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, n_tok, n_tok)

    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)
    x = (attn @ v).transpose(1, 2).reshape(x.shape[0], n_tok, C)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)

    # Merge windows back, undo the shift, drop the padding.
    x = x.view(B, pad_H // wh, pad_W // ww, wh, ww, C).permute(0, 1, 3, 2, 4, 5).reshape(B, pad_H, pad_W, C)
    if shifted:
        x = ember.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :H, :W, :].contiguous()


ember.fx.wrap("shifted_window_attention")


class ShiftedWindowAttention(nn.Module):
    """Module form of :func:`shifted_window_attention`; input/output ``[B, H, W, C]``.

    Raises ValueError when ``window_size`` or ``shift_size`` is not of length 2.
    """

    def __init__(
        self,
        dim: int,
        window_size: list,
        shift_size: list,
        num_heads: int,
        qkv_bias: bool = True,
        proj_bias: bool = True,
        attention_dropout: float = 0.0,
        dropout: float = 0.0,
    ):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError(
                f"window_size and shift_size must be of length 2, got {len(window_size)} and {len(shift_size)}"
            )
        self.window_size = list(window_size)
        self.shift_size = list(shift_size)
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        table_rows = (2 * window_size[0] - 1) * (2 * window_size[1] - 1)
        self.relative_position_bias_table = nn.Parameter(ember.zeros(table_rows, num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)
        self.register_buffer("relative_position_index", _relative_position_index(self.window_size))

    def get_relative_position_bias(self):
        """``[1, num_heads, N, N]`` gathered from the table."""
        n = self.window_size[0] * self.window_size[1]
        bias = self.relative_position_bias_table[self.relative_position_index].view(n, n, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x):
        return shifted_window_attention(
            x,
            self.qkv.weight,
            self.proj.weight,
            self.get_relative_position_bias(),
            self.window_size,
            self.num_heads,
            shift_size=self.shift_size,
            attention_dropout=self.attention_dropout,
            dropout=self.dropout,
            qkv_bias=self.qkv.bias,
            proj_bias=self.proj.bias,
            training=self.training,
        )


class SwinTransformerBlock(nn.Module):
    """Pre-norm (shifted) window attention then MLP, each a residual branch behind
    stochastic depth (``mode="row"``). Input/output ``[B, H, W, dim]``."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        window_size: list,
        shift_size: list,
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.0,
        norm_layer: Callable[..., nn.Module] = nn.LayerNorm,
        attn_layer: Callable[..., nn.Module] = ShiftedWindowAttention,
    ):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(
            dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout, dropout=dropout
        )
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, int(dim * mlp_ratio), dim, dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        return x + self.stochastic_depth(self.mlp(self.norm2(x)))


class SwinTransformer(nn.Module):
    """Swin Transformer (Liu et al., 2021, arXiv:2103.14030), torchvision's layout
    (torchvision.models.SwinTransformer).

    Input ``[N, 3, H, W]`` (any H, W: windows pad as needed), output ``[N, num_classes]``.
    ``features`` holds the patch embedding (``features.0``), then alternately a stage of
    blocks and a ``PatchMerging``; block ``i`` of a stage shifts its windows by half a
    window when ``i`` is odd. Stochastic depth grows linearly from 0 to
    ``stochastic_depth_prob`` over all blocks.

    Args:
        patch_size: [ph, pw] pixels of the patch embedding (its convolution's kernel and stride).
        embed_dim: channels after the patch embedding; stage ``i`` has ``embed_dim * 2**i``.
        depths: blocks per stage.
        num_heads: attention heads per stage.
        window_size: [wh, ww] attention window, in patches.
        mlp_ratio: MLP hidden width over the block width.
        dropout: dropout after attention and in the MLP.
        attention_dropout: dropout on the attention weights.
        num_classes: classifier outputs.
        norm_layer: normalization factory (default LayerNorm, eps 1e-5).
        block: block factory (default the Swin block).
        downsample_layer: merging factory between stages (default ``PatchMerging``).
    """

    def __init__(
        self,
        patch_size: list,
        embed_dim: int,
        depths: list,
        num_heads: list,
        window_size: list,
        mlp_ratio: float = 4.0,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        stochastic_depth_prob: float = 0.1,
        num_classes: int = 1000,
        norm_layer: Optional[Callable[..., nn.Module]] = None,
        block: Optional[Callable[..., nn.Module]] = None,
        downsample_layer: Callable[..., nn.Module] = PatchMerging,
    ):
        super().__init__()
        self.num_classes = num_classes
        block = SwinTransformerBlock if block is None else block
        norm_layer = _layer_norm if norm_layer is None else norm_layer

        layers = [
            nn.Sequential(
                nn.Conv2d(3, embed_dim, kernel_size=tuple(patch_size), stride=tuple(patch_size)),
                Permute([0, 2, 3, 1]),
                norm_layer(embed_dim),
            )
        ]
        total_blocks = sum(depths)
        block_id = 0
        for i_stage, depth in enumerate(depths):
            dim = embed_dim * 2**i_stage
            stage = []
            for i_layer in range(depth):
                stage.append(
                    block(
                        dim,
                        num_heads[i_stage],
                        window_size=window_size,
                        shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                        mlp_ratio=mlp_ratio,
                        dropout=dropout,
                        attention_dropout=attention_dropout,
                        stochastic_depth_prob=stochastic_depth_prob * float(block_id) / (total_blocks - 1),
                        norm_layer=norm_layer,
                    )
                )
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if i_stage < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)

        num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = norm_layer(num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.norm(self.features(x))
        return self.head(self.flatten(self.avgpool(self.permute(x))))


def _swin_transformer(
    patch_size: list,
    embed_dim: int,
    depths: list,
    num_heads: list,
    window_size: list,
    stochastic_depth_prob: float,
    weights,
    progress: bool,
    **kwargs: Any,
) -> SwinTransformer:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = SwinTransformer(
        patch_size=patch_size,
        embed_dim=embed_dim,
        depths=depths,
        num_heads=num_heads,
        window_size=window_size,
        stochastic_depth_prob=stochastic_depth_prob,
        **kwargs,
    )
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


class Swin_T_Weights(WeightsEnum):
    """Pretrained Swin-T weights, as listed by torchvision."""

    IMAGENET1K_V1 = Weights(
        url="https://download.pytorch.org/models/swin_t-704ceda3.pth",
        transforms=partial(ImageClassification, crop_size=224, resize_size=232,
                           interpolation=InterpolationMode.BICUBIC),
        meta={
            "categories": _IMAGENET_CATEGORIES,
            "num_params": 28288354,
            "min_size": (224, 224),
            "recipe": "https://github.com/pytorch/vision/tree/main/references/classification#swintransformer",
            "_metrics": {"ImageNet-1K": {"acc@1": 81.474, "acc@5": 95.776}},
            "_ops": 4.491,
            "_file_size": 108.19,
        },
    )
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", Swin_T_Weights.IMAGENET1K_V1))
def swin_t(*, weights: Optional[Swin_T_Weights] = None, progress: bool = True, **kwargs: Any) -> SwinTransformer:
    """Swin-T (https://arxiv.org/abs/2103.14030): patch 4, embed 96, depths [2, 2, 6, 2],
    heads [3, 6, 12, 24], window 7, stochastic depth 0.2. Input ``[N, 3, H, W]``
    (224 for the pretrained weights), output ``[N, 1000]``.

    Args:
        weights: a ``Swin_T_Weights`` member or its name, or None (random init).
        progress: show a download progress bar. Default True.
        **kwargs: passed to :class:`SwinTransformer`.

    Raises:
        ValueError: ``num_classes`` contradicts the weights.
    """
    weights = Swin_T_Weights.verify(weights)
    return _swin_transformer([4, 4], 96, [2, 2, 6, 2], [3, 6, 12, 24], [7, 7], 0.2, weights, progress, **kwargs)
