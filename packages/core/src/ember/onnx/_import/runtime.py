"""ONNX operators whose semantics no single ember op has, written with ember ops (so they
differentiate and run on any device). An imported module's generated code calls them.

Shape-like arguments (a Reshape's shape, a Slice's starts) come either as Python ints
(constants of the file) or as int64 tensors computed by the graph (``Shape`` of an
input): the latter are read when the module runs, so a reshape to a computed shape
follows the batch size.

Source: the ONNX operator specification (onnx.ai/onnx/operators), opset 21."""

from __future__ import annotations

import builtins
import math

import ember
import ember.nn.functional as F

_slice = builtins.slice  # this module defines the operator Slice under its name


def _ints(value) -> list[int]:
    """A shape-like argument as a list of Python ints."""
    if isinstance(value, ember.Tensor):
        return [int(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return [int(value)]


def _scalar(value):
    return value.item() if isinstance(value, ember.Tensor) else value


# ---- shape ------------------------------------------------------------------------------

def shape(x, start: int = 0, end: int | None = None):
    """Shape: ``x``'s dims ``start:end`` as a 1-d int64 tensor ``[end - start]``."""
    return ember.tensor(list(x.shape[start:end]), dtype=ember.int64, device=x.device)


def size(x):
    """Size: the element count as a 0-d int64 tensor."""
    return ember.tensor(x.numel(), dtype=ember.int64, device=x.device)


def reshape(x, shape, allowzero: int = 0):
    """Reshape: a 0 in ``shape`` copies that dim of ``x`` (unless ``allowzero``), -1 is inferred."""
    dims = _ints(shape)
    if not allowzero:
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return x.reshape(dims)


def flatten(x, axis: int = 1):
    """Flatten: ``[prod(dims[:axis]), prod(dims[axis:])]``; ``axis`` is in [-rank, rank]
    (``rank`` itself gives ``[numel, 1]``)."""
    axis = axis + x.dim() if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


def expand(x, shape):
    """Expand: ``x`` broadcast with ``shape`` (numpy's two-way rule: a 1 in ``shape``
    keeps ``x``'s dim)."""
    return x.expand(ember.broadcast_shapes(tuple(x.shape), tuple(_ints(shape))))


def unsqueeze(x, axes):
    """Unsqueeze: new dims of size 1 at ``axes`` of the result (negative counts from its end)."""
    axes = _ints(axes)
    rank = x.dim() + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = x.unsqueeze(axis)
    return x


def squeeze(x, axes=None):
    """Squeeze: drop ``axes`` (all dims of size 1 when None)."""
    if axes is None:
        return x.squeeze()
    axes = tuple(a % x.dim() for a in _ints(axes))
    for axis in axes:
        if x.shape[axis] != 1:
            raise RuntimeError(f"Squeeze: dim {axis} of a tensor of shape {list(x.shape)} is not 1")
    return x.squeeze(axes) if axes else x


def slice(x, starts, ends, axes=None, steps=None):  # noqa: A001 - the operator's name
    """Slice: ``x`` restricted along ``axes`` to ``starts:ends:steps``, bounds clamped as the
    spec says (a negative step walks backwards; ``ends`` past the start give an empty dim)."""
    starts, ends = _ints(starts), _ints(ends)
    axes = list(range(len(starts))) if axes is None else [a % x.dim() for a in _ints(axes)]
    steps = [1] * len(starts) if steps is None else _ints(steps)
    index = [_slice(None)] * x.dim()
    backwards = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        dim = x.shape[axis]
        if step == 0:
            raise ValueError("Slice: a step of 0")
        start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
        if step > 0:
            index[axis] = _slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
            backwards.append((axis, start, end, step))
    y = x[tuple(index)] if any(i != _slice(None) for i in index) else x
    for axis, start, end, step in backwards:
        positions = ember.arange(start, end, step, dtype=ember.int64, device=x.device)
        y = y.index_select(axis, positions)
    return y


def gather(x, indices, axis: int = 0):
    """Gather: ``x``'s entries at ``indices`` along ``axis`` (negative indices count from the
    end); the result is ``x.shape[:axis] + indices.shape + x.shape[axis + 1:]``."""
    axis = axis % x.dim()
    indices = ember.where(indices < 0, indices + x.shape[axis], indices)
    return x[(_slice(None),) * axis + (indices,)]


def gather_elements(x, indices, axis: int = 0):
    """GatherElements: torch.gather with negative indices counting from the end."""
    axis = axis % x.dim()
    return ember.gather(x, axis, ember.where(indices < 0, indices + x.shape[axis], indices))


def gather_nd(x, indices, batch_dims: int = 0):
    """GatherND: with ``x`` of shape ``B + D`` and ``indices`` of shape ``B + I + [k]`` (``B``
    the ``batch_dims`` leading dims both share), the entries ``x[b][indices[b, i]]``, each
    a tuple of ``k`` positions into ``D`` (negative ones count from the end); the result is
    ``B + I + D[k:]``."""
    batch, k = tuple(x.shape[:batch_dims]), indices.shape[-1]
    n = math.prod(batch)
    data = x.reshape(n, *x.shape[batch_dims:])
    index = indices.reshape(n, *indices.shape[batch_dims:])
    inner = tuple(index.shape[1:-1])
    positions = [ember.arange(n, dtype=ember.int64, device=x.device).reshape(n, *([1] * len(inner)))]
    for j in range(k):
        p = index[..., j]
        positions.append(ember.where(p < 0, p + data.shape[j + 1], p))
    y = data[tuple(positions)]
    return y.reshape(*batch, *inner, *data.shape[k + 1:])


def split(x, split=None, axis: int = 0, num_outputs: int | None = None):
    """Split: parts of the sizes ``split``, or ``num_outputs`` parts of ceil(dim / n) (the
    last one smaller)."""
    if split is not None:
        return ember.split(x, _ints(split), dim=axis)
    size = -(-x.shape[axis] // num_outputs)
    parts = list(ember.split(x, size, dim=axis))
    if len(parts) != num_outputs:
        raise RuntimeError(f"Split: {num_outputs} outputs from a dim of size {x.shape[axis]}")
    return parts


def tile(x, repeats):
    """Tile: ``x`` repeated ``repeats[i]`` times along dim i."""
    return x.repeat(_ints(repeats))


def pad(x, pads, value=None, axes=None, mode: str = "constant"):
    """Pad: ``pads`` ``[begin of each axis..., end of each axis...]`` (negative crops);
    modes constant, reflect, edge and wrap (torch's constant, reflect, replicate, circular)."""
    pads = _ints(pads)
    rank = x.dim()
    axes = list(range(rank)) if axes is None else [a % rank for a in _ints(axes)]
    n = len(axes)
    begin, end = dict(zip(axes, pads[:n])), dict(zip(axes, pads[n:]))
    first = min((a for a in axes if begin[a] or end[a]), default=rank)
    torch_pads = []
    for axis in range(rank - 1, first - 1, -1):  # torch lists the last dim first
        torch_pads += [begin.get(axis, 0), end.get(axis, 0)]
    if not torch_pads:
        return x
    torch_mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}[mode]
    if torch_mode == "constant":
        return F.pad(x, torch_pads, value=float(_scalar(value)) if value is not None else 0.0)
    return F.pad(x, torch_pads, mode=torch_mode)


# ---- creation ----------------------------------------------------------------------------

def constant_of_shape(shape, value, dtype):
    """ConstantOfShape: a tensor of ``shape`` filled with ``value``."""
    device = shape.device if isinstance(shape, ember.Tensor) else None
    return ember.full(_ints(shape), value, dtype=dtype, device=device)


def arange(start, limit, delta):
    """Range: ``start, start + delta, ...`` below ``limit``, in the inputs' dtype."""
    dtype = start.dtype if isinstance(start, ember.Tensor) else None
    return ember.arange(_scalar(start), _scalar(limit), _scalar(delta), dtype=dtype)


# ---- arithmetic -------------------------------------------------------------------------

def div(a, b):
    """Div: true division for floats; integers truncate toward zero."""
    if a.is_floating_point() or a.is_complex():
        return ember.div(a, b)
    return ember.div(a, b, rounding_mode="trunc")


def pow(x, exponent):  # noqa: A001 - the operator's name
    """Pow: the result has the base's dtype."""
    y = ember.pow(x, exponent)
    return y if y.dtype == x.dtype else y.to(x.dtype)


def mod(a, b, fmod: int = 0):
    """Mod: the sign of the divisor (Python's %), or of the dividend with ``fmod``."""
    return ember.fmod(a, b) if fmod else ember.remainder(a, b)


def gemm(a, b, c=None, alpha: float = 1.0, beta: float = 1.0, trans_a: int = 0, trans_b: int = 0):
    """Gemm: ``alpha * A' @ B' + beta * C`` with A' = A^T if ``trans_a`` (B' likewise)."""
    y = ember.matmul(a.t() if trans_a else a, b.t() if trans_b else b)
    if alpha != 1.0:
        y = y * alpha
    if c is None or beta == 0.0:
        return y
    return y + (c if beta == 1.0 else c * beta)


def hardsigmoid(x, alpha: float = 0.2, beta: float = 0.5):
    """HardSigmoid: ``max(0, min(1, alpha * x + beta))``."""
    return ember.clamp(x * alpha + beta, 0.0, 1.0)


def reduce(kind: str, x, axes=None, keepdims: int = 1, noop_with_empty_axes: int = 0):
    """Reduce*: the reduction ``kind`` (``"mean"``, ``"sum_square"``, ...: the operator's name
    after Reduce) over ``axes`` (all when empty, unless ``noop_with_empty_axes``)."""
    axes = [] if axes is None else _ints(axes)
    if not axes:
        if noop_with_empty_axes:
            return x
        axes = list(range(x.dim()))
    return _REDUCTIONS[kind](x, axes, bool(keepdims))


def reduce_mean(x, axes, keepdim):
    return ember.mean(x, dim=axes, keepdim=keepdim) if axes else x


def reduce_sum(x, axes, keepdim):
    return ember.sum(x, dim=axes, keepdim=keepdim) if axes else x


def reduce_max(x, axes, keepdim):
    return ember.amax(x, dim=axes, keepdim=keepdim) if axes else x


def reduce_min(x, axes, keepdim):
    return ember.amin(x, dim=axes, keepdim=keepdim) if axes else x


def reduce_prod(x, axes, keepdim):
    for axis in sorted((a % x.dim() for a in axes), reverse=True):
        x = ember.prod(x, dim=axis, keepdim=keepdim)
    return x


def reduce_l2(x, axes, keepdim):
    return ember.sqrt(ember.sum(x * x, dim=axes, keepdim=keepdim))


def reduce_sum_square(x, axes, keepdim):
    return ember.sum(x * x, dim=axes, keepdim=keepdim)


def reduce_log_sum_exp(x, axes, keepdim):
    return ember.logsumexp(x, dim=axes, keepdim=keepdim)


_REDUCTIONS = {"mean": reduce_mean, "sum": reduce_sum, "max": reduce_max, "min": reduce_min, "prod": reduce_prod,
               "l2": reduce_l2, "sum_square": reduce_sum_square, "log_sum_exp": reduce_log_sum_exp}


def arg_reduce(kind: str, x, axis: int = 0, keepdims: int = 1, select_last_index: int = 0):
    """ArgMax/ArgMin (``kind`` "max" or "min") along ``axis`` as int64 (the last extreme with
    ``select_last_index``)."""
    fn = ember.argmax if kind == "max" else ember.argmin
    if select_last_index:
        flipped = fn(x.flip(axis), dim=axis, keepdim=bool(keepdims))
        return x.shape[axis] - 1 - flipped
    return fn(x, dim=axis, keepdim=bool(keepdims))


def layer_norm(x, scale, bias=None, axis: int = -1, epsilon: float = 1e-5):
    """LayerNormalization over dims ``axis..`` with ``scale``/``bias`` broadcast there."""
    axis = axis % x.dim()
    return F.layer_norm(x, tuple(x.shape[axis:]), scale, bias, epsilon)


def global_pool(kind: str, x):
    """GlobalAveragePool/GlobalMaxPool (``kind`` "average" or "max"): over every dim after
    [N, C], kept as 1s."""
    fn = ember.mean if kind == "average" else ember.amax
    return fn(x, dim=tuple(range(2, x.dim())), keepdim=True)


def transpose(x, perm=None):
    """Transpose: dims permuted by ``perm`` (reversed when None)."""
    return x.permute(list(range(x.dim()))[::-1] if perm is None else list(perm))


def trilu(x, k, upper: int = 1):
    """Trilu: the upper (or lower) triangle from diagonal ``k`` of the last two dims."""
    return ember.triu(x, int(_scalar(k))) if upper else ember.tril(x, int(_scalar(k)))


def cumsum(x, axis: int, exclusive: int = 0, reverse: int = 0):
    """CumSum along ``axis``; ``exclusive`` leaves each element out of its own sum,
    ``reverse`` sums from the end."""
    if reverse:
        x = x.flip(axis)
    y = ember.cumsum(x, dim=axis)
    if exclusive:
        y = y - x
    return y.flip(axis) if reverse else y


_POOLS = {"max": {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d},
          "average": {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}}


def pool(kind: str, x, kernel, strides, pads, dilations=None, ceil_mode: int = 0, count_include_pad: int = 0):
    """MaxPool/AveragePool (``kind`` "max" or "average") with pads that differ between the
    begin and the end of an axis: padded first (-inf for max), pooled, and cut to ONNX's
    output size, in which no window starts in the end padding. Without
    ``count_include_pad`` an average divides by the window's positions inside ``x``."""
    k = len(kernel)
    dilations = list(dilations or [1] * k)
    begin, end = list(pads[:k]), list(pads[k:])
    torch_pads = []
    for i in reversed(range(k)):
        torch_pads += [begin[i], end[i]]
    fn = _POOLS[kind][k]
    if kind == "max":
        y = fn(F.pad(x, torch_pads, value=float("-inf")), list(kernel), list(strides), 0, dilations,
               ceil_mode=bool(ceil_mode))
    else:
        y = fn(F.pad(x, torch_pads), list(kernel), list(strides), 0, ceil_mode=bool(ceil_mode))
        if not count_include_pad:  # the mean over the positions of x: both pools divide alike
            ones = ember.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype, device=x.device)
            y = y / fn(F.pad(ones, torch_pads), list(kernel), list(strides), 0, ceil_mode=bool(ceil_mode))
    index = [_slice(None), _slice(None)]
    for i in range(k):
        size, span = x.shape[2 + i], dilations[i] * (kernel[i] - 1) + 1
        room = size + begin[i] + end[i] - span
        count = (-(-room // strides[i]) if ceil_mode else room // strides[i]) + 1
        if ceil_mode and (count - 1) * strides[i] >= size + begin[i]:
            count -= 1
        index.append(_slice(0, count))
    return y[tuple(index)]
