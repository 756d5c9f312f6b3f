"""The CUDA backend: cupy arrays on one GPU. Imported only when a cuda tensor is made."""

from __future__ import annotations

import functools

import numpy

from .. import _settings
from .._device import device


def bfloat16_supported(cupy) -> bool:
    """Whether this cupy stores bfloat16 arrays: from CuPy 14 on, as ml_dtypes' bfloat16 (CuPy's
    upgrade guide, "Minimal support for bfloat16"; the numpy 2.1.2 it needs is below ember's
    floor)."""
    return int(cupy.__version__.split(".")[0]) >= 14


def apply_matmul_precision(cupy, precision: str) -> None:
    """Make cupy's float32 matrix products follow torch's float32 matmul ``precision``:
    'high' and 'medium' let cuBLAS use TF32 tensor cores, 'highest' keeps IEEE float32 (cupy's
    compute type for float32, which its matmul, dot and tensordot read at each call)."""
    from cupy._core import _routines_linalg as linalg
    kind = linalg.COMPUTE_TYPE_FP32 if precision == "highest" else linalg.COMPUTE_TYPE_TF32
    cupy._core.set_compute_type(numpy.float32, kind)


class CupyBackend:
    """Arrays on CUDA device ``index`` through cupy."""

    def __init__(self, index: int):
        from .. import cuda
        if cuda._cupy_module() is None:
            # torch's CPU build raises AssertionError here, in these words, which programs match
            raise AssertionError("Torch not compiled with CUDA enabled (ember was installed without CUDA support: "
                                 "install the 'cuda' extra, cupy-cuda12x)")
        cupy = cuda._require()  # torch's RuntimeError where cupy finds no GPU
        if index >= cupy.cuda.runtime.getDeviceCount():
            raise RuntimeError(f"CUDA error: invalid device ordinal {index}")
        from ..cuda import memory
        memory.install(cupy)
        if not _settings._MATMUL_PRECISION_HOOKS:
            apply_matmul_precision(cupy, _settings.get_float32_matmul_precision())
            _settings._MATMUL_PRECISION_HOOKS.append(functools.partial(apply_matmul_precision, cupy))
        self.xp = cupy
        self.index = index
        self.name = f"cuda:{index}"
        self.device = device("cuda", index)

    kind = "cupy"
    mixed_kinds = True

    @staticmethod
    def device_of(arr):
        return device("cuda", arr.device.id)

    def asarray(self, obj, dtype=None):
        with self.xp.cuda.Device(self.index):
            return self.xp.asarray(obj, dtype=dtype)

    def to_host(self, arr):
        return self.xp.asnumpy(arr)

    def synchronize(self) -> None:
        self.xp.cuda.Device(self.index).synchronize()

    def scatter_add(self, target, index, values) -> None:
        import cupyx
        cupyx.scatter_add(target, index, values)

    @property
    def special(self):
        import cupyx.scipy.special
        return cupyx.scipy.special

    @property
    def linalg(self):
        return self.xp.linalg

    @property
    def fft(self):
        return self.xp.fft

    def new_bit_generator(self, seed: int, reserve):
        """The draws of a cuda Generator: counter-based (Philox), taking their blocks from
        ``reserve`` (the Generator's ``philox_seed_offset``); ``seed`` is the Generator's."""
        from ..cuda._philox import CurandPhilox, PhiloxDraws
        return PhiloxDraws(CurandPhilox.on(self.xp, self.index), reserve, self.xp)

    def storage_dtype(self, d):
        if d.name == "bfloat16" and not bfloat16_supported(self.xp):
            raise TypeError(f"bfloat16 cuda tensors need CuPy 14 or later; this is CuPy {self.xp.__version__}")
        return d.np

    def dtype_of(self, arr):
        from .._dtype import from_numpy_dtype
        return from_numpy_dtype(arr.dtype)

    def astype(self, arr, d):
        dt = self.storage_dtype(d)
        return arr if arr.dtype == dt else arr.astype(dt)

    def copy(self, arr):
        return arr.copy()

    def item(self, arr):
        return arr.item()

    def reshape_view(self, arr, shape):
        out = arr.view()
        try:
            out.shape = shape
        except AttributeError:
            return None
        return out

    def byte_strides(self, arr):
        return arr.strides

    def address(self, arr) -> int:
        return arr.data.ptr

    def is_c_contiguous(self, arr) -> bool:
        return arr.flags.c_contiguous

    def ascontiguousarray(self, arr):
        return self.xp.ascontiguousarray(arr)

    def nan_to_num(self, arr, nan, posinf, neginf):
        return self.xp.nan_to_num(arr, nan=nan, posinf=posinf, neginf=neginf)
