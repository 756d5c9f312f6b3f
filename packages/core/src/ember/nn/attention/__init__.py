"""``ember.nn.attention``: torch.nn.attention's kernel selection for
``F.scaled_dot_product_attention`` (torch docs, "torch.nn.attention").

ember has one attention path, so ``sdpa_kernel`` only records the choice in
``ember.backends.cuda``'s switches (what ``flash_sdp_enabled()`` and friends report): scripts
that pick a kernel run unchanged and compute the same attention."""

from __future__ import annotations

import contextlib
import enum

from ...backends import cuda as _cuda_flags

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """The attention kernels torch can choose from, with torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCH = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
           SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.CUDNN_ATTENTION: "cudnn"}


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """A context manager: within the block, only ``backends`` (an SDPBackend or a list of
    them) are enabled for ``scaled_dot_product_attention`` (torch.nn.attention.sdpa_kernel).
    ``set_priority`` (torch's order of preference among the enabled backends) is accepted
    and has no effect: ember's CPU attention has one implementation. Raises AssertionError
    for anything but SDPBackends."""
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(chosen, (list, tuple)) or not all(isinstance(b, SDPBackend) for b in chosen):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    saved = dict(_cuda_flags._SDP)
    _cuda_flags._SDP.update({name: backend in chosen for backend, name in _SWITCH.items()})
    try:
        yield
    finally:
        _cuda_flags._SDP.update(saved)
