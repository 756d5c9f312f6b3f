"""torchtext.data.utils: get_tokenizer and ngrams_iterator."""

from __future__ import annotations

import re

__all__ = ["get_tokenizer", "ngrams_iterator"]

# torchtext's basic_english rules, applied in this order after lowercasing
_PATTERNS = [r"\'", r"\"", r"\.", r"<br \/>", r",", r"\(", r"\)", r"\!", r"\?", r"\;", r"\:", r"\s+"]
_REPLACEMENTS = [" '  ", "", " . ", " ", " , ", " ( ", " ) ", " ! ", " ? ", " ", " ", " "]
_RULES = [(re.compile(p), r) for p, r in zip(_PATTERNS, _REPLACEMENTS)]


def _basic_english_normalize(line: str) -> list[str]:
    """Lowercase, put spaces around ' . , ( ) ! ?, drop double quotes, <br /> ; : and split on whitespace."""
    line = line.lower()
    for pattern, replacement in _RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _split_tokenizer(x: str) -> list[str]:
    return x.split()


def get_tokenizer(tokenizer, language: str = "en"):
    """A function turning a string into a list of tokens (torchtext.data.utils.get_tokenizer).

    Args:
        tokenizer: None (split on whitespace), "basic_english" (torchtext's normalizing rules),
            or a callable (returned as it is).
        language: only "en" for "basic_english".

    Raises:
        ValueError: "basic_english" with another language, or a tokenizer name this package does
            not provide (spacy, moses, toktok, revtok and subword need libraries it does not use).
    """
    if tokenizer is None:
        return _split_tokenizer
    if tokenizer == "basic_english":
        if language != "en":
            raise ValueError("Basic normalization is only available for Enlish(en)")
        return _basic_english_normalize
    if callable(tokenizer):
        return tokenizer
    raise ValueError(f"Requested tokenizer {tokenizer}, valid choices are None (split on whitespace), "
                     "'basic_english', or a callable that takes a single string as input")


def ngrams_iterator(token_list: list[str], ngrams: int):
    """Yield the tokens of ``token_list``, then every n-gram for n = 2..``ngrams`` joined by
    spaces (torchtext.data.utils.ngrams_iterator, in its order).
    """
    for x in token_list:
        yield x
    for n in range(2, ngrams + 1):
        for x in zip(*[token_list[i:] for i in range(n)]):
            yield " ".join(x)
