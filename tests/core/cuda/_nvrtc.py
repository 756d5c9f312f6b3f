"""NVRTC through ctypes, from the ``nvidia-cuda-nvrtc-cu12`` wheel: compiles CUDA C++ to
PTX on a machine without a GPU (no driver is needed to compile), as cupy does at launch."""

from __future__ import annotations

import ctypes
import glob
import os

import nvidia.cuda_nvrtc

# the machine the project's GPU runs are measured on (H200: compute capability 9.0)
ARCH = "compute_90"
OPTIONS = ("-std=c++17",)  # what ember.cuda.kernels.function passes to cupy


def _library():
    folder = os.path.join(list(nvidia.cuda_nvrtc.__path__)[0], "lib")
    return ctypes.CDLL(sorted(glob.glob(os.path.join(folder, "libnvrtc.so.*")))[0])


_NVRTC = _library()


class CompileError(Exception):
    """NVRTC refused the source; the message is its log."""


def compile_ptx(source: str, name: str = "kernel.cu", options=OPTIONS, arch: str = ARCH) -> str:
    """The PTX of ``source``; raises CompileError with NVRTC's log when it does not compile."""
    program = ctypes.c_void_p()
    status = _NVRTC.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None, None)
    if status:
        raise RuntimeError(f"nvrtcCreateProgram failed with status {status}")
    try:
        flags = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in options)]
        status = _NVRTC.nvrtcCompileProgram(program, len(flags), (ctypes.c_char_p * len(flags))(*flags))
        if status:
            size = ctypes.c_size_t()
            _NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            _NVRTC.nvrtcGetProgramLog(program, log)
            raise CompileError(log.value.decode(errors="replace"))
        size = ctypes.c_size_t()
        _NVRTC.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        _NVRTC.nvrtcGetPTX(program, ptx)
        return ptx.value.decode()
    finally:
        _NVRTC.nvrtcDestroyProgram(ctypes.byref(program))
