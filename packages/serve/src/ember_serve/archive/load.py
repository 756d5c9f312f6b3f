"""Opening an archive: ``.emar`` zip or an unpacked folder, every member checked first.

Loading extracts into a new private temporary folder, and refuses, with ArchiveError:
a member whose path escapes that folder (absolute, ``..``, backslashes: zip slip), a
symbolic link, a duplicate name, an archive whose members add up to more than
``max_bytes`` uncompressed (zip bombs are caught while reading, not trusted from the
header), a member missing from the manifest or listed but absent, and a sha256 mismatch.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import io
import os
import shutil
import stat
import sys
import tempfile
import threading
import types
import zipfile
import zlib

import numpy as np

from ..config import ModelConfig
from ._errors import ArchiveError
from ._members import MANIFEST_NAME, check_member_name, read_manifest

__all__ = ["load_archive", "LoadedArchive", "DEFAULT_MAX_ARCHIVE_BYTES"]

DEFAULT_MAX_ARCHIVE_BYTES = 4 * 1024 ** 3
_CHUNK = 1 << 20
_package_lock = threading.Lock()
_package_count = 0


class LoadedArchive:
    """A verified archive in a folder: manifest, config, model code, weights, example input.

    Attributes: ``root`` (the folder), ``manifest`` (dict), ``config`` (ModelConfig),
    ``name``, ``version``, ``handler`` (a built-in name or ``module:Class``), ``source``
    (the path it was loaded from), ``hf_folder`` (the path of the packed Hugging Face folder,
    or None). ``close()`` removes the folder when it was extracted.

    Built by the archive loader, not by hand: ``root``, ``manifest`` and ``source`` as above;
    ``owns_root`` marks a folder extracted for this archive (``close()`` deletes it). Raises
    ArchiveError for an invalid ``config.json``."""

    def __init__(self, root: str, manifest: dict, source: str, owns_root: bool):
        self.root, self.manifest, self.source, self._owns_root = root, manifest, source, owns_root
        self.name, self.version, self.handler = manifest["name"], manifest["version"], manifest["handler"]
        self._package: str | None = None
        cfg = self.read_bytes("config.json") if "config.json" in manifest["members"] else b"{}"
        try:
            self.config = ModelConfig.from_json(cfg)
        except ValueError as e:
            raise ArchiveError(f"config.json of {source!r}: {e}") from None

    @property
    def hf_folder(self) -> str | None:
        prefix = self.manifest.get("hf_folder")
        if not prefix:
            return None
        if not any(m.startswith(prefix + "/") for m in self.manifest["members"]):
            raise ArchiveError(f"the manifest of {self.source!r} names the Hugging Face folder {prefix!r}, which "
                               "holds no files")
        return self.path(prefix)

    def path(self, member: str) -> str:
        return os.path.join(self.root, *check_member_name(member).split("/"))

    def read_bytes(self, member: str) -> bytes:
        with open(self.path(member), "rb") as f:
            return f.read()

    def has(self, member: str) -> bool:
        return member in self.manifest["members"]

    # ---- code -------------------------------------------------------------------------
    def import_module(self, module: str) -> types.ModuleType:
        """Import ``module`` (a dotted path relative to the archive root, ``model`` for
        ``model.py``) inside a package private to this archive, so that two archives (or two
        versions) with a ``model.py`` each never collide and ``sys.path`` is left alone.
        Files of an archive import each other relatively (``from .model import Net``)."""
        if self._package is None:
            global _package_count
            with _package_lock:
                _package_count += 1
                name = f"_ember_archive_{_package_count}"
            pkg = types.ModuleType(name)
            pkg.__path__ = [self.root]
            pkg.__package__ = name
            pkg.__file__ = None
            sys.modules[name] = pkg
            self._package = name
        if not module or any(not p.isidentifier() for p in module.split(".")):
            raise ArchiveError(f"{module!r} is not a module name inside the archive")
        try:
            return importlib.import_module(f"{self._package}.{module}")
        except ModuleNotFoundError as e:
            if e.name and e.name.startswith(self._package):
                raise ArchiveError(f"the archive {self.source!r} holds no module {module!r}") from None
            raise

    def model_class(self):
        model = self.manifest.get("model")
        if not model:
            raise ArchiveError(f"the archive {self.source!r} holds no model file and class")
        module = self.import_module(model["file"][:-3].replace("/", "."))
        try:
            return getattr(module, model["class"])
        except AttributeError:
            raise ArchiveError(f"{model['file']} in {self.source!r} defines no {model['class']!r}") from None

    def state_dict(self) -> dict:
        """The archive's weights as ember tensors (tied names restored)."""
        from .weights import state_dict_from_safetensors
        if not self.has("weights.safetensors"):
            return {}
        return state_dict_from_safetensors(self.read_bytes("weights.safetensors"))

    def build_model(self, device: str | None = None):
        """The model: its class built with the archive's kwargs, weights loaded (strict), in eval mode."""
        cls = self.model_class()
        model = cls(**(self.manifest["model"].get("kwargs") or {}))
        state = self.state_dict()
        if state:
            model.load_state_dict(state)
        model.eval()
        if device and device != "cpu":
            model.to(device)
        return model

    def example_input(self) -> dict[str, np.ndarray] | None:
        """The example batch written with ``--example-input`` (``{input name: array}``), or None."""
        if not self.has("example_input.npz"):
            return None
        with np.load(io.BytesIO(self.read_bytes("example_input.npz")), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}

    def close(self) -> None:
        if self._package is not None:
            for key in [k for k in sys.modules if k == self._package or k.startswith(self._package + ".")]:
                del sys.modules[key]
            self._package = None
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)
            self._owns_root = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"LoadedArchive(name={self.name!r}, version={self.version!r}, handler={self.handler!r})"


def _verify(members: dict, found: dict[str, str], source: str) -> None:
    # found: member -> sha256 of the bytes actually present
    extra = sorted(set(found) - set(members))
    missing = sorted(set(members) - set(found))
    if extra:
        raise ArchiveError(f"{source!r} holds member(s) {extra} that {MANIFEST_NAME} does not list (tampered?)")
    if missing:
        raise ArchiveError(f"{source!r} lacks member(s) {missing} that {MANIFEST_NAME} lists")
    for name, digest in found.items():
        if digest != members[name]["sha256"]:
            raise ArchiveError(f"member {name!r} of {source!r} has sha256 {digest}, the manifest says "
                               f"{members[name]['sha256']} (corrupt or tampered)")


def _extract_zip(path: str, dest: str, max_bytes: int) -> dict:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise ArchiveError(f"{path!r} is not a readable zip archive: {e}") from None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise ArchiveError(f"{path!r} holds duplicate member names")
        if sum(i.file_size for i in infos) > max_bytes:
            raise ArchiveError(f"{path!r} unpacks to {sum(i.file_size for i in infos)} bytes, "
                               f"more than the limit of {max_bytes}")
        if MANIFEST_NAME not in names:
            raise ArchiveError(f"{path!r} has no {MANIFEST_NAME}: not an ember archive")
        for info in infos:  # every name is checked before anything is written
            check_member_name(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise ArchiveError(f"archive member {info.filename!r} is a symbolic link; links are refused")
        manifest = None
        found, total = {}, 0
        for info in infos:
            if info.is_dir():
                continue
            target = os.path.join(dest, *info.filename.split("/"))
            if os.path.commonpath([os.path.realpath(os.path.dirname(target)) + os.sep,
                                   os.path.realpath(dest) + os.sep]) != os.path.realpath(dest):
                raise ArchiveError(f"archive member {info.filename!r} would land outside the extraction folder")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            h = hashlib.sha256()
            try:
                with zf.open(info) as src, open(target, "wb") as out:
                    while chunk := src.read(_CHUNK):
                        total += len(chunk)
                        if total > max_bytes:
                            raise ArchiveError(f"{path!r} unpacks to more than the limit of {max_bytes} bytes")
                        h.update(chunk)
                        out.write(chunk)
            except (zipfile.BadZipFile, zlib.error, EOFError) as e:
                raise ArchiveError(f"member {info.filename!r} of {path!r} is corrupt: {e}") from None
            if info.filename == MANIFEST_NAME:
                with open(target, "rb") as f:
                    manifest = read_manifest(f.read())
            else:
                found[info.filename] = h.hexdigest()
    _verify(manifest["members"], found, path)
    return manifest


def _scan_folder(root: str, max_bytes: int) -> dict:
    mpath = os.path.join(root, MANIFEST_NAME)
    if not os.path.isfile(mpath):
        raise ArchiveError(f"the folder {root!r} has no {MANIFEST_NAME}: not an unpacked ember archive")
    with open(mpath, "rb") as f:
        manifest = read_manifest(f.read())
    found, total = {}, 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for fn in filenames:
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if rel == MANIFEST_NAME:
                continue
            if os.path.islink(full):
                raise ArchiveError(f"{rel!r} in {root!r} is a symbolic link; links are refused")
            h = hashlib.sha256()
            with open(full, "rb") as f:
                while chunk := f.read(_CHUNK):
                    total += len(chunk)
                    if total > max_bytes:
                        raise ArchiveError(f"the folder {root!r} holds more than the limit of {max_bytes} bytes")
                    h.update(chunk)
            found[rel] = h.hexdigest()
    _verify(manifest["members"], found, root)
    return manifest


def load_archive(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
                 extract_dir: str | None = None) -> LoadedArchive:
    """Open and verify an ``.emar`` file or an unpacked archive folder.

    Args:
        path: the ``.emar`` zip, or a folder holding ``MANIFEST.json`` and the members.
        max_bytes: the most bytes the members may add up to, uncompressed (default 4 GiB).
        extract_dir: where to make the private extraction folder (default: the system's temp).

    Returns a LoadedArchive; close it (or use ``with``) to remove the extracted files.
    Raises ArchiveError (see the module docstring) and FileNotFoundError."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no archive at {path!r}")
    if os.path.isdir(path):
        return LoadedArchive(path, _scan_folder(path, max_bytes), path, owns_root=False)
    dest = tempfile.mkdtemp(prefix="ember-archive-", dir=extract_dir)
    try:
        manifest = _extract_zip(path, dest, max_bytes)
        return LoadedArchive(dest, manifest, path, owns_root=True)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def manifest_of(path: str) -> dict:
    """The manifest of the ``.emar`` file at ``path`` without extracting it (not verified);
    ArchiveError when unreadable or not an ember archive."""
    try:
        with zipfile.ZipFile(path) as zf:
            return read_manifest(zf.read(MANIFEST_NAME))
    except (zipfile.BadZipFile, OSError) as e:
        raise ArchiveError(f"{path!r} is not a readable zip archive: {e}") from None
    except KeyError:
        raise ArchiveError(f"{path!r} has no {MANIFEST_NAME}: not an ember archive") from None

