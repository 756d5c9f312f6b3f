"""The models a server holds: names, their versions side by side, and each name's default.

The first version registered under a name is its default until ``set_default`` (as in
TorchServe). Lookups without a version get the default.
"""

from __future__ import annotations

import os
import threading

from ..archive import DEFAULT_MAX_ARCHIVE_BYTES, load_archive
from ..config import ModelConfig
from .served_model import ServedModel

__all__ = ["ModelRegistry", "ModelNotFound", "ModelConflict", "check_store_name"]


class ModelNotFound(LookupError):
    """No such model, or no such version of it (answered 404)."""


class ModelConflict(ValueError):
    """That name and version are registered already (answered 409)."""


def check_store_name(url: str, store: str) -> str:
    """The path of ``url`` inside the model store ``store``: a plain file or folder name only.

    Never a URL, an absolute path, a path with a separator or one starting with '.': a
    management API that fetched archives from anywhere let anyone who could reach it run code
    on the server (CVE-2023-43654). Raises PermissionError for such a name, FileNotFoundError
    when the store holds no such entry."""
    if not isinstance(url, str) or not url:
        raise PermissionError("give 'url' as the file name of an archive in the model store")
    if "://" in url or "/" in url or "\\" in url or url.startswith(".") or ":" in url or "\x00" in url:
        raise PermissionError(f"url {url!r} refused: only the name of an archive in the model store is accepted "
                              "(no URLs, no paths)")
    if not store:
        raise PermissionError("the server was started without --model-store; it registers no models at run time")
    path = os.path.join(store, url)
    if not os.path.exists(path):
        raise FileNotFoundError(f"the model store holds no {url!r}")
    real_store = os.path.realpath(store)
    if os.path.dirname(os.path.realpath(path)) != real_store:
        raise PermissionError(f"url {url!r} refused: it resolves outside the model store")
    return path


class ModelRegistry:
    def __init__(self, *, metrics=None, max_archive_bytes: int = DEFAULT_MAX_ARCHIVE_BYTES,
                 default_max_request_bytes: int | None = None):
        self.metrics = metrics
        self.max_archive_bytes = max_archive_bytes
        self.default_max_request_bytes = default_max_request_bytes
        self._models: dict[str, dict[str, ServedModel]] = {}
        self._default: dict[str, str] = {}
        self._lock = threading.Lock()

    def load(self, path: str, *, name: str | None = None, overrides: dict | None = None,
             source: str | None = None) -> ServedModel:
        """Load the archive at ``path`` (slow: run it in a thread) and register it.

        ``overrides`` replace config fields (``workers``, ``max_batch_size``...). Raises
        ArchiveError, ValueError (a bad override or handler), ModelConflict."""
        archive = load_archive(path, max_bytes=self.max_archive_bytes)
        try:
            name = name or archive.name
            version = archive.version
            with self._lock:
                if version in self._models.get(name, {}):
                    raise ModelConflict(f"model {name!r} version {version!r} is registered already")
            fields = archive.config.to_dict()
            if self.default_max_request_bytes is not None and "max_request_bytes" not in (overrides or {}) \
                    and fields["max_request_bytes"] == ModelConfig().max_request_bytes:
                fields["max_request_bytes"] = self.default_max_request_bytes
            fields.update({k: v for k, v in (overrides or {}).items() if v is not None})
            config = ModelConfig.from_dict(fields)
            model = ServedModel(archive, config, name, version, source or os.path.basename(path), self.metrics)
        except BaseException:
            archive.close()
            raise
        with self._lock:
            if version in self._models.get(name, {}):
                model.close(drain=False)
                raise ModelConflict(f"model {name!r} version {version!r} is registered already")
            self._models.setdefault(name, {})[version] = model
            self._default.setdefault(name, version)
        return model

    def get(self, name: str, version: str | None = None) -> ServedModel:
        with self._lock:
            versions = self._models.get(name)
            if not versions:
                raise ModelNotFound(f"unknown model {name!r}")
            v = version if version is not None else self._default[name]
            if v not in versions:
                raise ModelNotFound(f"model {name!r} has no version {v!r} (it has {sorted(versions)})")
            return versions[v]

    def versions(self, name: str) -> list[str]:
        with self._lock:
            if name not in self._models:
                raise ModelNotFound(f"unknown model {name!r}")
            return list(self._models[name])

    def default_version(self, name: str) -> str:
        with self._lock:
            if name not in self._default:
                raise ModelNotFound(f"unknown model {name!r}")
            return self._default[name]

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._models)

    def all(self) -> list[ServedModel]:
        with self._lock:
            return [m for vs in self._models.values() for m in vs.values()]

    def set_default(self, name: str, version: str) -> None:
        self.get(name, version)
        with self._lock:
            self._default[name] = version

    def unregister(self, name: str, version: str | None = None) -> ServedModel:
        """Remove a version (the default when None) and return it; the caller closes it.

        Removing the default of several versions makes the earliest remaining one the default."""
        model = self.get(name, version)
        with self._lock:
            versions = self._models[name]
            del versions[model.version]
            if not versions:
                del self._models[name], self._default[name]
            elif self._default[name] == model.version:
                self._default[name] = next(iter(versions))
        return model


