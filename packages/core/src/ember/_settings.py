"""Process-wide settings that PyTorch programs set on their first lines (torch docs,
"torch"): deterministic algorithms, float32 matmul precision, inter-op threads.

ember's CPU ops are deterministic already and its float32 products are IEEE float32, so
these settings are kept and reported; the cuda matrix products read the matmul precision
(TF32 when it is not "highest").
"""

from __future__ import annotations

import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "get_num_interop_threads", "set_num_interop_threads"]

_state = {"deterministic": False, "warn_only": False, "matmul_precision": "highest", "interop_threads": None}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (torch.use_deterministic_algorithms)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _state["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """'highest' (IEEE float32), 'high' or 'medium' (TF32 / bfloat16 products allowed on cuda).
    Another value warns and leaves the setting alone, as torch does."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    return _state["matmul_precision"]


def get_num_interop_threads() -> int:
    """Threads for inter-op parallelism: ember runs ops one after another, so it reports
    what was set, or the number of cores (torch's default)."""
    import os
    return _state["interop_threads"] or os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("Number of inter-op threads must be positive")
    _state["interop_threads"] = n
