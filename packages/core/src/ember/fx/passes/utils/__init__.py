"""Helpers for graph passes (torch.fx.passes.utils)."""

from . import matcher_utils

__all__ = ["matcher_utils"]
