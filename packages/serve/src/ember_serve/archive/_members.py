"""Member names, hashes and the manifest of an ``.emar`` archive.

An archive is a zip whose ``MANIFEST.json`` lists every other member with its sha256 and
size; loading refuses a member the manifest does not list, one it lists that is missing,
and one whose bytes hash differently.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re

from ._errors import ArchiveError

__all__ = ["MANIFEST_NAME", "FORMAT", "FORMAT_VERSION", "check_member_name", "sha256_hex", "read_manifest"]

MANIFEST_NAME = "MANIFEST.json"
FORMAT = "ember-archive"
FORMAT_VERSION = 1
_DRIVE = re.compile(r"^[A-Za-z]:")


def check_member_name(name: str) -> str:
    """``name`` if it is a relative POSIX path that stays inside the extraction folder.

    Raises ArchiveError for an absolute path, a drive letter, a backslash, an empty or
    ``..`` component (the zip-slip attack) or a control character."""
    bad = (not name or name.startswith("/") or "\\" in name or _DRIVE.match(name)
           or any(ord(c) < 32 for c in name))
    parts = name.rstrip("/").split("/")
    if bad or any(p in ("", ".", "..") for p in parts) or posixpath.normpath(name) != name.rstrip("/"):
        raise ArchiveError(f"archive member {name!r} is not a plain relative path inside the archive "
                           "(absolute paths, '..', '.', empty parts and backslashes are refused)")
    return name


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_manifest(raw: bytes) -> dict:
    """The manifest's JSON object, with its required fields checked (ArchiveError otherwise)."""
    try:
        m = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArchiveError(f"{MANIFEST_NAME} is not valid JSON: {e}") from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ArchiveError(f"{MANIFEST_NAME} does not describe an ember archive (expected \"format\": "
                           f"\"{FORMAT}\", got {m.get('format') if isinstance(m, dict) else m!r})")
    if m.get("format_version") != FORMAT_VERSION:
        raise ArchiveError(f"archive format version {m.get('format_version')!r} is not supported "
                           f"(this ember-serve reads version {FORMAT_VERSION})")
    for key, kind in (("name", str), ("version", str), ("handler", str), ("members", dict)):
        if not isinstance(m.get(key), kind):
            raise ArchiveError(f"{MANIFEST_NAME}: field {key!r} must be a {kind.__name__}, got {m.get(key)!r}")
    for name, info in m["members"].items():
        check_member_name(name)
        if not (isinstance(info, dict) and isinstance(info.get("sha256"), str) and isinstance(info.get("size"), int)):
            raise ArchiveError(f"{MANIFEST_NAME}: member {name!r} needs a sha256 string and an integer size")
    return m
