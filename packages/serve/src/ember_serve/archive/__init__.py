"""Model archives (``.emar``): create, load and verify. See ``create`` and ``load``."""

from ._errors import ArchiveError
from ._members import MANIFEST_NAME
from .create import create_archive
from .load import DEFAULT_MAX_ARCHIVE_BYTES, LoadedArchive, load_archive, manifest_of

__all__ = ["ArchiveError", "MANIFEST_NAME", "create_archive", "DEFAULT_MAX_ARCHIVE_BYTES",
           "LoadedArchive", "load_archive", "manifest_of"]
