"""The meta device: tensors with a shape and a dtype and no data (torch's ``"meta"``).

A meta tensor holds a ``MetaArray``: a numpy array whose every element is one shared
element (zero strides), so it costs no memory at any shape. numpy's functions see it
through numpy's override protocols: ufuncs and reductions compute only the result's
shape and dtype; writes into it are dropped; other numpy functions run on the
zero-stride view and their results become meta again (their temporaries are real, for
the duration of the call). Factories and random fills on the meta device allocate
nothing, so ``with ember.device("meta"):`` builds a model of any size, and
``Module.to_empty(device=...)`` then gives it real, uninitialized memory.

Some numpy functions hand back plain arrays even for meta inputs (``asarray``,
``as_strided``), so while meta arrays are alive a mode on the dispatch seam makes every
op's results meta when its inputs were (on the thread that made the first of them); at the
first op call after the last meta array is gone it leaves, so ops cost nothing more.
"""

from __future__ import annotations

import weakref

import numpy

from .._device import device
from .numpy_backend import NumpyBackend

__all__ = ["META", "MetaArray"]

_NO_DATA = "Cannot copy out of meta tensor; no data!"


class MetaArray(numpy.ndarray):
    """A shape and a dtype, no data."""

    @staticmethod
    def of(shape, dtype) -> "MetaArray":
        shape = tuple(int(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        one = numpy.zeros((), dtype)
        _count_in(one)
        return numpy.lib.stride_tricks.as_strided(one, shape=shape, strides=(0,) * len(shape)).view(MetaArray)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if out is not None:
            return out[0] if len(out) == 1 else out  # an in-place write: nothing to write
        plain = [x.view(numpy.ndarray)[(0,) * x.ndim] if isinstance(x, MetaArray) else x for x in inputs]
        shapes = [numpy.shape(x) for x in inputs]
        if method == "__call__" and ufunc is numpy.matmul:
            return MetaArray.of(_matmul_shape(*shapes), numpy.result_type(*[numpy.asarray(x).dtype for x in plain]))
        if method == "__call__" and ufunc.signature is None:
            one = ufunc(*plain, **kwargs)  # one element of each: the result dtypes
            shape = numpy.broadcast_shapes(*shapes)
            return tuple(MetaArray.of(shape, r.dtype) for r in one) if ufunc.nout > 1 else \
                MetaArray.of(shape, numpy.asarray(one).dtype)
        if method in ("reduce", "accumulate"):
            axis, keepdims = kwargs.get("axis", 0), kwargs.get("keepdims", False)
            shape = shapes[0]
            small = numpy.ones(tuple(min(n, 1) for n in shape), numpy.asarray(plain[0]).dtype)
            dtype = getattr(ufunc, method)(small, **kwargs).dtype
            if method == "accumulate":
                return MetaArray.of(shape, dtype)
            axes = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
            axes = {a % max(len(shape), 1) for a in axes}
            return MetaArray.of(tuple(1 if i in axes else n for i, n in enumerate(shape) if keepdims or i not in axes),
                                dtype)
        return _to_meta(getattr(ufunc, method)(*[_plain(x) for x in inputs], **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return _to_meta(func(*_plain_tree(args), **_plain_tree(kwargs)))

    def __setitem__(self, key, value):
        pass  # no data to write

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return MetaArray.of(_resolve(shape, self.size), self.dtype)

    def astype(self, dtype, *args, **kwargs):
        return MetaArray.of(self.shape, dtype)

    def copy(self, order="C"):
        return MetaArray.of(self.shape, self.dtype)

    def item(self, *args):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self):
        raise NotImplementedError(_NO_DATA)


def _matmul_shape(a, b):
    if len(a) == 0 or len(b) == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2, b2 = (1,) + a if len(a) == 1 else a, b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 ({a2[-1]} != {b2[-2]})")
    shape = numpy.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def _resolve(shape, size):
    shape = [int(n) for n in shape]
    if -1 in shape:
        known = 1
        for n in shape:
            if n != -1:
                known *= n
        shape[shape.index(-1)] = size // known if known else 0
    return tuple(shape)


def _plain(x):
    return x.view(numpy.ndarray) if isinstance(x, MetaArray) else x


def _plain_tree(x):
    if isinstance(x, (list, tuple)):
        return type(x)(_plain_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: _plain_tree(v) for k, v in x.items()}
    return _plain(x)


def _to_meta(x):
    if isinstance(x, numpy.ndarray) and not isinstance(x, MetaArray):
        return MetaArray.of(x.shape, x.dtype)
    if isinstance(x, (list, tuple)):
        return type(x)(_to_meta(v) for v in x)
    return x


# ---- the seam mode that keeps results meta --------------------------------------

_LIVE = [0]  # meta arrays alive (their one-element bases)
_MODE = [None]


def _count_in(base) -> None:
    _LIVE[0] += 1
    weakref.finalize(base, _count_out)
    if _MODE[0] is None:
        _MODE[0] = _KeepMeta().__enter__()


def _count_out() -> None:
    _LIVE[0] -= 1


def _is_meta(x) -> bool:
    try:
        return type(x._data) is MetaArray
    except Exception:  # not a tensor, or one that keeps its data to itself (vmap's, sparse)
        return False


def _has_meta(args, kwargs) -> bool:
    for a in (*args, *kwargs.values()):
        if _is_meta(a) or (isinstance(a, (list, tuple)) and any(_is_meta(t) for t in a)):
            return True
    return False


def _make_meta(out, inputs):
    if isinstance(out, (tuple, list)):
        for o in out:
            _make_meta(o, inputs)
    elif type(getattr(out, "_data", None)) is numpy.ndarray and not any(out is i for i in inputs):
        out._data = MetaArray.of(out._data.shape, out._data.dtype)


def _keep_meta_mode():
    from ..ops import _dispatch

    class KeepMeta(_dispatch.Mode):
        depth = 0

        def __ember_op__(self, op, args, kwargs, proceed):
            if _LIVE[0] == 0 and self.depth == 0 and _MODE[0] is self:  # the last meta arrays went meanwhile
                _MODE[0] = None
                self.__exit__(None, None, None)
                return proceed(args, kwargs)
            target = kwargs.get("device")
            if not _has_meta(args, kwargs) or (target is not None and device(target).type != "meta"):
                return proceed(args, kwargs)
            self.depth += 1
            try:
                out = proceed(args, kwargs)
            finally:
                self.depth -= 1
            _make_meta(out, (*args, *kwargs.values()))
            return out
    return KeepMeta


def _KeepMeta():
    global _KeepMeta
    _KeepMeta = _keep_meta_mode()
    return _KeepMeta()


class _MetaNumpy:
    """numpy, with its array factories making meta arrays."""

    def __getattr__(self, name):
        return getattr(numpy, name)

    @staticmethod
    def empty(shape, dtype=float, **kwargs):
        return MetaArray.of(shape, dtype)

    zeros = ones = empty

    @staticmethod
    def full(shape, fill_value, dtype=None, **kwargs):
        return MetaArray.of(shape, dtype if dtype is not None else numpy.asarray(fill_value).dtype)

    @staticmethod
    def asarray(obj, dtype=None, **kwargs):
        if isinstance(obj, MetaArray):
            return obj if dtype is None else obj.astype(dtype)
        arr = numpy.asarray(obj, dtype=dtype)
        return MetaArray.of(arr.shape, arr.dtype)

    array = asarray

    @staticmethod
    def arange(*args, dtype=None, **kwargs):
        return _to_meta(numpy.arange(*args, dtype=dtype))


# where numpy's Generator methods take ``size`` when it is passed by position
_SIZE_AT = {"random": 0, "standard_normal": 0, "standard_exponential": 0, "standard_cauchy": 0, "standard_gamma": 1,
            "integers": 2, "normal": 2, "uniform": 2, "exponential": 1, "poisson": 1, "binomial": 2, "geometric": 1,
            "choice": 1, "gamma": 2, "beta": 2, "lognormal": 2}


class _MetaGenerator:
    """numpy's Generator interface, drawing meta arrays of the requested ``size``."""

    def __getattr__(self, name):
        def draw(*args, size=None, dtype=None, **kwargs):
            at = _SIZE_AT.get(name)
            if size is None and at is not None and len(args) > at:
                size = args[at]
            if size is None:
                shapes = [numpy.shape(a) for a in args if isinstance(a, numpy.ndarray)]
                size = numpy.broadcast_shapes(*shapes) if shapes else ()
            return MetaArray.of(size, dtype or (numpy.int64 if name == "integers" else numpy.float64))
        return draw

    state = {}  # numpy's bit-generator state: the meta stream has none

    @property
    def bit_generator(self):
        return self


class MetaBackend(NumpyBackend):
    name = "meta"
    kind = "meta"
    xp = _MetaNumpy()
    device = device("meta")

    def asarray(self, obj, dtype=None):
        return self.xp.asarray(obj, dtype=dtype)

    def to_host(self, arr):
        raise NotImplementedError(_NO_DATA + " Please use ember.nn.Module.to_empty() instead of ember.nn.Module.to() "
                                  "when moving module from meta to a different device.")

    def new_bit_generator(self, seed: int, reserve=None):
        return _MetaGenerator()

    def copy(self, arr):
        return MetaArray.of(arr.shape, arr.dtype)

    def item(self, arr):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def ascontiguousarray(self, arr):
        return arr

    def is_c_contiguous(self, arr) -> bool:
        return True

    def byte_strides(self, arr):
        strides, step = [], arr.dtype.itemsize
        for n in reversed(arr.shape):
            strides.append(step)
            step *= max(n, 1)
        return tuple(reversed(strides))

    def reshape_view(self, arr, shape):
        return arr.reshape(shape)


META = MetaBackend()
