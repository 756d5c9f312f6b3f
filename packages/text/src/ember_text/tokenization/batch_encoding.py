"""BatchEncoding: the dict a tokenizer call returns (transformers.BatchEncoding)."""

from __future__ import annotations

from collections import UserDict

import numpy as np

import ember

TENSOR_TYPES = ("ember", "pt", "np")


def _check_tensor_type(return_tensors):
    if return_tensors is not None and return_tensors not in TENSOR_TYPES:
        raise ValueError(f"return_tensors must be one of {TENSOR_TYPES} or None, got {return_tensors!r}")


def as_tensor(value, tensor_type):
    """``value`` (nested lists of ints) as an int64 numpy array (``"np"``) or ember tensor (``"ember"``/``"pt"``)."""
    try:
        arr = np.asarray(value, dtype=np.int64)
    except ValueError:
        raise ValueError("Unable to create tensor, you should probably activate truncation and/or padding with "
                         "'padding=True' 'truncation=True' to have batched tensors with the same length.") from None
    return arr if tensor_type == "np" else ember.from_numpy(arr)


class BatchEncoding(UserDict):
    """The output of a tokenizer call: ``input_ids``, ``attention_mask``, ... as lists, numpy arrays
    or tensors (Hugging Face transformers' ``BatchEncoding``).

    Keys are read as items (``enc["input_ids"]``) or attributes (``enc.input_ids``);
    ``encodings`` holds the ``tokenizers.Encoding`` of each sequence (for ``tokens``,
    ``word_ids``, ``char_to_token``). With ``tensor_type`` "ember" (or "pt", which means
    ember tensors here so that Hugging Face-style code runs) values are int64 tensors of
    shape ``[batch, seq]``; with "np" int64 numpy arrays.

    Args:
        data: the mapping of names to values (lists of ids, arrays or tensors).
        encoding: the backend ``tokenizers.Encoding`` list, or None.
        tensor_type: None (keep the values), "np", "ember" or "pt".
        n_sequences: sequences per example (1 for single texts, 2 for pairs), or None.

    Raises ValueError for another ``tensor_type``, or for ragged lists that cannot become a
    tensor.
    """

    def __init__(self, data=None, encoding=None, tensor_type=None, n_sequences=None):
        super().__init__(data or {})
        self._encodings = encoding
        self._n_sequences = n_sequences
        self.convert_to_tensors(tensor_type)

    def __getattr__(self, item):
        try:
            return self.data[item]
        except KeyError:
            raise AttributeError(item) from None

    def __getitem__(self, item):
        if isinstance(item, str):
            return self.data[item]
        if isinstance(item, int) and self._encodings is not None:
            return self._encodings[item]
        raise KeyError(f"Invalid key {item!r}: only a string key, or an int index when the backend encodings are "
                       "available, is supported.")

    def __getstate__(self):
        return {"data": self.data, "encodings": self._encodings}

    def __setstate__(self, state):
        self.data = state["data"]
        self._encodings = state["encodings"]
        self._n_sequences = None

    @property
    def encodings(self):
        return self._encodings

    @property
    def is_fast(self) -> bool:
        return self._encodings is not None

    @property
    def n_sequences(self):
        return self._n_sequences

    def _encoding(self, batch_index):
        if self._encodings is None:
            raise ValueError("tokens()/word_ids() need the backend encodings, which this BatchEncoding lacks")
        return self._encodings[batch_index]

    def tokens(self, batch_index: int = 0) -> list[str]:
        return self._encoding(batch_index).tokens

    def word_ids(self, batch_index: int = 0) -> list:
        return self._encoding(batch_index).word_ids

    def sequence_ids(self, batch_index: int = 0) -> list:
        return self._encoding(batch_index).sequence_ids

    def char_to_token(self, batch_or_char_index: int, char_index: int | None = None, sequence_index: int = 0):
        batch, char = (0, batch_or_char_index) if char_index is None else (batch_or_char_index, char_index)
        return self._encoding(batch).char_to_token(char, sequence_index)

    def token_to_chars(self, batch_or_token_index: int, token_index: int | None = None):
        batch, tok = (0, batch_or_token_index) if token_index is None else (batch_or_token_index, token_index)
        return self._encoding(batch).token_to_chars(tok)

    def convert_to_tensors(self, tensor_type=None):
        _check_tensor_type(tensor_type)
        if tensor_type is None:
            return self
        for key, value in self.data.items():
            if not isinstance(value, (np.ndarray, ember.Tensor)):
                self.data[key] = as_tensor(value, tensor_type)
        return self

    def to(self, device):
        """Move every tensor value to ``device`` (in place; returns self)."""
        for key, value in self.data.items():
            if isinstance(value, ember.Tensor):
                self.data[key] = value.to(device)
        return self
