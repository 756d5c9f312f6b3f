"""ember.cuda: what torch.cuda answers about GPUs, through cupy when it is installed
(the ``cuda`` extra). Without cupy or a GPU, ``is_available()`` is False and every call
that needs a device raises RuntimeError saying so."""

from __future__ import annotations

import functools

__all__ = ["is_available", "device_count", "current_device", "synchronize", "manual_seed", "manual_seed_all"]


@functools.lru_cache(maxsize=1)
def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:  # ImportError, or a CUDA driver error when no GPU is present
        return None


def is_available() -> bool:
    """True when cupy is installed and at least one CUDA device answers."""
    cp = _cupy()
    return cp is not None and cp.cuda.runtime.getDeviceCount() > 0


def device_count() -> int:
    cp = _cupy()
    return cp.cuda.runtime.getDeviceCount() if cp is not None else 0


def _require():
    cp = _cupy()
    if cp is None:
        raise RuntimeError("CUDA is not available: install ember-core[cuda] (cupy-cuda12x) on a machine with a GPU")
    return cp


def current_device() -> int:
    return _require().cuda.runtime.getDevice()


def synchronize(device=None) -> None:
    """Wait for all kernels on ``device`` (the current one by default) to finish."""
    cp = _require()
    index = device if isinstance(device, int) else getattr(device, "index", None)
    with cp.cuda.Device(index if index is not None else cp.cuda.runtime.getDevice()):
        cp.cuda.runtime.deviceSynchronize()


def manual_seed(seed: int) -> None:
    """Seed the default generator of the current CUDA device (a no-op without CUDA, as torch)."""
    if is_available():
        from ..random import default_generator
        default_generator(f"cuda:{current_device()}").manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    if is_available():
        from ..random import default_generator
        for i in range(device_count()):
            default_generator(f"cuda:{i}").manual_seed(seed)
