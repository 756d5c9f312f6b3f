"""Downloading and unpacking dataset files (torchvision.datasets.utils).

Downloads are resumable and atomic: the bytes go to ``<file>.part`` beside the target
(continued with an HTTP ``Range`` request when a partial file is there), are checked
(length, md5 / sha256) and only then renamed into place, so that a half-downloaded or
corrupt file is never taken for a good one. Archives are unpacked only when none of
their members would land outside the destination.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import http.client
import lzma
import os
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile

from tqdm import tqdm

_CHUNK = 1 << 16
# a connection dropped mid-body: the partial file is kept for a resumed try
_DROPPED = (http.client.IncompleteRead, ConnectionError, TimeoutError)


def _file_digest(path, algorithm: str, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.new(algorithm, usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def calculate_md5(fpath, chunk_size: int = 1 << 20) -> str:
    """The md5 hex digest of the file ``fpath``."""
    return _file_digest(fpath, "md5", chunk_size)


def calculate_sha256(fpath, chunk_size: int = 1 << 20) -> str:
    """The sha256 hex digest of the file ``fpath``."""
    return _file_digest(fpath, "sha256", chunk_size)


def check_md5(fpath, md5: str, **kwargs) -> bool:
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath, md5: str | None = None, sha256: str | None = None) -> bool:
    """True when ``fpath`` is a file and matches ``md5`` / ``sha256`` where given."""
    if not os.path.isfile(fpath):
        return False
    if md5 is not None and not check_md5(fpath, md5):
        return False
    return sha256 is None or calculate_sha256(fpath) == sha256


def iterable_to_str(iterable) -> str:
    return "'" + "', '".join(str(item) for item in iterable) + "'"


def verify_str_arg(value, arg: str | None = None, valid_values=None, custom_msg: str | None = None) -> str:
    """``value`` when it is a ``str`` among ``valid_values`` (any str when None).

    Raises ValueError naming the argument, the value and the valid values otherwise
    (torchvision's message).
    """
    if not isinstance(value, str):
        msg = "Expected type str" + (f" for argument {arg}" if arg is not None else "")
        raise ValueError(f"{msg}, but got type {type(value)}.")
    if valid_values is None:
        return value
    if value not in valid_values:
        msg = custom_msg if custom_msg is not None else (
            f"Unknown value '{value}' for argument {arg}. Valid values are {{{iterable_to_str(valid_values)}}}.")
        raise ValueError(msg)
    return value


def list_dir(root, prefix: bool = False) -> list:
    """The directories directly under ``root`` (joined to ``root`` when ``prefix``)."""
    root = os.path.expanduser(root)
    names = [p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p))]
    return [os.path.join(root, d) for d in names] if prefix else names


def list_files(root, suffix, prefix: bool = False) -> list:
    """The files directly under ``root`` whose name ends with ``suffix`` (str or tuple)."""
    root = os.path.expanduser(root)
    names = [p for p in os.listdir(root) if os.path.isfile(os.path.join(root, p)) and p.endswith(suffix)]
    return [os.path.join(root, d) for d in names] if prefix else names


# ----------------------------------------------------------------------------- download

def _content_range_start(header: str | None) -> int | None:
    # "bytes START-END/TOTAL"
    if not header or not header.startswith("bytes "):
        return None
    try:
        return int(header[6:].split("-", 1)[0])
    except ValueError:
        return None


def _fetch_to_part(url: str, part: str, timeout: float, progress: bool, desc: str) -> None:
    """Fill ``part`` with the bytes of ``url``, continuing a partial ``part`` with a
    ``Range`` request. Raises on a short read, leaving what came for the next try."""
    have = os.path.getsize(part) if os.path.isfile(part) else 0
    request = urllib.request.Request(url, headers={"User-Agent": "ember-vision"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        resp = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code == 416 and have:
            return  # nothing left to send: the partial file may be whole; the checks decide
        raise
    with resp:
        mode = "wb"
        if have and resp.status == 206:
            if _content_range_start(resp.headers.get("Content-Range")) != have:
                raise RuntimeError(f"{url}: the server resumed at {resp.headers.get('Content-Range')!r}, "
                                   f"expected byte {have}")
            mode = "ab"
        else:
            have = 0  # the server sent the whole file: start over
        length = resp.headers.get("Content-Length")
        expected = have + int(length) if length is not None else None
        with open(part, mode) as out, tqdm(total=expected, initial=have, unit="B", unit_scale=True,
                                           desc=desc, disable=not progress) as bar:
            for chunk in iter(lambda: resp.read(_CHUNK), b""):
                out.write(chunk)
                bar.update(len(chunk))
    if expected is not None and os.path.getsize(part) != expected:
        raise RuntimeError(f"{url}: download interrupted after {os.path.getsize(part)} of {expected} bytes; "
                           "call again to resume")


def download_url(url: str, root, filename: str | None = None, md5: str | None = None,
                 max_redirect_hops: int = 3, *, sha256: str | None = None, progress: bool = True,
                 timeout: float = 60.0) -> str:
    """Download ``url`` to ``root/filename`` unless a file with the right checksum is there.

    The bytes go to ``root/filename.part``; an existing partial file is continued with
    an HTTP ``Range`` request (a server that ignores it sends the whole file again). The
    finished file is checked against its length and ``md5`` / ``sha256`` and only then
    renamed into place. Redirects are followed (``max_redirect_hops`` is accepted for
    torchvision's signature).

    Returns the file's path.

    Raises:
        RuntimeError: checksum mismatch (the bad file is deleted) or an interrupted
            transfer (the partial file is kept so that a later call resumes it).
        urllib.error.URLError: network failures.
    """
    root = os.path.expanduser(os.fspath(root))
    filename = filename or os.path.basename(url)
    fpath = os.path.join(root, filename)
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5, sha256):
        return fpath
    part = fpath + ".part"
    try:
        _fetch_to_part(url, part, timeout, progress, filename)
    except _DROPPED as e:
        raise RuntimeError(f"{url}: download interrupted ({e!r}); call again to resume") from e
    problems = []
    if md5 is not None and (got := calculate_md5(part)) != md5:
        problems.append(f"expected md5 {md5}, got {got}")
    if sha256 is not None and (got := calculate_sha256(part)) != sha256:
        problems.append(f"expected sha256 {sha256}, got {got}")
    if problems:
        os.remove(part)
        raise RuntimeError(f"File not found or corrupted: checksum mismatch for {url}: " + "; ".join(problems))
    os.replace(part, fpath)
    return fpath


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


# ----------------------------------------------------------------------------- archives

_COMPRESSIONS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}
_ALIASES = {".tgz": (".tar", ".gz"), ".tbz": (".tar", ".bz2"), ".tbz2": (".tar", ".bz2")}


def _detect(path: str):
    """(archive type or None, compression or None) from the file name's suffixes."""
    name = path.lower()
    for alias, pair in _ALIASES.items():
        if name.endswith(alias):
            return pair
    for comp in _COMPRESSIONS:
        if name.endswith(".tar" + comp):
            return ".tar", comp
    if name.endswith(".tar"):
        return ".tar", None
    if name.endswith(".zip"):
        return ".zip", None
    for comp in _COMPRESSIONS:
        if name.endswith(comp):
            return None, comp
    known = sorted([".tar", ".zip", *_ALIASES, *_COMPRESSIONS, *(".tar" + c for c in _COMPRESSIONS)])
    raise RuntimeError(f"Unknown compression or archive type of {path!r}. Known suffixes are: {', '.join(known)}.")


def _inside(root: str, target: str) -> bool:
    root = os.path.realpath(root)
    target = os.path.realpath(target)
    return target == root or target.startswith(root + os.sep)


def _check_member(archive: str, root: str, name: str, link: str | None = None) -> None:
    """Refuse a member whose path, or whose link target, leaves ``root``."""
    if os.path.isabs(name) or name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/") \
            or not _inside(root, os.path.join(root, name)):
        raise RuntimeError(f"refusing to extract {archive}: member {name!r} would be written outside {root}")
    if link is not None:
        base = os.path.dirname(os.path.join(root, name))
        if os.path.isabs(link) or not _inside(root, os.path.join(base, link)):
            raise RuntimeError(f"refusing to extract {archive}: link {name!r} -> {link!r} points outside {root}")


def _extract_tar(from_path: str, to_path: str, compression: str | None) -> None:
    mode = "r:" + compression[1:] if compression else "r"
    with tarfile.open(from_path, mode) as tar:
        members = tar.getmembers()
        for m in members:
            if m.issym():
                _check_member(from_path, to_path, m.name, m.linkname)
            elif m.islnk():
                # a hard link's target is a path inside the archive, relative to its root
                _check_member(from_path, to_path, m.name)
                _check_member(from_path, to_path, m.linkname)
            elif m.isfile() or m.isdir():
                _check_member(from_path, to_path, m.name)
            else:
                raise RuntimeError(f"refusing to extract {from_path}: member {m.name!r} is a device or fifo")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(to_path, members=members, filter="data")
        else:  # pragma: no cover - Python without extraction filters
            tar.extractall(to_path, members=members)


def _extract_zip(from_path: str, to_path: str) -> None:
    with zipfile.ZipFile(from_path) as zf:
        for info in zf.infolist():
            _check_member(from_path, to_path, info.filename)
            if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symlink entry
                _check_member(from_path, to_path, info.filename, zf.read(info).decode("utf-8", "replace"))
        zf.extractall(to_path)


def _decompress(from_path: str, to_path: str, compression: str) -> None:
    tmp = to_path + ".part"
    with _COMPRESSIONS[compression](from_path, "rb") as src, open(tmp, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.replace(tmp, to_path)


def extract_archive(from_path, to_path=None, remove_finished: bool = False) -> str:
    """Unpack ``from_path`` (.zip, .tar, .tar.gz/.tgz, .tar.bz2/.tbz, .tar.xz) into
    the folder ``to_path`` (default: the archive's folder); a single ``.gz``/``.xz``/``.bz2``
    file is decompressed into that folder under its name less the suffix.

    Returns the folder unpacked into, or the decompressed file's path.

    Raises:
        RuntimeError: unknown suffix, or a member that would land outside ``to_path``
            (an absolute path, ``..``, a link pointing outside, a device); nothing is
            extracted then.
    """
    from_path = os.fspath(from_path)
    archive, compression = _detect(from_path)
    to_path = os.fspath(to_path) if to_path is not None else os.path.dirname(from_path)
    os.makedirs(to_path, exist_ok=True)
    if archive is None:
        out = os.path.join(to_path, os.path.basename(from_path)[: -len(compression)])
        _decompress(from_path, out, compression)
        to_path = out
    else:
        if archive == ".zip":
            _extract_zip(from_path, to_path)
        else:
            _extract_tar(from_path, to_path, compression)
    if remove_finished:
        os.remove(from_path)
    return to_path


def download_and_extract_archive(url: str, download_root, extract_root=None, filename: str | None = None,
                                 md5: str | None = None, remove_finished: bool = False) -> None:
    """:func:`download_url` into ``download_root``, then :func:`extract_archive` into
    ``extract_root`` (default ``download_root``)."""
    download_root = os.path.expanduser(os.fspath(download_root))
    extract_root = download_root if extract_root is None else extract_root
    filename = filename or os.path.basename(url)
    path = download_url(url, download_root, filename, md5)
    extract_archive(path, extract_root, remove_finished)
