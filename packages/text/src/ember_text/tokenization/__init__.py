"""Tokenizers with Hugging Face's calling conventions over the ``tokenizers`` library."""

from .auto import AutoTokenizer
from .batch_encoding import BatchEncoding
from .fast import PreTrainedTokenizerFast

__all__ = ["AutoTokenizer", "BatchEncoding", "PreTrainedTokenizerFast"]
