"""Tensors built from others or from a description: block_diag, cartesian_prod,
combinations, vander, tril_indices/triu_indices, unravel_index, isin, empty_strided,
empty_permuted, frombuffer, range (deprecated in torch) and constant_pad_nd.

cartesian_prod, combinations and vander are written with ember ops (their gradients
follow from those); block_diag and constant_pad_nd record their own nodes, with rules
written with ember ops.  The index builders and isin have no gradient.
"""

from __future__ import annotations

import builtins
import itertools
import math
import numbers
import warnings

import numpy

from .. import _dtype as D
from .._device import to_device
from .._tensor import Tensor, _make
from ..autograd.graph import record
from ..backends import backend_for_device
from ._helpers import _type_name, be, needs_grad, write_out
from .creation import _finish, _size

__all__ = ["block_diag", "cartesian_prod", "combinations", "vander", "tril_indices", "triu_indices",
           "unravel_index", "isin", "empty_strided", "empty_permuted", "frombuffer", "range", "constant_pad_nd"]


# ---- from other tensors --------------------------------------------------------------------

def block_diag(*tensors):
    """The block diagonal matrix of ``tensors`` (0-d ones are 1x1 blocks, 1-d ones 1-row
    blocks), zeros elsewhere; dtype by promotion.  RuntimeError for a tensor of more than
    2 dims (torch.block_diag, scipy.linalg.block_diag)."""
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
    if not tensors:
        xp = backend_for_device(to_device(None)).xp
        return _make(xp.zeros((1, 0), dtype=D.get_default_dtype().np), D.get_default_dtype())
    dt = tensors[0].dtype
    for t in tensors[1:]:
        dt = D.promote_types(dt, t.dtype)
    blocks = [t._data.reshape((1,) * (2 - t.ndim) + t._data.shape) for t in tensors]
    rows, cols = builtins.sum(b.shape[0] for b in blocks), builtins.sum(b.shape[1] for b in blocks)
    bk = be(tensors[0])
    arr = bk.xp.zeros((rows, cols), dtype=bk.storage_dtype(dt))
    spans, r, c = [], 0, 0
    for b in blocks:
        arr[r:r + b.shape[0], c:c + b.shape[1]] = b
        spans.append((r, c, b.shape[0], b.shape[1]))
        r, c = r + b.shape[0], c + b.shape[1]
    out = _make(arr, dt)
    if needs_grad(*tensors):
        record("BlockDiagBackward0", _block_diag_rule, tensors, out, (tuple(spans), tuple(t.shape for t in tensors)))
    return out


def _block_diag_rule(g, spans, shapes):
    from .shape import narrow, reshape
    return tuple(reshape(narrow(narrow(g, 0, r, h), 1, c, w), shape) for (r, c, h, w), shape in zip(spans, shapes))


def _check_vector(t):
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows [prod(n_i), k] in
    itertools.product's order (one tensor: itself).  RuntimeError for other than 1-d
    tensors or mixed dtypes (torch.cartesian_prod)."""
    from .layout import meshgrid
    from .shape import reshape, stack
    for t in tensors:
        _check_vector(t)
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of the elements of a 1-d ``input`` (with repeats when
    ``with_replacement``), as rows [k, r] in itertools.combinations' order; r = 0 gives an
    empty [0] tensor.  RuntimeError for other than 1-d inputs or r < 0
    (torch.combinations)."""
    from .indexing import index_select
    from .shape import stack
    _check_vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    xp = be(input).xp
    if r == 0:
        return _make(xp.zeros((0,), dtype=input._data.dtype), input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = numpy.array(list(pick(builtins.range(input.shape[0]), r)), dtype=numpy.int64).reshape(-1, r)
    cols = [index_select(input, 0, _make(xp.asarray(idx[:, j]), D.int64)) for j in builtins.range(r)]
    return stack(cols, 1)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix [n, N] of a 1-d ``x``: column j holds x ** (N - 1 - j)
    (x ** j when ``increasing``); N defaults to len(x).  Integer and bool inputs give
    int64.  RuntimeError for other than 1-d inputs or N < 0 (torch.vander, numpy.vander).
    Its gradient is that of the powers it documents; torch 2.13's vander raises in
    backward instead (it writes its result in place).

    ``N`` is the number of columns."""
    from .creation import ones
    from .shape import cat, flip
    from .statistics import cumprod
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype._category < 2:
        x = x.to(D.int64)
    if n == 0:
        return _make(be(x).xp.zeros((x.shape[0], 0), dtype=x._data.dtype), x.dtype)
    column = x.unsqueeze(1)
    parts = [ones((x.shape[0], 1), dtype=x.dtype, device=x.device)]
    if n > 1:
        parts.append(column.expand(x.shape[0], n - 1))
    powers = cumprod(cat(parts, 1), 1)
    return powers if increasing else flip(powers, (1,))


# ---- indices -----------------------------------------------------------------------------

def _triangle_indices(row, col, offset, dtype, device, fname, pick):
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise RuntimeError(f"{name} must be non-negative, got{v}")
    dt = D.to_dtype(dtype) if dtype is not None else D.int64
    if dt not in (D.int32, D.int64):
        raise NotImplementedError(f"\"{fname}\" not implemented for '{_type_name(dt)}'")
    xp = backend_for_device(to_device(device)).xp
    r, c = pick(row, offset, col)
    arr = xp.asarray(numpy.stack([r, c]).astype(dt.np).reshape(2, -1))
    return _make(arr, dt)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices [2, k] of the lower triangle of a ``row`` x ``col``
    matrix (diagonal ``offset`` and below), in row-major order; int64 (or int32).
    RuntimeError for negative sizes (torch.tril_indices, numpy.tril_indices).

    ``dtype`` is int64 (default) or int32 (another raises NotImplementedError); ``device``
    places the result; ``layout`` is accepted (strided only)."""
    return _triangle_indices(row, col, offset, dtype, device, "tril_indices", numpy.tril_indices)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (row, column) indices [2, k] of the upper triangle of a ``row`` x ``col`` matrix
    (diagonal ``offset`` and above), in row-major order (torch.triu_indices,
    numpy.triu_indices).

    ``dtype`` is int64 (default) or int32 (another raises NotImplementedError); ``device``
    places the result; ``layout`` is accepted (strided only). RuntimeError for negative
    sizes."""
    return _triangle_indices(row, col, offset, dtype, device, "triu_indices", numpy.triu_indices)


def unravel_index(indices, shape):
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (integers): a tuple
    of int64 tensors of ``indices``' shape, one per dim.  Indices wrap modulo the size, as
    torch's (-1 is the last element).  TypeError for non-integer indices, ValueError for
    negative sizes, RuntimeError for a zero size (torch.unravel_index)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): expected 'indices' to be a tensor, got {type(indices).__name__}")
    if indices.dtype._category != 1:
        raise TypeError(f"expected 'indices' to be integer dtype, but got ember.{indices.dtype.name}")
    dims = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if any(s < 0 for s in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    if any(s == 0 for s in dims):
        raise RuntimeError("ZeroDivisionError")
    xp = be(indices).xp
    flat = indices._data.astype("int64")
    coords, stride = [], 1
    for s in reversed(dims):
        coords.append(xp.floor_divide(flat, stride) % s)
        stride *= s
    return tuple(_make(xp.asarray(c), D.int64) for c in reversed(coords))


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """True where an element of ``elements`` equals some element of ``test_elements``
    (False when ``invert``); either may be a Python number (not both), compared in the
    promoted dtype; NaN matches nothing.  A bool result of ``elements``' shape.
    RuntimeError for bool and complex dtypes (torch.isin, numpy.isin).

    ``assume_unique`` lets the search assume each input holds distinct values (faster, and
    only correct when they do); ``out`` receives the result when given."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): elements or test_elements must be a Tensor")
    like = elements if isinstance(elements, Tensor) else test_elements
    dt = D.result_type(elements, test_elements)
    if dt is D.bool_ or dt.is_complex:
        raise RuntimeError(f"Unsupported input type encountered for isin(): {_type_name(dt)}")
    bk = be(like)
    xp = bk.xp

    def arr(v):
        return bk.astype(v._data, dt) if isinstance(v, Tensor) else xp.asarray(v, dtype=dt.np)
    a, b = arr(elements), arr(test_elements)
    result = _make(xp.asarray(xp.isin(a, b.reshape(-1), assume_unique=assume_unique, invert=invert)), D.bool_)
    return result if out is None else write_out(result, out, "isin")


# ---- memory ------------------------------------------------------------------------------

def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialized tensor of ``size`` whose strides (in elements) are ``stride``, over
    a buffer just large enough (strides of 0 share elements).  RuntimeError when the two
    lengths differ or a stride is negative (torch.empty_strided).

    ``dtype`` defaults to the default dtype; ``device`` places the tensor; ``requires_grad``
    makes it a leaf that records gradients; ``layout`` and ``pin_memory`` are accepted."""
    size, stride = _size((size,)), tuple(builtins.int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    bk = backend_for_device(to_device(device))
    sd = numpy.dtype(bk.storage_dtype(dt))
    storage = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    buffer = bk.xp.empty((builtins.max(storage, 1),), dtype=sd)
    arr = bk.xp.lib.stride_tricks.as_strided(buffer, size, tuple(s * sd.itemsize for s in stride))
    return _finish(arr, dt, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of ``size`` laid out in memory with its dims in the order
    ``physical_layout`` (outermost first): empty(size[p] for p in layout) permuted back.
    RuntimeError for a layout that is not a permutation of the dims
    (torch.empty_permuted).

    ``dtype`` defaults to the default dtype; ``device`` places the tensor; ``requires_grad``
    makes it a leaf that records gradients; ``layout`` and ``pin_memory`` are accepted."""
    size, order = _size((size,)), tuple(builtins.int(p) for p in physical_layout)
    if len(order) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    for i, p in enumerate(order):
        if not 0 <= p < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(size) - 1}, but got {p} "
                               f"at index {i}).  NB: negative dims not currently supported; file an issue if you "
                               "want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    bk = backend_for_device(to_device(device))
    physical = bk.xp.empty(tuple(size[p] for p in order), dtype=bk.storage_dtype(dt))
    return _finish(bk.xp.transpose(physical, tuple(numpy.argsort(order))), dt, requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d CPU tensor sharing memory with an object of Python's buffer protocol
    (bytearray, array.array, memoryview, ...): ``count`` elements (-1: all) from byte
    ``offset``.  A read-only buffer gives a UserWarning, as torch.  ValueError for an
    offset or count outside the buffer, a length that is not a multiple of the element
    size, or an object without the buffer protocol (torch.frombuffer).

    ``buffer`` is the object whose memory is shared, ``dtype`` the element dtype it is read
    as; ``requires_grad`` makes the result a leaf that records gradients."""
    dt = D.to_dtype(dtype)
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length = view.nbytes
    item = dt.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({length} bytes)")
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor. This type of warning will be suppressed for the rest of this program.", UserWarning,
                      stacklevel=2)
    arr = numpy.frombuffer(view.cast("B"), dtype=dt.np, count=count, offset=offset)
    if view.readonly:
        arr = arr.view()
        arr.flags.writeable = False
    return _finish(arr, dt, requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` *inclusive* by ``step``: floor((end - start) / step)
    + 1 of them, in the default float dtype unless ``dtype`` is given (an integer dtype
    truncates the bounds first).  Deprecated in torch in favour of arange (end
    exclusive): a UserWarning says so.  RuntimeError for a zero step or bounds that
    disagree with its sign (torch.range).

    ``device`` places the result, ``requires_grad`` makes it a leaf that records gradients,
    ``layout`` is accepted (strided only); ``out`` receives the result when given."""
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dt._category < 2:
        vals = [builtins.int(v) for v in vals]
    lo, hi, st = vals
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if not ((st > 0 and hi >= lo) or (st < 0 and hi <= lo)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = builtins.int(math.floor((hi - lo) / st)) + 1
    xp = backend_for_device(to_device(device)).xp
    work = numpy.float64 if dt._category >= 2 else numpy.int64
    arr = (lo + xp.arange(n, dtype=work) * st).astype(dt.np)
    result = _finish(arr, dt, requires_grad)
    return result if out is None else write_out(result, out, "range")


def constant_pad_nd(input, pad, value=0):
    """``input`` padded with ``value`` on its last len(pad) // 2 dims, ``pad`` = (left,
    right, top, bottom, ...) from the last dim backwards; negative pads crop.  The
    gradient crops (pads) back.  RuntimeError for an odd pad length, one over twice the
    dims, or a crop past a dim's size (torch.constant_pad_nd, F.pad's 'constant' mode)."""
    from ..autograd.grad_mode import no_grad
    from .layout import _pad_last_dims
    pad = tuple(builtins.int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. Pad "
                           f"length is {len(pad)}while the input has {input.ndim}dimensions.")
    for i in builtins.range(len(pad) // 2):
        n = input.shape[input.ndim - 1 - i]
        if n + builtins.min(pad[2 * i], 0) + builtins.min(pad[2 * i + 1], 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
    with no_grad():
        padded = _pad_last_dims(input, pad, "constant", value) if pad else input
    r = _make(be(input).copy(padded._data), input.dtype)  # a fresh tensor, never a view of the input
    if needs_grad(input):
        record("ConstantPadNdBackward0", _constant_pad_rule, (input,), r, (pad,))
    return r


def _constant_pad_rule(g, pad):
    return constant_pad_nd(g, tuple(-p for p in pad))
