"""Text datasets over local files: classification, language modelling, translation (streaming, sharded)."""

from ._base import ListDataset, MalformedRowError, TextIterableDataset
from .classification import CSVTextClassification, FastTextDataset, FolderTextClassification, JSONLTextClassification
from .language_modeling import RandomWindowDataset, batchify, bptt_windows, encode_corpus, get_batch
from .translation import TranslationDataset

__all__ = ["CSVTextClassification", "FastTextDataset", "FolderTextClassification", "JSONLTextClassification",
           "ListDataset", "MalformedRowError", "RandomWindowDataset", "TextIterableDataset", "TranslationDataset",
           "batchify", "bptt_windows", "encode_corpus", "get_batch"]
