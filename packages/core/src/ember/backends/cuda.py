"""``ember.backends.cuda``: torch.backends.cuda's switches (torch docs, "torch.backends.cuda").

``matmul.allow_tf32`` (the same setting as ``set_float32_matmul_precision``) sets cupy's
compute type for float32 products, TF32 or IEEE float32
(``cupy_backend.apply_matmul_precision``); the reduced-precision reduction flags are kept
for scripts and change nothing; the scaled-dot-product-attention switches exist so that
scripts choosing a kernel run: ember has one attention path
(``F.scaled_dot_product_attention``), so they select nothing. Defaults are torch's.
"""

from __future__ import annotations

import contextlib
import warnings

__all__ = ["is_built", "matmul", "sdp_kernel", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled",
           "enable_cudnn_sdp", "preferred_linalg_library"]


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: TF32 and reduced-precision reductions in cuBLAS."""

    def __init__(self):
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        from .. import _settings
        return _settings.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        from .. import _settings
        _settings.set_float32_matmul_precision("high" if value else "highest")


matmul = _MatmulFlags()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether ember's CUDA support is installed (cupy importable)."""
    from .. import cuda
    return cuda._cupy_module() is not None


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Deprecated by torch for ``ember.nn.attention.sdpa_kernel``; sets the switches for the block."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    saved = dict(_SDP)
    _SDP.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
    try:
        yield
    finally:
        _SDP.update(saved)


def preferred_linalg_library(backend=None):
    """torch's linear-algebra library choice; ember's cuda linalg is cupy's, so 'default'."""
    return "default"
