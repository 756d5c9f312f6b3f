"""ember-text: tokenizers, vocab, text datasets and language models for ember.

torchtext's modules sit at torchtext's paths (``ember_text.vocab``, ``ember_text.data.utils``,
``ember_text.transforms``, ``ember_text.functional``); the Hugging Face-style API is
``ember_text.AutoTokenizer`` and ``ember_text.models``.
"""

from . import data, datasets, functional, models, transforms, vocab
from .sentence_transformer import SentenceTransformer
from .tokenization import AutoTokenizer, BatchEncoding, PreTrainedTokenizerFast
from .tokenization.trainers import train_bpe, train_byte_level_bpe, train_unigram, train_wordpiece

__version__ = "0.1.0"

__all__ = ["data", "datasets", "functional", "models", "transforms", "vocab", "AutoTokenizer", "BatchEncoding",
           "PreTrainedTokenizerFast", "SentenceTransformer", "train_bpe", "train_byte_level_bpe", "train_unigram",
           "train_wordpiece", "__version__"]
