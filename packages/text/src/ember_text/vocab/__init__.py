"""torchtext.vocab's API: Vocab, vocab, build_vocab_from_iterator."""

from .vocab import Vocab
from .vocab_factory import build_vocab_from_iterator, vocab

__all__ = ["Vocab", "vocab", "build_vocab_from_iterator"]
