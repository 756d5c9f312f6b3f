"""MultiheadAttention (torch.nn.MultiheadAttention)."""

from __future__ import annotations

from ...ops.attention import _multi_head_attention, canonical_mask
from ...ops.creation import empty
from .. import init
from ..parameter import Parameter
from .linear import Linear, _factory_kwargs
from .module import Module

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """The output projection of MultiheadAttention: a Linear under torch's class name, so
    that printed models read the same."""


class MultiheadAttention(Module):
    """Multi-head attention (Vaswani et al., 2017, "Attention Is All You Need";
    torch.nn.MultiheadAttention).

    Inputs are sequence-first, query ``[L, N, E]``, key ``[S, N, kdim]``, value ``[S, N, vdim]``,
    or batch-first ``[N, L, E]`` ... when ``batch_first``, or unbatched ``[L, E]`` ...;
    ``key_padding_mask`` ``[N, S]`` (True or -inf = ignore that key), ``attn_mask`` ``[L, S]``
    or ``[N*num_heads, L, S]`` (bool: True = not allowed; float: added to the scores).
    ``forward`` returns ``(output, weights)``: output in the query's layout, weights ``[N, L,
    S]`` (averaged over heads; ``[N, num_heads, L, S]`` when not ``average_attn_weights``) or
    None when not ``need_weights``.

    Parameters: ``in_proj_weight`` ``[3E, E]`` (or ``q_proj_weight``, ``k_proj_weight``,
    ``v_proj_weight`` when kdim or vdim differ from E), ``in_proj_bias`` ``[3E]``,
    ``out_proj`` (a Linear), and ``bias_k``/``bias_v`` ``[1, 1, E]`` with ``add_bias_kv``.
    ValueError for non-positive sizes, AssertionError when E is not divisible by num_heads.

    ``embed_dim``: E, the query's feature size and the output's.  ``num_heads``: the heads,
    each of size ``E // num_heads``.  ``dropout``: the drop probability of the attention
    weights in training.  ``bias``: learn ``in_proj_bias`` and the output projection's bias.
    ``add_bias_kv``: learn ``bias_k``, ``bias_v`` appended to the keys and values as one more
    position.  ``add_zero_attn``: append a position of zeros to the keys and values.
    ``kdim``, ``vdim``: the key's and value's feature sizes (E when None).  ``batch_first``:
    ``[N, L, E]`` layout.  ``device``, ``dtype``: of the parameters.  Projections are
    initialised with ``xavier_uniform_``, biases with zeros, ``bias_k``/``bias_v`` with
    ``xavier_normal_``.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        fk = _factory_kwargs(device, dtype)
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                          None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        separate = not self._qkv_same_embed_dim
        # batch-first input is handled in its own layout (no transposes): same numbers as torch's
        return _multi_head_attention(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            self.training, key_padding_mask, need_weights, attn_mask, separate, self.q_proj_weight,
            self.k_proj_weight, self.v_proj_weight, None, None, average_attn_weights, is_causal,
            batch_first=self.batch_first and query.ndim == 3)
