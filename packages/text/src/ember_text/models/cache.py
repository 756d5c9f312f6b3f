"""DynamicCache: the keys and values of past tokens, per layer (transformers.DynamicCache's shape and names).

Each layer holds keys and values ``[batch, kv_heads, seq, head_dim]``; ``update`` appends the
new tokens' and returns the whole. Rows (sequences) can be selected, dropped, and caches of
different lengths concatenated along the batch (the shorter ones left-padded with zeros, so
the caller masks those positions) for continuous batching.
"""

from __future__ import annotations

import ember


class DynamicCache:
    """A growing key/value cache for incremental decoding (Hugging Face transformers'
    ``DynamicCache``): per layer, keys and values ``[batch, kv_heads, seq, head_dim]`` that
    ``update`` extends along ``seq``. Created empty; ``cache[i]`` is layer ``i``'s ``(keys,
    values)``. ``update`` raises IndexError when a layer is skipped.
    """
    def __init__(self):
        self.key_cache: list = []
        self.value_cache: list = []

    def __len__(self) -> int:
        return len(self.key_cache)

    def __getitem__(self, layer_idx: int):
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def __iter__(self):
        for layer in range(len(self)):
            yield self[layer]

    def update(self, key_states, value_states, layer_idx: int):
        """Append ``[batch, kv_heads, new, head_dim]`` keys/values to layer ``layer_idx``; returns that layer's all."""
        if len(self.key_cache) <= layer_idx:
            if len(self.key_cache) != layer_idx:
                raise IndexError(f"cache layers must be filled in order: got layer {layer_idx} with "
                                 f"{len(self.key_cache)} filled")
            self.key_cache.append(key_states)
            self.value_cache.append(value_states)
        else:
            self.key_cache[layer_idx] = ember.cat([self.key_cache[layer_idx], key_states], dim=-2)
            self.value_cache[layer_idx] = ember.cat([self.value_cache[layer_idx], value_states], dim=-2)
        return self.key_cache[layer_idx], self.value_cache[layer_idx]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """How many positions layer ``layer_idx`` holds (0 for an empty cache)."""
        return 0 if len(self.key_cache) <= layer_idx else self.key_cache[layer_idx].shape[-2]

    @property
    def batch_size(self) -> int:
        return self.key_cache[0].shape[0] if self.key_cache else 0

    def batch_select_indices(self, indices) -> None:
        """Keep only the rows ``indices`` (a list or an int64 tensor), in that order (in place)."""
        index = indices if isinstance(indices, ember.Tensor) else ember.tensor(list(indices), dtype=ember.int64)
        self.key_cache = [k.index_select(0, index) for k in self.key_cache]
        self.value_cache = [v.index_select(0, index) for v in self.value_cache]

    def reorder_cache(self, beam_idx) -> None:
        self.batch_select_indices(beam_idx)

    def drop_rows(self, rows) -> None:
        """Remove the rows ``rows`` (finished sequences) from the batch (in place)."""
        drop = set(int(r) for r in rows)
        self.batch_select_indices([i for i in range(self.batch_size) if i not in drop])

    def crop(self, max_length: int) -> None:
        """Keep the first ``max_length`` positions (a negative value removes that many from the end)."""
        if max_length < 0:
            max_length = self.get_seq_length() - abs(max_length)
        self.key_cache = [k[..., :max_length, :] for k in self.key_cache]
        self.value_cache = [v[..., :max_length, :] for v in self.value_cache]

    @classmethod
    def concatenate(cls, caches: list[DynamicCache]) -> tuple[DynamicCache, list[int]]:
        """The caches side by side along the batch; returns it and the left padding added to each input cache.

        A cache shorter than the longest is left-padded with zeros by the difference; the caller
        gives those positions 0 in the attention mask (and keeps each row's own position ids).

        Raises:
            ValueError: no caches, or caches with different numbers of layers.
        """
        if not caches:
            raise ValueError("concatenate needs at least one cache")
        layers = {len(c) for c in caches}
        if len(layers) != 1:
            raise ValueError(f"caches to concatenate must have the same number of layers, got {sorted(layers)}")
        longest = max(c.get_seq_length() for c in caches)
        pads = [longest - c.get_seq_length() for c in caches]
        out = cls()
        for layer in range(layers.pop()):
            for store, which in ((out.key_cache, 0), (out.value_cache, 1)):
                parts = []
                for cache, pad in zip(caches, pads):
                    t = cache[layer][which]
                    if pad:
                        b, h, _, d = t.shape
                        t = ember.cat([ember.zeros(b, h, pad, d, dtype=t.dtype), t], dim=-2)
                    parts.append(t)
                store.append(ember.cat(parts, dim=0))
        return out, pads

    def to_legacy_cache(self) -> tuple:
        return tuple((k, v) for k, v in zip(self.key_cache, self.value_cache))

    @classmethod
    def from_legacy_cache(cls, past) -> DynamicCache:
        cache = cls()
        for k, v in past or ():
            cache.key_cache.append(k)
            cache.value_cache.append(v)
        return cache
