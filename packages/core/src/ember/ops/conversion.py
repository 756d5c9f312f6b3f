"""dtype and device conversion: to, float, long, cpu, cuda, type_as, contiguous."""

from __future__ import annotations

import builtins

from .. import _dtype as D
from .._device import device as _device_cls
from .._tensor import Tensor, _make
from ..autograd.graph import record
from ..backends import backend_for_device
from ._helpers import be, needs_grad


def _parse_to_args(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, (str, _device_cls, builtins.int)) and not isinstance(a, builtins.bool):
            device = a
        elif isinstance(a, builtins.bool):
            pass
        else:
            dtype = D.to_dtype(a)
    return dtype, device, copy


def to(self, *args, **kwargs):
    """Return self converted to a dtype and/or device (``to(dtype)``, ``to(device)``,
    ``to(other)``, ``to(device, dtype)``); self when nothing changes and ``copy`` is False."""
    dtype, device, copy = _parse_to_args(args, dict(kwargs))
    fmt = kwargs.get("memory_format")
    if fmt is not None and fmt.name != "preserve_format":
        return to(self, *args, **{k: v for k, v in kwargs.items() if k != "memory_format"}).contiguous(
            memory_format=fmt)
    dtype = D.to_dtype(dtype) if dtype is not None else self.dtype
    src_be = be(self)
    dst_be = backend_for_device(_device_cls(device)) if device is not None else src_be
    if dtype is self.dtype and dst_be is src_be and not copy:
        return self
    arr = self._data
    if dst_be is not src_be:
        arr = dst_be.asarray(src_be.to_host(arr) if dst_be.name == "cpu" else arr)
    cast = dst_be.astype(arr, dtype)
    arr = dst_be.copy(arr) if cast is self._data else cast
    r = _make(arr, dtype)
    if needs_grad(self) and (dtype.is_floating_point or dtype.is_complex):
        record("ToCopyBackward0", _to_rule, (self,), r, (src_be.device,))
    return r


def _to_rule(g, device):
    return g if g.device == device else to(g, device)


def _caster(dtype, name):
    def cast(self, memory_format=None):
        return to(self, dtype)
    cast.__name__ = name
    cast.__doc__ = f"self.to({dtype})"
    return cast


float = _caster(D.float32, "float")
double = _caster(D.float64, "double")
half = _caster(D.float16, "half")
bfloat16 = _caster(D.bfloat16, "bfloat16")
long = _caster(D.int64, "long")
int = _caster(D.int32, "int")
short = _caster(D.int16, "short")
char = _caster(D.int8, "char")
byte = _caster(D.uint8, "byte")
bool = _caster(D.bool_, "bool")
cfloat = _caster(D.complex64, "cfloat")
cdouble = _caster(D.complex128, "cdouble")


def type_as(self, other):
    return to(self, other.dtype)


def cpu(self, memory_format=None):
    return to(self, "cpu")


def cuda(self, device=None, non_blocking=False, memory_format=None):
    return to(self, _device_cls("cuda", device) if isinstance(device, type(0)) else (device or "cuda"))


def contiguous(self, memory_format=None):
    """self if already contiguous (in ``memory_format``, default row-major), else a copy
    laid out so (differentiable). RuntimeError for ``preserve_format``, as torch."""
    bk = be(self)
    if memory_format is not None and memory_format.name != "contiguous_format":
        if memory_format.name == "preserve_format":
            if self.is_contiguous():
                return self
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
        if self.is_contiguous(memory_format=memory_format):
            return self
        from .._memory_format import to_format
        r = _make(to_format(self._data, self.ndim, memory_format), self.dtype)
        if needs_grad(self):
            record("CloneBackward0", lambda g: g, (self,), r)
        return r
    if bk.is_c_contiguous(self._data):
        return self
    r = _make(bk.ascontiguousarray(self._data), self.dtype)
    if needs_grad(self):
        record("CloneBackward0", lambda g: g, (self,), r)
    return r


def detach(input):
    """A tensor sharing ``input``'s memory, outside the graph (torch.detach)."""
    return input.detach()


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that exports DLPack (``__dlpack__``): a
    torch, numpy, cupy or ember tensor.  CPU memory becomes a numpy-backed tensor, CUDA
    memory a cupy-backed one (torch.from_dlpack).

    ``ext_tensor`` is the exporting object (or a DLPack capsule, taken as CPU memory)."""
    import numpy

    from .. import _dtype as D
    from .._tensor import _make
    device_type = ext_tensor.__dlpack_device__()[0] if hasattr(ext_tensor, "__dlpack_device__") else 1
    if device_type == 1:  # kDLCPU
        arr = numpy.from_dlpack(ext_tensor)
    else:
        from .._device import device
        from ..backends import backend_for_device
        index = ext_tensor.__dlpack_device__()[1]
        arr = backend_for_device(device("cuda", index)).xp.from_dlpack(ext_tensor)
    return _make(arr, D.from_numpy_dtype(arr.dtype))


def is_nonzero(input) -> builtins.bool:
    """Whether the single element of ``input`` is not zero (torch.is_nonzero); RuntimeError
    unless ``input`` has exactly one element."""
    n = input.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                           "Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item() != 0)


def is_same_size(input, other) -> builtins.bool:
    """Whether the tensors ``input`` and ``other`` have the same shape (torch.is_same_size)."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input) -> builtins.bool:
    """Whether ``input``'s dtype is signed: every dtype but uint8 and bool (torch.is_signed)."""
    return input.dtype.is_signed
