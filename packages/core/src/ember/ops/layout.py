"""Rearranging ops: rolling, rotating and tiling, triangles and diagonals, the stack and
split helpers (``hstack``, ``tensor_split``, ...), ``meshgrid``, ``broadcast_tensors``,
``atleast_*d``, and the strided views ``diagonal``, ``unfold`` and ``as_strided``.

Ops that torch builds from other ops (``hstack`` is ``cat`` of ``atleast_1d``) are built
from the same ember ops here, so their graphs carry torch's node names; the others are
one node with their own rule.
"""

from __future__ import annotations

import builtins

from .. import _dtype as D
from .._autocast import autocast_op
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import on_arrays, record
from ._helpers import be, make_view, needs_grad
from .shape import cat, expand, flip, narrow, repeat, reshape, unsqueeze, view

__all__ = [
    "roll", "rot90", "fliplr", "flipud", "tile", "repeat_interleave", "tril", "triu", "diagonal", "diag_embed",
    "diag", "diagflat", "trace", "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack",
    "column_stack", "row_stack", "tensor_split", "hsplit", "vsplit", "dsplit", "meshgrid", "broadcast_tensors",
    "broadcast_shapes", "ravel", "unfold", "as_strided", "resize_", "resize_as_",
]


def _dims_tuple(dims) -> tuple:
    return (dims,) if isinstance(dims, builtins.int) else tuple(dims)


# ---- roll, rot90, flips, tile -------------------------------------------------------

def roll(input, shifts, dims=None):
    """``input``'s elements shifted cyclically by ``shifts`` along ``dims`` (ints or tuples of
    the same length), or along the flattened tensor when ``dims`` is None (then one shift);
    same shape and dtype (torch.roll). Shifts and dims of different lengths raise
    RuntimeError."""
    shifts = _dims_tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        arr = be(input).xp.roll(input._data, shifts[0])
    else:
        dims = tuple(_wrap_dim(d, input.ndim) for d in _dims_tuple(dims))
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        arr = be(input).xp.roll(input._data, shifts, axis=dims)
    r = _make(arr, input.dtype)
    if needs_grad(input):
        back = tuple(-s for s in shifts)
        record("RollBackward0", _roll_rule, (input,), r, (back[0] if dims is None else back, dims))
    return r


@on_arrays(lambda g, shifts, dims: _np().roll(g, shifts, axis=dims))
def _roll_rule(g, shifts, dims):
    return roll(g, shifts, dims)


def rot90(input, k=1, dims=(0, 1)):
    """``input`` rotated by 90 degrees ``k`` times in the plane of the two ``dims``, from the
    first towards the second (negative ``k`` the other way), as a new tensor (torch.rot90).
    RuntimeError for ``dims`` not of length 2, equal dims, or an ``input`` of fewer than 2
    dims."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    xp = be(input).xp
    r = _make(xp.ascontiguousarray(xp.rot90(input._data, k, axes=(d0, d1))), input.dtype)
    if needs_grad(input):
        record("Rot90Backward0", _rot90_rule, (input,), r, (-k, (d0, d1)))
    return r


@on_arrays(lambda g, k, dims: _np().rot90(g, k, axes=dims))
def _rot90_rule(g, k, dims):
    return rot90(g, k, dims)


def fliplr(input):
    """``input`` with its columns (dim 1) reversed, as a copy (torch.fliplr); RuntimeError for
    an ``input`` of fewer than 2 dims."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, [1])


def flipud(input):
    """``input`` with its rows (dim 0) reversed, as a copy (torch.flipud); RuntimeError for a
    0-d ``input``."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, [0])


def tile(input, dims):
    """``input`` repeated ``dims[i]`` times along each dim (torch.tile): ones are prepended to
    ``dims`` when it is shorter than ``input``'s dims, and size-1 dims to ``input`` when it
    is longer."""
    dims = _dims_tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element of ``input`` repeated ``repeats`` times along ``dim`` (the flattened input
    when None) (torch.repeat_interleave).

    ``repeats`` is an int, or a tensor of one count per element along ``dim`` (RuntimeError
    for another length). With only a tensor of counts (``repeat_interleave(counts)``), the
    indices 0..n-1 repeated by those counts. ``output_size`` (the total length) is accepted
    and not needed."""
    from .indexing import index_select
    if repeats is None:  # repeat_interleave(repeats)
        counts = input
        xp = be(counts).xp
        return _make(xp.repeat(xp.arange(counts.shape[0], dtype=counts._data.dtype), counts._data), counts.dtype)
    if dim is None:
        input = reshape(input, (-1,))
        dim = 0
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    xp = be(input).xp
    if isinstance(repeats, Tensor):
        counts = repeats._data if repeats.ndim else xp.full(n, builtins.int(repeats.item()))
        if counts.shape[0] != n:
            raise RuntimeError("repeats must have the same size as input along dim")
    else:
        counts = xp.full(n, builtins.int(repeats))
    index = _make(xp.repeat(xp.arange(n), counts), D.int64)
    return index_select(input, d, index)


# ---- triangles and diagonals --------------------------------------------------------

def tril(input, diagonal=0):
    """The lower triangle of the last two dims of ``input`` ``[*, m, n]``: the elements on and
    below ``diagonal`` (0 the main one, positive above it), zeros elsewhere (torch.tril).
    RuntimeError for fewer than 2 dims."""
    return _triangle(input, diagonal, "tril", "TrilBackward0")


def triu(input, diagonal=0):
    """The upper triangle of the last two dims of ``input`` ``[*, m, n]``: the elements on and
    above ``diagonal`` (0 the main one, positive above it), zeros elsewhere (torch.triu).
    RuntimeError for fewer than 2 dims."""
    return _triangle(input, diagonal, "triu", "TriuBackward0")


def _triangle(input, k, fname, node):
    if input.ndim < 2:
        raise RuntimeError(f"{fname}: input tensor must have at least 2 dimensions")
    r = _make(getattr(be(input).xp, fname)(input._data, k), input.dtype)
    if needs_grad(input):
        record(node, _tril_rule if fname == "tril" else _triu_rule, (input,), r, (k,))
    return r


@on_arrays(lambda g, k: _np().tril(g, k))
def _tril_rule(g, k):
    return tril(g, k)


@on_arrays(lambda g, k: _np().triu(g, k))
def _triu_rule(g, k):
    return triu(g, k)


def _np():
    import numpy
    return numpy


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of ``input``'s planes spanned by ``dim1`` and ``dim2``, as the
    last dim (those two removed) (torch.diagonal). ``offset`` > 0 is above the main
    diagonal, < 0 below. Equal dims raise RuntimeError."""
    n = input.ndim
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    rest = [d for d in range(n) if d not in (d1, d2)]
    moved = input._data.transpose(rest + [d1, d2])
    moved = moved[..., max(0, -offset):, max(0, offset):]
    length = max(0, min(moved.shape[-2], moved.shape[-1]))
    s = moved.strides
    arr = be(input).xp.lib.stride_tricks.as_strided(moved, moved.shape[:-2] + (length,),
                                                     s[:-2] + (s[-2] + s[-1],))
    return make_view(input, arr, lambda t: diagonal(t, offset, d1, d2), "DiagonalBackward0", _diagonal_rule,
                     (tuple(input.shape), offset, d1, d2))


def _diagonal_rule(g, shape, offset, d1, d2):
    from .creation import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    diagonal(out, offset, d1, d2).copy_(g)
    return out


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in dims ``dim1``, ``dim2`` of the result) whose ``offset`` diagonal holds
    the last dim of ``input``; zeros elsewhere."""
    n = input.ndim + 1
    d1, d2 = _wrap_dim(dim1, n), _wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = input.shape[-1] + abs(offset)
    shape = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, size)
    arr = be(input).xp.zeros(tuple(shape), dtype=input._data.dtype)
    out = _make(arr, input.dtype)
    from ..autograd import grad_mode
    with grad_mode.no_grad():
        diagonal(out, offset, d1, d2).copy_(input)
    if needs_grad(input):
        record("DiagEmbedBackward0", _diag_embed_rule, (input,), out, (offset, d1, d2))
    return out


def _diag_embed_rule(g, offset, d1, d2):
    return diagonal(g, offset, d1, d2)


def diag(input, diagonal=0):
    """A 1-d ``input`` [n] becomes the square matrix [n + ``|diagonal|``, n + ``|diagonal|``] with it
    on diagonal ``diagonal``; a 2-d ``input`` gives that diagonal, as a copy (torch.diag).
    Other dims raise RuntimeError."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.ndim}D")
    return globals()["diagonal"](input, diagonal, 0, 1).clone()


def diagflat(input, offset=0):
    """The flattened ``input`` on diagonal ``offset`` of a square matrix, zeros elsewhere
    (torch.diagflat)."""
    return diag_embed(reshape(input, (-1,)), offset, 0, 1)


@autocast_op("fp32")
def trace(input):
    """The sum of the main diagonal of a 2-d ``input`` as a 0-d tensor (torch.trace); integer
    inputs give int64. RuntimeError for another number of dims."""
    if input.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim " + str(input.ndim))
    r = _make(be(input).xp.asarray(be(input).xp.trace(input._data)), input.dtype)
    if input.dtype._category < 2:
        from .. import _dtype as D
        r = _make(r._data.astype("int64"), D.int64)
    if needs_grad(input):
        record("TraceBackward0", _trace_rule, (input,), r, (tuple(input.shape),))
    return r


def _trace_rule(g, shape):
    from .creation import eye
    return eye(shape[0], shape[1], dtype=g.dtype, device=g.device) * g


# ---- at least n dims; stacking and splitting helpers -------------------------------

def _atleast(n, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        if t.ndim >= n:
            out.append(t)
        elif n == 1 or t.ndim == 0:
            out.append(reshape(t, (1,) * n))
        elif n == 2:
            out.append(unsqueeze(t, 0))
        else:  # n == 3, t.ndim in (1, 2)
            out.append(unsqueeze(unsqueeze(t, 0), -1) if t.ndim == 1 else unsqueeze(t, -1))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors):
    """Each input with at least 1 dim (a 0-d tensor becomes [1])."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Each input with at least 2 dims ([n] becomes [1, n])."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Each input with at least 3 dims ([n] becomes [1, n, 1], [m, n] becomes [m, n, 1])."""
    return _atleast(3, tensors)


def hstack(tensors, *, out=None):
    """The ``tensors`` concatenated along dim 1, or dim 0 when they are 1-d (0-d ones are made
    1-d first) (torch.hstack). ``out`` receives the result when given."""
    ts = [atleast_1d(t) for t in tensors]
    return cat(ts, 0 if ts[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """The ``tensors``, each made at least 2-d ([n] becomes [1, n]), concatenated along dim 0
    (torch.vstack; ``row_stack`` is the same function). ``out`` receives the result when
    given."""
    return cat([atleast_2d(t) for t in tensors], 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """The ``tensors``, each made at least 3-d, concatenated along dim 2 (torch.dstack).
    ``out`` receives the result when given."""
    return cat([atleast_3d(t) for t in tensors], 2, out=out)


def column_stack(tensors, *, out=None):
    """The ``tensors`` side by side as columns: 0-d and 1-d ones become [n, 1], the rest are
    concatenated along dim 1 as they are (torch.column_stack). ``out`` receives the result
    when given."""
    cols = [reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in tensors]
    return cat(cols, 1, out=out)


def tensor_split(input, indices_or_sections, dim=0):
    """A tuple of views of ``input`` split along ``dim`` (torch.tensor_split).

    ``indices_or_sections`` is an int n (n nearly equal parts, the first ``size % n`` one
    element longer; n <= 0 raises RuntimeError), or a sequence or 1-d tensor of indices at
    which to cut (clamped into the dim, so parts may be empty)."""
    d = _wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, builtins.int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, extra = divmod(size, n)
        sizes = [q + 1] * extra + [q] * (n - extra)
    else:
        cuts = [min(max(0, i if i >= 0 else i + size), size) for i in indices_or_sections]
        sizes, lo = [], 0
        for c in cuts:
            sizes.append(max(0, c - lo))
            lo = max(lo, c)
        sizes.append(size - lo)
    pieces, lo = [], 0
    for n in sizes:
        pieces.append(narrow(input, d, lo, n))
        lo += n
    return tuple(pieces)


def _split_n(input, sections, dim, name, min_dims):
    if input.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {input.ndim} dimensions!")
    if isinstance(sections, builtins.int) and input.shape[dim] % sections:
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, indices_or_sections):
    """``tensor_split(input, indices_or_sections)`` along dim 1 (dim 0 for a 1-d ``input``)
    (torch.hsplit). An int ``indices_or_sections`` must divide the size, and ``input`` needs
    at least 1 dim: RuntimeError otherwise."""
    return _split_n(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections):
    """``tensor_split(input, indices_or_sections)`` along dim 0 of an ``input`` of at least 2
    dims (torch.vsplit). An int ``indices_or_sections`` must divide the size: RuntimeError
    otherwise."""
    return _split_n(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    """``tensor_split(input, indices_or_sections)`` along dim 2 of an ``input`` of at least 3
    dims (torch.dsplit). An int ``indices_or_sections`` must divide the size: RuntimeError
    otherwise."""
    return _split_n(input, indices_or_sections, 2, "dsplit", 3)


# ---- grids and broadcasting ---------------------------------------------------------

def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-d tensors, as expanded views; ``indexing`` 'ij' (matrix,
    torch's default) or 'xy' (Cartesian: the first two dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = [atleast_1d(t) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.shape[0] for t in ts)
    grids = []
    for i, t in enumerate(ts):
        dims = [1] * len(ts)
        dims[i] = -1
        grids.append(expand(view(t, tuple(dims)), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to (RuntimeError when they do not)."""
    from .. import Size
    nd = builtins.max((len(s) if not isinstance(s, builtins.int) else 1 for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        s = (s,) if isinstance(s, builtins.int) else tuple(s)
        for i, n in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
                                   f"between arg 0 and arg {shapes.index(s) if s in shapes else 1}.")
    return Size(out)


def broadcast_tensors(*tensors):
    """Expanded views of the tensors to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = tuple(broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    return tuple(t if tuple(t.shape) == shape else expand(t, shape) for t in tensors)


def ravel(input):
    """``input`` flattened to 1-d, a view when it is contiguous (a copy otherwise)
    (torch.ravel)."""
    return view(input.contiguous(), (-1,))


# ---- strided views ------------------------------------------------------------------

def unfold(input, dimension, size, step):
    """A view with every window of ``size`` elements (``step`` apart) along ``dimension``
    as a new last dim (torch.Tensor.unfold)."""
    d = _wrap_dim(dimension, max(input.ndim, 1))
    shape = tuple(input.shape) or (1,)
    if size > shape[d]:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {shape[d]} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    data = input._data if input.ndim else input._data.reshape(1)
    s = data.strides
    count = (shape[d] - size) // step + 1
    new_shape = shape[:d] + (count,) + shape[d + 1:] + (size,)
    new_strides = s[:d] + (s[d] * step,) + s[d + 1:] + (s[d],)
    arr = be(input).xp.lib.stride_tricks.as_strided(data, new_shape, new_strides)
    return make_view(input, arr, lambda t: unfold(t, d, size, step), "UnfoldBackward0", _unfold_rule,
                     (shape, d, size, step, input.ndim == 0))


def _unfold_rule(g, shape, d, size, step, scalar):
    from .creation import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    for k in range(size):  # kernel offset k of every window: one strided slice of the input
        idx = (slice(None),) * d + (slice(k, k + step * (g.shape[d] - 1) + 1, step),)
        out[idx] = out[idx] + g.select(-1, k)
    return reshape(out, ()) if scalar else out


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s memory with the sizes ``size`` and strides ``stride`` (in
    elements), starting ``storage_offset`` elements into its storage (``input``'s own offset
    when None) (torch.as_strided).

    ``input`` must be contiguous, and the view may reach only ``input``'s own elements
    (numpy's views cannot see the rest of a storage): RuntimeError otherwise."""
    from .._tensor import _address
    size, stride = tuple(builtins.int(n) for n in size), tuple(builtins.int(s) for s in stride)
    data = input._data
    if not data.flags.c_contiguous:
        raise RuntimeError("as_strided: only contiguous inputs are supported")
    own = (_address(data) - _address(input._base._data)) // data.itemsize if input._base is not None else 0
    start = own if storage_offset is None else builtins.int(storage_offset)
    last = start + builtins.sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else start
    if start < own or (all(size) and last >= own + data.size):
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {start} "
                           f"reach outside the input's {data.size} elements")
    flat = data.reshape(-1)[start - own:]
    arr = be(input).xp.lib.stride_tricks.as_strided(flat, size, tuple(s * data.itemsize for s in stride))
    return make_view(input, arr, lambda t: as_strided(t, size, stride, storage_offset), "AsStridedBackward0",
                     _as_strided_rule, (tuple(input.shape), size, stride, start - own))


def _as_strided_rule(g, in_shape, size, stride, start):
    # every output element adds its gradient to the input element it reads
    import numpy

    from .creation import zeros
    idx = numpy.full((), start, dtype=numpy.int64)
    for n, s in zip(size, stride):
        idx = idx[..., None] + numpy.arange(n, dtype=numpy.int64) * s
    numel = builtins.int(numpy.prod(in_shape, dtype=numpy.int64))
    out = zeros((numel,), dtype=g.dtype, device=g.device)
    index = _make(be(g).xp.asarray(idx.reshape(-1)), D.int64)
    return reshape(out.scatter_add(0, index, reshape(g, (-1,))), in_shape)


# ---- resize_ ------------------------------------------------------------------------

def _storage(t):
    """(the flat array of the memory ``t`` lives in, ``t``'s offset in it in elements), or
    (None, 0) when that memory is not one contiguous array ember can re-view."""
    from .._tensor import _address
    root = t._base._data if t._base is not None else t._data
    while getattr(root, "base", None) is not None and hasattr(root.base, "dtype") and \
            root.base.dtype == root.dtype:
        root = root.base
    flags = getattr(root, "flags", None)
    if flags is None or not flags.c_contiguous or not flags.writeable:
        return None, 0
    offset = (_address(t._data) - _address(root)) // t.dtype.itemsize if t._data.size else 0
    return root.reshape(-1), offset


def resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes``, contiguous, over its own memory from its storage
    offset on (``torch.Tensor.resize_``): shrinking keeps the leading elements of that memory
    and growing back within it finds them again; growing beyond it moves ``self`` to new
    memory holding the old elements first, the new ones uninitialised.

    Differences from torch: memory shared with other tensors does not follow a move to new
    memory (torch's storages do), so growing a view (``_base`` set) beyond its base's
    memory raises RuntimeError instead.  RuntimeError for a tensor that requires grad, as
    torch, and for a negative size."""
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    size = tuple(builtins.int(n) for n in size)
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if builtins.any(n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(size)}: {list(size)}")
    if size == tuple(self._data.shape):
        return self  # torch leaves the layout (and the version) as it is
    n = 1
    for k in size:
        n *= k
    flat, offset = _storage(self)
    if flat is not None and offset + n <= flat.size:
        self._data = flat[offset:offset + n].reshape(size)
    elif self._base is not None:
        raise RuntimeError(f"resize_: a view of {self._base._data.size} elements cannot grow to {offset + n}: its "
                           "memory is shared with its base (resize the base, or a copy)")
    else:
        xp = be(self).xp
        old = flat[offset:] if flat is not None else xp.ascontiguousarray(self._data).reshape(-1)
        arr = xp.empty(n, dtype=self._data.dtype)
        keep = builtins.min(n, old.size)
        arr[:keep] = old[:keep]
        self._data = arr.reshape(size)
    self._vc[0] += 1
    return self


def resize_as_(input, the_template, *, memory_format=None):
    """``input.resize_(the_template.shape)``: ``input`` given ``the_template``'s shape in
    place, and returned (``torch.resize_as_``). ``memory_format`` is accepted; the result is
    contiguous."""
    return resize_(input, tuple(the_template.shape))


# ---- padding ------------------------------------------------------------------------

def _pad_last_dims(input, pad, mode="constant", value=None):
    """``input`` padded on its last ``len(pad) // 2`` dims, ``pad`` = (left, right, top,
    bottom, ...) from the last dim backwards (the work of F.pad, also used by stft).
    'constant' concatenates ``value`` (negative pads crop); 'reflect', 'replicate' and
    'circular' gather indices, so every mode's gradient sums back into the input."""
    import numpy

    from .creation import full, tensor
    from .indexing import index_select
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    out = input
    for i in range(len(pad) // 2):
        d = input.ndim - 1 - i
        lo, hi = builtins.int(pad[2 * i]), builtins.int(pad[2 * i + 1])
        n = out.shape[d]
        if mode == "constant":
            if lo < 0 or hi < 0:
                out = narrow(out, d, max(0, -lo), n + min(0, lo) + min(0, hi))
                lo, hi = max(0, lo), max(0, hi)
            parts = []
            for width in (lo, None, hi):
                if width is None:
                    parts.append(out)
                elif width:
                    shape = list(out.shape)
                    shape[d] = width
                    parts.append(full(shape, 0 if value is None else value, dtype=out.dtype, device=out.device))
            out = cat(parts, d) if len(parts) > 1 else out
            continue
        idx = numpy.arange(-lo, n + hi)
        if mode == "reflect":
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({lo}, {hi}) at dimension {d} of input "
                                   f"{list(input.shape)}")
            idx = (n - 1) - numpy.abs((n - 1) - numpy.abs(idx))  # mirror at both ends, the edge not repeated
        elif mode == "replicate":
            idx = idx.clip(0, n - 1)
        else:
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            idx = idx % n
        out = index_select(out, d, tensor(idx.astype("int64")))
    return out
