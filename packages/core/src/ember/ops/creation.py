"""Factory functions: tensor, zeros, arange, rand... (no gradients flow into them)."""

from __future__ import annotations

import math
import numbers

import numpy

from .. import _dtype as D
from .._device import to_device
from .._tensor import Tensor, _make
from ..backends import backend_for_device
from ..random import default_generator
from ._helpers import be

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "full", "empty", "arange", "linspace",
           "logspace", "eye", "zeros_like", "ones_like", "full_like", "empty_like", "rand", "randn",
           "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like", "new_tensor",
           "new_zeros", "new_ones", "new_full", "new_empty", "scalar_tensor", "uniform_", "normal_",
           "bernoulli_", "bernoulli", "multinomial", "empty_strided", "new_empty_strided"]


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        out = tuple(int(s) for s in size)
    except TypeError:
        raise TypeError(f"size must be a sequence of ints, got {size!r}") from None
    if any(s < 0 for s in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {list(out)}")
    return out


def _finish(arr, dtype: D.dtype, requires_grad: bool) -> Tensor:
    t = _make(arr, dtype)
    if requires_grad:
        t.requires_grad = True
    return t


def _infer_dtype(data) -> D.dtype:
    """torch's inference for nested Python data: bool, then int64, then the default float."""
    kinds = set()
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, bool) or isinstance(x, numpy.bool_):
            kinds.add(D.bool_)
        elif isinstance(x, numbers.Integral):
            kinds.add(D.int64)
        elif isinstance(x, numbers.Real):
            kinds.add(D.get_default_dtype())
        elif isinstance(x, numbers.Complex):
            kinds.add(D.get_default_dtype().to_complex())
        elif isinstance(x, str):
            if x is data:
                raise TypeError("new(): invalid data type 'str'")
            raise ValueError("too many dimensions 'str'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    result = None
    for k in kinds:
        result = k if result is None else D.promote_types(result, k)
    return result or D.get_default_dtype()


def _host_array(data):
    if isinstance(data, Tensor):
        return data.__array__()
    if isinstance(data, (list, tuple)):
        return numpy.array([_host_array(x) if isinstance(x, (Tensor, list, tuple)) else x for x in data]) \
            if any(isinstance(x, Tensor) for x in data) else numpy.array(data)
    return data


def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor copying ``data`` (nested lists, numbers, numpy arrays, tensors)
    (torch.tensor).

    dtype inference is torch's: Python floats give the default dtype (float32), ints give
    int64, bools bool, complex numbers the default complex dtype; numpy arrays and tensors
    keep theirs. ``dtype`` overrides it, ``device`` places the result (a tensor's own device
    by default, else the CPU), ``requires_grad`` makes it a leaf that records gradients;
    ``pin_memory`` is accepted and has no effect."""
    if dtype is not None:
        dtype = D.to_dtype(dtype)
    if isinstance(data, (numpy.ndarray, numpy.generic)):
        dt = dtype or D.from_numpy_dtype(data.dtype)
        arr = numpy.asarray(data)
    elif isinstance(data, Tensor):
        dt = dtype or data.dtype
        arr = data.__array__()
    else:
        if hasattr(data, "__array__") and not isinstance(data, (list, tuple, numbers.Number)):
            arr = numpy.asarray(data)
            dt = dtype or D.from_numpy_dtype(arr.dtype)
        else:
            dt = dtype or _infer_dtype(data)
            arr = _host_array(data)
    dev = to_device(device if device is not None else (data.device if isinstance(data, Tensor) else None))
    bk = backend_for_device(dev)
    arr = bk.asarray(arr, dtype=dt.np)
    if arr is data or (type(arr) is numpy.ndarray and isinstance(data, numpy.ndarray)
                       and numpy.shares_memory(arr, data)):
        arr = bk.copy(arr)
    return _finish(arr, dt, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing its memory when no copy is needed (torch.as_tensor).

    A tensor is returned itself, or converted with ``.to(dtype, device)`` when ``dtype`` or
    ``device`` is given; a CPU numpy array of the asked dtype (``dtype`` None keeps its own)
    is shared; anything else is copied as by ``tensor(data, dtype=dtype, device=device)``."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device) if (dtype or device) else data
    if isinstance(data, numpy.ndarray) and (device is None or to_device(device).type == "cpu"):
        dt = D.to_dtype(dtype) if dtype is not None else D.from_numpy_dtype(data.dtype)
        return _make(data if data.dtype == dt.np else data.astype(dt.np), dt)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None) -> Tensor:
    """``obj`` (a tensor, numpy array, scalar or nested sequence) as a tensor, sharing its
    memory when the dtype and device allow (torch.asarray).

    Args:
        dtype: the result's dtype; None keeps ``obj``'s (inferred as ``tensor`` does for
            Python data).
        device: the result's device; None keeps a tensor's, else the CPU.
        copy: None shares when it can; True always copies; False never copies.
        requires_grad: True makes the result require grad; None keeps a tensor's flag.

    Raises:
        ValueError: ``copy=False`` where sharing is impossible (another dtype or device, a
            Python sequence).
        RuntimeError: ``requires_grad=True`` for a result that is not floating or complex."""
    dt = D.to_dtype(dtype) if dtype is not None else None
    if isinstance(obj, Tensor):
        same = (dt is None or dt is obj.dtype) and (device is None or to_device(device) == obj.device)
        if copy is False and not same:
            raise ValueError(f"can't alias tensor with dtype {obj.dtype} into dtype {dt}")
        out = obj if same and not copy else obj.to(dtype=dt or obj.dtype, device=device or obj.device, copy=True)
    elif isinstance(obj, numpy.ndarray) and (device is None or to_device(device).type == "cpu"):
        native = D.from_numpy_dtype(obj.dtype)
        if copy is False and dt is not None and dt is not native:
            raise ValueError(f"can't alias array with dtype {native} into dtype {dt}")
        out = tensor(obj, dtype=dt) if copy else as_tensor(obj, dtype=dt)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        out = tensor(obj, dtype=dt, device=device)
    if requires_grad and not out.requires_grad:
        out.requires_grad_()
    return out


def from_numpy(ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``ndarray`` (TypeError for unsupported dtypes,
    ValueError for a byte order other than the machine's)."""
    if not isinstance(ndarray, numpy.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order; a tensor "
                         "would need a copy, which from_numpy does not make")
    return _make(ndarray, D.from_numpy_dtype(ndarray.dtype))


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding the number ``s``, of ``dtype`` (default: the default dtype), on
    ``device``, requiring grad when ``requires_grad`` (torch.scalar_tensor).

    Raises:
        TypeError: ``s`` is not a Python or numpy number (a tensor is not one).
        RuntimeError: ``s`` does not fit ``dtype`` (a complex into a real dtype, an int out
            of range, inf or nan into an integer dtype)."""
    if isinstance(s, Tensor) or not isinstance(s, (numbers.Number, numpy.generic)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    fits = True
    if isinstance(s, (complex, numpy.complexfloating)) and not dt.is_complex:
        fits, s = (True, bool(s)) if dt is D.bool_ else (s.imag == 0, s.real)
    if dt.is_floating_point or dt.is_complex or dt is D.bool_:
        pass
    elif not math.isfinite(s):
        fits = False
    else:
        info = numpy.iinfo(dt.np)
        fits = fits and info.min <= int(s) <= info.max
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {dt} without overflow")
    return full((), s, dtype=dt, device=device, requires_grad=requires_grad)


def _into(out, result, name):
    if out is None:
        return result
    from ._helpers import write_out
    return write_out(result, out, name)


def _factory(size, dtype, device, requires_grad, fill):
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    bk = backend_for_device(to_device(device))
    shape = _size(size)
    sd = bk.storage_dtype(dt)
    arr = bk.xp.empty(shape, dtype=sd) if fill is None else bk.xp.full(shape, fill, dtype=sd)
    return _finish(arr, dt, requires_grad)


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros of shape ``size`` (ints, or one tuple or list) (torch.zeros).

    ``dtype`` defaults to ``out``'s when given, else the default dtype (float32); ``device``
    places it (the default device when None); ``requires_grad`` makes it a leaf that records
    gradients; ``layout`` is accepted (strided only). The result is written into ``out``
    when given."""
    return _into(out, _factory(size, dtype if dtype is not None or out is None else out.dtype, device, requires_grad,
                                0), "zeros")


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones of shape ``size`` (ints, or one tuple or list) (torch.ones).

    ``out``, ``dtype``, ``layout``, ``device`` and ``requires_grad`` are as in ``zeros``."""
    return _into(out, _factory(size, dtype if dtype is not None or out is None else out.dtype, device, requires_grad,
                                1), "ones")


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          memory_format=None, pin_memory=False) -> Tensor:
    """An uninitialised tensor of shape ``size`` (ints, or one tuple or list) (torch.empty).

    ``out``, ``dtype``, ``layout``, ``device`` and ``requires_grad`` are as in ``zeros``;
    ``memory_format`` and ``pin_memory`` are accepted and have no effect (the result is
    contiguous)."""
    return _into(out, _factory(size, dtype if dtype is not None or out is None else out.dtype, device, requires_grad,
                                None), "empty")


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """An uninitialised tensor of shape ``size`` whose strides (in elements) are ``stride``,
    over a buffer just large enough to hold it (torch.empty_strided).  RuntimeError for
    ``size`` and ``stride`` of different lengths, a negative size or a negative stride."""
    shape, stride = _size((size,)), tuple(int(s) for s in stride)
    if len(shape) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and strides={list(stride)}")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    bk = backend_for_device(to_device(device))
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    buf = bk.xp.empty(extent, dtype=bk.storage_dtype(dt))
    arr = bk.xp.lib.stride_tricks.as_strided(buf, shape, tuple(s * buf.itemsize for s in stride))
    return _finish(arr, dt, requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                      requires_grad=False):
    """``empty_strided`` with ``self``'s dtype and device unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of shape ``size`` (an int, tuple or list) filled with ``fill_value`` (a number
    or a 0-d tensor) (torch.full).

    ``dtype`` defaults to ``out``'s when given, else is inferred from ``fill_value`` as
    torch does (bool, int64, the default float or complex dtype); ``layout``, ``device`` and
    ``requires_grad`` are as in ``zeros``. The result is written into ``out`` when given."""
    if dtype is None:
        dtype = out.dtype if out is not None else \
            D.result_type(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    return _into(out, _factory(size if isinstance(size, (tuple, list)) else (size,), dtype, device, requires_grad,
                               fill_value.item() if isinstance(fill_value, Tensor) else fill_value), "full")


def _like(t: Tensor, dtype, device):
    return (D.to_dtype(dtype) if dtype is not None else t.dtype,
            device if device is not None else t.device)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of zeros of ``input``'s shape (torch.zeros_like); ``dtype`` and ``device``
    default to ``input``'s, ``requires_grad`` makes it a leaf that records gradients.
    ``layout`` and ``memory_format`` are accepted; the result is contiguous."""
    dt, dev = _like(input, dtype, device)
    return zeros(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of ones of ``input``'s shape (torch.ones_like); ``dtype``, ``layout``,
    ``device``, ``requires_grad`` and ``memory_format`` are as in ``zeros_like``."""
    dt, dev = _like(input, dtype, device)
    return ones(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """An uninitialised tensor of ``input``'s shape (torch.empty_like); ``dtype``, ``layout``,
    ``device``, ``requires_grad`` and ``memory_format`` are as in ``zeros_like``."""
    dt, dev = _like(input, dtype, device)
    return empty(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """A tensor of ``input``'s shape filled with ``fill_value`` (torch.full_like); ``dtype``
    and ``device`` default to ``input``'s (not inferred from the value); ``layout``,
    ``requires_grad`` and ``memory_format`` are as in ``zeros_like``."""
    dt, dev = _like(input, dtype, device)
    return full(input.shape, fill_value, dtype=dt, device=dev, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The 1-d tensor ``start, start + step, ...`` up to ``end`` exclusive (torch.arange);
    called with one bound, it is ``end`` and ``start`` is 0.

    The bounds and ``step`` are numbers or 0-d tensors; the length is ``ceil((end - start) /
    step)``. ``dtype`` defaults to int64 when all three are ints, else the default dtype;
    values are computed as ``start + i * step`` in float64 or int64, then cast. ``layout``,
    ``device`` and ``requires_grad`` are as in ``zeros``; ``out`` is accepted but not
    written. A zero ``step`` or one of the wrong sign raises RuntimeError."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if (vals[1] - vals[0]) * vals[2] < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    dt = D.to_dtype(dtype) if dtype is not None else D.result_type(*vals)
    n = max(math.ceil((vals[1] - vals[0]) / vals[2]), 0)
    xp = backend_for_device(to_device(device)).xp
    # computed in float64 / int64 then cast, as torch computes start + i * step
    arr = (vals[0] + xp.arange(n, dtype=numpy.float64 if dt._category >= 2 else numpy.int64) * vals[2])
    return _finish(arr.astype(dt.np), dt, requires_grad)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A 1-d tensor of ``steps`` evenly spaced values from ``start`` to ``end``, both included
    (torch.linspace).

    Computed in float64 then cast to ``dtype`` (the default dtype when None, truncating
    towards zero for integer dtypes); ``layout``, ``device`` and ``requires_grad`` are as in
    ``zeros``; ``out`` is accepted but not written. A negative ``steps`` raises
    RuntimeError."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    xp = backend_for_device(to_device(device)).xp
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    arr = xp.linspace(float(start), float(end), int(steps), dtype=numpy.float64)
    return _finish(arr.astype(dt.np), dt, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """A 1-d tensor of ``steps`` values ``base ** v``, v evenly spaced from ``start`` to
    ``end`` inclusive (torch.logspace). Computed in float64 then cast to ``dtype`` (the
    default dtype when None); ``device`` and ``requires_grad`` are as in ``zeros``."""
    lin = linspace(start, end, steps, dtype=D.float64, device=device)
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _finish((base ** lin._data).astype(dt.np), dt, requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The 2-d [n, m] tensor with ones on the main diagonal and zeros elsewhere (``m`` defaults
    to ``n``) (torch.eye). ``dtype`` (default: the default dtype), ``layout``, ``device``
    and ``requires_grad`` are as in ``zeros``; ``out`` is accepted but not written."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    xp = backend_for_device(to_device(device)).xp
    return _finish(xp.eye(n, m if m is not None else n, dtype=dt.np), dt, requires_grad)


# ---- random factories ---------------------------------------------------------------

def _gen(generator, device):
    return (generator or default_generator(to_device(device))).bit_generator


def _host(arr) -> numpy.ndarray:
    """A draw as a numpy array, for the samplers that compute on the host around it."""
    from ..backends import backend_of_array
    return backend_of_array(arr).to_host(arr)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Samples uniform on [0, 1) in a tensor of shape ``size`` (torch.rand).

    ``generator`` draws them (the default generator of ``device`` when None); ``dtype`` (a
    floating dtype; the default dtype when None), ``layout``, ``device`` and
    ``requires_grad`` are as in ``zeros``; ``out`` is accepted but not written. The values
    come from numpy's generator, not torch's: the same seed gives other numbers."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    arr = _gen(generator, device).random(_size(size), dtype=numpy.float64 if dt.itemsize > 4 else numpy.float32)
    return _finish(arr.astype(dt.np, copy=False), dt, requires_grad)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Standard normal samples (mean 0, variance 1) in a tensor of shape ``size``
    (torch.randn).

    ``generator`` draws them (the default generator of ``device`` when None); ``dtype`` (a
    floating dtype; the default dtype when None), ``layout``, ``device`` and
    ``requires_grad`` are as in ``zeros``; ``out`` is accepted but not written. The values
    come from numpy's generator, not torch's."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    arr = _gen(generator, device).standard_normal(_size(size),
                                                  dtype=numpy.float64 if dt.itemsize > 4 else numpy.float32)
    return _finish(arr.astype(dt.np, copy=False), dt, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None,
            device=None, requires_grad=False):
    """Integers uniform on [``low``, ``high``) in a tensor of shape ``size`` (torch.randint);
    ``randint(high, size)`` draws from [0, high).

    ``generator`` draws them (the default generator of ``device`` when None); ``dtype``
    defaults to int64; ``layout``, ``device`` and ``requires_grad`` are as in ``zeros``;
    ``out`` is accepted but not written. ``low >= high`` raises RuntimeError, a missing
    ``size`` TypeError."""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    arr = _gen(generator, device).integers(low, high, size=_size(size), dtype=numpy.int64)
    return _finish(arr.astype(dt.np, copy=False), dt, requires_grad)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A random permutation of 0 .. ``n`` - 1 as a 1-d tensor (torch.randperm).

    ``generator`` draws it (the default generator of ``device`` when None); ``dtype``
    defaults to int64; ``layout``, ``device`` and ``requires_grad`` are as in ``zeros``;
    ``out`` is accepted but not written."""
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    arr = _gen(generator, device).permutation(int(n))
    return _finish(arr.astype(dt.np, copy=False), dt, requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """``rand`` with ``input``'s shape (torch.rand_like); ``dtype`` and ``device`` default to
    ``input``'s, ``requires_grad`` as in ``zeros``; ``memory_format`` is accepted."""
    dt, dev = _like(input, dtype, device)
    return rand(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    """``randn`` with ``input``'s shape (torch.randn_like); ``dtype`` and ``device`` default to
    ``input``'s, ``requires_grad`` as in ``zeros``; ``memory_format`` is accepted."""
    dt, dev = _like(input, dtype, device)
    return randn(input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    """Integers uniform on [``low``, ``high``) with ``input``'s shape (torch.randint_like);
    ``randint_like(input, high)`` draws from [0, high). ``dtype`` and ``device`` default to
    ``input``'s, ``requires_grad`` as in ``zeros``."""
    dt, dev = _like(input, dtype, device)
    return randint(low, high, input.shape, dtype=dt, device=dev, requires_grad=requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False):
    """Normal samples of mean ``mean`` and standard deviation ``std`` (torch.normal).

    With a tensor ``mean`` or ``std`` the two broadcast and the result has their shape and
    the tensor's dtype and device (``mean + z * std``, differentiable in both); with
    numbers, ``size`` gives the shape and ``dtype`` (default: the default dtype),
    ``layout``, ``device`` and ``requires_grad`` are as in ``zeros``. ``generator`` draws
    the samples (the default one when None); ``out`` is accepted but not written.

    Raises:
        RuntimeError: a negative ``std``.
        TypeError: numbers for ``mean`` and ``std`` without ``size``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = numpy.broadcast_shapes(tuple(getattr(mean, "shape", ())), tuple(getattr(std, "shape", ())))
        if isinstance(std, Tensor) and (std._data < 0).any() or (not isinstance(std, Tensor) and std < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        z = randn(shape, generator=generator, dtype=like.dtype, device=like.device)
        return mean + z * std
    if size is None:
        raise TypeError("normal() with number arguments needs 'size'")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    arr = randn(size, generator=generator, dtype=dt, device=device)._data * std + mean
    return _finish(arr.astype(dt.np, copy=False), dt, requires_grad)


# ---- in-place samplers (used by nn.init) -------------------------------------------

def _fill_random(t: Tensor, arr) -> Tensor:
    from ._helpers import check_inplace
    check_inplace(t)
    t._data[...] = arr
    t._vc[0] += 1
    return t


# Elements drawn per call when a large numpy tensor is filled in place: numpy's generators
# fill sequentially, so drawing chunk by chunk gives the values of one draw of the whole
# shape, without a float64 temporary as large as the tensor (at model construction, the
# size of the largest weight twice over, which stays in the process's peak memory).
_FILL_CHUNK = 1 << 16


def _fill_drawn(t: Tensor, draw) -> Tensor:
    """``t`` filled with ``draw(shape)``'s values, in chunks where that is the same."""
    arr = t._data
    if type(arr) is not numpy.ndarray or arr.size <= _FILL_CHUNK or not arr.flags.c_contiguous:
        return _fill_random(t, draw(t.shape))
    from ._helpers import check_inplace
    check_inplace(t)
    flat = arr.reshape(-1)
    for i in range(0, flat.size, _FILL_CHUNK):
        flat[i:i + _FILL_CHUNK] = draw(min(_FILL_CHUNK, flat.size - i))
    t._vc[0] += 1
    return t


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill with samples uniform on [a, b).

    Raises:
        NotImplementedError: an integer or bool tensor (torch's kernels are floating only).
        RuntimeError: ``a > b``.
    """
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise NotImplementedError(f"uniform_ is not implemented for {self.dtype} tensors")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    g = _gen(generator, self.device)
    return _fill_drawn(self, lambda size: g.uniform(a, b, size=size))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise NotImplementedError(f"normal_ is not implemented for {self.dtype} tensors")
    g = _gen(generator, self.device)
    return _fill_drawn(self, lambda size: g.normal(mean, std, size=size))


def _check_probabilities(probs) -> None:
    values = numpy.asarray(probs.__array__() if isinstance(probs, Tensor) else probs, dtype=numpy.float64)
    if not ((values >= 0) & (values <= 1)).all():
        raise RuntimeError(f"bernoulli expects probabilities in [0, 1], but got "
                           f"{values.item() if values.size == 1 else 'values outside'}")


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 1 with probability ``p`` (a number or a tensor broadcast to this one), else 0.

    Raises:
        RuntimeError: a probability outside [0, 1].
    """
    _check_probabilities(p)
    g = _gen(generator, self.device)
    probs = p._data if isinstance(p, Tensor) else p
    return _fill_random(self, g.random(self.shape) < probs)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``), else 0; same shape and dtype as ``input``
    (torch.bernoulli). ``generator`` draws the samples (the default one of ``input``'s
    device when None).

    Raises:
        NotImplementedError: ``input`` holds integers or bools (torch's kernels are floating only).
        RuntimeError: a probability outside [0, 1]."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"bernoulli is not implemented for {input.dtype} tensors")
    _check_probabilities(input if p is None else p)
    g = _gen(generator, input.device)
    probs = input._data if p is None else p
    arr = (g.random(input.shape) < probs).astype(input.dtype.np)
    return _make(be(input).xp.asarray(arr), input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Sample ``num_samples`` category indices (int64) from each row of non-negative weights
    ``input`` of shape [C] or [N, C]; the result is [num_samples] or [N, num_samples]
    (torch.multinomial).

    With ``replacement`` a category may be drawn again; without it the categories of zero
    weight come only after every positive one is drawn (as torch). ``generator`` draws the
    samples (the default one of ``input``'s device when None).

    Raises:
        RuntimeError: a weight that is negative, inf or nan; a row summing to 0; more
            samples than categories without replacement."""
    g = _gen(generator, input.device)
    w = numpy.asarray(input.__array__(), dtype=numpy.float64)
    rows = w.reshape(-1, w.shape[-1])
    if (rows < 0).any() or not numpy.isfinite(rows).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > rows.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if replacement:
        out = numpy.stack([_host(g.choice(rows.shape[-1], size=num_samples, p=r / r.sum())) for r in rows])
    else:
        # an exponential race: the first arrivals of Exp(w) clocks are a draw without
        # replacement; zero weights never arrive, so they follow in random order
        clocks = _host(g.exponential(size=rows.shape)) / numpy.where(rows > 0, rows, 1.0)
        out = numpy.lexsort((clocks, rows == 0), axis=-1)[:, :num_samples]
    return _make(be(input).xp.asarray(out.reshape(w.shape[:-1] + (num_samples,)).astype(numpy.int64)), D.int64)
