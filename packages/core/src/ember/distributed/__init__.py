"""``ember.distributed``: torch.distributed's entry points, before ember's distributed engine.

Until the MPI-based engine lands, ember has no process groups: ``is_available()`` answers
False, a documented deviation (torch's CPU build answers True), so that scripts guarded by
``dist.is_available() and dist.is_initialized()`` take their single-process path, as they do
on a torch built without distributed support (which offers only these queries).
"""

from __future__ import annotations

__all__ = ["is_available", "is_initialized"]


def is_available() -> bool:
    """Whether process groups can be made: False (see the module docstring)."""
    return False


def is_initialized() -> bool:
    """Whether the default process group exists: False."""
    return False
