"""Download and extraction helpers for the audio datasets.

Downloads go through ``ember.hub.download_url_to_file``: sha256-checked, resumed with HTTP
Range requests when a connection drops, written to a temporary name and renamed.  Extraction
refuses members whose paths would leave the target folder (absolute paths, ``..``, links
pointing outside), and extracts into a temporary folder renamed into place when complete.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile

__all__ = ["download_url", "extract_archive"]


def download_url(url: str, root: str, filename: str | None = None, sha256: str | None = None) -> str:
    """``url`` saved as ``root/filename`` (``filename`` defaults to the URL's basename), checked against
    ``sha256`` when given; an existing file with the right hash is reused.  Returns the path.
    Raises RuntimeError on a hash mismatch (the bad download is discarded)."""
    from ember.hub import download_url_to_file
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, filename or os.path.basename(url))
    if os.path.isfile(path) and (sha256 is None or _sha256(path) == sha256):
        return path
    download_url_to_file(url, path, hash_prefix=sha256, progress=False)
    return path


def _sha256(path: str) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _inside(root: str, name: str) -> bool:
    target = os.path.realpath(os.path.join(root, name))
    return target == root or target.startswith(root + os.sep)


def extract_archive(from_path: str, to_path: str | None = None) -> str:
    """Extract the .tar(.gz/.bz2/.xz) or .zip archive ``from_path`` into ``to_path`` (the archive's folder by
    default) and return ``to_path``.  Raises RuntimeError naming the member when one would be
    written outside ``to_path``, ValueError for an unknown archive type."""
    to_path = os.path.realpath(to_path or os.path.dirname(os.path.abspath(from_path)))
    os.makedirs(to_path, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".extract-", dir=to_path)
    try:
        if tarfile.is_tarfile(from_path):
            with tarfile.open(from_path) as tar:
                for m in tar.getmembers():
                    if os.path.isabs(m.name) or not _inside(staging, m.name):
                        raise RuntimeError(f"refusing to extract {m.name!r} from {from_path!r}: it leaves {to_path!r}")
                    if (m.issym() or m.islnk()) and not _inside(staging, os.path.join(os.path.dirname(m.name),
                                                                                          m.linkname)):
                        raise RuntimeError(f"refusing to extract the link {m.name!r} -> {m.linkname!r} from "
                                           f"{from_path!r}: it points outside {to_path!r}")
                    if not (m.isfile() or m.isdir() or m.issym() or m.islnk()):
                        raise RuntimeError(f"refusing to extract the special file {m.name!r} from {from_path!r}")
                tar.extractall(staging, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(staging)
        elif zipfile.is_zipfile(from_path):
            with zipfile.ZipFile(from_path) as z:
                for name in z.namelist():
                    if os.path.isabs(name) or not _inside(staging, name):
                        raise RuntimeError(f"refusing to extract {name!r} from {from_path!r}: it leaves {to_path!r}")
                z.extractall(staging)
        else:
            raise ValueError(f"{from_path!r} is neither a tar nor a zip archive")
        for entry in os.listdir(staging):
            dst = os.path.join(to_path, entry)
            if os.path.isdir(dst) and not os.path.islink(dst):
                shutil.rmtree(dst)
            os.replace(os.path.join(staging, entry), dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return to_path
