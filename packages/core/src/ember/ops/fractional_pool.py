"""Fractional max pooling in 2 and 3 dimensions (torch.nn.functional.fractional_max_pool2d,
fractional_max_pool3d; Graham, "Fractional Max-Pooling", arXiv:1412.6071).

Each (batch, channel) plane draws one number ``u`` in [0, 1) per spatial axis (given as
``_random_samples`` ``[N, C, nd]``, else drawn uniformly).  Along an axis of input size
``L``, output size ``M`` and window ``k``, the windows start at
``floor((i + u) * a) - floor(u * a)`` for ``i < M - 1``, with ``a = (L - k) / (M - 1)``
computed in the input's dtype, and the last one at ``L - k`` (torch's pseudo-random
sequence).  The samples' last axis runs over the spatial axes from the last one back in
2-d (width, then height) and from the first one on in 3-d (time, height, width), as
torch reads them.  Each output is the first maximum of its window (a NaN wins); the
gradient goes to that input cell.
"""

from __future__ import annotations

import math

from .. import _dtype as D
from .._tensor import _make
from ._helpers import be, needs_grad, record
from .pool import _batched, _first_max, _index_scatter_rule, _ntuple

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]


def _starts(xp, u, size, out, k, dtype):
    """Window starts ``[P, out]`` along one axis for the per-plane samples ``u`` ``[P]``."""
    starts = xp.empty((u.shape[0], out), dtype=xp.int64)
    if out > 1:
        alpha = (xp.asarray(size - k, dtype=dtype) / xp.asarray(out - 1, dtype=dtype)).astype(dtype)
        i = xp.arange(out - 1, dtype=dtype)
        # the products stay in the input's dtype before truncation, as torch computes them
        starts[:, :-1] = ((i[None, :] + u[:, None]).astype(dtype) * alpha).astype(dtype).astype(xp.int64) - \
            (u * alpha).astype(dtype).astype(xp.int64)[:, None]
    if out > 0:
        starts[:, -1] = size - k
    return starts


def _output_size(input, nd, output_size, output_ratio, name):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) * (nd if len(output_ratio) == 1 else 1) if isinstance(
            output_ratio, (tuple, list)) else (output_ratio,) * nd
        return tuple(int(input.shape[input.ndim - nd + i] * ratio[i]) for i in range(nd))
    return _ntuple(output_size, nd, "output_size", name)


def _fractional_max(input, nd, kernel_size, output_size, output_ratio, return_indices, samples, name):
    if input.ndim not in (nd + 1, nd + 2) or 0 in input.shape[-nd - 1:]:
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    k = _ntuple(kernel_size, nd, "kernel_size", name)
    out = _output_size(input, nd, output_size, output_ratio, name)
    x, unbatched = _batched(input, nd)
    n, c, sizes = x.shape[0], x.shape[1], tuple(x.shape[2:])
    for axis, (size, o, kk) in enumerate(zip(sizes, out, k)):
        if o + kk - 1 > size or (nd == 3 and o + kk - 1 == size):  # torch's 3-d check is strict
            word = ("time", "height", "width")[3 - nd + axis]
            raise RuntimeError(f"{name}_out(): pool {word} {kk} too large relative to input {word} {size}")
    if samples is None:
        from .creation import rand
        samples = rand(n, c, nd, dtype=x.dtype, device=x.device)
    if tuple(samples.shape) != (n, c, nd):
        raise RuntimeError(f"{name}(): expected _random_samples of shape {[n, c, nd]}, got {list(samples.shape)}")
    xp = be(x).xp
    dt = x._data.dtype
    u = samples._data.reshape(n * c, nd).astype(dt, copy=False)
    order = tuple(reversed(range(nd))) if nd == 2 else tuple(range(nd))  # which sample drives which axis
    # flat plane index of every (plane, output cell, window offset)
    table, plane = xp.zeros((n * c,) + (1,) * (2 * nd), dtype=xp.int64), 1
    for i in reversed(range(nd)):
        starts = _starts(xp, u[:, order.index(i)], sizes[i], out[i], k[i], dt)
        shape = [n * c] + [1] * (2 * nd)
        shape[1 + i], shape[1 + nd + i] = out[i], k[i]
        pos = starts.reshape(n * c, out[i], 1) + xp.arange(k[i])
        table = table + pos.reshape(shape) * plane
        plane *= sizes[i]
    cells, kk = math.prod(out), math.prod(k)
    table = table.reshape(n * c, cells, kk)
    flat = x._data.reshape(n * c, plane)
    xw = xp.take_along_axis(flat, table.reshape(n * c, cells * kk), axis=1).reshape(n * c * cells, kk).T
    best, arg = _first_max(xp, xp.ascontiguousarray(xw), x.dtype.is_floating_point)
    idx = xp.take_along_axis(table.reshape(n * c * cells, kk), arg.reshape(-1, 1).astype(xp.int64), axis=1)
    shape = ((c,) if unbatched else (n, c)) + out
    r = _make(xp.ascontiguousarray(best.reshape(shape)), x.dtype)
    ind = _make(xp.ascontiguousarray(idx.reshape(shape)), D.int64)
    if needs_grad(input):
        record(f"FractionalMaxPool{nd}DBackward0", _unbatched_rule if unbatched else _index_scatter_rule, (input,),
               r, (ind, input.shape))
    return (r, ind) if return_indices else r


def _unbatched_rule(g, ind, shape):
    return _index_scatter_rule(g.unsqueeze(0), ind.unsqueeze(0), (1,) + tuple(shape)).squeeze(0)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling (torch.nn.functional.fractional_max_pool2d; Graham, "Fractional
    Max-Pooling", arXiv:1412.6071): windows of ``kernel_size`` at pseudo-random places, one draw
    per plane and axis (see the module docstring), which shrink the input by a non-integer
    factor.

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), float; the output is ``[N, C, oH,
    oW]`` of its dtype. ``kernel_size``: the window, an int or a pair. ``output_size``: the
    output's spatial size, an int or a pair; or ``output_ratio``: a float or a pair in (0, 1),
    each output size ``int(size * ratio)`` (one of the two is required). ``return_indices``:
    also return the int64 index of each maximum, flat into ``H * W`` of its plane; the result is
    then ``(values, indices)``. ``_random_samples``: ``[N, C, 2]`` in [0, 1) fixing the places
    (drawn uniformly when None). The gradient goes to the maximum's input cell.

    ValueError without an output size or ratio; RuntimeError for a window that does not fit
    (``oH + kH - 1 > H``), an input of other dims or an empty one, or ``_random_samples`` of
    another shape."""
    return _fractional_max(input, 2, kernel_size, output_size, output_ratio, return_indices, _random_samples,
                           "fractional_max_pool2d")


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool2d that always returns ``(values, indices)``; ``return_indices`` is
    accepted and ignored (torch.nn.functional.fractional_max_pool2d_with_indices).

    ``input``: ``[N, C, H, W]`` (or unbatched ``[C, H, W]``), float; the output is ``[N, C, oH,
    oW]`` of its dtype. ``kernel_size``: the window, an int or a pair. ``output_size``: the
    output's spatial size, an int or a pair; or ``output_ratio``: a float or a pair in (0, 1),
    each output size ``int(size * ratio)`` (one of the two is required). ``_random_samples``:
    ``[N, C, 2]`` in [0, 1) fixing the places (drawn uniformly when None). The gradient goes to
    the maximum's input cell.

    ValueError without an output size or ratio; RuntimeError for a window that does not fit
    (``oH + kH - 1 > H``), an input of other dims or an empty one, or ``_random_samples`` of
    another shape."""
    return _fractional_max(input, 2, kernel_size, output_size, output_ratio, True, _random_samples,
                           "fractional_max_pool2d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling (torch.nn.functional.fractional_max_pool3d; Graham, "Fractional
    Max-Pooling", arXiv:1412.6071): windows of ``kernel_size`` at pseudo-random places, one draw
    per plane and axis (see the module docstring), which shrink the input by a non-integer
    factor.

    ``input``: ``[N, C, T, H, W]`` (or unbatched ``[C, T, H, W]``), float; the output is ``[N,
    C, oT, oH, oW]`` of its dtype. ``kernel_size``: the window, an int or a triple.
    ``output_size``: the output's spatial size, an int or a triple; or ``output_ratio``: a float
    or a triple in (0, 1), each output size ``int(size * ratio)`` (one of the two is required).
    ``return_indices``: also return the int64 index of each maximum, flat into ``T * H * W`` of
    its plane; the result is then ``(values, indices)``. ``_random_samples``: ``[N, C, 3]`` in
    [0, 1) fixing the places (drawn uniformly when None). The gradient goes to the maximum's
    input cell.

    ValueError without an output size or ratio; RuntimeError, as torch, already when ``oT + kT -
    1 == T`` (the 3-d check is strict), an input of other dims or an empty one, or
    ``_random_samples`` of another shape."""
    return _fractional_max(input, 3, kernel_size, output_size, output_ratio, return_indices, _random_samples,
                           "fractional_max_pool3d")


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """fractional_max_pool3d that always returns ``(values, indices)``; ``return_indices`` is
    accepted and ignored (torch.nn.functional.fractional_max_pool3d_with_indices).

    ``input``: ``[N, C, T, H, W]`` (or unbatched ``[C, T, H, W]``), float; the output is ``[N,
    C, oT, oH, oW]`` of its dtype. ``kernel_size``: the window, an int or a triple.
    ``output_size``: the output's spatial size, an int or a triple; or ``output_ratio``: a float
    or a triple in (0, 1), each output size ``int(size * ratio)`` (one of the two is required).
    ``_random_samples``: ``[N, C, 3]`` in [0, 1) fixing the places (drawn uniformly when None).
    The gradient goes to the maximum's input cell.

    ValueError without an output size or ratio; RuntimeError, as torch, already when ``oT + kT -
    1 == T`` (the 3-d check is strict), an input of other dims or an empty one, or
    ``_random_samples`` of another shape."""
    return _fractional_max(input, 3, kernel_size, output_size, output_ratio, True, _random_samples,
                           "fractional_max_pool3d")
