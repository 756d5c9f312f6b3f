"""dtype objects and torch's type-promotion rules.

Result dtypes are ember's decision, not numpy's: numpy promotes ``int32 + 2.5`` to
float64 and sums uint8 into uint64, torch gives float32 and int64.  Every op asks this
module for its result dtype and casts the arrays it hands to the array module.
Source: torch docs, "Tensor Attributes - Type Promotion".
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np

__all__ = ["dtype", "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "can_cast"]

# Promotion categories, lowest first.
_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type (torch.dtype): ``ember.float32``... Compare with ``is`` or ``==``.

    Made once per type by ember itself: ``name`` is torch's name ('float32'), ``np_dtype``
    the numpy dtype that stores it, ``category`` its rank in type promotion (0 bool, 1
    integer, 2 floating, 3 complex)."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed", "_category")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self._category = category
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        self.is_signed = name not in ("uint8", "bool")

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> "dtype":
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self) -> "dtype":
        return {"float32": complex64, "float64": complex128, "float16": complex64}.get(self.name, self)


bool_ = dtype("bool", np.bool_, _BOOL)
uint8 = dtype("uint8", np.uint8, _INT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
float16 = dtype("float16", np.float16, _FLOAT)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
complex64 = dtype("complex64", np.complex64, _COMPLEX)
complex128 = dtype("complex128", np.complex128, _COMPLEX)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL}
_BY_NP = {d.np: d for d in ALL}
# torch's aliases
_ALIASES = {"half": float16, "float": float32, "double": float64, "short": int16, "int": int32,
            "long": int64, "cfloat": complex64, "cdouble": complex128}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype stored as ``np_dtype``; TypeError for types torch lacks."""
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
        ) from None


def to_dtype(obj) -> dtype:
    """Accept an ember dtype, a numpy dtype, a Python type or a torch-style name."""
    if isinstance(obj, dtype):
        return obj
    if obj is float:
        return get_default_dtype()
    if obj is int:
        return int64
    if obj is bool:
        return bool_
    if obj is complex:
        return get_default_dtype().to_complex()
    if isinstance(obj, str):
        name = obj.removeprefix("torch.").removeprefix("ember.")
        if name in _BY_NAME:
            return _BY_NAME[name]
        if name in _ALIASES:
            return _ALIASES[name]
    try:
        return from_numpy_dtype(obj)
    except TypeError:
        raise TypeError(f"expected an ember dtype, got {obj!r}") from None


class _DefaultDtype(threading.local):
    default = float32  # a class attribute: a thread that never set one reads it without a miss


_state = _DefaultDtype()


def get_default_dtype() -> dtype:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _state.default


def set_default_dtype(d) -> None:
    """Set the default floating dtype; only float16, bfloat16, float32 and float64 are allowed.

    Raises:
        TypeError: ``d`` is not a dtype object, or not a floating one.
    """
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _state.default = d


def _promote_same_category(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a._category == _FLOAT and {a.name, b.name} == {"float16", "bfloat16"}:
        return float32
    if a._category == _INT:
        # numpy's integer lattice is torch's: uint8 with int8 gives int16.
        return _BY_NP[np.promote_types(a.np, b.np)]
    return a if a.itemsize >= b.itemsize else b


_PROMOTE_CACHE: dict = {}


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both ``a`` and ``b`` cast to."""
    key = (a, b)
    r = _PROMOTE_CACHE.get(key)
    if r is None:
        if a._category == b._category:
            r = _promote_same_category(a, b)
        else:
            hi, lo = (a, b) if a._category > b._category else (b, a)
            if hi._category == _COMPLEX and lo._category == _FLOAT and lo.itemsize > hi.itemsize // 2:
                r = complex128
            else:
                r = hi
        _PROMOTE_CACHE[key] = r
    return r


def _scalar_category(x) -> int:
    if isinstance(x, bool):
        return _BOOL
    if isinstance(x, int):
        return _INT
    if isinstance(x, float):
        return _FLOAT
    if isinstance(x, complex):
        return _COMPLEX
    raise TypeError(f"expected a Tensor or a Python number, got {type(x).__name__}")


def _default_for_category(cat: int) -> dtype:
    return (bool_, int64, get_default_dtype(), get_default_dtype().to_complex())[cat]


def result_type(*operands) -> dtype:
    """torch.result_type over tensors and Python scalars.

    Dimensioned tensors rank above 0-d tensors, which rank above Python scalars; a lower
    rank only changes the result when it belongs to a higher category (bool < int <
    float < complex), and then a 0-d tensor gives its own dtype while a Python scalar
    gives the default dtype of its category.
    """
    dim_t = zero_t = scalar_cat = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            if x.ndim:
                dim_t = d if dim_t is None else promote_types(dim_t, d)
            else:
                zero_t = d if zero_t is None else promote_types(zero_t, d)
        else:
            c = _scalar_category(x)
            scalar_cat = c if scalar_cat is None else max(scalar_cat, c)
    result = dim_t
    if zero_t is not None:
        if result is None:
            result = zero_t
        elif zero_t._category > result._category:
            result = zero_t
    if scalar_cat is not None:
        if result is None:
            result = _default_for_category(scalar_cat)
        elif scalar_cat > result._category:
            result = _default_for_category(scalar_cat)
            if result.is_complex and dim_t is not None and dim_t.name == "float64":
                result = complex128
    return result


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether a value of dtype ``from_`` may be cast to dtype ``to`` under torch's casting
    rule: False when the cast lowers the category (complex to float, float to integer,
    integer to bool), True otherwise (torch.can_cast)."""
    return from_._category <= to._category
