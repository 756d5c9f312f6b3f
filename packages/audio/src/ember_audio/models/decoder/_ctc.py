"""CTC decoding without a lexicon or language model.

``CTCHypothesis`` is torchaudio 2.8's result type (tokens, words, score, timesteps).  The beam
search is the CTC prefix beam search (Hannun et al., "First-Pass Large Vocabulary Continuous
Speech Recognition using Bi-Directional Recurrent DNNs", 2014): each prefix carries the
log-probability of the alignments ending in a blank and in its last token, so ``score`` is
the log-probability of the label sequence summed over all its alignments (exact while no
prefix is pruned).  torchaudio's ``ctc_decoder`` wraps flashlight's decoder; ember's has no
lexicon or LM support (``lexicon`` and ``lm`` must be None) and is written in Python.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

import ember

__all__ = ["CTCHypothesis", "CTCDecoder", "GreedyCTCDecoder", "ctc_decoder"]


class CTCHypothesis(NamedTuple):
    """One decoded sequence: ``tokens`` (LongTensor ``[L]``), ``words`` (empty without a lexicon),
    ``score`` (log-probability), ``timesteps`` (IntTensor ``[L]``, the frame where each token starts)."""

    tokens: object
    words: list
    score: float
    timesteps: object


def _logaddexp(a, b):
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    m = max(a, b)
    return m + math.log(math.exp(a - m) + math.exp(b - m))


def _emissions(emissions, lengths):
    if emissions.ndim != 3:
        raise ValueError(f"emissions must be [batch, frames, num_tokens], got shape {list(emissions.shape)}")
    em = emissions.detach().cpu().to(ember.float32).numpy()
    lens = [em.shape[1]] * em.shape[0] if lengths is None else [int(v) for v in lengths.tolist()]
    return em, lens


def _add(beams, prefix, pb, pnb, steps):
    """Merge alignment probabilities into ``beams[prefix]`` (the first arrival's timesteps stay)."""
    cur = beams.get(prefix)
    if cur is None:
        beams[prefix] = [pb, pnb, steps]
    else:
        cur[0] = _logaddexp(cur[0], pb)
        cur[1] = _logaddexp(cur[1], pnb)


class GreedyCTCDecoder:
    """Best token per frame, repeats merged, blanks removed.  ``__call__(emissions [B, T, N],
    lengths=None)`` -> one ``[CTCHypothesis]`` per example (score: the best path's log-probability,
    with emissions taken as log-probabilities).  ``blank`` is the blank token's id.  ``lengths``
    ``[B]`` gives each example's valid frames."""

    def __init__(self, blank: int = 0):
        self.blank = blank

    def __call__(self, emissions, lengths=None):
        em, lens = _emissions(emissions, lengths)
        out = []
        for b in range(em.shape[0]):
            e = em[b, :lens[b]]
            best = e.argmax(-1)
            tokens, steps = [], []
            for t, k in enumerate(best):
                if k != self.blank and (t == 0 or best[t - 1] != k):
                    tokens.append(int(k))
                    steps.append(t)
            score = float(e[np.arange(len(best)), best].sum())
            out.append([CTCHypothesis(ember.tensor(tokens, dtype=ember.int64), [], score,
                                      ember.tensor(steps, dtype=ember.int32))])
        return out


class CTCDecoder:
    """Lexicon-free CTC prefix beam search over log-probabilities ``emissions [B, T, N]``.
    ``__call__(emissions, lengths=None)`` -> for each example, the ``nbest`` best
    ``CTCHypothesis`` (highest score first).  ``idxs_to_tokens`` maps ids to token strings.

    Args:
        tokens: the token strings, in id order.
        blank_token: the blank's string (ValueError when not among ``tokens``).
        nbest: hypotheses returned per example.
        beam_size: prefixes kept after each frame.
        beam_threshold: prefixes scoring more than this below the best (log-probability) are
            pruned.
    """

    def __init__(self, tokens, blank_token="-", nbest=1, beam_size=50, beam_threshold=math.inf):
        self.tokens = list(tokens)
        if blank_token not in self.tokens:
            raise ValueError(f"blank_token {blank_token!r} is not among the tokens")
        self.blank = self.tokens.index(blank_token)
        self.nbest = nbest
        self.beam_size = beam_size
        self.beam_threshold = beam_threshold

    def idxs_to_tokens(self, idxs):
        return [self.tokens[int(i)] for i in (idxs.tolist() if hasattr(idxs, "tolist") else idxs)]

    def _decode(self, e):
        blank = self.blank
        # prefix -> [log p(ending in blank), log p(ending in last token), start frames of its tokens]
        beams = {(): [0.0, -math.inf, ()]}
        for t in range(e.shape[0]):
            row = e[t]
            nxt = {}
            add = functools.partial(_add, nxt)
            for prefix, (pb, pnb, steps) in beams.items():
                total = _logaddexp(pb, pnb)
                add(prefix, total + row[blank], -math.inf, steps)  # a blank keeps the prefix
                for k in range(e.shape[1]):
                    if k == blank:
                        continue
                    p = row[k]
                    if prefix and prefix[-1] == k:
                        add(prefix, -math.inf, pnb + p, steps)  # the repeat merges with the last token
                        add(prefix + (k,), -math.inf, pb + p, steps + (t,))  # after a blank: a new token
                    else:
                        add(prefix + (k,), -math.inf, total + p, steps + (t,))
            ranked = sorted(nxt.items(), key=lambda kv: -_logaddexp(kv[1][0], kv[1][1]))
            best = _logaddexp(*ranked[0][1][:2])
            beams = dict(kv for kv in ranked[:self.beam_size]
                         if best - _logaddexp(kv[1][0], kv[1][1]) <= self.beam_threshold)
        ranked = sorted(beams.items(), key=lambda kv: -_logaddexp(kv[1][0], kv[1][1]))[:self.nbest]
        return [CTCHypothesis(ember.tensor(list(p), dtype=ember.int64), [], _logaddexp(v[0], v[1]),
                              ember.tensor(list(v[2]), dtype=ember.int32)) for p, v in ranked]

    def __call__(self, emissions, lengths=None):
        em, lens = _emissions(emissions, lengths)
        return [self._decode(em[b, :lens[b]].astype(np.float64)) for b in range(em.shape[0])]


def ctc_decoder(lexicon, tokens, lm=None, lm_dict=None, nbest=1, beam_size=50, beam_size_token=None,
                beam_threshold=math.inf, lm_weight=2, word_score=0, unk_score=-math.inf, sil_score=0,
                log_add=False, blank_token="-", sil_token="|", unk_word="<unk>"):
    """torchaudio's factory (``models.decoder.ctc_decoder``) for the lexicon-free case: ``lexicon``
    and ``lm`` must be None; ``tokens`` is a list of token strings or a file with one per line.
    Raises ValueError for a lexicon or LM (not supported: no flashlight).

    Used: ``nbest``, ``beam_size``, ``beam_threshold`` and ``blank_token`` (see
    :class:`CTCDecoder`).  Accepted for torchaudio's signature and ignored, as they only
    matter with a lexicon, an LM or flashlight's token beam: ``lm_dict``, ``beam_size_token``,
    ``lm_weight``, ``word_score``, ``unk_score``, ``sil_score``, ``log_add`` (the score always
    sums alignments), ``sil_token`` and ``unk_word``.
    """
    if lexicon is not None or lm is not None:
        raise ValueError("ember_audio's CTC decoder is lexicon-free and has no language model: pass lexicon=None, "
                         "lm=None")
    if isinstance(tokens, str):
        with open(tokens) as f:
            tokens = [line.split()[0] for line in f if line.strip()]
    return CTCDecoder(tokens, blank_token=blank_token, nbest=nbest, beam_size=beam_size,
                      beam_threshold=beam_threshold)
