"""Passes over ember.fx graphs (torch.fx.passes)."""

from . import shape_prop

__all__ = ["shape_prop"]
