"""BERT (Devlin et al., 2019) with transformers' module names, so its checkpoints load unchanged.

``BertModel`` returns the last hidden state ``[batch, seq, hidden]`` and the pooler output
(tanh of a dense layer over the [CLS] state, ``[batch, hidden]``); ``BertForSequenceClassification``
adds dropout and a linear classifier. Attention runs through ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

from .activations import get_activation
from .configuration import BertConfig
from .modeling_utils import PreTrainedModel
from .outputs import BaseModelOutputWithPoolingAndCrossAttentions, SequenceClassifierOutput


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        seq = input_ids.shape[1]
        if seq > self.position_embeddings.num_embeddings:
            raise ValueError(f"input of {seq} tokens is longer than the model's max_position_embeddings "
                             f"({self.position_embeddings.num_embeddings}); truncate it")
        if position_ids is None:
            position_ids = ember.arange(seq).unsqueeze(0)
        if token_type_ids is None:
            token_type_ids = ember.zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.hidden_size % config.num_attention_heads:
            raise ValueError(f"hidden_size ({config.hidden_size}) is not a multiple of num_attention_heads "
                             f"({config.num_attention_heads})")
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout_p = config.attention_probs_dropout_prob

    def _heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, hidden, mask):
        q, k, v = self._heads(self.query(hidden)), self._heads(self.key(hidden)), self._heads(self.value(hidden))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             dropout_p=self.dropout_p if self.training else 0.0)
        b, _, s, _ = out.shape
        return out.transpose(1, 2).reshape(b, s, self.num_heads * self.head_dim)


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden, residual):
        return self.LayerNorm(self.dropout(self.dense(hidden)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden, mask):
        return self.output(self.self(hidden, mask), hidden)


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = get_activation(config.hidden_act)

    def forward(self, hidden):
        return self.act(self.dense(hidden))


class BertOutput(BertSelfOutput):
    def __init__(self, config):
        super().__init__(config)
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden, mask):
        attended = self.attention(hidden, mask)
        return self.output(self.intermediate(attended), attended)


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden):
        return self.dense(hidden[:, 0]).tanh()


class BertModel(PreTrainedModel):
    """BERT's encoder. ``forward(input_ids [B, S], attention_mask [B, S] (1 = token, 0 = padding), token_type_ids)``.

    Returns ``BaseModelOutputWithPoolingAndCrossAttentions`` with ``last_hidden_state``
    ``[B, S, hidden]``, ``pooler_output`` ``[B, hidden]`` (when ``add_pooling_layer``) and, with
    ``output_hidden_states=True``, the embeddings' and each layer's output.

    ``config`` is a :class:`BertConfig`; ``add_pooling_layer`` adds the tanh pooler over the
    first token (transformers' ``BertModel``; Devlin et al., 2019, arXiv:1810.04805).
    """

    config_class = BertConfig
    base_model_prefix = "bert"
    _ignore_unexpected = ("position_ids", "cls.predictions", "cls.seq_relationship")

    def __init__(self, config: BertConfig, add_pooling_layer: bool = True):
        super().__init__(config)
        if config.position_embedding_type != "absolute":
            raise ValueError(f"position_embedding_type {config.position_embedding_type!r} is not supported; only "
                             "'absolute'")
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if add_pooling_layer else None
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                output_hidden_states=None, return_dict=True, **kwargs):
        if input_ids is None:
            raise ValueError("You have to specify input_ids")
        if input_ids.ndim != 2:
            raise ValueError(f"input_ids must be [batch, seq], got shape {list(input_ids.shape)}")
        hidden = self.embeddings(input_ids, token_type_ids, position_ids)
        mask = None
        if attention_mask is not None:
            mask = attention_mask.to(ember.bool)[:, None, None, :]  # [B, 1, 1, S]: which keys each query sees
        output_hidden_states = output_hidden_states if output_hidden_states is not None \
            else self.config.output_hidden_states
        states = [hidden] if output_hidden_states else None
        for layer in self.encoder.layer:
            hidden = layer(hidden, mask)
            if states is not None:
                states.append(hidden)
        pooled = self.pooler(hidden) if self.pooler is not None else None
        out = BaseModelOutputWithPoolingAndCrossAttentions(
            last_hidden_state=hidden, pooler_output=pooled, hidden_states=tuple(states) if states else None)
        return out if return_dict else out.to_tuple()


def classification_loss(config, logits, labels):
    """transformers' choice of loss from ``problem_type`` (inferred from num_labels and the labels' dtype)."""
    problem = config.problem_type
    if problem is None:
        if config.num_labels == 1:
            problem = "regression"
        elif labels.dtype in (ember.int64, ember.int32):
            problem = "single_label_classification"
        else:
            problem = "multi_label_classification"
    if problem == "regression":
        return F.mse_loss(logits.squeeze(), labels.squeeze().to(logits.dtype)) if config.num_labels == 1 \
            else F.mse_loss(logits, labels.to(logits.dtype))
    if problem == "single_label_classification":
        return F.cross_entropy(logits.view(-1, config.num_labels), labels.view(-1))
    return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


class BertForSequenceClassification(PreTrainedModel):
    """BERT with a linear classifier over the pooled output: logits ``[B, num_labels]``; loss when labels are given.

    ``config`` is a :class:`BertConfig`; its ``num_labels`` sets the classifier's outputs and,
    with ``problem_type``, the loss (transformers' ``BertForSequenceClassification``).
    """

    config_class = BertConfig
    base_model_prefix = "bert"
    _head_prefixes = ("classifier.",)
    _ignore_unexpected = BertModel._ignore_unexpected

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.bert = BertModel(config)
        dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None, labels=None,
                output_hidden_states=None, return_dict=True, **kwargs):
        base = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                         position_ids=position_ids, output_hidden_states=output_hidden_states)
        logits = self.classifier(self.dropout(base.pooler_output))
        loss = classification_loss(self.config, logits, labels) if labels is not None else None
        out = SequenceClassifierOutput(loss=loss, logits=logits, hidden_states=base.hidden_states)
        return out if return_dict else out.to_tuple()
