"""Process state of the compiler: whether compiled functions run their recordings."""

from __future__ import annotations

import threading

__all__ = ["disabled", "set_disabled"]


class _Local(threading.local):
    disabled = 0  # depth of ``ember.compiler.disable``d calls on this thread


_LOCAL = _Local()


def disabled() -> bool:
    return _LOCAL.disabled > 0


def set_disabled(delta: int) -> None:
    _LOCAL.disabled += delta
