"""NVRTC through ctypes, from NVIDIA's wheel (``nvidia-cuda-nvrtc-cu12``, whose library lies
in ``nvidia/cuda_nvrtc/lib``, or CUDA 13's ``nvidia-cuda-nvrtc``, in ``nvidia/cu13/lib``):
compiles CUDA C++ to PTX on a machine without a GPU (no driver is needed to compile), as
cupy does at launch, and on to machine code (NVRTC runs ptxas for a real architecture),
whose resource report tells registers, spills and shared memory per kernel."""

from __future__ import annotations

import ctypes
import glob
import os
import re

import nvidia

# the machine the project's GPU runs are measured on (H200: compute capability 9.0)
ARCH = "compute_90"
MACHINE_ARCH = "sm_90"


def _library_path() -> str:
    """The newest libnvrtc any installed NVIDIA wheel holds."""
    found = [path for folder in nvidia.__path__
             for path in glob.glob(os.path.join(folder, "*", "lib", "libnvrtc.so.*"))]
    if not found:
        raise ImportError(f"no libnvrtc.so in the nvidia wheels at {list(nvidia.__path__)}: "
                          f"install nvidia-cuda-nvrtc-cu12")
    return max(found, key=lambda path: int(re.search(r"libnvrtc\.so\.(\d+)", path).group(1)))


def _load(path: str):
    # libnvrtc opens its builtins library by name at each compile; loaded first, from the same
    # folder, that name resolves without the folder on the loader's path
    for builtins in glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so.*")):
        ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(path)


def _include_dir(library: str) -> str:
    """CUDA's headers (cuda_fp16.h, cuda_bf16.h), which cupy puts on NVRTC's include path:
    beside the library in CUDA 13's ``nvidia/cu13``, else in ``nvidia-cuda-runtime-cu12``'s
    ``nvidia/cuda_runtime/include``."""
    beside = os.path.join(os.path.dirname(os.path.dirname(library)), "include")
    found = [beside] if os.path.exists(os.path.join(beside, "cuda_fp16.h")) else [
        os.path.dirname(path) for folder in nvidia.__path__
        for path in glob.glob(os.path.join(folder, "*", "include", "cuda_fp16.h"))]
    if not found:
        raise ImportError(f"no cuda_fp16.h in the nvidia wheels at {list(nvidia.__path__)}: "
                          f"install nvidia-cuda-runtime-cu12")
    return found[0]


_PATH = _library_path()
_NVRTC = _load(_PATH)
# what ember.cuda.kernels.function passes to cupy, and the include folder cupy adds
OPTIONS = ("-std=c++17", f"-I{_include_dir(_PATH)}")


class CompileError(Exception):
    """NVRTC refused the source; the message is its log."""


def _compile(source: str, name: str, flags) -> ctypes.c_void_p:
    """A compiled NVRTC program (the caller destroys it); CompileError with NVRTC's log."""
    program = ctypes.c_void_p()
    status = _NVRTC.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None, None)
    if status:
        raise RuntimeError(f"nvrtcCreateProgram failed with status {status}")
    flags = [f.encode() for f in flags]
    status = _NVRTC.nvrtcCompileProgram(program, len(flags), (ctypes.c_char_p * len(flags))(*flags))
    if status:
        log = _log(program)
        _NVRTC.nvrtcDestroyProgram(ctypes.byref(program))
        raise CompileError(log)
    return program


def _log(program) -> str:
    size = ctypes.c_size_t()
    _NVRTC.nvrtcGetProgramLogSize(program, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    _NVRTC.nvrtcGetProgramLog(program, log)
    return log.value.decode(errors="replace")


def compile_ptx(source: str, name: str = "kernel.cu", options=OPTIONS, arch: str = ARCH) -> str:
    """The PTX of ``source``; raises CompileError with NVRTC's log when it does not compile."""
    program = _compile(source, name, [f"--gpu-architecture={arch}", *options])
    try:
        size = ctypes.c_size_t()
        _NVRTC.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        _NVRTC.nvrtcGetPTX(program, ptx)
        return ptx.value.decode()
    finally:
        _NVRTC.nvrtcDestroyProgram(ctypes.byref(program))


def machine_resources(source: str, name: str = "kernel.cu", options=OPTIONS, arch: str = MACHINE_ARCH) -> dict:
    """``{kernel: {"registers", "spill_stores", "spill_loads", "stack", "shared"}}`` from
    ptxas's report on assembling ``source`` for ``arch`` (bytes, except registers)."""
    program = _compile(source, name, [f"--gpu-architecture={arch}", "--ptxas-options=-v", *options])
    try:
        log = _log(program)
    finally:
        _NVRTC.nvrtcDestroyProgram(ctypes.byref(program))
    found = {}
    for kernel, body in re.findall(r"Compiling entry function '(\w+)'(.*?)(?=Compiling entry function|\Z)", log,
                                   re.S):
        spills = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", body)
        used = re.search(r"Used (\d+) registers", body)
        shared = re.search(r"(\d+) bytes smem", body)
        found[kernel] = {"registers": int(used.group(1)), "stack": int(spills.group(1)),
                         "spill_stores": int(spills.group(2)), "spill_loads": int(spills.group(3)),
                         "shared": int(shared.group(1)) if shared else 0}
    return found
