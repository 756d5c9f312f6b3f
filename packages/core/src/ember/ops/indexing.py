"""Indexing: ``t[idx]`` (basic indices give views, tensor and mask indices copies),
``t[idx] = v``, gather/scatter, index_select, masked_fill, index_put, nonzero, sort, topk."""

from __future__ import annotations

import builtins
import re

from .. import _dtype as D
from .. import return_types
from .._autocast import autocast_op
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import record
from ._helpers import be, inplace, make_view, needs_grad, wrap


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (builtins.int, slice)) and not isinstance(i, builtins.bool)
               for i in items)


def _to_array_index(index, xp):
    """Replace tensors (and lists) in ``index`` by arrays the array module understands."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for i in items:
        if isinstance(i, Tensor):
            if i.dtype._category >= 2:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(i._data)
        elif isinstance(i, (list,)):
            out.append(xp.asarray(i))
        elif isinstance(i, builtins.bool):
            out.append(xp.asarray(i))
        else:
            out.append(i)
    return tuple(out)


def getitem(input, index):
    if type(index) is builtins.int and input._data.ndim:  # t[i], a DataLoader's every sample
        try:
            arr = input._data[index, ...]
        except IndexError as e:
            raise _torch_index_error(e, input.shape, index) from None
        return make_view(input, arr, lambda t: getitem(t, index), "SelectBackward0", _getitem_rule,
                         (input._data.shape, index))
    for i in index if type(index) is tuple else (index,):
        if type(i) is slice and i.step is not None and i.step <= 0:
            raise ValueError("step must be greater than zero")  # torch has no negative strides
    if type(index) is list:  # a list of ints indexes like an int64 tensor, a list of bools like a mask
        if builtins.any(isinstance(i, (Tensor, list, slice)) or i is None or i is Ellipsis for i in index):
            index = tuple(index)
        else:
            mask = index and builtins.all(type(i) is builtins.bool for i in index)
            index = (be(input).xp.asarray(index, dtype="bool" if mask else "int64"),)
    try:
        if _is_basic(index):
            if input.ndim == 0 and index not in ((), Ellipsis, None) and not (
                    isinstance(index, tuple) and builtins.all(i is None or i is Ellipsis for i in index)):
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                 "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
            # a trailing Ellipsis makes numpy return a 0-d view, never a scalar copy
            items = index if isinstance(index, tuple) else (index,)
            arr = input._data[items if Ellipsis in items else items + (Ellipsis,)]
            return make_view(input, arr, lambda t: getitem(t, index), _basic_node_name(items, input._data.shape),
                             _getitem_rule, (input._data.shape, index))
        arr = input._data[_to_array_index(index, be(input).xp)]
    except IndexError as e:
        raise _torch_index_error(e, input.shape, index) from None
    r = wrap(arr, input.dtype)
    if needs_grad(input):
        record("IndexBackward0", _index_rule, (input,), r, (input._data.shape, index))
    return r


def _torch_index_error(err: IndexError, shape, index) -> IndexError:
    """numpy's indexing error in torch's words ("dimension", not "axis"; the mask's shape)."""
    msg = str(err)
    m = re.match(r"too many indices for array: array is (\d+)-dimensional", msg)
    if m:
        return IndexError(f"too many indices for tensor of dimension {m.group(1)}")
    m = re.match(r"index (-?\d+) is out of bounds for axis (\d+) with size (\d+)", msg)
    if m:
        return IndexError(f"index {m.group(1)} is out of bounds for dimension {m.group(2)} with size {m.group(3)}")
    if msg.startswith("boolean index did not match"):
        dim = 0
        for i in index if isinstance(index, tuple) else (index,):
            is_mask = i.dtype is D.bool_ if isinstance(i, Tensor) else getattr(i, "dtype", None) == builtins.bool
            if is_mask:
                mask_shape = tuple(i.shape)
                for k, n in enumerate(mask_shape):
                    if dim + k < len(shape) and shape[dim + k] != n:
                        return IndexError(f"The shape of the mask {list(mask_shape)} at index {k} does not match "
                                          f"the shape of the indexed tensor {list(shape)} at index {dim + k}")
                dim += len(mask_shape)
            elif i is not None:
                dim += 1
    return IndexError(msg)


def _basic_node_name(items, shape) -> str:
    """torch's node for a basic index: that of the last index item that does something."""
    name, dim = "AliasBackward0", 0
    n_real = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    for _k, i in enumerate(items):
        if i is Ellipsis:
            dim += len(shape) - n_real
        elif i is None:
            name = "UnsqueezeBackward0"
        elif isinstance(i, slice):
            if i.indices(shape[dim]) != (0, shape[dim], 1):
                name = "SliceBackward0"
            dim += 1
        else:
            name = "SelectBackward0"
            dim += 1
    return name


def _getitem_rule(g, shape, index):
    from .creation import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    out[index] = g
    return out


def _index_rule(g, shape, index):
    from .creation import zeros
    return index_put(zeros(shape, dtype=g.dtype, device=g.device), index, g, accumulate=True)


def setitem(self, index, value):
    """``self[index] = value``: a copy into a view for basic indices, index_put_ otherwise."""
    if _is_basic(index):
        target = getitem(self, index)
        from .elementwise import copy_
        copy_(target, value)
        return
    index_put_(self, index if isinstance(index, tuple) else (index,), value)


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written at ``indices`` (summed when ``accumulate``)."""
    index = indices if isinstance(indices, tuple) else tuple(indices) if isinstance(indices, list) else (indices,)
    xp = be(input).xp
    idx = _to_array_index(index, xp)
    v = values._data if isinstance(values, Tensor) else values
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        v = v.astype(input.dtype.np)
    arr = input._data.copy()
    try:
        if accumulate:
            be(input).scatter_add(arr, idx, xp.broadcast_to(v, arr[idx].shape))
        else:
            arr[idx] = v
    except IndexError as e:
        raise _torch_index_error(e, input.shape, index) from None
    r = _make(arr, input.dtype)
    if needs_grad(input, values):
        record("IndexPutBackward0", _index_put_rule, (input, values), r, (index, accumulate))
    return r


def _index_put_rule(g, index, accumulate):
    from .creation import zeros_like
    g_in = g if accumulate else index_put(g, index, zeros_like(g[index]))
    return g_in, getitem(g, index)


def index_put_(self, indices, values, accumulate=False):
    return inplace(self, index_put, indices, values, accumulate)


def gather(input, dim, index, *, sparse_grad=False):
    """Values of ``input`` picked along ``dim`` by ``index``: ``out[i][j] =
    input[index[i][j]][j]`` for ``dim`` 0, and so on (torch.gather).

    ``index`` is an int64 (or int32) tensor with ``input``'s number of dims, no larger than
    ``input`` in the other dims; the result has its shape and ``input``'s dtype. A wrong
    dtype, number of dims, size or an index out of range raises RuntimeError.
    ``sparse_grad`` is accepted (the gradient is dense)."""
    d = _wrap_dim(dim, input.ndim)
    _check_index_tensor(index, "gather")
    xp = be(input).xp
    if index.ndim != input.ndim and input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    src = input._data
    if input.ndim and index.shape != input.shape:  # index may be smaller than input apart from dim
        for k, (n, m) in enumerate(zip(index.shape, input.shape)):
            if k != d and n > m:
                raise RuntimeError(f"Size does not match at dimension {k} expected index {list(index.shape)} to be "
                                   f"no larger than self {list(input.shape)} apart from dimension {d}")
        src = src[tuple(slice(None) if k == d else slice(0, n) for k, n in enumerate(index.shape))]
    arr = xp.take_along_axis(src, _bounds(index._data, input.shape[d] if input.ndim else 1), axis=d) \
        if input.ndim else src[index._data]
    r = _make(arr, input.dtype)
    if needs_grad(input):
        record("GatherBackward0", _gather_rule, (input,), r, (input._data.shape, d, index))
    return r


def _bounds(idx, n):
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise RuntimeError(f"index {int(idx.max())} is out of bounds for dimension with size {n}")
    return idx


def _check_index_tensor(index, op):
    if not isinstance(index, Tensor) or index.dtype not in (D.int64, D.int32):
        got = index.dtype if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {got}")


def _gather_rule(g, shape, d, index):
    from .creation import zeros
    return scatter_add(zeros(shape, dtype=g.dtype, device=g.device), d, index, g)


def _scatter_positions(xp, index, d):
    """Full coordinate arrays for every element of ``index`` with ``index`` placed at ``d``."""
    grids = list(xp.indices(index.shape, sparse=True))
    grids[d] = index
    return tuple(grids)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """A copy of ``input`` with ``out[index[i][j]][j] = src[i][j]`` along ``dim`` 0, and so on
    (torch.scatter).

    ``index`` is an int64 (or int32) tensor; ``src`` a tensor at least as large as it (or a
    number), or ``value`` a number written everywhere ``index`` points (one of the two is
    needed: TypeError otherwise). With repeated indices one value wins. ``reduce='add'``
    adds instead (``scatter_add``); another ``reduce`` raises NotImplementedError."""
    if src is None and value is None:
        raise TypeError("scatter() needs 'src' or 'value'")
    if reduce is not None:
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        raise NotImplementedError(f"scatter reduce={reduce!r} is not supported")
    d = _wrap_dim(dim, input.ndim)
    _check_index_tensor(index, "scatter")
    xp = be(input).xp
    arr = input._data.copy()
    pos = _scatter_positions(xp, _bounds(index._data, input.shape[d]), d)
    if isinstance(src, Tensor):
        arr[pos] = src._data[tuple(slice(0, n) for n in index.shape)].astype(input.dtype.np, copy=False)
    else:
        arr[pos] = src if src is not None else value
    r = _make(arr, input.dtype)
    if needs_grad(input, src):
        record("ScatterBackward0" if isinstance(src, Tensor) else "ScatterBackward1", _scatter_rule, (input, src), r,
               (d, index, src.shape if isinstance(src, Tensor) else None))
    return r


def _scatter_rule(g, d, index, src_shape):
    g_in = scatter(g, d, index, value=0.0)
    return g_in, None if src_shape is None else _pad_to(gather(g, d, index), src_shape)


def _pad_to(g, shape):
    """``g`` placed at the start of zeros of ``shape`` (src may be larger than index)."""
    if tuple(g.shape) == tuple(shape):
        return g
    from .creation import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    out[tuple(slice(0, n) for n in g.shape)] = g
    return out


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    return inplace(self, scatter, dim, index, src, value, reduce=reduce)


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at the positions ``index`` names along ``dim``
    (``out[index[i][j]][j] += src[i][j]`` for ``dim`` 0); repeated indices sum
    (torch.scatter_add). ``index`` is int64 (or int32), ``src`` at least as large as it."""
    d = _wrap_dim(dim, input.ndim)
    _check_index_tensor(index, "scatter_add")
    xp = be(input).xp
    arr = input._data.copy()
    pos = _scatter_positions(xp, _bounds(index._data, input.shape[d]), d)
    src_arr = src._data[tuple(slice(0, n) for n in index.shape)].astype(input.dtype.np, copy=False)
    be(input).scatter_add(arr, pos, src_arr)
    r = _make(arr, input.dtype)
    if needs_grad(input, src):
        record("ScatterAddBackward0", lambda g, d, index, shape: (g, _pad_to(gather(g, d, index), shape)),
               (input, src), r, (d, index, src.shape))
    return r


def scatter_add_(self, dim, index, src):
    return inplace(self, scatter_add, dim, index, src)


def index_select(input, dim, index):
    """Entries of ``input`` at ``index`` (1-d int tensor) along ``dim``."""
    d = _wrap_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"index_select(): Expected dtype int32/int64 for index but got: {index.dtype}")
    xp = be(input).xp
    flat = index._data.reshape(-1)
    n = input.shape[d] if input.ndim else 1
    if flat.size and (flat.max() >= n or flat.min() < -n):
        raise IndexError("index out of range in self")
    arr = xp.take(input._data, flat, axis=d if input.ndim else None)
    r = _make(arr.reshape(input._data.shape[:d] + (index.numel(),) + input._data.shape[d + 1:]) if input.ndim
              else arr.reshape(()), input.dtype)
    if needs_grad(input):
        record("IndexSelectBackward0", _index_select_rule, (input,), r, (input._data.shape, d, index))
    return r


def _index_select_rule(g, shape, d, index):
    from .creation import zeros
    idx = (slice(None),) * d + (index.reshape(-1),)
    return index_put(zeros(shape, dtype=g.dtype, device=g.device), idx, g, accumulate=True)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` (bool, broadcastable) is True."""
    if mask.dtype is not D.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    xp = be(input).xp
    v = value._data if isinstance(value, Tensor) else value
    arr = xp.where(mask._data, xp.asarray(v, dtype=input.dtype.np), input._data)
    if arr.shape != input._data.shape:
        raise RuntimeError(f"masked_fill: the shape of the mask {list(mask.shape)} must be broadcastable to "
                           f"the input {list(input.shape)}")
    r = _make(arr, input.dtype)
    if needs_grad(input, value):
        record("MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0", _masked_fill_rule,
               (input, value), r, (mask,))
    return r


def _masked_fill_rule(g, mask):
    from .elementwise import where
    from .reduction import sum as _sum
    return where(mask, 0.0, g), _sum(where(mask, g, 0.0))


def masked_fill_(self, mask, value):
    return inplace(self, masked_fill, mask, value)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero elements of ``input`` in row-major order: an int64 tensor [n,
    ndim], or with ``as_tuple`` a tuple of ndim int64 tensors [n], one per dim
    (torch.nonzero)."""
    xp = be(input).xp
    idx = xp.nonzero(input._data if input.ndim else input._data.reshape(1))
    if as_tuple:
        return tuple(_make(i.astype("int64"), D.int64) for i in idx)
    if not idx:
        return _make(xp.zeros((0, 0), dtype="int64"), D.int64)
    return _make(xp.stack(idx, axis=1).astype("int64") if input.ndim else xp.zeros((len(idx[0]), 0), "int64"), D.int64)


def argwhere(input):
    """The indices of the nonzero elements of ``input`` as an int64 tensor [n, ndim]
    (torch.argwhere)."""
    return nonzero(input)


def masked_select(input, mask):
    """The elements of ``input`` where the bool ``mask`` is True (the two broadcast together),
    as a 1-d tensor in row-major order (torch.masked_select). ``out`` receives the result
    when given."""
    from .shape import expand
    shape = tuple(__import__("numpy").broadcast_shapes(input.shape, mask.shape))
    return getitem(expand(input, shape), expand(mask, shape))


def sort(input, dim=-1, descending=False, stable=False):
    """The named tuple ``(values, indices)`` of ``input`` sorted along ``dim``, ascending or
    with ``descending`` descending (indices int64) (torch.sort).

    The sort is always stable, so ``stable`` only restates it: equal elements keep their
    order. NaN sorts last ascending, as in torch; descending it also comes last here, where
    torch puts it first. ``out`` receives the result when given."""
    d = _wrap_dim(dim, input.ndim)
    xp = be(input).xp
    if input.ndim == 0:  # a copy, its gradient passed through under torch's node name
        values = _make(be(input).copy(input._data), input.dtype)
        if needs_grad(input):
            record("SortBackward0", _pass_rule, (input,), values)
        return return_types.sort(values, _make(xp.zeros((), dtype="int64"), D.int64))
    data = input._data
    if descending:
        # a stable descending order: stable sort of the negated key keeps equal elements in order
        key = -data.astype("float64") if data.dtype.kind in "biu" else -data
        idx = xp.argsort(key, axis=d, kind="stable")
        # NaN sorts first when descending (torch treats NaN as largest)
    else:
        idx = xp.argsort(data, axis=d, kind="stable")
    vals = xp.take_along_axis(data, idx, axis=d)
    values, indices = _make(vals, input.dtype), _make(idx.astype("int64"), D.int64)
    if needs_grad(input):
        record("SortBackward0", _take_rule, (input,), values, (input._data.shape, d, indices))
    return return_types.sort(values, indices)


def _pass_rule(g):
    return g


def _take_rule(g, shape, d, indices):
    from .creation import zeros
    return scatter(zeros(shape, dtype=g.dtype, device=g.device), d, indices, g)


def argsort(input, dim=-1, descending=False, stable=False):
    """The int64 indices that sort ``input`` along ``dim`` (``descending`` and ``stable`` as in
    ``sort``) (torch.argsort)."""
    return sort(input, dim, descending, stable).indices


def topk(input, k, dim=-1, largest=True, sorted=True):
    """The named tuple ``(values, indices)`` of the ``k`` largest entries of ``input`` along
    ``dim`` (the smallest when not ``largest``), indices int64 (torch.topk).

    The entries come in sorted order (``sorted`` is accepted; they are always sorted), ties
    by their position. A ``k`` outside [0, size] raises RuntimeError. ``out`` receives the
    result when given."""
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    s = sort(input.detach(), d, descending=largest, stable=True)
    from .shape import narrow
    idx = narrow(s.indices, d, 0, k) if input.ndim else s.indices
    xp = be(input).xp
    vals = xp.take_along_axis(input._data, idx._data, axis=d) if input.ndim else input._data.copy()
    values, indices = _make(vals, input.dtype), _make(idx._data.copy(), D.int64)
    if needs_grad(input):
        record("TopkBackward0", _take_rule, (input,), values, (input._data.shape, d, indices))
    return return_types.topk(values, indices)


# ---- take, index_add/copy/fill, scatter_reduce, masked_scatter ----------------------

def take(input, index):
    """The elements of the flattened ``input`` at ``index`` (an integer tensor of any shape,
    negative indices counting from the end), in ``index``'s shape (torch.take). An index out
    of range raises IndexError."""
    from .shape import reshape
    flat = reshape(input, (-1,))
    n = flat.shape[0]
    idx = index._data
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError(f"out of range: tried to access index {int(idx.max())} on a tensor of {n} elements.")
    picked = index_select(flat, 0, _make((idx.reshape(-1) % max(n, 1)).astype("int64"), D.int64))
    return reshape(picked, tuple(index.shape))


def take_along_dim(input, indices, dim=None):
    """``gather`` with ``indices`` broadcast against ``input`` (the flattened input when
    ``dim`` is None)."""
    from .layout import broadcast_shapes
    from .shape import expand, reshape
    if dim is None:
        return take(input, reshape(indices, (-1,)))
    d = _wrap_dim(dim, input.ndim)
    shape_in, shape_idx = list(input.shape), list(indices.shape)
    shape_in[d] = shape_idx[d] = 1
    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_idx)))
    target_in = common.copy()
    target_in[d] = input.shape[d]
    target_idx = common.copy()
    target_idx[d] = indices.shape[d]
    return gather(expand(input, tuple(target_in)), d, expand(indices, tuple(target_idx)))


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source`` added at ``index`` (a 1-d integer tensor)
    along ``dim``: slice ``index[i]`` gets slice i of ``source``; repeated indices add up
    (torch.index_add)."""
    from .shape import reshape
    d = _wrap_dim(dim, max(input.ndim, 1))
    src = source if alpha == 1 else source * alpha
    # as a scatter_add with the index broadcast over the other dims
    shape = [1] * max(input.ndim, 1)
    shape[d] = index.numel()
    idx = reshape(index, tuple(shape)).expand(*(tuple(src.shape) if src.ndim else (1,)))
    base = input if input.ndim else reshape(input, (1,))
    out = scatter_add(base, d, idx, src if src.ndim else reshape(src, (1,)))
    return out if input.ndim else reshape(out, ())


@autocast_op("promote")
def index_copy(input, dim, index, source):
    """A copy of ``input`` with the slices at ``index`` along ``dim`` replaced by
    ``source``'s (with repeated indices, one of them wins)."""
    from .shape import reshape
    d = _wrap_dim(dim, max(input.ndim, 1))
    shape = [1] * max(input.ndim, 1)
    shape[d] = index.numel()
    idx = reshape(index, tuple(shape)).expand(*(tuple(source.shape) if source.ndim else (1,)))
    return scatter(input, d, idx, source)


def index_fill(input, dim, index, value):
    """A copy of ``input`` with ``value`` (a number or 0-d tensor) in the slices at
    ``index`` along ``dim``."""
    d = _wrap_dim(dim, max(input.ndim, 1))
    xp = be(input).xp
    mask = xp.zeros(input.shape[d] if input.ndim else 1, dtype=bool)
    mask[index._data.reshape(-1)] = True
    shape = [1] * input.ndim
    if input.ndim:
        shape[d] = input.shape[d]
    return masked_fill(input, _make(mask.reshape(shape), D.bool_), value)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with ``src`` combined in at ``index`` along ``dim`` by ``reduce``: 'sum',
    'prod', 'mean', 'amax' or 'amin' (torch.scatter_reduce).

    With ``include_self`` (the default) ``input``'s values take part in the reduction;
    without it the positions ``index`` names are reduced from ``src`` alone. Gradients for
    'sum' and 'mean' only (the other reductions' are not implemented here). Another
    ``reduce`` raises RuntimeError."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _wrap_dim(dim, input.ndim)
    if reduce == "sum":
        base = input if include_self else scatter(input, d, index, 0.0)
        return scatter_add(base, d, index, src)
    if reduce == "mean":
        from .creation import ones_like
        base = input if include_self else scatter(input, d, index, 0.0)
        total = scatter_add(base, d, index, src)
        count = scatter_add(ones_like(input) if include_self else scatter(ones_like(input), d, index, 0.0), d,
                            index, ones_like(src))
        mean = total / count.clamp(min=1)
        return mean if input.dtype.is_floating_point else mean.floor().to(input.dtype)
    if needs_grad(input, src):
        raise NotImplementedError(f"scatter_reduce: the gradient of reduce='{reduce}' is not implemented")
    xp = be(input).xp
    arr = input._data.copy()
    pos = _scatter_positions(xp, _bounds(index._data, input.shape[d]), d)
    vals = src._data[tuple(slice(0, n) for n in index.shape)].astype(arr.dtype, copy=False)
    ufunc = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
    if not include_self:
        fill = {"prod": 1, "amax": _lowest(xp, arr.dtype), "amin": _highest(xp, arr.dtype)}[reduce]
        touched = xp.zeros(arr.shape, dtype=bool)
        touched[pos] = True
        arr[touched] = fill
    ufunc.at(arr, pos, vals)
    return _make(arr, input.dtype)


def _lowest(xp, dt):
    return -xp.inf if dt.kind == "f" else xp.iinfo(dt).min


def _highest(xp, dt):
    return xp.inf if dt.kind == "f" else xp.iinfo(dt).max


def masked_scatter(input, mask, source):
    """A copy of ``input`` whose positions where ``mask`` (broadcast) is True take the
    leading elements of ``source``, in row-major order."""
    from .shape import expand, reshape
    m = expand(mask, tuple(input.shape)) if tuple(mask.shape) != tuple(input.shape) else mask
    n = int(m._data.sum())
    if n > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    flat_src = reshape(source, (-1,))[:n]
    return index_put(input, (m,), flat_src)


# ---- fill_diagonal_, put, index_reduce ------------------------------------------------

def _diagonal_run(t, row, count):
    """A view of ``count`` elements of ``t`` starting at (row, 0, ..., 0) and stepping one
    along every dim at once (any layout: the step is the sum of the strides)."""
    data = t._data[row:]
    arr = be(t).xp.lib.stride_tricks.as_strided(data, (count,), (builtins.sum(data.strides),))
    return make_view(t, arr, lambda u: _diagonal_run(u, row, count), "AsStridedBackward0", _diagonal_run_rule,
                     (tuple(t.shape), row, count))


def _diagonal_run_rule(g, shape, row, count):
    from .creation import zeros
    out = zeros(shape, dtype=g.dtype, device=g.device)
    from .elementwise import copy_
    copy_(_diagonal_run(out, row, count), g)
    return out


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal of ``self`` (2-d, or n-d with all sizes equal) with
    ``fill_value`` in place and return ``self`` (``torch.Tensor.fill_diagonal_``).

    ``wrap``: for a 2-d matrix taller than it is wide (``h > w + 1``), the diagonal starts
    again at row ``w + 1``, as numpy's ``fill_diagonal(wrap=True)``.  Differentiable on
    non-leaf tensors (the filled entries get no gradient).  RuntimeError for fewer than
    2 dims or unequal sizes beyond 2 dims."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    h, w = self.shape[0], self.shape[1]
    if self.ndim > 2 and builtins.any(n != h for n in self.shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    from .elementwise import fill_
    n_main = builtins.min(self.shape)
    fill_(_diagonal_run(self, 0, n_main), fill_value)
    if wrap and self.ndim == 2 and h > w + 1:
        step = w + 1
        fill_(_diagonal_run(self, step, (self.numel() + step - 1) // step - n_main), fill_value)
    return self


def _type_word(dtype) -> str:
    from ._helpers import _type_name
    return _type_name(dtype)


def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source``'s elements written at the flat positions
    ``index`` (as if ``input`` were 1-d; negative positions count from the end), summed
    into them when ``accumulate`` (torch.put).

    ``index`` int64 of any shape, ``source`` as many elements and ``input``'s dtype:
    RuntimeError for another index dtype or source dtype, IndexError for another count or
    a position out of range."""
    if index.dtype is not D.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_type_word(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_type_word(input.dtype)} and source.dtype = {_type_word(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    idx = index._data.reshape(-1)
    if idx.size:
        bad = idx[(idx >= n) | (idx < -n)]
        if bad.size:
            raise IndexError(f"out of range: tried to access index {int(bad[0])} on a tensor of {n} elements.")
    pos = _make(idx % builtins.max(n, 1), D.int64)
    xp = be(input).xp
    arr = xp.ascontiguousarray(input._data).copy().reshape(-1)
    vals = source._data.reshape(-1)
    if accumulate:
        be(input).scatter_add(arr, (pos._data,), vals)
    else:
        arr[pos._data] = vals
    r = _make(arr.reshape(input._data.shape), input.dtype)
    if needs_grad(input, source):
        record("PutBackward0", _put_rule, (input, source), r, (pos, accumulate, tuple(source.shape)))
    return r


def _put_rule(g, pos, accumulate, src_shape):
    from .creation import zeros
    g_in = g if accumulate else put(g, pos, zeros(src_shape, dtype=g.dtype, device=g.device))
    return g_in, take(g, pos).reshape(src_shape)


def put_(self, index, source, accumulate=False):
    return inplace(self, put, index, source, accumulate)


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


def _check_index_reduce(input, d, index, source, reduce):
    if reduce not in _INDEX_REDUCE:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dtype not in (D.int64, D.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {_type_word(index.dtype)}")
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{_type_word(index.dtype)} and size: {list(index.shape)}")
    n_src = source.shape[d] if source.ndim else 1
    if index.numel() != n_src:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({n_src}), for dim: {d}")
    n = input.shape[d] if input.ndim else 1
    idx = index._data.reshape(-1)
    if idx.size and (idx.max() >= n or idx.min() < -n):
        raise IndexError("index out of range in self")


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` whose slices at ``index`` along ``dim`` are combined with the
    slices of ``source`` by ``reduce``: 'prod', 'mean', 'amax' or 'amin'
    (torch.index_reduce).  ``include_self=False`` leaves the old values of the indexed
    slices out.  Integer 'mean' rounds down, as torch.

    ``index`` is 1-d int64/int32 with ``source.size(dim)`` entries; ``source`` has
    ``input``'s shape elsewhere.  Gradients as torch's: 'amax'/'amin' share the gradient
    evenly among the tied extremes; 'prod' is exact where entries are zero.
    RuntimeError for another ``reduce`` or index dtype or count, IndexError for a 2-d
    index or one out of range."""
    d = _wrap_dim(dim, builtins.max(input.ndim, 1))
    _check_index_reduce(input, d, index, source, reduce)
    xp = be(input).xp
    arr = input._data.copy() if input.ndim else input._data.reshape(1).copy()
    view = xp.moveaxis(arr, d, 0)
    src = xp.moveaxis(source._data if source.ndim else source._data.reshape(1), d, 0).astype(arr.dtype, copy=False)
    idx = index._data.reshape(-1).astype("int64") % view.shape[0]
    if not include_self:
        view[idx] = {"prod": 1, "mean": 0, "amax": _lowest(xp, arr.dtype), "amin": _highest(xp, arr.dtype)}[reduce]
    if reduce == "mean":
        count = xp.zeros(view.shape[0], dtype="int64")
        xp.add.at(count, idx, 1)
        total = count + (1 if include_self else 0)
        total[count == 0] = 1
        xp.add.at(view, idx, src)
        shape = (-1,) + (1,) * (view.ndim - 1)
        if arr.dtype.kind == "f" or arr.dtype.kind == "c":
            view /= total.reshape(shape).astype(arr.dtype)
        else:
            view //= total.reshape(shape).astype(arr.dtype)
    else:
        {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce].at(view, idx, src)
    r = _make(arr.reshape(input._data.shape), input.dtype)
    if needs_grad(input, source):
        record("IndexReduceBackward0", _index_reduce_rule, (input, source), r,
               (input, source, r, d, _make(idx, D.int64), reduce, include_self))
    return r


def _index_reduce_rule(g, x, src, r, d, idx, reduce, include_self):
    from .creation import zeros_like
    from .elementwise import where
    dt = g.dtype
    if reduce == "mean":
        count = index_add(zeros_like(x) + (1.0 if include_self else 0.0), d, idx, zeros_like(src) + 1.0)
        share = g / where(count == 0, 1.0, count)  # slots left alone (count 0) keep their gradient
        g_self = share
        g_src = index_select(share, d, idx)
    elif reduce in ("amax", "amin"):
        self_is = (x == r).to(dt)
        src_is = (src == index_select(r, d, idx)).to(dt)
        share = g / index_add(self_is, d, idx, src_is)
        g_self = self_is * share
        g_src = src_is * index_select(share, d, idx)
    else:
        masked_self = where(x == 0, 1.0, x)
        g_self = g * index_reduce(masked_self, d, idx, src, "prod", include_self=include_self) / masked_self
        src_zero = src == 0
        zeros_per_slot = index_select(index_add(zeros_like(x), d, idx, src_zero.to(dt)), d, idx)
        single_zero = src_zero & (zeros_per_slot == 1)
        others = index_reduce(x, d, idx, where(single_zero, 1.0, src), "prod", include_self=include_self)
        g_src = where(single_zero, index_select(g * others, d, idx),
                      index_select(g * r, d, idx) / where(src_zero, 1.0, src))
    if not include_self:
        g_self = index_fill(g_self, d, idx, 0.0)
    return g_self, g_src


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    return inplace(self, index_reduce, dim, index, source, reduce, include_self=include_self)
