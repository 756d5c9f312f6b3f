"""ember.utils: data loading (torch.utils)."""

from . import data  # noqa: F401
