"""The one exception an archive that cannot be made or loaded raises."""

__all__ = ["ArchiveError"]


class ArchiveError(ValueError):
    """An archive that is corrupt, tampered with, unsafe to extract, too large or inconsistent.

    The message names the member or field and what was expected."""
