"""ember.hub: the weights helpers of ``torch.hub`` (cache folder, checked downloads).

* ``get_dir()`` / ``set_dir(d)``: the cache root, ``$EMBER_HOME/hub`` where ``EMBER_HOME``
  defaults to ``$XDG_CACHE_HOME/ember`` (``~/.cache/ember``); checkpoints are kept in
  ``<get_dir()>/checkpoints``.
* ``download_url_to_file(url, dst, hash_prefix=None, progress=True)``: a download written to
  a temporary file beside ``dst`` and renamed over it only when complete and, if asked,
  when its sha256 starts with ``hash_prefix``; a failed download never leaves a partial
  ``dst``, and a dropped connection is resumed with HTTP Range requests.
* ``load_state_dict_from_url(url, ...)``: download once into the cache, then load it with
  ``ember.load`` (torch's zip or legacy checkpoints) or, for safetensors files, with the
  ``safetensors`` package (``pip install ember-core[safetensors]``).

Offline use: with the environment variable ``EMBER_HUB_OFFLINE=1`` nothing is downloaded;
files already in the cache load as usual, and a missing one raises RuntimeError naming the
URL and the exact path where the file must be placed.

Differences from torch (documented choices): ``load_state_dict_from_url`` defaults to
``weights_only=True`` (``ember.load``'s restricted unpickler), accepts a local file path
instead of a URL (loaded in place, nothing copied) and reads safetensors files;
``download_url_to_file`` resumes dropped connections and refuses a body shorter than its
announced size, where torch keeps the truncated file.

Source: https://pytorch.org/docs/stable/hub.html
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import sys
import uuid
import warnings
import zipfile
from urllib.parse import urlparse
from urllib.request import Request, urlopen

__all__ = ["get_dir", "set_dir", "download_url_to_file", "load_state_dict_from_url"]

ENV_EMBER_HOME = "EMBER_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
ENV_OFFLINE = "EMBER_HUB_OFFLINE"
DEFAULT_CACHE_DIR = "~/.cache"
# ``name-<sha256 prefix>.ext``: the hash prefix torch's check_hash reads from a file name
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
READ_DATA_CHUNK = 128 * 1024
RESUME_ATTEMPTS = 3  # further requests for the rest of a download cut short
_SAFETENSORS_SUFFIX = ".safetensors"

_hub_dir: str | None = None


def _get_ember_home() -> str:
    default = os.path.join(os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR), "ember")
    return os.path.expanduser(os.getenv(ENV_EMBER_HOME, default))


def get_dir() -> str:
    """The hub cache folder: the one given to ``set_dir``, else ``$EMBER_HOME/hub``
    (``EMBER_HOME`` defaults to ``$XDG_CACHE_HOME/ember``, i.e. ``~/.cache/ember``)."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_ember_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use ``d`` (``~`` expanded) as the hub cache folder from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _offline() -> bool:
    return os.getenv(ENV_OFFLINE, "").strip().lower() not in ("", "0", "false", "no", "off")


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download ``url`` to the path ``dst``.

    Args:
        url: the address to read (any scheme ``urllib`` opens: http, https, file).
        dst: the file to write (``~`` expanded). It is written as a temporary
            ``<dst>.<random>.partial`` in the same folder and renamed over ``dst`` only
            after the whole body arrived and the hash check passed, so an existing
            ``dst`` is never replaced by a broken download. A connection that drops
            before the announced size is resumed with HTTP Range requests (the whole
            body is fetched again from a server that ignores ranges).
        hash_prefix: if not None, the sha256 hex digest of the file must start with it.
        progress: show a tqdm progress bar on stderr.

    Raises:
        RuntimeError: the sha256 does not start with ``hash_prefix`` (the message gives
            both; the temporary file is deleted), the body stays shorter than
            its announced size after ``RESUME_ATTEMPTS`` resumed requests (torch keeps such
            a truncated file; ember refuses it), or ``EMBER_HUB_OFFLINE=1`` is set (the
            message names the URL and the path where the file must be placed by hand).
        urllib.error.URLError or OSError: the download itself failed.
    """
    dst = os.path.expanduser(os.fspath(dst))
    if _offline():
        raise RuntimeError(
            f"ember.hub is offline ({ENV_OFFLINE}=1): cannot download {url!r}. "
            f"Download it by other means and place it at {os.path.abspath(dst)!r}")
    from tqdm import tqdm

    tmp = f"{dst}.{uuid.uuid4().hex}.partial"
    f = open(tmp, "xb")  # noqa: SIM115 - closed in the finally below, also on error
    try:
        with tqdm(disable=not progress, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr) as bar:
            sha256 = _fetch(url, f, bar, hash_prefix is not None)
        f.close()
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value for {url!r} (expected "{hash_prefix}", got "{digest}")')
        os.replace(tmp, dst)  # atomic within one folder
    finally:
        f.close()
        if os.path.exists(tmp):
            os.remove(tmp)


def _total_size(response):
    """The whole file's size from a 200 (Content-Length) or 206 (Content-Range) answer."""
    if response.status == 206:
        whole = (response.headers.get("Content-Range") or "").rpartition("/")[2]
        return int(whole) if whole.isdigit() else None
    length = response.headers.get("Content-Length")
    return int(length) if length is not None and length.isdigit() else None


def _fetch(url: str, f, bar, want_hash: bool):
    """Write ``url``'s body to ``f``; when the connection drops before the announced size,
    ask again for the rest (HTTP Range) up to ``RESUME_ATTEMPTS`` times, starting over if
    the server ignores the range. Returns the sha256 object (None unless ``want_hash``)."""
    sha256 = hashlib.sha256() if want_hash else None
    received, total = 0, None
    for _ in range(RESUME_ATTEMPTS + 1):
        headers = {"User-Agent": "ember.hub"}
        if received:
            headers["Range"] = f"bytes={received}-"
        with urlopen(Request(url, headers=headers)) as u:
            if received and u.status != 206:  # the range was ignored: the body starts again
                f.seek(0)
                f.truncate()
                received, sha256 = 0, hashlib.sha256() if want_hash else None
                bar.reset()
            size = _total_size(u)
            total = size if size is not None else total
            bar.total = total
            try:
                while chunk := u.read(READ_DATA_CHUNK):
                    f.write(chunk)
                    if sha256 is not None:
                        sha256.update(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
            except (http.client.IncompleteRead, ConnectionError, TimeoutError):
                pass  # a dropped connection: resumed below
        # urllib may also return a short body without error when the connection drops
        if total is None or received >= total:
            return sha256
    raise RuntimeError(f"incomplete download of {url!r}: expected {total} bytes, got {received} "
                       f"after {RESUME_ATTEMPTS} resumed requests")


def _is_local_path(url: str) -> bool:
    scheme = urlparse(url).scheme
    return scheme == "" or (len(scheme) == 1 and os.name == "nt")  # "C:\\..." parses as scheme "c"


def _is_safetensors(path: str) -> bool:
    """A ``.safetensors`` name, or a safetensors header: little-endian u64 length then ``{``."""
    if path.endswith(_SAFETENSORS_SUFFIX):
        return True
    with open(path, "rb") as fh:
        head = fh.read(9)
    if len(head) < 9 or head[8:9] != b"{":
        return False
    return int.from_bytes(head[:8], "little") < os.path.getsize(path)


def _is_legacy_zip_format(path: str) -> bool:
    # a zip holding one file: a pre-1.6 torch checkpoint compressed by hand
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
    return len(members) == 1 and not members[0].is_dir()


def _load_safetensors(path: str, map_location):
    try:
        from safetensors.numpy import load_file
    except ImportError as e:
        raise ImportError(f"reading the safetensors file {path!r} needs the 'safetensors' package: "
                          "pip install 'ember-core[safetensors]'") from e
    import ml_dtypes  # noqa: F401 - registers numpy's 'bfloat16' dtype name that safetensors asks for
    import numpy

    from . import from_numpy
    from ._device import device
    out = {}
    for name, arr in load_file(path).items():
        if not arr.flags.writeable:
            arr = arr.copy()
        t = from_numpy(numpy.ascontiguousarray(arr))
        if map_location is not None:
            if callable(map_location):
                moved = map_location(t, "cpu")
                t = t if moved is None else moved
            elif isinstance(map_location, dict):
                t = t.to(device(map_location.get("cpu", "cpu")))
            else:
                t = t.to(device(map_location))
        out[name] = t
    return out


def _load_file(path: str, model_dir: str, map_location, weights_only):
    from .serialization import load
    if _is_safetensors(path):
        return _load_safetensors(path, map_location)
    if _is_legacy_zip_format(path):
        warnings.warn("loading a checkpoint zipped by hand (torch's format older than 1.6); save it again "
                      "with ember.save or torch.save to use the zip checkpoint format", FutureWarning, stacklevel=3)
        os.makedirs(model_dir, exist_ok=True)
        with zipfile.ZipFile(path) as zf:
            member = zf.infolist()[0]
            # only the member's base name, so a crafted archive cannot write outside model_dir
            target = os.path.join(model_dir, os.path.basename(member.filename))
            with zf.open(member) as src, open(target, "wb") as out:
                while chunk := src.read(READ_DATA_CHUNK):
                    out.write(chunk)
        return load(target, map_location=map_location, weights_only=weights_only)
    return load(path, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None, weights_only: bool = True):
    """Load the weights at ``url``, downloading them into the cache on first use.

    Args:
        url: the weights' address, or a local file path (loaded in place).
        model_dir: the cache folder; default ``<get_dir()>/checkpoints``.
        map_location: as in ``ember.load`` (device, string, dict or callable).
        progress: show a progress bar on stderr while downloading.
        check_hash: the file name must read ``name-<sha256 prefix>.ext`` (eight or more hex
            digits); the download is refused when its sha256 does not start with them.
        file_name: name of the cached file; default the last part of the URL's path.
        weights_only: passed to ``ember.load``; True (the default here) uses the
            restricted unpickler.

    Returns: the loaded object, usually a ``state_dict`` (dict of name -> Tensor). A
    safetensors file (``.safetensors`` name or header) gives a dict of CPU tensors, moved by
    ``map_location`` when given.

    Raises:
        RuntimeError: hash mismatch (nothing is cached), or offline mode and the file is not
            in the cache (the message names the URL and the cache path to fill by hand).
        FileNotFoundError: ``url`` is a local path that does not exist.
        ImportError: a safetensors file without the ``safetensors`` package installed.
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    if _is_local_path(url):
        path = os.path.expanduser(url)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"load_state_dict_from_url: expected a URL or an existing file, got {url!r}")
        return _load_file(path, os.path.expanduser(os.fspath(model_dir)), map_location, weights_only)

    model_dir = os.path.expanduser(os.fspath(model_dir))
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        if not _offline():
            os.makedirs(model_dir, exist_ok=True)
            sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    return _load_file(cached_file, model_dir, map_location, weights_only)
