"""Process-wide settings that PyTorch programs set on their first lines (torch docs,
"torch"): deterministic algorithms (and their debug-mode spelling), float32 matmul
precision, inter-op threads, warn-always, denormal flushing, and the build queries.

ember's CPU ops are deterministic already and its float32 products are IEEE float32, so
these settings are kept and reported; the cuda matrix products read the matmul precision
(TF32 when it is not "highest").
"""

from __future__ import annotations

import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision", "get_float32_matmul_precision",
           "get_num_interop_threads", "set_num_interop_threads", "init_num_threads", "set_warn_always",
           "is_warn_always_enabled", "set_flush_denormal", "compiled_with_cxx11_abi", "is_vulkan_available"]

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "interop_threads": None,
          "warn_always": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (torch.use_deterministic_algorithms): ``mode`` (a bool)
    turns the request on or off, ``warn_only`` (a bool) asks for warnings instead of errors
    from nondeterministic ops. The setting is kept and reported; no ember op consults it
    (none of them has a nondeterministic form to refuse). A value that is not a bool raises
    TypeError."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is in effect
    (torch.are_deterministic_algorithms_enabled)."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic algorithms were asked for with ``warn_only=True``
    (torch.is_deterministic_algorithms_warn_only_enabled)."""
    return _state["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """Another spelling of ``use_deterministic_algorithms`` (torch.set_deterministic_debug_mode):
    "default" or 0 turns it off, "warn" or 1 turns it on with ``warn_only=True``, "error"
    or 2 turns it on.

    Raises:
        TypeError: ``debug_mode`` is neither a str nor an int.
        RuntimeError: a string or number outside those three.
    """
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                               f"but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    _state["deterministic"], _state["warn_only"] = debug_mode != 0, debug_mode == 1


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2: off, on with warnings only, on (torch.get_deterministic_debug_mode)."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """Set the float32 matrix product ``precision``: 'highest' (IEEE float32), 'high' or
    'medium' (TF32 / bfloat16 products allowed on cuda)
    (torch.set_float32_matmul_precision). Another string warns and leaves the setting alone,
    as torch does; a non-string raises RuntimeError."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _state["matmul_precision"] = precision
    for hook in _MATMUL_PRECISION_HOOKS:
        hook(precision)


# called with the new precision: the cupy backend's, once a cuda tensor has loaded it
_MATMUL_PRECISION_HOOKS: list = []


def get_float32_matmul_precision() -> str:
    """The float32 matrix product precision: 'highest' (the default), 'high' or 'medium'
    (torch.get_float32_matmul_precision)."""
    return _state["matmul_precision"]


def get_num_interop_threads() -> int:
    """Threads for inter-op parallelism: ember runs ops one after another, so it reports
    what was set, or the number of cores (torch's default)."""
    import os
    return _state["interop_threads"] or os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Set the number of inter-op threads that ``get_num_interop_threads`` reports to the
    positive int ``n`` (torch.set_num_interop_threads); ember runs ops one after another, so
    nothing else changes. RuntimeError for another value."""
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("Number of inter-op threads must be positive")
    _state["interop_threads"] = n


def init_num_threads() -> None:
    """A no-op (torch.init_num_threads): torch calls it on a new thread to give it the
    process's intra-op thread count; ember's thread count is the BLAS library's, which
    every thread already shares."""


def set_warn_always(b: bool, /) -> None:
    """Keep torch's warn-always flag ``b`` (torch.set_warn_always: True gives warnings that
    torch gives once per process every time). ember has no once-only warnings of its own,
    Python's warning filters decide, so the flag is kept and reported. RuntimeError for a
    value that is not a bool."""
    if not isinstance(b, bool):
        raise RuntimeError(f"set_warn_always expects a bool, but got {type(b).__name__}")
    _state["warn_always"] = b


def is_warn_always_enabled() -> bool:
    """The warn-always flag ``set_warn_always`` set (False by default)
    (torch.is_warn_always_enabled)."""
    return _state["warn_always"]


def set_flush_denormal(mode: bool, /) -> bool:
    """Flush subnormal floats to zero in CPU ops (``mode`` True) or keep them exact
    (torch.set_flush_denormal), on the calling thread; returns whether the CPU supports it
    (True on x86-64, where the SSE flush-to-zero and denormals-are-zero bits are set).

    Raises:
        RuntimeError: ``mode`` is not a bool (torch's type).
    """
    if not isinstance(mode, bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    from . import _fpmode
    return _fpmode.set_flush_denormal(mode)


def compiled_with_cxx11_abi() -> bool:
    """True, as torch's wheels answer (torch.compiled_with_cxx11_abi): ember compiles no
    C++ of its own, so C++ extension builds that ask take the common path."""
    return True


def is_vulkan_available() -> bool:
    """False: ember has no Vulkan backend (torch.is_vulkan_available)."""
    return False
