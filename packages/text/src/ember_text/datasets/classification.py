"""Text classification from local files: CSV/TSV, JSON Lines, one folder per class, fastText lines.

Every dataset yields ``(label, text)`` as torchtext's classification datasets do; with
``label_to_index`` (a dict) labels are mapped to ints.
"""

from __future__ import annotations

import csv
import json
import os

from ._base import MalformedRowError, TextIterableDataset


def _label(label, label_to_index, path, line):
    if label_to_index is None:
        return label
    try:
        return label_to_index[label]
    except KeyError:
        raise MalformedRowError(path, line, f"label {label!r} is not in label_to_index "
                                f"({sorted(label_to_index)})") from None


class CSVTextClassification(TextIterableDataset):
    """Rows of a CSV (or TSV) file with a header; the caller names the text and label columns.

    Args:
        path: the file; yields ``(label, text)`` per row.
        text_column, label_column: header names.
        delimiter: default "\\t" for ``.tsv`` files, "," otherwise.
        label_to_index: optional label -> int map.
        encoding: the file's text encoding.
        shuffle_buffer, seed, transform: as ``TextIterableDataset``.

    Raises:
        MalformedRowError: (a ValueError) a missing column in the header or a row with too few
            fields, naming the file and line.
    """

    def __init__(self, path, text_column: str = "text", label_column: str = "label", delimiter: str | None = None,
                 label_to_index: dict | None = None, encoding: str = "utf-8", **kwargs):
        super().__init__(**kwargs)
        self.path = os.fspath(path)
        self.text_column, self.label_column = text_column, label_column
        self.delimiter = delimiter or ("\t" if self.path.endswith(".tsv") else ",")
        self.label_to_index = label_to_index
        self.encoding = encoding

    def _records(self):
        with open(self.path, newline="", encoding=self.encoding) as f:
            reader = csv.reader(f, delimiter=self.delimiter)
            header = next(reader, None)
            if header is None:
                return
            for column in (self.text_column, self.label_column):
                if column not in header:
                    raise MalformedRowError(self.path, 1, f"no column {column!r} in the header {header}")
            ti, li = header.index(self.text_column), header.index(self.label_column)
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise MalformedRowError(self.path, reader.line_num, f"expected {len(header)} fields, got "
                                            f"{len(row)}")
                yield _label(row[li], self.label_to_index, self.path, reader.line_num), row[ti]


class JSONLTextClassification(TextIterableDataset):
    """One JSON object per line; the caller names the text and label fields; yields ``(label, text)``.

    Args:
        path: the ``.jsonl`` file (UTF-8); blank lines are skipped.
        text_field, label_field: the keys of the text and of the label.
        label_to_index: optional label -> int map.
        shuffle_buffer, seed, transform: as ``TextIterableDataset``.

    Raises:
        MalformedRowError: invalid JSON, not an object, or a missing field (file and line named).
    """

    def __init__(self, path, text_field: str = "text", label_field: str = "label", label_to_index: dict | None = None,
                 **kwargs):
        super().__init__(**kwargs)
        self.path = os.fspath(path)
        self.text_field, self.label_field = text_field, label_field
        self.label_to_index = label_to_index

    def _records(self):
        with open(self.path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as e:
                    raise MalformedRowError(self.path, number, f"invalid JSON ({e.msg})") from None
                if not isinstance(row, dict):
                    raise MalformedRowError(self.path, number, f"expected a JSON object, got {type(row).__name__}")
                for field in (self.text_field, self.label_field):
                    if field not in row:
                        raise MalformedRowError(self.path, number, f"no field {field!r} (fields: {sorted(row)})")
                yield _label(row[self.label_field], self.label_to_index, self.path, number), row[self.text_field]


class FolderTextClassification(TextIterableDataset):
    """``root/<class>/<file>``: each file is one example of its folder's class (torchvision's ImageFolder layout).

    Classes are the sub-folders in sorted order (``classes``, ``class_to_idx``); labels are their
    indices. Files are read whole as UTF-8 text; yields ``(label, text)``.

    Args:
        root: the folder of class folders.
        extensions: the file suffixes kept (others are ignored).
        shuffle_buffer, seed, transform: as ``TextIterableDataset``.

    Raises:
        FileNotFoundError: ``root`` holds no class folder.
    """

    def __init__(self, root, extensions: tuple[str, ...] = (".txt",), **kwargs):
        super().__init__(**kwargs)
        self.root = os.fspath(root)
        self.classes = sorted(d.name for d in os.scandir(self.root) if d.is_dir())
        if not self.classes:
            raise FileNotFoundError(f"Couldn't find any class folder in {self.root}.")
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.extensions = tuple(extensions)
        self.files = [(os.path.join(self.root, c, name), self.class_to_idx[c]) for c in self.classes
                      for name in sorted(os.listdir(os.path.join(self.root, c))) if name.endswith(self.extensions)]

    def _records(self):
        for path, label in self.files:
            with open(path, encoding="utf-8") as f:
                yield label, f.read()


class FastTextDataset(TextIterableDataset):
    """fastText's supervised format: ``__label__a __label__b text`` per line; yields ``(labels, text)``.

    ``labels`` is a list (a line may carry several); with ``label_to_index`` the labels are ints.

    Args:
        path: the file (UTF-8).
        label_prefix: the marker of a label word.
        label_to_index: optional label -> int map.
        shuffle_buffer, seed, transform: as ``TextIterableDataset``.

    Raises:
        MalformedRowError: a non-empty line without a ``__label__`` prefix (file and line named).
    """

    def __init__(self, path, label_prefix: str = "__label__", label_to_index: dict | None = None, **kwargs):
        super().__init__(**kwargs)
        self.path = os.fspath(path)
        self.label_prefix = label_prefix
        self.label_to_index = label_to_index

    def _records(self):
        with open(self.path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                words = line.split()
                if not words:
                    continue
                labels = []
                while words and words[0].startswith(self.label_prefix):
                    labels.append(words.pop(0)[len(self.label_prefix):])
                if not labels:
                    raise MalformedRowError(self.path, number, f"the line does not start with {self.label_prefix!r}")
                yield [_label(x, self.label_to_index, self.path, number) for x in labels], " ".join(words)
