"""GPT-2 (Radford et al., 2019) with transformers' module names and its Conv1D weight layout.

GPT-2's checkpoints store each projection as a ``Conv1D`` whose weight is ``[in, out]`` (the
transpose of ``nn.Linear``'s); ``Conv1D`` here keeps that layout, so the files load unchanged
and ``y = x @ W + b``. The LM head shares the token embedding (``lm_head.weight`` is ``wte.weight``).
"""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.nn import functional as F

from .activations import get_activation
from .cache import DynamicCache
from .configuration import GPT2Config
from .generation import GenerationMixin
from .modeling_utils import PreTrainedModel
from .outputs import BaseModelOutputWithPast, CausalLMOutputWithPast


class Conv1D(nn.Module):
    """A linear layer with the weight stored ``[nx, nf]`` (GPT-2's layout): ``x @ weight + bias``."""

    def __init__(self, nf: int, nx: int):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(ember.empty(nx, nf))
        self.bias = nn.Parameter(ember.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return ember.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], self.nf)


def causal_mask(attention_mask, query_len: int, past_len: int):
    """A bool mask ``[B, 1, L, past + L]``: query i sees key j when j <= past + i and key j is not padding."""
    # the lower triangle shifted by past_len, made from the two sizes alone (no aranges), so an
    # exported graph can keep the sequence length dynamic
    mask = ember.ones(query_len, past_len + query_len, dtype=ember.bool).tril(past_len)[None, None]
    if attention_mask is not None:
        mask = mask & attention_mask.to(ember.bool)[:, None, None, :]
    return mask


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx: int):
        super().__init__()
        self.num_heads = config.n_head
        self.head_dim = config.n_embd // config.n_head
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * config.n_embd, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, config.n_embd)
        self.attn_dropout_p = config.attn_pdrop
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
        scale = 1.0 / math.sqrt(self.head_dim) if config.scale_attn_weights else 1.0
        if config.scale_attn_by_inverse_layer_idx:
            scale /= float(layer_idx + 1)
        self.scale = scale

    def forward(self, hidden, mask, cache):
        b, s, e = hidden.shape
        q, k, v = self.c_attn(hidden).split(e, dim=2)
        q, k, v = (t.view(b, s, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale,
                                             dropout_p=self.attn_dropout_p if self.training else 0.0)
        out = out.transpose(1, 2).reshape(b, s, e)
        return self.resid_dropout(self.c_proj(out))


class GPT2MLP(nn.Module):
    def __init__(self, inner: int, config):
        super().__init__()
        self.c_fc = Conv1D(inner, config.n_embd)
        self.c_proj = Conv1D(config.n_embd, inner)
        self.act = get_activation(config.activation_function)
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx: int):
        super().__init__()
        inner = config.n_inner if config.n_inner is not None else 4 * config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx)
        self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner, config)

    def forward(self, hidden, mask, cache):
        hidden = hidden + self.attn(self.ln_1(hidden), mask, cache)
        return hidden + self.mlp(self.ln_2(hidden))


class GPT2Model(PreTrainedModel):
    """GPT-2's decoder stack: ``forward(input_ids [B, L], attention_mask [B, past + L], position_ids [B, L],
    past_key_values=DynamicCache, use_cache)`` -> last_hidden_state ``[B, L, n_embd]`` and the cache.

    ``config`` is a :class:`GPT2Config` (transformers' ``GPT2Model``; Radford et al., 2019).
    """

    config_class = GPT2Config
    base_model_prefix = "transformer"
    _ignore_unexpected = (".attn.bias", ".attn.masked_bias")

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.n_positions, config.n_embd)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                use_cache=None, output_hidden_states=None, return_dict=True, **kwargs):
        if input_ids is None or input_ids.ndim != 2:
            raise ValueError("input_ids must be an int64 tensor [batch, seq]")
        use_cache = self.config.use_cache if use_cache is None else use_cache
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        elif isinstance(past_key_values, (tuple, list)):
            past_key_values = DynamicCache.from_legacy_cache(past_key_values)
        cache = past_key_values if use_cache else None
        past = cache.get_seq_length() if cache is not None else 0
        b, s = input_ids.shape
        if past + s > self.config.n_positions:
            raise ValueError(f"{past + s} positions exceed the model's n_positions ({self.config.n_positions})")
        if position_ids is None:
            position_ids = ember.arange(past, past + s)[None].expand(b, s)
        if attention_mask is not None and attention_mask.shape[-1] != past + s:
            raise ValueError(f"attention_mask must cover the past and new tokens: expected {past + s} columns, got "
                             f"{attention_mask.shape[-1]}")
        hidden = self.drop(self.wte(input_ids) + self.wpe(position_ids))
        mask = causal_mask(attention_mask, s, past)
        output_hidden_states = output_hidden_states if output_hidden_states is not None \
            else self.config.output_hidden_states
        states = [hidden] if output_hidden_states else None
        for block in self.h:
            hidden = block(hidden, mask, cache)
            if states is not None:
                states.append(hidden)
        hidden = self.ln_f(hidden)
        if states is not None:
            states[-1] = hidden  # transformers reports the final state after ln_f
        return BaseModelOutputWithPast(last_hidden_state=hidden, past_key_values=cache,
                                       hidden_states=tuple(states) if states else None)


def causal_lm_loss(logits, labels):
    """Next-token cross entropy: position t predicts label t+1; labels of -100 are ignored."""
    shift_logits = logits[:, :-1, :].reshape(-1, logits.shape[-1]).float()
    return F.cross_entropy(shift_logits, labels[:, 1:].reshape(-1), ignore_index=-100)


class CausalLMHead:
    """The forward of a base model (the attribute named ``base_model_prefix``) under an LM
    head ``lm_head``, shared by the causal language models."""

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, use_cache=None,
                labels=None, output_hidden_states=None, return_dict=True, **kwargs):
        base = getattr(self, self.base_model_prefix)(
            input_ids, attention_mask=attention_mask, position_ids=position_ids, past_key_values=past_key_values,
            use_cache=use_cache, output_hidden_states=output_hidden_states)
        logits = self.lm_head(base.last_hidden_state)
        loss = causal_lm_loss(logits, labels) if labels is not None else None
        out = CausalLMOutputWithPast(loss=loss, logits=logits, past_key_values=base.past_key_values,
                                     hidden_states=base.hidden_states)
        return out if return_dict else out.to_tuple()


class GPT2LMHeadModel(CausalLMHead, PreTrainedModel, GenerationMixin):
    """GPT-2 with its tied LM head: logits ``[B, L, vocab_size]``; ``loss`` when ``labels`` ``[B, L]`` are given.

    ``config`` is a :class:`GPT2Config` (transformers' ``GPT2LMHeadModel``).
    """

    config_class = GPT2Config
    base_model_prefix = "transformer"
    _tied_weights = {"lm_head.weight": "transformer.wte.weight"}
    _ignore_unexpected = GPT2Model._ignore_unexpected

    def __init__(self, config: GPT2Config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

