"""``ember.accelerator``: torch.accelerator's device-agnostic queries (torch docs,
"torch.accelerator"). The accelerator is CUDA when ``ember.cuda.is_available()``, else none."""

from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available() -> bool:
    from . import cuda
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``ember.device("cuda")`` when a GPU answers, else None."""
    from ._device import device
    return device("cuda") if is_available() else None


def device_count() -> int:
    from . import cuda
    return cuda.device_count()


def _require():
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index() -> int:
    _require()
    from . import cuda
    return cuda.current_device()


def set_device_index(device) -> None:
    _require()
    from . import cuda
    cuda.set_device(device)


def synchronize(device=None) -> None:
    _require()
    from . import cuda
    cuda.synchronize(device)
