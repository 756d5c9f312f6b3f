"""ember.cuda: what torch.cuda answers about GPUs, through cupy when it is installed (the
``cuda`` extra).

Without cupy, ember.cuda behaves as torch's CPU build: queries answer False, 0 or nothing,
the memory counters read 0, and calls that need a device raise torch's
``AssertionError("Torch not compiled with CUDA enabled")``. With cupy but no GPU, they raise
RuntimeError("No CUDA GPUs are available"), as torch's CUDA build does. The caching
allocator is cupy's memory pool, counted by ``ember.cuda.memory``; streams and events are
cupy's, in ``ember.cuda.streams``.
"""

from __future__ import annotations

import functools

from .. import _legacy
from . import amp  # noqa: F401  (torch.cuda.amp, deprecated by torch for ember.amp)
from ._context import device, device_of
from ._properties import _CudaDeviceProperties
from .memory import (
    OutOfMemoryError,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
)
from .streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state", "set_rng_state",
           "get_rng_state_all", "set_rng_state_all", "is_initialized", "init", "is_bf16_supported",
           "get_device_name", "get_device_capability", "get_device_properties", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "reset_max_memory_cached", "memory_stats", "mem_get_info", "get_arch_list",
           "OutOfMemoryError", "device", "device_of", "Stream", "Event", "StreamContext", "stream",
           "current_stream", "default_stream", "set_stream"]

# the legacy typed classes of cuda tensors: ember.cuda.FloatTensor, ...
globals().update(_legacy.CUDA_TENSOR_TYPES)

_NOT_COMPILED = "Torch not compiled with CUDA enabled"  # torch's words, which programs may match


@functools.lru_cache(maxsize=1)
def _cupy_module():
    """cupy when it imports, else None."""
    try:
        import cupy
        return cupy
    except ImportError:
        return None


@functools.lru_cache(maxsize=1)
def _cupy():
    """cupy when at least one CUDA device answers, else None."""
    cp = _cupy_module()
    if cp is None:
        return None
    try:
        return cp if cp.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # a CUDA driver error when no GPU is present
        return None


def is_available() -> bool:
    """True when cupy is installed and at least one CUDA device answers."""
    return _cupy() is not None


def device_count() -> int:
    """The number of CUDA devices cupy sees; 0 without cupy or a GPU (torch.cuda.device_count)."""
    cp = _cupy()
    return cp.cuda.runtime.getDeviceCount() if cp is not None else 0


def is_initialized() -> bool:
    """Whether ember has used a GPU yet in this process (a cuda tensor was made)."""
    from ..backends import _cuda_backends
    return bool(_cuda_backends)


def _require():
    """cupy with a device, or torch's error for the build and machine at hand."""
    cp = _cupy()
    if cp is None:
        if _cupy_module() is None:
            raise AssertionError(_NOT_COMPILED)
        raise RuntimeError("No CUDA GPUs are available")
    return cp


def init() -> None:
    """Make sure CUDA can be used (torch.cuda.init): AssertionError when ember runs without
    cupy (torch's "not compiled with CUDA" error), RuntimeError when no GPU answers."""
    _require()


def current_device() -> int:
    """The index of the current CUDA device (torch.cuda.current_device); errors as ``init``."""
    return _require().cuda.runtime.getDevice()


def set_device(device) -> None:
    """Make ``device`` (an int index, or a device whose index None means 0) the current CUDA
    device (torch.cuda.set_device); errors as ``init``."""
    index = device if isinstance(device, int) else getattr(device, "index", None)
    _require().cuda.runtime.setDevice(0 if index is None else index)


def synchronize(device=None) -> None:
    """Wait for all kernels on ``device`` (the current one by default) to finish."""
    cp = _require()
    index = device if isinstance(device, int) else getattr(device, "index", None)
    with cp.cuda.Device(index if index is not None else cp.cuda.runtime.getDevice()):
        cp.cuda.runtime.deviceSynchronize()


def get_device_properties(device=None):
    """The properties of CUDA device ``device`` (an index, a device, or None for the current
    one): ``name``, ``major``, ``minor``, ``total_memory`` (bytes), ``multi_processor_count``,
    ``L2_cache_size`` (bytes), ... (torch.cuda.get_device_properties); errors as ``init``."""
    return _CudaDeviceProperties(_require().cuda.runtime.getDeviceProperties(_index(device)))


def get_device_name(device=None) -> str:
    """The name of CUDA device ``device`` (an index or a device; the current one when None)
    (torch.cuda.get_device_name); errors as ``init``."""
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    """The compute capability ``(major, minor)`` of CUDA device ``device`` (an index or a
    device; the current one when None) (torch.cuda.get_device_capability); errors as
    ``init``."""
    props = get_device_properties(device)
    return props.major, props.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether bfloat16 cuda tensors work here (torch.cuda.is_bf16_supported): False without a
    GPU or with a cupy that stores no bfloat16 (before CuPy 14); True on compute capability
    8.0 or later, which computes in bfloat16 natively; on older GPUs ``including_emulation``
    (cupy converts through float32 there)."""
    if not is_available():
        return False
    from ..backends.cupy_backend import bfloat16_supported
    if not bfloat16_supported(_cupy()):
        return False
    return get_device_capability()[0] >= 8 or including_emulation


def get_arch_list() -> list:
    """The architectures ember's kernels were built for: none ahead of time (cupy compiles
    them at run time), as torch's CPU build reports."""
    return []


# ---- random ------------------------------------------------------------------------

def manual_seed(seed: int) -> None:
    """Seed the default generator of the current CUDA device with the int ``seed``; a no-op
    without CUDA, as torch (torch.cuda.manual_seed)."""
    if is_available():
        from ..random import default_generator
        default_generator(f"cuda:{current_device()}").manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed the default generator of every CUDA device with the int ``seed``; a no-op without
    CUDA (torch.cuda.manual_seed_all)."""
    if is_available():
        from ..random import default_generator
        for i in range(device_count()):
            default_generator(f"cuda:{i}").manual_seed(seed)


def seed() -> None:
    """Seed the current device's generator from the OS (a no-op without CUDA, as torch)."""
    if is_available():
        from ..random import default_generator
        default_generator(f"cuda:{current_device()}").seed()


def seed_all() -> None:
    """Seed the default generator of every CUDA device from the operating system's randomness;
    a no-op without CUDA (torch.cuda.seed_all)."""
    if is_available():
        from ..random import default_generator
        for i in range(device_count()):
            default_generator(f"cuda:{i}").seed()


def initial_seed() -> int:
    """The seed the current CUDA device's default generator started from
    (torch.cuda.initial_seed); errors as ``init`` without a GPU."""
    from ..random import default_generator
    return default_generator(f"cuda:{current_device()}").initial_seed()


def _index(device) -> int:
    """The index of ``device`` (an int, a string, a device, or None for the current one)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    from .._device import to_device
    index = to_device(device).index
    return current_device() if index is None else index


def get_rng_state(device="cuda"):
    """The state of the default generator of CUDA device ``device`` as a uint8 tensor
    (torch.cuda.get_rng_state): its seed and the Philox offset that counter-based kernels
    (dropout) advance; errors as ``init`` without a GPU."""
    from ..random import default_generator
    _require()
    return default_generator(f"cuda:{_index(device)}").get_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore the default generator of CUDA device ``device`` to ``new_state``, a state
    ``get_rng_state`` returned (torch.cuda.set_rng_state); Generator.set_state's errors for
    another tensor. A no-op without CUDA, as torch's CPU build (which defers the call to a
    CUDA start that never comes)."""
    if is_available():
        from ..random import default_generator
        default_generator(f"cuda:{_index(device)}").set_state(new_state)


def get_rng_state_all() -> list:
    """``get_rng_state`` of every CUDA device, in index order (torch.cuda.get_rng_state_all)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """``set_rng_state`` of each CUDA device from ``new_states``, in index order
    (torch.cuda.set_rng_state_all)."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
