"""Text generation with a KV cache (transformers' ``GenerationMixin.generate`` for greedy and sampled decoding).

At each step the logits of the last position go through, in transformers' order, the
repetition penalty, then (when sampling) temperature, top-k and top-p; greedy decoding takes
the arg-max. Prompts in a batch are left-padded (the attention mask marks the padding) and get
their own position ids. A finished sequence (it produced ``eos_token_id``) is filled with
``pad_token_id`` until every sequence has finished or ``max_new_tokens`` were made.
"""

from __future__ import annotations

import ember

from .cache import DynamicCache


def _penalize_repetition(scores, input_ids, penalty: float):
    """CTRL's repetition penalty (Keskar et al., 2019): logits of tokens already present are divided by it
    (multiplied, when negative)."""
    picked = scores.gather(1, input_ids)
    picked = ember.where(picked < 0, picked * penalty, picked / penalty)
    return scores.scatter(1, input_ids, picked)


def _top_k(scores, k: int):
    k = min(k, scores.shape[-1])
    threshold = scores.topk(k, dim=-1).values[..., -1:]
    return scores.masked_fill(scores < threshold, float("-inf"))


def _top_p(scores, p: float, min_tokens_to_keep: int = 1):
    """Nucleus filtering (Holtzman et al., 2020), as transformers' TopPLogitsWarper: keep the smallest set of tokens
    whose probability reaches ``p``."""
    sorted_logits, sorted_idx = scores.sort(dim=-1, descending=False)
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    remove = cumulative <= (1 - p)
    remove[..., -min_tokens_to_keep:] = False
    mask = remove.scatter(1, sorted_idx, remove)
    return scores.masked_fill(mask, float("-inf"))


def position_ids_from_mask(attention_mask):
    """Each prompt token's position counting only real tokens (padding gets position 0, as transformers 5)."""
    pos = attention_mask.long().cumsum(-1) - 1
    return pos.masked_fill(attention_mask == 0, 0)


class GenerationMixin:
    """``generate`` for causal language models whose forward takes (input_ids, attention_mask, position_ids,
    past_key_values, use_cache) and returns logits ``[B, S, vocab]`` and the cache."""

    @ember.no_grad()
    def generate(self, input_ids=None, attention_mask=None, max_new_tokens: int | None = None,
                 do_sample: bool = False, temperature: float = 1.0, top_k: int | None = 50, top_p: float = 1.0,
                 repetition_penalty: float = 1.0, eos_token_id=None, pad_token_id=None, streamer=None,
                 use_cache: bool = True, max_length: int | None = None, generator=None, **kwargs):
        """Continue each prompt of ``input_ids`` ``[B, S]``; returns ``[B, S + new]`` int64 (prompt included).

        Args:
            attention_mask: ``[B, S]``, 0 at (left) padding; default: 0 where the prompt holds
                ``pad_token_id`` (when it is not also eos), as transformers infers it, else all ones.
            max_new_tokens: tokens to add (default 20, or ``max_length - S``).
            do_sample: sample from the filtered distribution instead of taking the arg-max.
            temperature, top_k, top_p: the sampling filters (top_k None or 0 disables it).
            repetition_penalty: > 1 discourages tokens already in the sequence.
            eos_token_id: an id or a list of ids ending a sequence (default: the config's).
            pad_token_id: fills finished sequences (default: the config's, else the first eos id).
            streamer: an object with ``put(ids)`` and ``end()`` (``TextStreamer``, ``TextIteratorStreamer``).
            use_cache: keep past keys/values (False recomputes the whole sequence each step).

        Raises:
            ValueError: bad sampling arguments, or a streamer with a batch larger than 1.
        """
        if kwargs:
            raise TypeError(f"generate() got unexpected keyword argument(s) {sorted(kwargs)}")
        if input_ids is None or input_ids.ndim != 2:
            raise ValueError("input_ids must be an int64 tensor [batch, seq]")
        if do_sample and temperature <= 0:
            raise ValueError(f"`temperature` (={temperature}) has to be a strictly positive float")
        if not 0.0 <= top_p <= 1.0:
            raise ValueError(f"`top_p` has to be a float > 0 and < 1, but is {top_p}")
        if repetition_penalty <= 0:
            raise ValueError(f"`repetition_penalty` has to be a strictly positive float, but is {repetition_penalty}")
        batch, prompt_len = input_ids.shape
        if streamer is not None and batch > 1:
            raise ValueError("streamers only support batch size 1")
        if max_new_tokens is None:
            max_new_tokens = (max_length - prompt_len) if max_length is not None else 20
        if eos_token_id is None:
            eos_token_id = getattr(self.config, "eos_token_id", None)
        eos = [] if eos_token_id is None else ([eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id))
        if pad_token_id is None:
            pad_token_id = getattr(self.config, "pad_token_id", None)
        if pad_token_id is None and eos:
            pad_token_id = eos[0]
        if attention_mask is None:
            # transformers' inference: without a mask, pad tokens in the prompt are padding (unless pad is eos)
            if pad_token_id is not None and pad_token_id not in eos and bool((input_ids == pad_token_id).any()):
                attention_mask = (input_ids != pad_token_id).long()
            else:
                attention_mask = ember.ones_like(input_ids)
        input_ids = input_ids.long()
        attention_mask = attention_mask.long()
        if streamer is not None:
            streamer.put(input_ids.cpu())
        cache = DynamicCache() if use_cache else None
        unfinished = ember.ones(batch, dtype=ember.bool)
        step_ids = input_ids
        all_positions = position_ids_from_mask(attention_mask)  # each new token: the previous position + 1
        for _ in range(max_new_tokens):
            positions = all_positions[:, -step_ids.shape[1]:] if cache is not None else all_positions
            out = self(step_ids if cache is not None else input_ids, attention_mask=attention_mask,
                       position_ids=positions, past_key_values=cache, use_cache=cache is not None)
            scores = out.logits[:, -1, :].float()
            if repetition_penalty != 1.0:
                scores = _penalize_repetition(scores, input_ids, repetition_penalty)
            if do_sample:
                if temperature != 1.0:
                    scores = scores / temperature
                if top_k:
                    scores = _top_k(scores, top_k)
                if top_p < 1.0:
                    scores = _top_p(scores, top_p)
                next_tokens = ember.multinomial(scores.softmax(dim=-1), 1, generator=generator).squeeze(1)
            else:
                next_tokens = scores.argmax(dim=-1)
            if pad_token_id is not None:
                next_tokens = ember.where(unfinished, next_tokens, ember.full_like(next_tokens, pad_token_id))
            input_ids = ember.cat([input_ids, next_tokens[:, None]], dim=-1)
            attention_mask = ember.cat([attention_mask, ember.ones(batch, 1, dtype=attention_mask.dtype)], dim=-1)
            all_positions = ember.cat([all_positions, all_positions[:, -1:] + 1], dim=-1)
            if streamer is not None:
                streamer.put(next_tokens.cpu())
            for token in eos:
                unfinished = unfinished & (next_tokens != token)
            step_ids = next_tokens[:, None]
            if eos and not bool(unfinished.any()):
                break
        if streamer is not None:
            streamer.end()
        return input_ids
