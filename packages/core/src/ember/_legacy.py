"""PyTorch's legacy tensor API, still in circulation: the typed tensor classes
(``FloatTensor``, ``LongTensor``, ...) as constructors and in ``isinstance``, the type
strings of ``Tensor.type()``, and ``autograd.Variable`` (torch docs, "Tensor Attributes" and
"Automatic differentiation package": Variable is deprecated, a Tensor is returned).

The type strings are torch's ("torch.FloatTensor", "torch.cuda.LongTensor"): programs
compare them, and ``Tensor.type(name)`` parses them (an "ember." prefix is accepted too).
"""

from __future__ import annotations

from . import _dtype as D

__all__ = ["TENSOR_TYPES", "CUDA_TENSOR_TYPES", "type_name", "dtype_of_type_name", "Variable", "new"]

# class name -> dtype name
_NAMES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
          "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32", "ShortTensor": "int16",
          "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool"}
_BY_DTYPE = {v: k for k, v in _NAMES.items()}


def type_name(t) -> str:
    """``Tensor.type()``'s string: 'torch.FloatTensor', 'torch.cuda.FloatTensor', ..."""
    cls = _BY_DTYPE.get(t.dtype.name, t.dtype.name)
    return f"torch.cuda.{cls}" if t.device.type == "cuda" else f"torch.{cls}"


def dtype_of_type_name(name: str):
    """(dtype, device type) of a type string such as 'torch.cuda.DoubleTensor'."""
    parts = name.split(".")
    if len(parts) not in (2, 3) or parts[0] not in ("torch", "ember") or parts[-1] not in _NAMES or (
            len(parts) == 3 and parts[1] != "cuda"):
        raise ValueError(f"invalid type: '{name}'")
    return getattr(D, "bool_" if _NAMES[parts[-1]] == "bool" else _NAMES[parts[-1]]), (
        "cuda" if len(parts) == 3 else "cpu")


class _TensorTypeMeta(type):
    """isinstance(t, FloatTensor) holds for float32 tensors on the type's device."""

    def __instancecheck__(cls, obj):
        from ._tensor import Tensor
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _construct(cls, *args, device=None):
    """FloatTensor(*sizes) -> uninitialised [sizes]; FloatTensor(sequence) -> its values;
    FloatTensor(tensor) -> the tensor itself when its dtype is the type's, else TypeError."""
    from . import ops
    from ._tensor import Tensor
    device = device or cls.device_type
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype is not cls.dtype:
            raise TypeError(f"expected {cls.dtype} (got {args[0].dtype})")
        return args[0]
    if len(args) == 1 and not isinstance(args[0], int):
        return ops.tensor(args[0], dtype=cls.dtype, device=device)
    return ops.empty(*(args or (0,)), dtype=cls.dtype, device=device)


def new(self, *args, device=None, **kwargs):
    """``Tensor.new``, the legacy constructor, in ``self``'s dtype on ``self``'s device
    (or ``device``): ``new()`` -> empty; ``new(*sizes)`` or ``new(Size)`` -> uninitialised
    of that shape; ``new(sequence)`` (a tuple too) -> its values; ``new(tensor)`` -> that
    tensor when its dtype is ``self``'s.  TypeError for other keywords, a tensor of another
    dtype or a lone non-sequence such as a float."""
    from . import ops
    from ._tensor import Size, Tensor
    if kwargs:
        got = ", ".join(f"{k}={type(v).__name__}" for k, v in kwargs.items())
        raise TypeError(f"new() received an invalid combination of arguments - got ({got}, ), but expected one of: "
                        "(*, device), (Storage storage), (Tensor other), (tuple of ints size, *, device), "
                        "(object data, *, device)")
    device = device or self.device
    if not args:
        return ops.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, Tensor):
            if a.dtype is not self.dtype:
                raise TypeError(f"expected {self.dtype} (got {a.dtype})")
            return a
        if isinstance(a, Size):
            return ops.empty(*a, dtype=self.dtype, device=device)
        if isinstance(a, (int, float, complex, bool)) and not (isinstance(a, int) and not isinstance(a, bool)):
            raise TypeError(f"new(): data must be a sequence (got {type(a).__name__})")
        if not isinstance(a, int):
            return ops.tensor(a, dtype=self.dtype, device=device)
    return ops.empty(*args, dtype=self.dtype, device=device)


def _make_type(name: str, device_type: str):
    dtype = getattr(D, "bool_" if _NAMES[name] == "bool" else _NAMES[name])
    return _TensorTypeMeta(name, (), {"dtype": dtype, "device_type": device_type, "is_cuda": device_type == "cuda",
                                      "__new__": _construct, "__module__": "ember" if device_type == "cpu" else
                                      "ember.cuda", "__doc__": f"The legacy type of {dtype} tensors on "
                                      f"{device_type} (torch.{name}): a constructor, and a class for isinstance. "
                                      f"``{name}(*sizes)`` is uninitialised of that shape, ``{name}(sequence)`` "
                                      f"holds its values, ``{name}(tensor)`` is the tensor itself when its dtype is "
                                      "the type's (TypeError otherwise); ``device`` places the new tensor."})


TENSOR_TYPES = {name: _make_type(name, "cpu") for name in _NAMES}  # ember.FloatTensor, ...
CUDA_TENSOR_TYPES = {name: _make_type(name, "cuda") for name in _NAMES}  # ember.cuda.FloatTensor, ...


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        from ._tensor import Tensor
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated by torch: ``Variable(tensor, requires_grad=False)`` returns ``tensor``
    (requiring grad when asked), and every Tensor is an instance of Variable."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from . import ops
        from ._tensor import Tensor
        t = data if isinstance(data, Tensor) else ops.tensor(data) if data is not None else ops.empty(0)
        if requires_grad:
            t.requires_grad_(True)
        return t
