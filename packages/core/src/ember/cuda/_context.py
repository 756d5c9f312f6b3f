"""``with ember.cuda.device(i):`` and ``device_of`` (torch.cuda.device, torch.cuda.device_of)."""

from __future__ import annotations


def _optional_index(device) -> int:
    """The CUDA index ``device`` names: an int as it is; a string or ember.device of type
    cuda its index, -1 when it has none (the current device, which needs no switch); None
    -1. ValueError for a device of another type."""
    if device is None:
        return -1
    if isinstance(device, int):
        return device
    from .._device import to_device
    d = to_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return -1 if d.index is None else d.index


class device:
    """Context manager that makes CUDA device ``device`` (an int, a string such as "cuda:1",
    an ember.device, or None) the current one inside the block, and the previous one again
    after it. An index of -1, None, or a cuda device without an index changes nothing.

    Raises:
        ValueError: a device that is not a cuda one.
        RuntimeError: entering with an index when ember has no cupy (torch's CPU build raises
            RuntimeError too) or no GPU.
    """

    def __init__(self, device):
        self.idx = _optional_index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx < 0:
            return
        from . import _cupy_module, _require
        if _cupy_module() is None:
            raise RuntimeError("ember was installed without CUDA support: install its 'cuda' extra (cupy)")
        runtime = _require().cuda.runtime
        self.prev_idx = runtime.getDevice()
        if self.prev_idx != self.idx:
            runtime.setDevice(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            from . import _require
            _require().cuda.runtime.setDevice(self.prev_idx)
        return False


class device_of(device):
    """``device`` of the GPU that tensor ``obj`` lives on; a CPU tensor changes nothing."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)
