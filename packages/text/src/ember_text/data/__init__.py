"""torchtext.data's helpers (``ember_text.data.utils``)."""

from . import utils
from .utils import get_tokenizer, ngrams_iterator

__all__ = ["utils", "get_tokenizer", "ngrams_iterator"]
