"""ember.utils: data loading and activation checkpointing (torch.utils)."""

from . import checkpoint, data  # noqa: F401
