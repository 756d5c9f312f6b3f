"""torchtext.transforms: modules composing a text pipeline (tokens -> ids -> tensor).

Each is an ``ember.nn.Module`` taking one sample (a list) or a batch (a list of lists), as
torchtext's do.
"""

from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

from . import functional as TF
from .vocab import Vocab

__all__ = ["VocabTransform", "ToTensor", "LabelToIndex", "Truncate", "AddToken", "PadTransform",
           "StrToIntTransform", "Sequential"]


class VocabTransform(nn.Module):
    """Tokens to indices through a Vocab. Raises ValueError if ``vocab`` is not a Vocab."""

    def __init__(self, vocab: Vocab):
        super().__init__()
        if not isinstance(vocab, Vocab):
            raise ValueError(f"vocab must be an ember_text.vocab.Vocab, got {type(vocab).__name__}")
        self.vocab = vocab

    def forward(self, input):
        if isinstance(input, list) and input and isinstance(input[0], list):
            return [self.vocab.lookup_indices(tokens) for tokens in input]
        if isinstance(input, list):
            return self.vocab.lookup_indices(input)
        raise TypeError("Input type not supported")


class ToTensor(nn.Module):
    """Ids to a tensor ``[L]`` or ``[N, L_max]`` of ``dtype`` (default int64), padded with
    ``padding_value`` (``functional.to_tensor``; torchtext.transforms.ToTensor)."""

    def __init__(self, padding_value: int | None = None, dtype=ember.long):
        super().__init__()
        self.padding_value = padding_value
        self.dtype = dtype

    def forward(self, input):
        return TF.to_tensor(input, padding_value=self.padding_value, dtype=self.dtype)


class LabelToIndex(nn.Module):
    """Label strings to indices, from a list of names (``label_names``) or a file of one name
    per line (``label_path``), in that order or sorted when ``sort_names``
    (torchtext.transforms.LabelToIndex).

    Raises:
        AssertionError: both or neither of ``label_names`` and ``label_path`` (torchtext's check).
        RuntimeError: an unknown label.
    """

    def __init__(self, label_names: list[str] | None = None, label_path: str | None = None,
                 sort_names: bool = False):
        super().__init__()
        assert label_names or label_path, "label_names or label_path is required"
        assert not (label_names and label_path), "label_names and label_path are mutually exclusive"
        if label_path:
            with open(label_path, encoding="utf-8") as f:
                label_names = [line.strip() for line in f if line.strip()]
        if sort_names:
            label_names = sorted(label_names)
        self._label_vocab = Vocab(label_names)
        self._label_names = self._label_vocab.get_itos()

    @property
    def label_names(self) -> list[str]:
        return list(self._label_names)

    def forward(self, input):
        if isinstance(input, list):
            return self._label_vocab.lookup_indices(input)
        if isinstance(input, str):
            return self._label_vocab[input]
        raise TypeError("Input type not supported")


class Truncate(nn.Module):
    """Keep the first ``max_seq_len`` tokens of each sequence."""

    def __init__(self, max_seq_len: int):
        super().__init__()
        self.max_seq_len = max_seq_len

    def forward(self, input):
        return TF.truncate(input, self.max_seq_len)


class AddToken(nn.Module):
    """Add ``token`` (an id or a string) at the beginning (``begin=True``) or end of each sequence."""

    def __init__(self, token, begin: bool = True):
        super().__init__()
        self.token = token
        self.begin = begin

    def forward(self, input):
        return TF.add_token(input, self.token, self.begin)


class PadTransform(nn.Module):
    """Right-pad the last dimension with ``pad_value`` up to ``max_length`` (longer ones are left as they are)."""

    def __init__(self, max_length: int, pad_value: int):
        super().__init__()
        self.max_length = max_length
        self.pad_value = float(pad_value)

    def forward(self, x):
        length = x.size(-1)
        if length < self.max_length:
            x = F.pad(x, (0, self.max_length - length), value=self.pad_value)
        return x


class StrToIntTransform(nn.Module):
    """String tokens of digits to ints (``functional.str_to_int``)."""

    def forward(self, input):
        return TF.str_to_int(input)


class Sequential(nn.Sequential):
    """Apply the transforms in order (torchtext.transforms.Sequential)."""

    def forward(self, input):
        for module in self:
            input = module(input)
        return input
