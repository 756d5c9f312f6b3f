"""``compatibility``: torch.fx marks each public name as backward compatible or not; ember
keeps the decorator so code that applies it runs, and records the flag on the object."""

from __future__ import annotations

__all__ = ["compatibility"]


def compatibility(is_backward_compatible: bool):
    """Return a decorator that leaves its argument unchanged apart from an
    ``_fx_backward_compatible`` flag set to ``is_backward_compatible``
    (torch.fx._compatibility.compatibility)."""
    def mark(fn):
        try:
            fn._fx_backward_compatible = bool(is_backward_compatible)
        except (AttributeError, TypeError):  # builtins and slotted objects take no attributes
            pass
        return fn
    return mark
