"""Reading Debian's ``fortunes`` package: plain-text files of fortunes separated by lines holding only ``%``."""

from __future__ import annotations

import os

DEFAULT_DIR = "/usr/share/games/fortunes"


def read_category(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return [part.strip() for part in text.split("\n%\n") if part.strip()]


def read_fortunes(folder: str = DEFAULT_DIR) -> dict[str, list[str]]:
    """Category name -> its fortunes (the ``.dat`` indexes, ``.u8`` copies and symlinks are skipped).

    Raises:
        SystemExit: the folder is missing (with the command that installs it).
    """
    if not os.path.isdir(folder):
        raise SystemExit(f"{folder} not found: install Debian's fortunes package (apt-get install fortunes) "
                         "or pass --data-dir")
    out = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.endswith((".dat", ".u8")) or os.path.islink(path) or not os.path.isfile(path):
            continue
        fortunes = read_category(path)
        if fortunes:
            out[name] = fortunes
    return out
