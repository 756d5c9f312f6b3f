"""Shape ops. view, reshape (when possible), squeeze, unsqueeze, permute, transpose,
expand, narrow, select, split, chunk and unbind return views sharing memory and version
counter with their input, as in torch; cat, stack, repeat, flip copy."""

from __future__ import annotations

import builtins

from .. import _dtype as D
from .._autocast import autocast_op
from .._tensor import _make, _wrap_dim
from ..autograd.graph import on_arrays, record
from ._helpers import be, make_view, needs_grad


def _dims(args) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return tuple(builtins.int(a) for a in args)


def _infer_shape(shape, numel: int) -> tuple:
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


@on_arrays()
def _reshape_rule(g, shape):
    return g.reshape(shape)


def view(self, *shape):
    """A view with a new shape; RuntimeError when the strides do not allow one (use reshape)."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, builtins.int)):
        return _view_as_dtype(self, D.to_dtype(shape[0]))
    new = _infer_shape(_dims(shape), self._data.size)
    arr = be(self).reshape_view(self._data, new)
    if arr is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.") from None
    return make_view(self, arr, lambda t: view(t, new), "ViewBackward0", _reshape_rule, (self._data.shape,))


def _view_as_dtype(self, dtype):
    """``view(dtype)``: the same bytes read as ``dtype`` (torch's rule: a different element
    size scales the last dimension, which must then have stride 1 and a divisible size).
    Not differentiable, as in torch; shares memory and the version counter."""
    old, new = self.dtype.itemsize, dtype.itemsize
    if old != new:
        what = f"to view {_type_word(self.dtype)} as {_type_word(dtype)} (different element sizes)"
        if self.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if self.stride(-1) != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {self.stride(-1)}")
        if new > old and self.shape[-1] % (new // old):
            raise RuntimeError(f"self.size(-1) must be divisible by {new // old} {what}, but got {self.shape[-1]}")
    t = _make(self._data.view(dtype.np), dtype)
    t._vc = self._vc
    return t


def _type_word(d):
    from ._helpers import _type_name
    return _type_name(d)


def view_as(self, other):
    return view(self, other.shape)


def reshape(self, *shape):
    """A view when the strides allow one, else a copy."""
    new = _infer_shape(_dims(shape), self._data.size)
    if new == self._data.shape:
        return view(self, new)
    bk = be(self)
    arr = bk.reshape_view(self._data, new)
    if arr is None:
        r = _make(bk.xp.reshape(self._data, new), self.dtype)
        if needs_grad(self):
            record("UnsafeViewBackward0", _reshape_rule, (self,), r, (self._data.shape,))
        return r
    return make_view(self, arr, lambda t: view(t, new), "ViewBackward0", _reshape_rule, (self._data.shape,))


def reshape_as(self, other):
    return reshape(self, other.shape)


def flatten(input, start_dim=0, end_dim=-1):
    """``input`` with the dims ``start_dim`` to ``end_dim`` (both included) merged into one, as
    a view when the memory allows (torch.flatten); a 0-d ``input`` becomes [1].
    ``start_dim`` after ``end_dim`` raises RuntimeError."""
    if input.ndim == 0:
        return reshape(input, (1,))
    s, e = _wrap_dim(start_dim, input.ndim), _wrap_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape
    mid = 1
    for n in shape[s:e + 1]:
        mid *= n
    return reshape(input, shape[:s] + (mid,) + shape[e + 1:])


def unflatten(input, dim, sizes):
    """A view of ``input`` with dim ``dim`` split into the dims ``sizes`` (their product the
    dim's size; one of them may be -1) (torch.unflatten)."""
    d = _wrap_dim(dim, input.ndim)
    shape = input.shape
    sizes = _infer_shape(tuple(sizes), shape[d])
    return view(input, shape[:d] + sizes + shape[d + 1:])


def squeeze(input, dim=None):
    """A view of ``input`` without its size-1 dims: all of them when ``dim`` is None, else
    those among ``dim`` (an int or a tuple; a named dim of another size is kept)
    (torch.squeeze)."""
    shape = input._data.shape
    if dim is None:
        dims, name = tuple(i for i, n in enumerate(shape) if n == 1), "SqueezeBackward0"
    else:
        name = "SqueezeBackward1" if isinstance(dim, builtins.int) else "SqueezeBackward2"
        dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
        dims = tuple(i for i in (_wrap_dim(d, input.ndim) for d in dims) if input.ndim and shape[i] == 1)
    arr = be(input).xp.squeeze(input._data, axis=dims) if dims else input._data[...]
    return make_view(input, arr, lambda t: squeeze(t, dims), name, _reshape_rule, (shape,))


def unsqueeze(input, dim):
    """A view of ``input`` with a size-1 dim inserted at ``dim`` (in [-ndim - 1, ndim])
    (torch.unsqueeze)."""
    d = _wrap_dim(dim, input.ndim + 1)
    arr = be(input).xp.expand_dims(input._data, axis=d)
    return make_view(input, arr, lambda t: unsqueeze(t, d), "UnsqueezeBackward0", _unsqueeze_rule, (d,))


@on_arrays(lambda g, d: g.squeeze(d))
def _unsqueeze_rule(g, d):
    return squeeze(g, d)


def permute(input, *dims):
    """A view of ``input`` with its dims reordered: dim i of the result is ``dims[i]`` of
    ``input`` (``dims`` given as ints or one sequence) (torch.permute). A ``dims`` of
    another length, or with duplicates, raises RuntimeError."""
    dims = _dims(dims)
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {input.ndim} is not "
                           f"equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, input.ndim) for d in dims)
    if sorted(dims) != list(range(input.ndim)):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    arr = be(input).xp.permute_dims(input._data, dims)
    inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))
    return make_view(input, arr, lambda t: permute(t, dims), "PermuteBackward0", _permute_rule, (inverse,))


@on_arrays(lambda g, inverse: g.transpose(inverse))
def _permute_rule(g, inverse):
    return permute(g, inverse)


def transpose(input, dim0, dim1):
    """A view of ``input`` with dims ``dim0`` and ``dim1`` swapped (torch.transpose;
    ``swapaxes`` and ``swapdims`` are the same function)."""
    n = input.ndim
    if n == 0:
        return view(input, ())
    d0, d1 = _wrap_dim(dim0, n), _wrap_dim(dim1, n)
    order = list(range(n))
    order[d0], order[d1] = d1, d0
    arr = be(input).xp.permute_dims(input._data, tuple(order))
    return make_view(input, arr, lambda t: transpose(t, d0, d1), "TransposeBackward0", _transpose_rule, (d0, d1))


@on_arrays(lambda g, d0, d1: g.swapaxes(d0, d1))
def _transpose_rule(g, d0, d1):
    return transpose(g, d0, d1)


swapaxes = swapdims = transpose


def t(input):
    """A view of ``input`` transposed: a 2-d tensor's dims swapped, a 0-d or 1-d one as it is
    (torch.t). More than 2 dims raise RuntimeError."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return make_view(input, input._data.T if input.ndim == 2 else input._data[...], t, "TBackward0", _t_rule)


@on_arrays(lambda g: g.T)
def _t_rule(g):
    return t(g)


def movedim(input, source, destination):
    """A view of ``input`` with the dims ``source`` (an int or a sequence) moved to the
    positions ``destination``, the other dims keeping their order (torch.movedim;
    ``moveaxis`` is the same function)."""
    src = (source,) if isinstance(source, builtins.int) else tuple(source)
    dst = (destination,) if isinstance(destination, builtins.int) else tuple(destination)
    src = [_wrap_dim(d, input.ndim) for d in src]
    dst = [_wrap_dim(d, input.ndim) for d in dst]
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(input, order)


moveaxis = movedim


def expand(input, *sizes):
    """A broadcast view: size-1 dims stretched, -1 keeps a size; new leading dims allowed."""
    sizes = _dims(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal "
                           f"to the number of dimensions in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    target = list(sizes)
    for i, n in enumerate(shape):
        s = sizes[lead + i]
        if s == -1:
            target[lead + i] = n
        elif n != 1 and s != n:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({n}) at "
                               f"non-singleton dimension {lead + i}.  Target sizes: {list(sizes)}.  "
                               f"Tensor sizes: {list(shape)}")
    target = tuple(target)
    if target == shape:
        return view(input, shape)
    arr = be(input).xp.broadcast_to(input._data, target)
    return make_view(input, arr, lambda t: expand(t, target), "ExpandBackward0", _expand_rule, (shape,))


@on_arrays(lambda g, shape: g)  # the engine sums a broadcast gradient back to the input's shape
def _expand_rule(g, shape):
    from ._helpers import sum_to
    return sum_to(g, shape)


def expand_as(input, other):
    return expand(input, other.shape)


def broadcast_to(input, size):
    """A broadcast view of ``input`` with shape ``size``: size-1 dims stretched, -1 keeping a
    size, new leading dims allowed (torch.broadcast_to). A size that does not broadcast
    raises RuntimeError."""
    return expand(input, size)


def narrow(input, dim, start, length):
    """A view of the ``length`` elements of ``input`` along ``dim`` from ``start`` (negative
    counts from the end) (torch.narrow). A range past the dim's size raises RuntimeError."""
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    start = builtins.int(start)
    if start < 0:
        start += n
    if not (0 <= start and start + length <= n):
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    idx = (slice(None),) * d + (slice(start, start + length), Ellipsis)
    return make_view(input, input._data[idx], lambda t: narrow(t, d, start, length), "SliceBackward0",
                     _slice_rule, (input._data.shape, idx))


def _slice_rule_arrays(g, shape, idx):
    import numpy
    out = numpy.zeros(shape, dtype=g.dtype)
    out[idx] = g
    return out


@on_arrays(_slice_rule_arrays)
def _slice_rule(g, shape, idx):
    from .creation import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    out[idx] = g
    return out


def select(input, dim, index):
    """A view of ``input`` at ``index`` along ``dim``, that dim removed (torch.select); a
    negative ``index`` counts from the end. An index out of range raises IndexError."""
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} "
                         f"at dimension {d}")
    index = index % n
    idx = (slice(None),) * d + (index, Ellipsis)
    return make_view(input, input._data[idx], lambda t: select(t, d, index), "SelectBackward0",
                     _slice_rule, (input._data.shape, idx))


def _multi_view_rule(grads, shape, dim, bounds, stacked):
    """Gradient of outputs that tile ``dim`` (split/chunk/unbind); missing ones are zero."""
    from .creation import zeros
    if not isinstance(grads, (list, tuple)):  # a node of one output gets its gradient alone
        grads = (grads,)
    ref = next(g for g in grads if g is not None)
    parts = []
    for g, (lo, hi) in zip(grads, bounds):
        if g is None:
            part = shape[:dim] + (() if stacked else (hi - lo,)) + shape[dim + 1:]
            g = zeros(part, dtype=ref.dtype, device=ref.device)
        parts.append(g)
    return (stack if stacked else cat)(parts, dim)


def _views_along(input, dim, bounds, stacked: bool, name: str):
    """Views of ``input`` along ``dim`` for [lo, hi) bounds, sharing one backward node."""
    from ._helpers import _STATE
    outs = []
    for _i, (lo, hi) in enumerate(bounds):
        idx = (slice(None),) * dim + ((lo if stacked else slice(lo, hi)), Ellipsis)
        out = _make(input._data[idx], input.dtype)
        out._vc = input._vc
        base = input._base if input._base is not None else input
        prev = input._view_fn
        redo = (lambda b, idx=idx: b[idx]) if prev is None else (lambda b, idx=idx, prev=prev: prev(b)[idx])
        out._base, out._view_fn = base, redo
        outs.append(out)
    outs = tuple(outs)
    if _STATE.enabled and input._requires_grad:
        record(name, _multi_view_rule, (input,), outs, (input._data.shape, dim, bounds, stacked))
    return outs


def split(tensor, split_size_or_sections, dim=0):
    """A tuple of views of consecutive pieces of ``tensor`` along ``dim`` (torch.split).

    ``split_size_or_sections`` is an int (equal pieces of that size, the last one smaller
    when it does not divide) or a list of sizes, which must sum to the dim's size
    (RuntimeError otherwise)."""
    d = _wrap_dim(dim, tensor.ndim)
    name = "SplitBackward0" if isinstance(split_size_or_sections, builtins.int) else "SplitWithSizesBackward0"
    return _views_along(tensor, d, _split_bounds(tensor, split_size_or_sections, d), False, name)


def _split_bounds(tensor, split_size_or_sections, d) -> tuple:
    """The [lo, hi) bounds along dim ``d`` of split's pieces."""
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, builtins.int):
        step = split_size_or_sections
        if step <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
        sizes = [min(step, n - s) for s in range(0, n, step)] if step else [0]
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                               f"dimension {d}), but got split_sizes={sizes}")
    bounds, lo = [], 0
    for s in sizes:
        bounds.append((lo, lo + s))
        lo += s
    return tuple(bounds)


def chunk(input, chunks, dim=0):
    """A tuple of ``chunks`` views of ``input`` along ``dim``, each of ``ceil(size / chunks)``
    elements (fewer pieces when they run out, the last one smaller) (torch.chunk).
    ``chunks`` <= 0 raises RuntimeError."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    step = -(-n // chunks) if n else 1
    return split(input, step, d)


def unbind(input, dim=0):
    """A tuple of the views of ``input`` at each index along ``dim``, that dim removed
    (torch.unbind)."""
    d = _wrap_dim(dim, input.ndim)
    return _views_along(input, d, tuple((i, i + 1) for i in range(input.shape[d])), True, "UnbindBackward0")


def cat(tensors, dim=0, *, out=None):
    """The ``tensors`` concatenated along the existing dim ``dim`` (torch.cat; ``concat`` and
    ``concatenate`` are the same function).

    The tensors have the same number of dims and the same sizes but along ``dim`` (1-d empty
    tensors are skipped); the result has their promoted dtype. An empty list or mismatched
    shapes raise RuntimeError. With ``out`` the result's data is placed into ``out`` (its
    memory replaced rather than written) and ``out`` returned."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    dt = tensors[0].dtype
    for x in tensors[1:]:
        dt = D.promote_types(dt, x.dtype)
    # legacy rule kept by torch: 1-d empty tensors are skipped
    parts = [x for x in tensors if not (x.ndim == 1 and x.shape[0] == 0)] or tensors[:1]
    ref = parts[0]
    d = _wrap_dim(dim, ref.ndim)
    for x in parts:
        if x.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {x.ndim}")
        for i in range(ref.ndim):
            if i != d and x.shape[i] != ref.shape[i]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[i]} but got size {x.shape[i]} for tensor number "
                                   f"{tensors.index(x)} in the list.")
    bk = be(ref)
    arr = bk.xp.concat([x._data if x.dtype is dt else bk.astype(x._data, dt) for x in parts], axis=d)
    r = _make(arr, dt)
    if needs_grad(*tensors):
        # skipped empty tensors get empty gradients
        sizes = [x.shape[d] if builtins.any(x is p for p in parts) else None for x in tensors]
        record("CatBackward0", _cat_rule, tensors, r, (sizes, d))
    if out is not None:
        out._data, out.dtype = r._data, r.dtype
        return out
    return r


def _cat_rule(g, sizes, d):
    pieces = iter(split(g, [s for s in sizes if s is not None], d))
    return tuple(next(pieces) if s is not None else g.new_zeros((0,)) for s in sizes)


concat = concatenate = cat


@autocast_op("promote")
def stack(tensors, dim=0, *, out=None):
    """The ``tensors``, all of one shape, joined along a new dim ``dim`` (torch.stack); the
    result has their promoted dtype. An empty list or different shapes raise RuntimeError.
    With ``out`` the result's data is placed into ``out`` (its memory replaced rather than
    written) and ``out`` returned."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, x in enumerate(tensors):
        if x.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                               f"and {list(x.shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1)
    dt = tensors[0].dtype
    for x in tensors[1:]:
        dt = D.promote_types(dt, x.dtype)
    bk = be(tensors[0])
    arr = bk.xp.stack([x._data if x.dtype is dt else bk.astype(x._data, dt) for x in tensors], axis=d)
    r = _make(arr, dt)
    if needs_grad(*tensors):
        record("StackBackward0", lambda g: unbind(g, d), tensors, r)
    if out is not None:
        out._data, out.dtype = r._data, r.dtype
        return out
    return r


def repeat(input, *sizes):
    """Tile the tensor ``sizes[i]`` times along each dimension (a copy)."""
    sizes = _dims(sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    lead = len(sizes) - input.ndim
    src_shape = (1,) * lead + input._data.shape
    xp = be(input).xp
    arr = xp.tile(xp.reshape(input._data, src_shape), sizes)
    r = _make(arr, input.dtype)
    if needs_grad(input):
        record("RepeatBackward0", _repeat_rule, (input,), r, (src_shape, sizes, input._data.shape))
    return r


def _repeat_rule(g, src_shape, sizes, in_shape):
    interleaved = []
    for r, s in zip(sizes, src_shape):
        interleaved += [r, s]
    g = reshape(g, interleaved)
    from .reduction import sum as _sum
    g = _sum(g, tuple(range(0, len(interleaved), 2)))
    return reshape(g, in_shape)


def flip(input, dims):
    """``input`` with its elements reversed along ``dims`` (an int or a sequence), as a copy,
    as in torch (torch.flip)."""
    dims = (dims,) if isinstance(dims, builtins.int) else tuple(dims)
    dims = tuple(_wrap_dim(d, input.ndim) for d in dims)
    bk = be(input)
    r = _make(bk.copy(bk.xp.flip(input._data, axis=dims)), input.dtype)
    if needs_grad(input):
        record("FlipBackward0", lambda g: flip(g, dims), (input,), r)
    return r
