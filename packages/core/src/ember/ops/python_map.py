"""Tensor methods that run a Python callable on every element: ``apply_``, ``map_`` and
``map2_`` (CPU tensors only, outside autograd, slow by nature: one Python call per element,
as in torch)."""

from __future__ import annotations

import numbers

from ..backends import NUMPY
from ._helpers import _STATE, be

__all__ = ["apply_", "map_", "map2_"]


def _check_self(self, name):
    if be(self) is not NUMPY:
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self._requires_grad and _STATE.enabled:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


def _coerce(dtype):
    """The conversion of a callable's result to an element of ``dtype``; TypeError for a
    value that is not a number of a fitting kind, as torch."""
    if dtype.is_complex:
        kind, convert = numbers.Complex, complex
    elif dtype.is_floating_point:
        kind, convert = numbers.Real, float
    elif dtype.name == "bool":
        return bool
    else:
        def convert(v):
            if not isinstance(v, numbers.Real):
                raise TypeError(f"'{type(v).__name__}' object cannot be interpreted as an integer")
            return int(v)
        return convert

    def check(v):
        if not isinstance(v, kind):
            raise TypeError(f"must be {'complex' if kind is numbers.Complex else 'real'} number, not "
                            f"{type(v).__name__}")
        return convert(v)
    return check


def _write(self, values):
    arr = self._data
    flat = NUMPY.xp.asarray(values, dtype=arr.dtype).reshape(arr.shape)
    arr[...] = flat


def apply_(self, callable):
    """Replace every element ``x`` of ``self`` by ``callable(x)`` (a Python number in,
    one out), in place; returns ``self``.  RuntimeError when ``self`` requires grad,
    TypeError when the callable returns something that is not a number of ``self``'s
    kind or ``self`` is not on the CPU."""
    _check_self(self, "apply_")
    fn, convert = callable, _coerce(self.dtype)
    _write(self, [convert(fn(v)) for v in _flat_values(self)])
    return self


def _flat_values(t):
    return t.reshape(-1).tolist() if t.ndim else [t.item()]


def _others(self, name, tensors, names):
    out = []
    for t, arg in zip(tensors, names):
        if t.dtype is not self.dtype:
            raise TypeError(f"{name}: expected {self.type()} for {arg} (got {t.type()})")
        if t._requires_grad and _STATE.enabled:
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                               "instead.")
        out.append(_flat_values(t.expand(self.shape)))
    return out


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` for every element, with ``tensor``
    broadcast to ``self``'s shape; in place, returns ``self``.  TypeError for a ``tensor``
    of another dtype, RuntimeError when either requires grad or ``tensor`` does not
    broadcast."""
    _check_self(self, "map_")
    (other,) = _others(self, "map_", (tensor,), ("'other'",))
    convert = _coerce(self.dtype)
    _write(self, [convert(callable(a, b)) for a, b in zip(_flat_values(self), other)])
    return self


def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` for every element, with ``x`` and ``y``
    broadcast to ``self``'s shape; in place, returns ``self`` (errors as ``map_``)."""
    _check_self(self, "map2_")
    xs, ys = _others(self, "map2_", (x, y), ("argument 'x'", "argument 'y'"))
    convert = _coerce(self.dtype)
    _write(self, [convert(callable(a, b, c)) for a, b, c in zip(_flat_values(self), xs, ys)])
    return self
