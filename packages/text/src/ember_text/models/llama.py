"""Llama (Touvron et al., 2023; Llama 3, 2024) with transformers' module names.

RMSNorm (Zhang & Sennrich, 2019), SwiGLU feed-forward (Shazeer, 2020), rotary position
embeddings (Su et al., 2021: "RoFormer") with the "linear", Llama 3 ("llama3"), "dynamic" and "yarn" frequency
scalings, and grouped-query attention (Ainslie et al., 2023): ``num_key_value_heads`` key/value
heads each serve ``num_attention_heads / num_key_value_heads`` query heads. The LM head is tied to
the embedding only when ``tie_word_embeddings`` is set.
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F

from .activations import get_activation
from .cache import DynamicCache
from .configuration import LlamaConfig
from .generation import GenerationMixin
from .gpt2 import CausalLMHead, causal_mask
from .modeling_utils import PreTrainedModel
from .outputs import BaseModelOutputWithPast

ROPE_TYPES = ("default", "linear", "llama3", "dynamic", "yarn")


def rope_inverse_frequencies(config: LlamaConfig, seq_len: int | None = None) -> tuple:
    """``(inverse frequencies [head_dim / 2] float32, attention scaling)`` for the config's rope
    type, as transformers computes them: "default"; "linear" (positions divided by
    ``factor``); "llama3" (Llama 3.1's smoothed band scaling); "dynamic" (NTK-aware: the base
    grows with ``seq_len`` beyond ``max_position_embeddings``); "yarn" (Peng et al., 2023,
    "YaRN": interpolation below, extrapolation above a band between ``beta_fast`` and
    ``beta_slow`` rotations, and cos/sin scaled by ``0.1 ln(factor) + 1``).

    Raises:
        ValueError: a rope type other than those in ``ROPE_TYPES``.
    """
    params = config.rope()
    dim = int(config.head_dim * params.get("partial_rotary_factor", 1.0))
    base = float(params["rope_theta"])
    kind = params["rope_type"]
    if kind == "dynamic":
        longest = max(seq_len or 0, config.max_position_embeddings)
        factor = params["factor"]
        base *= (factor * longest / config.max_position_embeddings - (factor - 1)) ** (dim / (dim - 2))
    exponents = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim
    inv = (1.0 / (base ** exponents)).astype(np.float32)
    if kind in ("default", "dynamic"):
        return inv, 1.0
    if kind == "linear":
        return (inv / np.float32(params["factor"])).astype(np.float32), 1.0
    if kind == "llama3":
        factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
        old_len = params["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old_len / low, old_len / high
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > low_wavelen, inv / factor, inv)  # long wavelengths: divided by the factor
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
        return np.where(medium, smoothed, scaled).astype(np.float32), 1.0
    if kind == "yarn":
        return _yarn(params, dim, base, config.max_position_embeddings)
    raise ValueError(f"rope_type {kind!r} is not supported; supported: {', '.join(ROPE_TYPES)}")


def _yarn(params, dim, base, max_positions):
    old_len = params.get("original_max_position_embeddings") or max_positions
    factor = params.get("factor") or max_positions / old_len

    def mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
    attention = params.get("attention_factor")
    if attention is None:
        m, m_all = params.get("mscale"), params.get("mscale_all_dim")
        attention = mscale(factor, m) / mscale(factor, m_all) if m and m_all else mscale(factor)
    fast, slow = params.get("beta_fast") or 32, params.get("beta_slow") or 1

    def dim_of(rotations):  # the dimension that turns ``rotations`` times over the original context
        return dim * math.log(old_len / (rotations * 2 * math.pi)) / (2 * math.log(base))
    low, high = dim_of(fast), dim_of(slow)
    if params.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # a ramp of zero width
    ramp = np.clip((np.arange(dim // 2, dtype=np.float32) - low) / (high - low), 0, 1)
    keep = 1 - ramp  # 1: the original frequency (extrapolation), 0: divided by the factor
    freqs = (base ** (np.arange(0, dim, 2).astype(np.float32) / dim)).astype(np.float32)
    inv = (1 / (factor * freqs)) * (1 - keep) + (1 / freqs) * keep
    return inv.astype(np.float32), float(attention)


def rotate_half(x):
    half = x.shape[-1] // 2
    return ember.cat([-x[..., half:], x[..., :half]], dim=-1)


class LlamaRotaryEmbedding(nn.Module):
    """cos and sin of the positions' angles; "dynamic" recomputes its frequencies when a
    longer sequence than any before arrives, and returns to the original ones for a sequence
    within the original length (as transformers' dynamic RoPE)."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        self.rope_type = config.rope()["rope_type"]
        inv, self.attention_scaling = rope_inverse_frequencies(config)
        self.register_buffer("inv_freq", ember.from_numpy(inv), persistent=False)
        self.original_inv_freq = self.inv_freq
        self.max_seq_len_cached = self.original_max_seq_len = config.max_position_embeddings

    def _dynamic_update(self, position_ids):
        seq_len = int(position_ids.max()) + 1
        if seq_len > self.max_seq_len_cached:  # longer than any so far: a larger base
            inv, self.attention_scaling = rope_inverse_frequencies(self.config, seq_len)
            self.inv_freq = ember.from_numpy(inv)
            self.max_seq_len_cached = seq_len
        if seq_len < self.original_max_seq_len < self.max_seq_len_cached:  # back within the original length
            self.inv_freq = self.original_inv_freq
            self.max_seq_len_cached = self.original_max_seq_len

    def forward(self, x, position_ids):
        """cos and sin ``[B, L, head_dim]`` for ``position_ids`` ``[B, L]``, in ``x``'s dtype."""
        if self.rope_type == "dynamic":
            self._dynamic_update(position_ids)
        freqs = position_ids.float()[:, :, None] * self.inv_freq[None, None, :]
        emb = ember.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos(), emb.sin()
        if self.attention_scaling != 1.0:
            cos, sin = cos * self.attention_scaling, sin * self.attention_scaling
        return cos.to(x.dtype), sin.to(x.dtype)


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(ember.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden):
        dtype = hidden.dtype
        h = hidden.float()
        h = h * ember.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(dtype)


class LlamaAttention(nn.Module):
    def __init__(self, config: LlamaConfig, layer_idx: int):
        super().__init__()
        self.layer_idx = layer_idx
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_attention_heads ({self.num_heads}) must be a multiple of num_key_value_heads "
                             f"({self.num_kv_heads})")
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.hidden_size, self.num_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(config.hidden_size, self.num_kv_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, config.hidden_size, bias=bias)
        self.dropout_p = config.attention_dropout

    def forward(self, hidden, cos, sin, mask, cache):
        b, s, _ = hidden.shape
        q = self.q_proj(hidden).view(b, s, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden).view(b, s, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden).view(b, s, self.num_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos[:, None], sin[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.num_kv_heads != self.num_heads,
                                             dropout_p=self.dropout_p if self.training else 0.0)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.num_heads * self.head_dim))


class LlamaMLP(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        bias = config.mlp_bias
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=bias)
        self.act_fn = get_activation(config.hidden_act)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig, layer_idx: int):
        super().__init__()
        self.self_attn = LlamaAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(self, hidden, cos, sin, mask, cache):
        hidden = hidden + self.self_attn(self.input_layernorm(hidden), cos, sin, mask, cache)
        return hidden + self.mlp(self.post_attention_layernorm(hidden))


class LlamaModel(PreTrainedModel):
    """Llama's decoder stack; forward as ``GPT2Model``'s (input_ids, attention_mask, position_ids, cache).

    ``config`` is a :class:`LlamaConfig` (transformers' ``LlamaModel``; Touvron et al., 2023,
    arXiv:2302.13971).
    """

    config_class = LlamaConfig
    base_model_prefix = "model"
    _ignore_unexpected = ("rotary_emb.inv_freq",)

    def __init__(self, config: LlamaConfig):
        super().__init__(config)
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.layers = nn.ModuleList([LlamaDecoderLayer(config, i) for i in range(config.num_hidden_layers)])
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)
        self.post_init()

    def _init_weights(self, module) -> None:
        super()._init_weights(module)
        if isinstance(module, LlamaRMSNorm):
            nn.init.ones_(module.weight)

    def get_input_embeddings(self):
        return self.embed_tokens

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, use_cache=None,
                output_hidden_states=None, return_dict=True, **kwargs):
        if input_ids is None or input_ids.ndim != 2:
            raise ValueError("input_ids must be an int64 tensor [batch, seq]")
        use_cache = self.config.use_cache if use_cache is None else use_cache
        if use_cache and past_key_values is None:
            past_key_values = DynamicCache()
        cache = past_key_values if use_cache else None
        past = cache.get_seq_length() if cache is not None else 0
        b, s = input_ids.shape
        if position_ids is None:
            position_ids = ember.arange(past, past + s)[None].expand(b, s)
        if attention_mask is not None and attention_mask.shape[-1] != past + s:
            raise ValueError(f"attention_mask must cover the past and new tokens: expected {past + s} columns, got "
                             f"{attention_mask.shape[-1]}")
        hidden = self.embed_tokens(input_ids)
        cos, sin = self.rotary_emb(hidden, position_ids)
        mask = causal_mask(attention_mask, s, past)
        output_hidden_states = output_hidden_states if output_hidden_states is not None \
            else self.config.output_hidden_states
        states = [hidden] if output_hidden_states else None
        for layer in self.layers:
            hidden = layer(hidden, cos, sin, mask, cache)
            if states is not None:
                states.append(hidden)
        hidden = self.norm(hidden)
        if states is not None:
            states[-1] = hidden
        return BaseModelOutputWithPast(last_hidden_state=hidden, past_key_values=cache,
                                       hidden_states=tuple(states) if states else None)


class LlamaForCausalLM(CausalLMHead, PreTrainedModel, GenerationMixin):
    """Llama with its LM head: logits ``[B, L, vocab_size]``; ``loss`` when ``labels`` are given.

    ``config`` is a :class:`LlamaConfig`; the head is tied to the embeddings only when
    ``tie_word_embeddings`` (transformers' ``LlamaForCausalLM``).
    """

    config_class = LlamaConfig
    base_model_prefix = "model"
    _tied_weights = {"lm_head.weight": "model.embed_tokens.weight"}
    _ignore_unexpected = LlamaModel._ignore_unexpected

    def __init__(self, config: LlamaConfig):
        super().__init__(config)
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

