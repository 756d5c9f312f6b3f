"""Translation pairs from local files: two aligned files (one sentence per line), or one TSV of pairs."""

from __future__ import annotations

import os

from ._base import MalformedRowError, TextIterableDataset


class TranslationDataset(TextIterableDataset):
    """Yields ``(source, target)`` sentence pairs.

    Args:
        source_path, target_path: aligned files, line ``i`` of one translating line ``i`` of the other.
        tsv_path: or one file of ``source<TAB>target`` lines (give either form, not both).
        strip: strip surrounding whitespace from each sentence (else only the newline).
        shuffle_buffer, seed, transform: as ``TextIterableDataset``.

    Raises:
        MalformedRowError: files of different lengths (the first file to end and its line), or a TSV
            line without exactly one tab.
        ValueError: both forms or neither given.
    """

    def __init__(self, source_path=None, target_path=None, *, tsv_path=None, strip: bool = True, **kwargs):
        super().__init__(**kwargs)
        if (tsv_path is None) == (source_path is None or target_path is None):
            raise ValueError("give source_path and target_path, or tsv_path")
        self.source_path = None if source_path is None else os.fspath(source_path)
        self.target_path = None if target_path is None else os.fspath(target_path)
        self.tsv_path = None if tsv_path is None else os.fspath(tsv_path)
        self.strip = strip

    def _clean(self, s: str) -> str:
        return s.strip() if self.strip else s.rstrip("\n")

    def _records(self):
        if self.tsv_path is not None:
            with open(self.tsv_path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    parts = line.rstrip("\n").split("\t")
                    if len(parts) != 2:
                        raise MalformedRowError(self.tsv_path, number, f"expected source<TAB>target, got "
                                                f"{len(parts)} field(s)")
                    yield self._clean(parts[0]), self._clean(parts[1])
            return
        with open(self.source_path, encoding="utf-8") as src, open(self.target_path, encoding="utf-8") as tgt:
            number = 0
            while True:
                a, b = src.readline(), tgt.readline()
                number += 1
                if not a and not b:
                    return
                if not a or not b:
                    short, other = (self.source_path, self.target_path) if not a else (self.target_path,
                                                                                       self.source_path)
                    raise MalformedRowError(short, number, f"the file ends here but {other} goes on: the files are "
                                            "not aligned")
                yield self._clean(a), self._clean(b)
