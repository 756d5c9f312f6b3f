"""Downloading dataset files: checksum-verified, written to a temporary name and renamed,
so that a half-downloaded file is never taken for a good one."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request

from tqdm import tqdm


def calculate_md5(path, chunk_size: int = 1 << 20) -> str:
    md5 = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            md5.update(chunk)
    return md5.hexdigest()


def check_integrity(path, md5: str | None = None) -> bool:
    """True when ``path`` exists and, if ``md5`` is given, has that checksum."""
    if not os.path.isfile(path):
        return False
    return md5 is None or calculate_md5(path) == md5


def download_url(url: str, root, filename: str | None = None, md5: str | None = None,
                 progress: bool = True, timeout: float = 60.0) -> str:
    """Download ``url`` into ``root/filename`` unless a file with the right md5 is there.

    The bytes go to a temporary file in ``root``; it is checked against ``md5`` and only
    then renamed into place. Raises RuntimeError on a checksum mismatch and lets
    ``urllib.error.URLError`` through for network failures. Returns the file's path.
    """
    root = os.path.expanduser(os.fspath(root))
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, filename or os.path.basename(url))
    if check_integrity(path, md5):
        return path
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".download-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=os.path.basename(path),
                      disable=not progress) as bar:
                for chunk in iter(lambda: resp.read(1 << 16), b""):
                    out.write(chunk)
                    bar.update(len(chunk))
        if md5 is not None and calculate_md5(tmp) != md5:
            raise RuntimeError(f"checksum mismatch for {url}: expected md5 {md5}, got {calculate_md5(tmp)}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def download_from_mirrors(mirrors, filename: str, root, md5: str | None) -> str:
    """Try each mirror in turn; raise RuntimeError listing every failure."""
    errors = []
    for mirror in mirrors:
        try:
            return download_url(mirror + filename, root, filename, md5)
        except (urllib.error.URLError, OSError, RuntimeError) as e:
            errors.append(f"{mirror + filename}: {e}")
    raise RuntimeError(f"could not download {filename}:\n  " + "\n  ".join(errors))


def copy_if_missing(src, dst) -> None:
    """Copy ``src`` to ``dst`` through a temporary name, when ``dst`` does not exist."""
    if os.path.exists(dst):
        return
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = dst + ".part"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)
