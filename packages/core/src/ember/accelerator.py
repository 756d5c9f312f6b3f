"""``ember.accelerator``: torch.accelerator's device-agnostic queries (torch docs,
"torch.accelerator"). The accelerator is CUDA when ``ember.cuda.is_available()``, else none."""

from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]


def is_available() -> bool:
    """True when an accelerator (a CUDA GPU through cupy) answers
    (torch.accelerator.is_available)."""
    from . import cuda
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``ember.device("cuda")`` when a GPU answers, else None
    (torch.accelerator.current_accelerator). The availability is always checked, so
    ``check_available`` changes nothing (torch without it may name a device type that has no
    device)."""
    from ._device import device
    return device("cuda") if is_available() else None


def device_count() -> int:
    """The number of accelerator devices, 0 without one (torch.accelerator.device_count)."""
    from . import cuda
    return cuda.device_count()


def _require():
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")


def current_device_index() -> int:
    """The index of the current accelerator device (torch.accelerator.current_device_index);
    RuntimeError when none is available."""
    _require()
    from . import cuda
    return cuda.current_device()


def set_device_index(device) -> None:
    """Make ``device`` (an index or a device) the current accelerator device
    (torch.accelerator.set_device_index); RuntimeError when none is available."""
    _require()
    from . import cuda
    cuda.set_device(device)


def synchronize(device=None) -> None:
    """Wait for the kernels on ``device`` (the current one when None) to finish
    (torch.accelerator.synchronize); RuntimeError when no accelerator is available."""
    _require()
    from . import cuda
    cuda.synchronize(device)
