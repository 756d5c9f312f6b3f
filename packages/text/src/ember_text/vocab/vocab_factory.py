"""Building a Vocab from counts or from an iterator of token lists (torchtext.vocab.vocab_factory)."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable

from .vocab import Vocab


def vocab(ordered_dict, min_freq: int = 1, specials: list[str] | None = None, special_first: bool = True) -> Vocab:
    """A Vocab of the tokens of ``ordered_dict`` (token -> count), in its order, that occur ``min_freq`` times or more.

    ``specials`` are added (even if rarer than ``min_freq``) before the others when
    ``special_first``, else after them; a special also present in ``ordered_dict`` appears once.
    """
    specials = specials or []
    ordered_dict = OrderedDict(ordered_dict)
    for token in specials:
        ordered_dict.pop(token, None)
    tokens = [token for token, freq in ordered_dict.items() if freq >= min_freq]
    if special_first:
        tokens[0:0] = specials
    else:
        tokens.extend(specials)
    return Vocab(tokens)


def build_vocab_from_iterator(iterator: Iterable, min_freq: int = 1, specials: list[str] | None = None,
                              special_first: bool = True, max_tokens: int | None = None) -> Vocab:
    """A Vocab of every token ``iterator`` yields (each item a list of tokens), most frequent
    first (torchtext.vocab.build_vocab_from_iterator).

    Ties in frequency are ordered lexicographically; tokens seen fewer than ``min_freq`` times
    are left out. ``specials`` are added (whatever their count) before the others when
    ``special_first``, else after them. ``max_tokens`` caps the size, specials included: the
    ``max_tokens - len(specials)`` most frequent tokens are kept (as torchtext, before the
    specials are taken out of them).

    Raises:
        AssertionError: ``len(specials) >= max_tokens`` (torchtext's check).
    """
    counter = Counter()
    for tokens in iterator:
        counter.update(tokens)
    specials = specials or []
    by_freq = sorted(counter.items(), key=lambda x: (-x[1], x[0]))
    if max_tokens is None:
        ordered = OrderedDict(by_freq)
    else:
        assert len(specials) < max_tokens, "len(specials) >= max_tokens, so the vocab will be entirely special tokens."
        ordered = OrderedDict(by_freq[: max_tokens - len(specials)])
    return vocab(ordered, min_freq=min_freq, specials=specials, special_first=special_first)
