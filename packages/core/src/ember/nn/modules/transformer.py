"""The Transformer of Vaswani et al., 2017, "Attention Is All You Need": encoder and decoder
layers, their stacks and the full encoder-decoder (torch.nn.modules.transformer).

Shapes are sequence-first (``[S, N, E]``) unless ``batch_first`` (``[N, S, E]``); unbatched
``[S, E]`` is accepted.  Masks follow MultiheadAttention: ``*_mask`` ``[T, S]`` or
``[N*nhead, T, S]`` (bool: True = not allowed; float: added), ``*_key_padding_mask``
``[N, S]`` (True = ignore that position).
"""

from __future__ import annotations

import copy

from ...ops.attention import canonical_mask
from ...ops.creation import full
from ...ops.layout import triu
from .. import functional as F
from .. import init
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]


def _square_subsequent_mask(sz, device=None, dtype=None):
    """``[sz, sz]`` float mask: -inf above the diagonal (a position may not attend to later ones), 0
    elsewhere."""
    return triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)


def _activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _seq_len(src, batch_first):
    if src.ndim == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """``is_causal`` when given; when None, whether ``mask`` equals the square subsequent mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        causal = _square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        make_causal = tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())
    return make_causal


def _dtype_or_none(t):
    return None if t is None else t.dtype


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with residual, dropout and LayerNorm
    (after each block, or before it with ``norm_first``) (torch.nn.TransformerEncoderLayer).

    src ``[S, N, d_model]`` (``[N, S, d_model]`` with ``batch_first``, or ``[S, d_model]``) to the
    same shape.  ``activation``: "relu", "gelu" or a callable (a module is registered as a
    submodule).  RuntimeError for another activation name.

    ``d_model``: the feature size E.  ``nhead``: attention heads (dividing ``d_model``).
    ``dim_feedforward``: the hidden size of the feed-forward block (Linear, activation,
    dropout, Linear).  ``dropout``: the drop probability after attention, inside and after
    the feed-forward block.  ``layer_norm_eps``: the LayerNorms' eps.  ``bias``: biases in the
    Linear layers and LayerNorms.  ``device``, ``dtype``: of the parameters.
    ``batch_first``: ``[N, S, d_model]`` layout.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                              _dtype_or_none(src_mask), "src_mask", src.dtype)
        src_mask = canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (``memory``), then a feed-forward
    block, each with residual, dropout and LayerNorm (torch.nn.TransformerDecoderLayer).

    tgt ``[T, N, d_model]``, memory ``[S, N, d_model]`` (batch first with ``batch_first``) to
    tgt's shape.  RuntimeError for an unknown activation name.

    ``d_model``: the feature size E.  ``nhead``: attention heads (dividing ``d_model``).
    ``dim_feedforward``: the hidden size of the feed-forward block (Linear, activation,
    dropout, Linear).  ``dropout``: the drop probability after attention, inside and after
    the feed-forward block.  ``layer_norm_eps``: the LayerNorms' eps.  ``bias``: biases in the
    Linear layers and LayerNorms.  ``device``, ``dtype``: of the parameters.
    ``activation``: "relu", "gelu" or a callable.  ``norm_first``: apply each LayerNorm
    before its block (pre-norm) instead of after the residual sum.  ``batch_first``:
    ``[N, T, d_model]`` layout.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation) if isinstance(activation, str) else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` when given
    (torch.nn.TransformerEncoder).  ``enable_nested_tensor`` is accepted and has no effect
    (there are no nested tensors: padded positions are always computed); ``mask_check`` is kept
    for the same reason.  When ``is_causal`` is None, a ``mask`` equal to the square
    subsequent mask is recognised as causal."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask", _dtype_or_none(mask),
                                              "mask", src.dtype)
        mask = canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        seq_len = _seq_len(src, self.layers[0].self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn over ``memory``, then
    ``norm`` when given (torch.nn.TransformerDecoder)."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        seq_len = _seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer (torch.nn.Transformer): src ``[S, N, d_model]`` and tgt
    ``[T, N, d_model]`` (batch first with ``batch_first``; unbatched ``[S, d_model]``) to
    ``[T, N, d_model]``.  Both stacks end with a LayerNorm; ``custom_encoder`` /
    ``custom_decoder`` replace them.  Matrices are re-initialised with ``xavier_uniform_``.
    RuntimeError when src and tgt differ in batch size or their feature size is not d_model.

    ``num_encoder_layers``, ``num_decoder_layers``: the depths of the two stacks.
    ``d_model``: the feature size E.  ``nhead``: attention heads (dividing ``d_model``).
    ``dim_feedforward``: the hidden size of the feed-forward block (Linear, activation,
    dropout, Linear).  ``dropout``: the drop probability after attention, inside and after
    the feed-forward block.  ``layer_norm_eps``: the LayerNorms' eps.  ``bias``: biases in the
    Linear layers and LayerNorms.  ``device``, ``dtype``: of the parameters.
    ``activation``: "relu", "gelu" or a callable, in every layer.  ``norm_first``:
    pre-norm layers.  ``batch_first``: batch-first layouts.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **fk)
            self.encoder = TransformerEncoder(layer, num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                                            batch_first, norm_first, bias, **fk)
            self.decoder = TransformerDecoder(layer, num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk))
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.ndim == 3
        bdim = 0 if self.batch_first else 1
        if is_batched and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """``[sz, sz]`` float mask (default dtype): -inf above the diagonal, 0 on and below it."""
        return _square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

