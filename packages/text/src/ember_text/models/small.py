"""Small models for training from scratch: an LSTM language model, TextCNN, a Transformer classifier."""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.nn import functional as F


class LSTMLanguageModel(nn.Module):
    """An embedding, a multi-layer LSTM and a decoder to the vocabulary (PyTorch's word_language_model RNNModel).

    ``forward(input [L, B] int64, hidden=None)`` (``[B, L]`` when ``batch_first``) returns logits
    ``[L, B, ntoken]`` (``[B, L, ntoken]``) and the new hidden state ``(h, c)``, each
    ``[nlayers, B, nhid]``. ``tie_weights`` shares the embedding and the decoder (Press & Wolf,
    2017, arXiv:1608.05859), which needs ``nhid == ninp``.

    Args:
        ntoken: vocabulary size.
        ninp: embedding width.
        nhid: LSTM hidden width.
        nlayers: LSTM layers.
        dropout: dropout on the embeddings, between LSTM layers and before the decoder.
        tie_weights: share the embedding and decoder weights.
        batch_first: inputs and logits are batch-major.

    Raises:
        ValueError: ``tie_weights`` with ``nhid != ninp``.
    """

    def __init__(self, ntoken: int, ninp: int = 200, nhid: int = 200, nlayers: int = 2, dropout: float = 0.2,
                 tie_weights: bool = False, batch_first: bool = False):
        super().__init__()
        self.ntoken, self.nhid, self.nlayers = ntoken, nhid, nlayers
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0, batch_first=batch_first)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def init_hidden(self, batch_size: int):
        shape = (self.nlayers, batch_size, self.nhid)
        return ember.zeros(shape), ember.zeros(shape)

    def forward(self, input, hidden=None):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden


class TextCNN(nn.Module):
    """Kim (2014), "Convolutional Neural Networks for Sentence Classification" (arXiv:1408.5882):
    parallel 1-d convolutions of several widths over the embeddings, max-over-time pooling,
    dropout and a linear classifier.

    ``forward(input_ids [B, L])`` -> logits ``[B, num_classes]``. Inputs shorter than the widest
    kernel are right-padded with ``padding_idx``.

    Args:
        vocab_size: embedding rows.
        num_classes: classifier outputs.
        embed_dim: embedding width.
        kernel_sizes: convolution widths, in tokens.
        num_filters: output channels of each convolution.
        dropout: dropout before the classifier.
        padding_idx: the padding id (its embedding stays zero; None: no padding id, pads with 0).
    """

    def __init__(self, vocab_size: int, num_classes: int, embed_dim: int = 128, kernel_sizes=(3, 4, 5),
                 num_filters: int = 100, dropout: float = 0.5, padding_idx: int | None = 0):
        super().__init__()
        self.padding_idx = padding_idx
        self.kernel_sizes = tuple(kernel_sizes)
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, num_filters, k) for k in self.kernel_sizes])
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(num_filters * len(self.kernel_sizes), num_classes)

    def forward(self, input_ids):
        short = max(self.kernel_sizes) - input_ids.shape[1]
        if short > 0:
            input_ids = F.pad(input_ids, (0, short), value=self.padding_idx or 0)
        x = self.embedding(input_ids).transpose(1, 2)  # [B, E, L]
        pooled = [F.relu(conv(x)).amax(dim=2) for conv in self.convs]
        return self.fc(self.dropout(ember.cat(pooled, dim=1)))


class PositionalEncoding(nn.Module):
    """Vaswani et al. (2017, arXiv:1706.03762) sinusoidal encodings added to ``[B, L, d_model]``
    inputs (a non-persistent buffer), then dropout.

    Args:
        d_model: the feature width.
        max_len: the longest sequence; a longer input raises ValueError.
        dropout: dropout probability after the addition.
    """

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = ember.arange(max_len).float()[:, None]
        div = ember.exp(ember.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = ember.zeros(max_len, d_model)
        pe[:, 0::2] = ember.sin(position * div)
        pe[:, 1::2] = ember.cos(position * div)[:, : d_model // 2]
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        if x.shape[1] > self.pe.shape[0]:
            raise ValueError(f"sequence of {x.shape[1]} exceeds max_len {self.pe.shape[0]}")
        return self.dropout(x + self.pe[: x.shape[1]])


class TransformerClassifier(nn.Module):
    """A Transformer encoder (``nn.TransformerEncoder``, batch first) over embeddings plus sinusoidal positions,
    mean-pooled over the real tokens, then a linear classifier.

    ``forward(input_ids [B, L], attention_mask [B, L] (1 = token) = None)`` -> logits ``[B, num_classes]``.

    Args:
        vocab_size: embedding rows.
        num_classes: classifier outputs.
        d_model: the model width (embeddings are scaled by ``sqrt(d_model)``).
        nhead: attention heads.
        num_layers: encoder layers.
        dim_feedforward: hidden width of each layer's MLP.
        dropout: dropout of the positions and of each layer.
        max_len: the longest sequence (:class:`PositionalEncoding`).
        padding_idx: the padding id, whose embedding stays zero (None: none).
    """

    def __init__(self, vocab_size: int, num_classes: int, d_model: int = 128, nhead: int = 4, num_layers: int = 2,
                 dim_feedforward: int = 256, dropout: float = 0.1, max_len: int = 512, padding_idx: int | None = 0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        self.pos = PositionalEncoding(d_model, max_len, dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.fc = nn.Linear(d_model, num_classes)
        self.scale = math.sqrt(d_model)

    def forward(self, input_ids, attention_mask=None):
        if attention_mask is None:
            attention_mask = ember.ones_like(input_ids)
        x = self.pos(self.embedding(input_ids) * self.scale)
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        m = attention_mask[..., None].to(x.dtype)
        pooled = (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
        return self.fc(pooled)
