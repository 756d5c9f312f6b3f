"""``ember.cpu``: torch.cpu's device queries for the CPU (torch docs, "torch.cpu")."""

from __future__ import annotations

from . import amp  # noqa: F401

__all__ = ["is_available", "device_count", "current_device", "synchronize", "set_device"]


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """A no-op: there is one CPU device."""


def synchronize(device=None) -> None:
    """A no-op: CPU ops finish before they return."""
