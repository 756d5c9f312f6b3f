"""Iteration-level batching ("continuous batching", Yu et al., 2022: "Orca"): sequences join a
running decode batch between steps and leave it as soon as they finish.

``DecodeBatch.add`` prefills one prompt alone (its own KV cache) and picks its first token;
the sequence joins the batch at the next ``step``, which feeds every running sequence its
last token in one forward pass ``[B, 1]`` and picks each one's next token with its own
settings. The rows' caches are kept side by side in one ``DynamicCache``, left-padded to the
longest (the attention mask hides the padding, and each row keeps its own position ids), so a
sequence's tokens are those ``generate`` gives it alone: equal for greedy decoding up to
floating-point summation order, and, for one running sequence, equal for sampling with the
same generator too. A finished row is dropped from the cache and padding columns no row
needs any more are cut.
"""

from __future__ import annotations

import ember

from .cache import DynamicCache
from .generation import _penalize_repetition, _top_k, _top_p

__all__ = ["DecodeBatch", "DecodingSequence"]


class DecodingSequence:
    """One sequence of a DecodeBatch (made by ``DecodeBatch.add``, not by hand).

    Attributes: ``prompt`` (ids), ``tokens`` (generated ids, the EOS included when it came),
    ``finished``, ``finish_reason`` ("stop": an EOS token; "length": ``max_new_tokens``;
    "cancelled": ``DecodeBatch.cancel``), and the settings given to ``add``:

    Args:
        prompt: the prompt's token ids.
        max_new_tokens: the most tokens to generate.
        do_sample: sample (True) or pick the most likely token (greedy).
        temperature: logits are divided by it before sampling.
        top_k: sample among the ``top_k`` most likely tokens (None: all).
        top_p: sample within the smallest set of probability mass >= ``top_p`` (nucleus).
        repetition_penalty: the CTRL penalty on tokens already in the sequence (1.0: none).
        eos: the collection of ids that end the sequence.
        generator: the ``ember.Generator`` of the sampling draws (None: the global one).
    """

    def __init__(self, prompt, max_new_tokens, do_sample, temperature, top_k, top_p, repetition_penalty, eos,
                 generator):
        self.prompt: list[int] = prompt
        self.tokens: list[int] = []
        self.max_new_tokens, self.do_sample, self.temperature = max_new_tokens, do_sample, temperature
        self.top_k, self.top_p, self.repetition_penalty = top_k, top_p, repetition_penalty
        self.eos, self.generator = eos, generator
        self.finished = False
        self.finish_reason: str | None = None

    @property
    def ids(self) -> list[int]:
        """The prompt followed by the generated tokens."""
        return self.prompt + self.tokens

    def _append(self, token: int) -> None:
        self.tokens.append(token)
        if token in self.eos:
            self.finished, self.finish_reason = True, "stop"
        elif len(self.tokens) >= self.max_new_tokens:
            self.finished, self.finish_reason = True, "length"

    def __repr__(self) -> str:
        return (f"DecodingSequence(prompt={len(self.prompt)} tokens, generated={len(self.tokens)}, "
                f"finish_reason={self.finish_reason!r})")


class DecodeBatch:
    """A running batch of sequences of one causal language model (``GPT2LMHeadModel``,
    ``LlamaForCausalLM``: any model whose forward takes input_ids, attention_mask, position_ids
    and a DynamicCache and returns logits ``[B, S, vocab]``).

    ``add(prompt, ...)`` -> DecodingSequence (its first token picked); ``step()`` -> the
    sequences that got a token; ``cancel(seq)``; ``len(batch)``: sequences not finished.
    Not thread-safe: one thread drives a batch. ``model`` is the causal LM, used as is (put
    it in eval mode and on its device first).
    """

    def __init__(self, model):
        self.model = model
        self._rows: list[DecodingSequence] = []
        self._cache: DynamicCache | None = None
        self._mask = None  # int64 [rows, cache length]: 0 at each row's left padding
        self._joining: list[tuple[DecodingSequence, DynamicCache]] = []

    def __len__(self) -> int:
        return len(self._rows) + len(self._joining)

    @property
    def sequences(self) -> list[DecodingSequence]:
        """The sequences not finished (those in the batch, then those joining at the next step)."""
        return self._rows + [s for s, _ in self._joining]

    @property
    def cache_length(self) -> int:
        """Positions the batch's cache holds per row (the longest row's, padding included)."""
        return self._cache.get_seq_length() if self._cache is not None else 0

    @ember.no_grad()
    def add(self, input_ids, max_new_tokens: int = 20, do_sample: bool = False, temperature: float = 1.0,
            top_k: int | None = 50, top_p: float = 1.0, repetition_penalty: float = 1.0, eos_token_id=None,
            generator=None) -> DecodingSequence:
        """Prefill one prompt (a list of ids, or an int tensor ``[S]`` or ``[1, S]``) with a cache of
        its own and pick its first token; the sequence joins the batch at the next ``step``.

        The arguments are ``generate``'s (eos_token_id: an id or a list, default the model
        config's). Raises ValueError for an empty prompt, bad sampling arguments or a sequence
        longer than the model's positions (GPT-2's ``n_positions``)."""
        if isinstance(input_ids, ember.Tensor):
            if input_ids.ndim == 2 and input_ids.shape[0] != 1:
                raise ValueError(f"add takes one prompt; got input_ids of shape {list(input_ids.shape)}")
            input_ids = input_ids.reshape(-1).tolist()
        prompt = [int(t) for t in input_ids]
        if not prompt:
            raise ValueError("the prompt must hold at least one token")
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if do_sample and temperature <= 0:
            raise ValueError(f"`temperature` (={temperature}) has to be a strictly positive float")
        if not 0.0 <= top_p <= 1.0:
            raise ValueError(f"`top_p` has to be a float > 0 and < 1, but is {top_p}")
        if repetition_penalty <= 0:
            raise ValueError(f"`repetition_penalty` has to be a strictly positive float, but is {repetition_penalty}")
        limit = getattr(self.model.config, "n_positions", None)
        if limit is not None and len(prompt) + max_new_tokens > limit:
            raise ValueError(f"{len(prompt)} prompt tokens and {max_new_tokens} new ones exceed the model's "
                             f"n_positions ({limit})")
        if eos_token_id is None:
            eos_token_id = getattr(self.model.config, "eos_token_id", None)
        eos = set() if eos_token_id is None else ({eos_token_id} if isinstance(eos_token_id, int)
                                                  else set(eos_token_id))
        seq = DecodingSequence(prompt, max_new_tokens, do_sample, temperature, top_k, top_p, repetition_penalty, eos,
                               generator)
        if max_new_tokens == 0:
            seq.finished, seq.finish_reason = True, "length"
            return seq
        cache = DynamicCache()
        n = len(prompt)
        out = self.model(ember.tensor([prompt], dtype=ember.int64), attention_mask=ember.ones(1, n, dtype=ember.int64),
                         position_ids=ember.arange(n)[None], past_key_values=cache, use_cache=True)
        seq._append(self._pick(out.logits[:, -1, :], [seq])[0])
        if not seq.finished:
            self._joining.append((seq, cache))
        return seq

    @ember.no_grad()
    def step(self) -> list[DecodingSequence]:
        """One token for every running sequence (those added since the last step join first);
        returns them, in the batch's row order. Finished ones leave the batch."""
        self._join()
        rows = list(self._rows)
        if not rows:
            return []
        b = len(rows)
        last = ember.tensor([[s.tokens[-1]] for s in rows], dtype=ember.int64)
        positions = ember.tensor([[len(s.prompt) + len(s.tokens) - 1] for s in rows], dtype=ember.int64)
        self._mask = ember.cat([self._mask, ember.ones(b, 1, dtype=ember.int64)], dim=1)
        out = self.model(last, attention_mask=self._mask, position_ids=positions, past_key_values=self._cache,
                         use_cache=True)
        for seq, token in zip(rows, self._pick(out.logits[:, -1, :], rows)):
            seq._append(token)
        self._leave([i for i, s in enumerate(rows) if s.finished])
        return rows

    def cancel(self, seq: DecodingSequence) -> None:
        """Take ``seq`` out of the batch now (finish_reason "cancelled" unless it had finished)."""
        if not seq.finished:
            seq.finished, seq.finish_reason = True, "cancelled"
        self._joining = [(s, c) for s, c in self._joining if s is not seq]
        if seq in self._rows:
            self._leave([self._rows.index(seq)])

    # ---- rows joining and leaving -------------------------------------------------------
    def _join(self) -> None:
        if not self._joining:
            return
        caches = ([self._cache] if self._cache is not None else []) + [c for _, c in self._joining]
        merged, pads = DynamicCache.concatenate(caches)
        masks = []
        if self._cache is not None:
            masks.append(_left_pad(self._mask, pads[0]))
            pads = pads[1:]
        for (_, cache), pad in zip(self._joining, pads):
            masks.append(_left_pad(ember.ones(1, cache.get_seq_length(), dtype=ember.int64), pad))
        self._cache, self._mask = merged, ember.cat(masks, dim=0)
        self._rows += [s for s, _ in self._joining]
        self._joining = []

    def _leave(self, drop: list[int]) -> None:
        if not drop:
            return
        keep = [i for i in range(len(self._rows)) if i not in set(drop)]
        self._rows = [self._rows[i] for i in keep]
        if not keep:
            self._cache, self._mask = None, None
            return
        self._cache.drop_rows(drop)
        self._mask = self._mask.index_select(0, ember.tensor(keep, dtype=ember.int64))
        # columns that are padding in every remaining row are cut from the cache and the mask
        used = self._mask.sum(dim=0) > 0
        first = int(used.long().argmax())
        if first:
            self._cache.key_cache = [k[..., first:, :] for k in self._cache.key_cache]
            self._cache.value_cache = [v[..., first:, :] for v in self._cache.value_cache]
            self._mask = self._mask[:, first:]

    # ---- picking tokens -----------------------------------------------------------------
    def _pick(self, logits, rows: list[DecodingSequence]) -> list[int]:
        """Each row's next token, with generate's processing: repetition penalty, then (sampling)
        temperature, top-k, top-p and a draw from the row's generator; else the arg-max."""
        scores = logits.float()
        if all(not s.do_sample and s.repetition_penalty == 1.0 for s in rows):
            return [int(t) for t in scores.argmax(dim=-1).tolist()]
        out = []
        for i, seq in enumerate(rows):
            row = scores[i:i + 1]
            if seq.repetition_penalty != 1.0:
                row = _penalize_repetition(row, ember.tensor([seq.ids], dtype=ember.int64), seq.repetition_penalty)
            if seq.do_sample:
                if seq.temperature != 1.0:
                    row = row / seq.temperature
                if seq.top_k:
                    row = _top_k(row, seq.top_k)
                if seq.top_p < 1.0:
                    row = _top_p(row, seq.top_p)
                out.append(int(ember.multinomial(row.softmax(dim=-1), 1, generator=seq.generator)[0, 0]))
            else:
                out.append(int(row.argmax(dim=-1)[0]))
        return out


def _left_pad(mask, pad: int):
    if not pad:
        return mask
    return ember.cat([ember.zeros(mask.shape[0], pad, dtype=mask.dtype), mask], dim=1)
