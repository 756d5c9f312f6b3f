"""``ember.finfo`` and ``ember.iinfo``: the numerical limits of a dtype, as torch.finfo and
torch.iinfo report them (values from numpy's and ml_dtypes' finfo/iinfo; torch docs,
"Type Info")."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ._dtype import bool_, dtype, get_default_dtype

__all__ = ["finfo", "iinfo"]


def _check_dtype(fn: str, type_) -> dtype:
    if not isinstance(type_, dtype):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be ember.dtype, not {type(type_).__name__}")
    return type_


class finfo:
    """Limits of a floating (or complex: of its real part) dtype: ``bits``, ``eps`` (the gap
    from 1.0 to the next number), ``max``, ``min``, ``tiny`` = ``smallest_normal``,
    ``resolution`` (10 to the minus the decimal digits of precision), ``dtype`` (its name).
    ``finfo()`` describes the default dtype.

    Raises:
        TypeError: ``type`` not an ember dtype, or not floating point / complex.
    """

    __hash__ = None  # as torch's: comparable, not hashable

    def __init__(self, type=None):  # noqa: A002  (torch's argument name)
        type_ = get_default_dtype() if type is None else _check_dtype("finfo", type)
        if not (type_.is_floating_point or type_.is_complex):
            raise TypeError("ember.finfo() requires a floating point input type. Use ember.iinfo to handle "
                            "'ember.finfo'")
        real = type_.to_real()
        info = ml_dtypes.finfo(real.np) if real.name == "bfloat16" else np.finfo(real.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.smallest_normal = self.tiny = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = real.name

    def __eq__(self, other) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``bits``, ``max``, ``min`` (Python ints), ``dtype`` (its name).

    Raises:
        TypeError: ``type`` not an ember dtype, bool, or not an integer type.
    """

    __hash__ = None

    def __init__(self, type):  # noqa: A002  (torch's argument name)
        type_ = _check_dtype("iinfo", type)
        if type_ is bool_:
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if type_.is_floating_point or type_.is_complex:
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo to handle 'ember.iinfo'")
        info = np.iinfo(type_.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type_.name

    def __eq__(self, other) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
