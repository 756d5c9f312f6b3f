"""The copying forms of the view ops (``view_copy``, ``narrow_copy``, ``split_copy``, ...),
the scatter forms that write ``src`` into a copy of ``input`` where a view would see it
(``slice_scatter``, ``select_scatter``, ``diagonal_scatter``, ``as_strided_scatter``), and
the ``unsafe_`` splits.

A copy form takes its view with ember's view op and hands back fresh memory; its node
(named as torch's: the view's node with ``_copy``) passes the gradient on to the view's,
so the gradient, and double backward, are the view's.  A scatter's gradient is the
incoming one with the region zeroed (for ``input``) and the region itself (for
``src``), both ember ops.  Every copy form takes ``out=``, as torch's do.
"""

from __future__ import annotations

import builtins

from .. import _dtype as D
from .._tensor import Tensor, _make, _wrap_dim
from ..autograd.graph import record
from ._helpers import be, needs_grad, write_out

__all__ = [
    "alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
    "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy", "transpose_copy",
    "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy", "view_as_real_copy", "view_as_complex_copy",
    "as_strided_scatter", "diagonal_scatter", "select_scatter", "slice_scatter", "split_with_sizes",
    "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes",
]


# ---- copies of views ----------------------------------------------------------------------

def _fresh(v: Tensor) -> Tensor:
    return _make(be(v).copy(v._data), v.dtype)


def _pass_on(grads):
    return tuple(grads) if isinstance(grads, (tuple, list)) else grads


def _copied(view, node, out, name):
    """Fresh copies of ``view`` (a tensor or a tuple of views), recorded under ``node``."""
    if isinstance(view, (tuple, list)):
        copies = tuple(_fresh(v) for v in view)
        if needs_grad(*view):
            record(node, _pass_on, tuple(view), copies)
        if out is None:
            return copies
        write_out(copies, out, name)
        return None  # torch's out= form of a list result returns nothing
    copy = _fresh(view)
    if needs_grad(view):
        record(node, _pass_on, (view,), copy)
    return copy if out is None else write_out(copy, out, name)


def alias_copy(input, *, out=None):
    """A copy of ``input`` in fresh memory, same shape and dtype (torch.alias_copy); ``out``
    receives it when given."""
    return _copied(input[...], "AliasBackward0_copy", out, "alias_copy")


def as_strided_copy(input, size, stride, storage_offset=None, *, out=None):
    """A copy of ``as_strided(input, size, stride, storage_offset)`` (torch.as_strided_copy):
    the elements at ``storage_offset + sum(i_k * stride[k])`` of ``input``'s storage, in
    shape ``size`` (``stride`` and ``storage_offset`` in elements). ``out`` receives it when
    given."""
    from .layout import as_strided
    return _copied(as_strided(input, size, stride, storage_offset), "AsStridedBackward0_copy", out, "as_strided_copy")


def detach_copy(input, *, out=None):
    """A copy of ``input``, out of its graph (torch.detach_copy). torch marks the result as
    needing a gradient whose derivative is not implemented; ember does the same, so that
    backward through it raises as torch's does. ``out`` receives it when given."""
    from .numerics import _not_implemented_rule
    r = _fresh(input)
    if needs_grad(input):
        record("NotImplemented", _not_implemented_rule("detach_copy"), (input,), r)
    return r if out is None else write_out(r, out, "detach_copy")


def diagonal_copy(input, offset=0, dim1=0, dim2=1, *, out=None):
    """A copy of ``diagonal(input, offset, dim1, dim2)`` (torch.diagonal_copy): the diagonal at
    ``offset`` (above the main one when positive) of the planes of ``input`` spanned by
    ``dim1`` and ``dim2``, as a new last dim. ``out`` receives it when given."""
    from .layout import diagonal
    return _copied(diagonal(input, offset, dim1, dim2), "DiagonalBackward0_copy", out, "diagonal_copy")


def expand_copy(input, size, *, implicit=False, out=None):
    """A copy of ``input.expand(size)`` (torch.expand_copy): ``size`` lists the new sizes, -1
    keeping a dim's size; ``implicit`` is accepted and, as in torch, unused. ``out``
    receives it when given."""
    from .shape import expand
    return _copied(expand(input, size), "ExpandBackward0_copy", out, "expand_copy")


def narrow_copy(input, dim, start, length, *, out=None):
    """A copy of ``narrow(input, dim, start, length)``: the ``length`` elements of ``input``
    along ``dim`` from ``start`` (an int or a 0-d tensor) (torch.narrow_copy). ``out``
    receives it when given."""
    from .shape import narrow
    start = start.item() if isinstance(start, Tensor) else start
    return _copied(narrow(input, dim, start, length), "NarrowCopyBackward0", out, "narrow_copy")


def permute_copy(input, dims, *, out=None):
    """A copy of ``permute(input, dims)``: ``dims`` is a permutation of ``input``'s dims
    (torch.permute_copy). ``out`` receives it when given."""
    from .shape import permute
    return _copied(permute(input, dims), "PermuteBackward0_copy", out, "permute_copy")


def select_copy(input, dim, index, *, out=None):
    """A copy of ``select(input, dim, index)``: the slice of ``input`` at ``index`` along
    ``dim``, that dim removed (torch.select_copy). ``out`` receives it when given."""
    from .shape import select
    return _copied(select(input, dim, index), "SelectBackward0_copy", out, "select_copy")


def _slice_index(input, dim, start, end, step):
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, input.ndim)
    return d, (slice(None),) * d + (slice(start, end, step),)


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """A copy of ``input[..., start:end:step, ...]`` along ``dim`` (torch.slice_copy).

    ``start`` and ``end`` are clamped as Python's slice bounds (None for the ends); ``step``
    must be positive (RuntimeError otherwise). ``out`` receives it when given."""
    _, index = _slice_index(input, dim, start, end, step)
    return _copied(input[index], "SliceBackward0_copy", out, "slice_copy")


def split_copy(input, split_size, dim=0, *, out=None):
    """Copies of ``split(input, split_size, dim)``: pieces of ``input`` of ``split_size``
    elements along ``dim``, the last one shorter when it does not divide (torch.split_copy).
    An int ``split_size`` only: a list raises TypeError, as in torch. With ``out`` (a list
    of tensors) the pieces are written there and None is returned."""
    from .shape import split
    if isinstance(split_size, builtins.bool) or not isinstance(split_size, builtins.int):
        raise TypeError(f"split_copy(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _copied(split(input, split_size, dim), "SplitBackward0_copy", out, "split_copy")


def split_with_sizes_copy(input, split_sizes, dim=0, *, out=None):
    """Copies of ``split_with_sizes(input, split_sizes, dim)``: consecutive pieces of ``input``
    with the sizes ``split_sizes`` along ``dim``, which must sum to its size
    (torch.split_with_sizes_copy). With ``out`` (a list of tensors) the pieces are written
    there and None is returned."""
    return _copied(split_with_sizes(input, split_sizes, dim), "SplitWithSizesBackward0_copy", out,
                   "split_with_sizes_copy")


def squeeze_copy(input, dim=None, *, out=None):
    """A copy of ``squeeze(input, dim)``: ``dim`` None drops every size-1 dim of ``input``, an
    int or a tuple only those (torch.squeeze_copy). ``out`` receives it when given."""
    from .shape import squeeze
    node = "SqueezeBackward0_copy" if dim is None else "SqueezeBackward1_copy" if isinstance(dim, builtins.int) \
        else "SqueezeBackward2_copy"
    return _copied(squeeze(input, dim), node, out, "squeeze_copy")


def t_copy(input, *, out=None):
    """A copy of ``t(input)``: the transpose of a 2-d ``input``, a 0-d or 1-d one unchanged
    (torch.t_copy). More than 2 dims raise RuntimeError. ``out`` receives it when given."""
    from .shape import t
    return _copied(t(input), "TBackward0_copy", out, "t_copy")


def transpose_copy(input, dim0, dim1, *, out=None):
    """A copy of ``transpose(input, dim0, dim1)``: ``input`` with dims ``dim0`` and ``dim1``
    swapped (torch.transpose_copy). ``out`` receives it when given."""
    from .shape import transpose
    return _copied(transpose(input, dim0, dim1), "TransposeBackward0_copy", out, "transpose_copy")


def unbind_copy(input, dim=0, *, out=None):
    """Copies of ``unbind(input, dim)``: a tuple of the slices of ``input`` along ``dim``, that
    dim removed (torch.unbind_copy). With ``out`` (a list of tensors) the slices are written
    there and None is returned."""
    from .shape import unbind
    return _copied(unbind(input, dim), "UnbindBackward0_copy", out, "unbind_copy")


def unfold_copy(input, dimension, size, step, *, out=None):
    """A copy of ``input.unfold(dimension, size, step)``: the windows of ``size`` elements
    every ``step`` along ``dimension``, which becomes the number of windows, the window
    itself a new last dim (torch.unfold_copy). ``out`` receives it when given."""
    from .layout import unfold
    return _copied(unfold(input, dimension, size, step), "UnfoldBackward0_copy", out, "unfold_copy")


def unsqueeze_copy(input, dim, *, out=None):
    """A copy of ``unsqueeze(input, dim)``: ``input`` with a size-1 dim inserted at ``dim``
    (torch.unsqueeze_copy). ``out`` receives it when given."""
    from .shape import unsqueeze
    return _copied(unsqueeze(input, dim), "UnsqueezeBackward0_copy", out, "unsqueeze_copy")


def view_copy(input, size, *, out=None):
    """A copy of ``input.view(size)``, or, when ``size`` is a dtype, of ``input``'s bytes read
    as that dtype (torch.view_copy).

    ``size`` is a tuple of ints (one may be -1) or a dtype; an int raises TypeError. Read as
    a dtype of another item size, the last dim is scaled by the ratio of item sizes (it must
    divide: RuntimeError otherwise) and there is no gradient. ``out`` receives it when
    given."""
    from .shape import view
    if isinstance(size, (D.dtype, str)):
        dt = D.to_dtype(size)
        data = be(input).xp.ascontiguousarray(input._data)
        if dt.itemsize != input.dtype.itemsize and (input.ndim == 0 or
                                                    (data.shape[-1] * input.dtype.itemsize) % dt.itemsize):
            raise RuntimeError(f"self.size(-1) must be divisible by {dt.itemsize // input.dtype.itemsize or 1} to "
                               f"view {input.dtype} as {dt} (different element sizes)")
        r = _make(be(input).copy(data.view(dt.np)), dt)
        return r if out is None else write_out(r, out, "view_copy")
    if isinstance(size, builtins.int):
        raise TypeError("view_copy(): argument 'size' must be tuple of ints or a dtype, not int")
    return _copied(view(input, tuple(size)), "ViewBackward0_copy", out, "view_copy")


def view_as_real_copy(input, *, out=None):
    """A copy of ``view_as_real(input)``: a complex ``input`` of shape [...] as a real tensor
    of shape [..., 2], real and imaginary parts (torch.view_as_real_copy). ``out`` receives
    it when given."""
    from .complex_ops import view_as_real
    return _copied(view_as_real(input), "ViewAsRealBackward0_copy", out, "view_as_real_copy")


def view_as_complex_copy(input, *, out=None):
    """A copy of ``view_as_complex(input)``: a real ``input`` of shape [..., 2] read as complex
    of shape [...] (torch.view_as_complex_copy). RuntimeError when a gradient would be
    needed, as in torch (it has no derivative for complex outputs). ``out`` receives it when
    given."""
    from .complex_ops import view_as_complex
    if needs_grad(input):
        raise RuntimeError("view_as_complex_copy does not support automatic differentiation for outputs with "
                           "complex dtype.")
    return _copied(view_as_complex(input), "ViewAsComplexBackward0_copy", out, "view_as_complex_copy")


# ---- scatters -------------------------------------------------------------------------------

def _scatter(input, src, view_fn, node, scatter_fn):
    """A copy of ``input`` with ``src`` (cast to input's dtype) written where
    ``view_fn(input)`` would see it; ``scatter_fn(t, s)`` redoes this for the rule."""
    from ..autograd.grad_mode import no_grad
    from .elementwise import clone
    with no_grad():
        result = clone(input).contiguous() if not input.is_contiguous() else clone(input)
        region = view_fn(result)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(region.shape)}")
    region._data[...] = be(src).astype(src._data, input.dtype) if src.dtype is not input.dtype else src._data
    result = _make(result._data, input.dtype)
    if needs_grad(input, src):
        record(node, _scatter_rule, (input, src), result, (view_fn, scatter_fn, tuple(src.shape)))
    return result


def _scatter_rule(g, view_fn, scatter_fn, src_shape):
    from .creation import zeros
    from .elementwise import clone
    g_input = scatter_fn(g, zeros(src_shape, dtype=g.dtype, device=g.device))
    return g_input, clone(view_fn(g))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``src`` written into ``input[..., start:end:step, ...]`` along
    ``dim`` (torch.slice_scatter).

    ``src`` has that slice's shape (RuntimeError otherwise) and is cast to ``input``'s
    dtype; ``start``, ``end`` and ``step`` are as in ``slice_copy``. Differentiable in both."""
    _, index = _slice_index(input, dim, start, end, step)
    return _scatter(input, src, lambda t: t[index], "SliceScatterBackward0",
                    lambda t, s: slice_scatter(t, s, dim, start, end, step))


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``src`` written into ``select(input, dim, index)``, the slice
    at ``index`` along ``dim`` (torch.select_scatter). ``src`` has the shape of that slice
    (``input``'s without ``dim``; RuntimeError otherwise) and is cast to ``input``'s dtype."""
    from .shape import select
    return _scatter(input, src, lambda t: select(t, dim, index), "SelectScatterBackward0",
                    lambda t, s: select_scatter(t, s, dim, index))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``src`` written into its diagonal at ``offset`` (above the main
    one when positive) of the planes spanned by ``dim1`` and ``dim2``, as ``diagonal`` would
    see it (torch.diagonal_scatter). ``src`` has the diagonal's shape (RuntimeError
    otherwise) and is cast to ``input``'s dtype."""
    from .layout import diagonal
    return _scatter(input, src, lambda t: diagonal(t, offset, dim1, dim2), "DiagonalScatterBackward0",
                    lambda t, s: diagonal_scatter(t, s, offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written into ``as_strided(input, size, stride,
    storage_offset)`` of its contiguous copy (``stride`` and ``storage_offset`` in elements)
    (torch.as_strided_scatter).

    ``src`` has shape ``size`` (RuntimeError otherwise). The gradient for ``input`` is the
    incoming one outside the written elements; torch 2.13 keeps it only inside them (its
    gradcheck fails), so ember follows the derivative."""
    from .layout import as_strided
    return _scatter(input, src, lambda t: as_strided(t.contiguous(), size, stride, storage_offset),
                    "AsStridedScatterBackward0",
                    lambda t, s: as_strided_scatter(t, s, size, stride, storage_offset))


# ---- splits -----------------------------------------------------------------------------------

def _sizes_list(split_sizes, name):
    if isinstance(split_sizes, builtins.int) or isinstance(split_sizes, Tensor):
        raise TypeError(f"{name}(): argument 'split_sizes' (position 2) must be tuple of ints, not "
                        f"{type(split_sizes).__name__}")
    return [builtins.int(s) for s in split_sizes]


def split_with_sizes(input, split_sizes, dim=0):
    """Views of consecutive pieces of ``input`` along ``dim`` with the sizes ``split_sizes`` (a
    list of ints that must sum to the dim's size: RuntimeError otherwise; an int raises
    TypeError) (torch.split_with_sizes)."""
    from .shape import split
    return split(input, _sizes_list(split_sizes, "split_with_sizes"), dim)


def _unsafe(input, sizes, dim, node):
    from .shape import _split_bounds, _views_along
    d = _wrap_dim(dim, input.ndim)
    return _views_along(input, d, _split_bounds(input, sizes, d), False, node)


def unsafe_split(tensor, split_size, dim=0):
    """``split`` of ``tensor`` along ``dim`` into pieces of the int ``split_size``, without
    torch's checks on in-place use of the pieces (ember's views never had them)
    (torch.unsafe_split). A list raises TypeError."""
    if isinstance(split_size, builtins.bool) or not isinstance(split_size, builtins.int):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _unsafe(tensor, split_size, dim, "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` of ``input`` along ``dim`` into pieces of the sizes
    ``split_sizes``, without the in-place checks (torch.unsafe_split_with_sizes)."""
    return _unsafe(input, _sizes_list(split_sizes, "unsafe_split_with_sizes"), dim, "UnsafeSplitWithSizesBackward0")


def unsafe_chunk(input, chunks, dim=0):
    """``chunk(input, chunks, dim)`` without the in-place checks (torch.unsafe_chunk):
    ``chunks`` pieces of ``input`` along ``dim`` of ``ceil(size / chunks)`` elements (fewer
    when they run out). ``chunks`` <= 0 raises RuntimeError."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0")
    d = _wrap_dim(dim, input.ndim)
    n = input.shape[d]
    return _unsafe(input, -(-n // chunks) if n else 1, d, "UnsafeSplitBackward0")
