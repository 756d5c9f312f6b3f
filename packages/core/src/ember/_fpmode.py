"""The x86 SSE control register's flush-to-zero and denormals-are-zero bits, behind
``ember.set_flush_denormal`` (torch.set_flush_denormal sets the same two bits).

numpy's loops and OpenBLAS run on SSE/AVX units, which obey these bits, so setting them
flushes subnormal floats in ember's CPU ops as it does in torch's. The register is read
and written through the C library's ``fegetenv``/``fesetenv``, whose ``fenv_t`` ends with
it on x86-64 glibc; elsewhere (another CPU or C library) nothing is changed. Like torch's,
the setting belongs to the calling thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

__all__ = ["set_flush_denormal"]

_FTZ_DAZ = (1 << 15) | (1 << 6)  # MXCSR bits: flush-to-zero, denormals-are-zero
_FENV_SIZE, _MXCSR_AT = 32, 28  # glibc's x86-64 fenv_t: x87 environment, then the MXCSR


def _libm():
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        return lib if hasattr(lib, "fegetenv") and hasattr(lib, "fesetenv") else None
    except OSError:
        return None


_LIBM = _libm()


def _flushes() -> bool:
    import numpy
    return bool(numpy.array([1e-310]) * 1.0 == 0.0)


def set_flush_denormal(mode: bool) -> bool:
    """Set (``mode`` True) or clear the two bits on this thread; True when the CPU's mode
    now says what was asked (checked by a product of a subnormal), False where it cannot
    be set, and then nothing is changed."""
    if _LIBM is None:
        return False
    env = (ctypes.c_uint8 * _FENV_SIZE)()
    if _LIBM.fegetenv(env) != 0:
        return False
    old = bytes(env)
    mxcsr = int.from_bytes(old[_MXCSR_AT:], "little")
    mxcsr = mxcsr | _FTZ_DAZ if mode else mxcsr & ~_FTZ_DAZ
    env[_MXCSR_AT:] = list(mxcsr.to_bytes(4, "little"))
    if _LIBM.fesetenv(env) != 0 or _flushes() != bool(mode):
        restore = (ctypes.c_uint8 * _FENV_SIZE).from_buffer_copy(old)
        _LIBM.fesetenv(restore)
        return False
    return True
