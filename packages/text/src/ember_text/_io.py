"""Writing files atomically: to a temporary name in the same folder, then renamed over the target."""

from __future__ import annotations

import json
import os
import tempfile


def write_atomically(path: str, write, mode: str = "w") -> None:
    """Call ``write(stream)`` on a temporary file beside ``path``, then rename it to ``path``.

    A reader never sees a half-written file, and a failed write leaves no file behind.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as stream:
            write(stream)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str, obj) -> None:
    """``obj`` as indented UTF-8 JSON at ``path`` (written atomically), as transformers writes its configs."""
    write_atomically(path, lambda f: f.write(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"))


def read_json(path: str) -> dict:
    """The JSON object in ``path``; a malformed file raises ValueError naming the file."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} is not valid JSON: {e}") from None
