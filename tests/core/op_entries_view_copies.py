"""Conformance entries: the copying forms of the view ops, the scatter forms and the
unsafe splits.  A copy must equal its view and own its memory (writing to it leaves the
input alone: checked by the entries that write into the copy)."""

import numpy as np
import torch
from op_table import Arg, Op, Sample, f, i64, nc


def _written(L, a, copy):
    """``copy`` after a write, and the input (unchanged by it)."""
    c = copy.detach()
    c.view(-1)[0] = 100.0 if c.numel() else 0.0
    return c, a


def _copies(L, a):
    return (L.alias_copy(a), L.as_strided_copy(a.contiguous(), (2, 2), (1, 2), 1), L.diagonal_copy(a, 1),
            L.diagonal_copy(a, offset=-1, dim1=1, dim2=0), L.expand_copy(a[:1], (2, 3, 4)),
            L.expand_copy(a[:1], (-1, 4), implicit=True), L.narrow_copy(a, 1, 1, 2), a.narrow_copy(0, 1, 2),
            L.narrow_copy(a, 1, L.tensor(1), 2), L.permute_copy(a, (1, 0)), L.select_copy(a, 1, -1),
            L.slice_copy(a, 1, 1, 3), L.slice_copy(a), L.slice_copy(a, 1, None, None, 2), L.slice_copy(a, 0, -2, 10),
            L.slice_copy(a, 1, 3, 1), L.squeeze_copy(a[:1]), L.squeeze_copy(a[:1], 0), L.squeeze_copy(a[:1], (0, 1)),
            L.t_copy(a), L.transpose_copy(a, 0, 1), L.unfold_copy(a, 1, 2, 1), L.unsqueeze_copy(a, 1),
            L.view_copy(a.contiguous(), (2, 6)))


def _multi_copies(L, a):
    return L.split_copy(a, 2, 1), L.split_with_sizes_copy(a, [1, 2], 0), L.unbind_copy(a, 1)


def _copies_out(L, a):
    outs = [L.empty(0) for _ in range(5)]
    return (L.narrow_copy(a, 1, 0, 2, out=outs[0]), L.t_copy(a, out=outs[1]), L.view_copy(a, (4, 3), out=outs[2]),
            L.slice_copy(a, 0, 1, out=outs[3]), L.diagonal_copy(a, out=outs[4]), outs,
            L.split_copy(a, 2, 0, out=[L.empty(2, 4), L.empty(1, 4)]), a.narrow_copy(0, -2, 2))


def _fresh_memory(L, a):
    return _written(L, a, L.view_copy(a, (12,))) + _written(L, a, L.narrow_copy(a, 0, 0, 1)) + \
        _written(L, a, L.t_copy(a))


def _complex_copies(L, z, r):
    return L.view_as_real_copy(z), L.view_as_complex_copy(r), L.view_as_real_copy(L.view_as_complex_copy(r))


def _view_dtype(L, a, i):
    return L.view_copy(a, L.int32), L.view_copy(i, L.float64), L.view_copy(a, L.float32)


def _as_strided_scatter(L, a, src, size, stride, offset):
    if L is torch:  # torch's gradient for the input is wrong (zero outside the region): a CopySlices instead
        r = a.clone()
        r.as_strided(size, stride, offset if offset is not None else r.storage_offset()).copy_(src)
        return r
    return L.as_strided_scatter(a, src, size, stride, offset)


def _scatters(L, a, s_rows, s_col, s_diag, s_block):
    c = a.contiguous()  # torch's as_strided_scatter takes contiguous inputs only when a gradient is wanted
    return (L.slice_scatter(a, s_rows, 1, 0, 4, 2), a.slice_scatter(s_rows[:1, :].expand(1, 2).repeat(1, 2), 0, 2),
            L.select_scatter(a, s_col, 1, -1), a.select_scatter(s_col[:1].expand(4), 0, 1),
            L.diagonal_scatter(a, s_diag, 0), a.diagonal_scatter(s_diag, -1, 1, 0),
            _as_strided_scatter(L, c, s_block, (2, 2), (1, 2), 1),
            _as_strided_scatter(L, c, s_block, (2, 2), (4, 1), None))


def _as_strided_scatter_forms(L, a, s):
    return L.as_strided_scatter(a, s, (2, 2), (1, 2), 1), a.as_strided_scatter(s, (2, 2), (4, 1), 2)


def _scatter_dtypes(L, a, d, i):
    return (L.slice_scatter(a, d, 1, 0, 4, 2), L.select_scatter(a, i[0].double(), 0, 1),
            L.slice_scatter(i, d.long(), 1, 0, 4, 2))


def _splits(L, a):
    return (L.split_with_sizes(a, [1, 3], 1), a.split_with_sizes([2, 1]), L.unsafe_chunk(a, 2, 1), a.unsafe_chunk(2),
            L.unsafe_split(a, 2, 0), a.unsafe_split(1, 1), L.unsafe_split_with_sizes(a, [1, 3], 1),
            a.unsafe_split_with_sizes([1, 2]))


OPS = [
    Op("view_copies", _copies, [Sample((f(3, 4),)), Sample((nc(f(3, 4)),))]),
    Op("view_copies_multi", _multi_copies, [Sample((f(3, 4),)), Sample((nc(f(3, 4)),))]),
    Op("view_copies_out", _copies_out, [Sample((f(3, 4),))], grad=False),
    Op("view_copies_fresh_memory", _fresh_memory, [Sample((f(3, 4),))], grad=False),
    Op("view_copies_complex", _complex_copies, [Sample((Arg(f(3, 2).astype(np.float32).view(np.complex64)[:, 0]),
                                                        f(3, 2)))], grad=False),
    Op("view_as_real_copy_grad", lambda L, r: L.view_as_real_copy(L.view_as_complex(r)), [Sample((f(3, 2),))]),
    Op("view_copy_dtype", _view_dtype, [Sample((f(3, 4), i64(2, 3)))], grad=False),
    Op("detach_copy", lambda L, a: L.detach_copy(a), [Sample((f(3, 4),))], grad=False),
    Op("detach_copy_no_derivative", lambda L, a: L.detach_copy(a).sum().backward(), [], gradcheck=False,
       errors=[(Sample((f(3),)), RuntimeError)]),
    Op("view_as_complex_copy_no_derivative", lambda L, a: L.view_as_complex_copy(a), [], gradcheck=False,
       errors=[(Sample((f(3, 2),)), RuntimeError)]),
    Op("view_copies_misuse", lambda L, a, which: [lambda: L.narrow_copy(a, 1, 3, 2), lambda: L.slice_copy(a, 1, step=0),
                                                  lambda: L.split_copy(a, [1, 3], 1),
                                                  lambda: L.split_with_sizes_copy(a, [1, 1], 0),
                                                  lambda: L.t_copy(a.unsqueeze(0)), lambda: L.view_copy(a, -1),
                                                  lambda: L.view_as_complex_copy(a.detach())][which](),
       [], grad=False,
       errors=[(Sample((f(3, 4), 0)), RuntimeError), (Sample((f(3, 4), 1)), RuntimeError),
               (Sample((f(3, 4), 2)), TypeError), (Sample((f(3, 4), 3)), RuntimeError),
               (Sample((f(3, 4), 4)), RuntimeError), (Sample((f(3, 4), 5)), TypeError),
               (Sample((f(3, 4), 6)), RuntimeError)]),
    Op("scatters", _scatters, [Sample((f(3, 4), f(3, 2), f(3), f(3), f(2, 2))),
                               Sample((nc(f(3, 4)), f(3, 2), f(3), f(3), f(2, 2)))]),
    Op("as_strided_scatter", _as_strided_scatter_forms, [Sample((f(3, 4), f(2, 2)))], grad=False),
    Op("scatters_dtypes", _scatter_dtypes, [Sample((f(3, 4), Arg(f(3, 2).astype(np.float64)), i64(3, 4)))],
       grad=False),
    Op("scatters_misuse", lambda L, a, s, which: [lambda: L.diagonal_scatter(a, s, 1),
                                                  lambda: L.select_scatter(a, s, 0, 1),
                                                  lambda: L.slice_scatter(a, s, 1, 0, 4, 2)][which](),
       [], grad=False,
       errors=[(Sample((f(3, 4), f(2), 0)), RuntimeError), (Sample((f(3, 4), f(3), 1)), RuntimeError),
               (Sample((f(3, 4), f(3, 3), 2)), RuntimeError)]),
    Op("unsafe_splits", _splits, [Sample((f(3, 4),)), Sample((nc(f(3, 4)),))],
       errors=[(Sample((f(3, 5),)), RuntimeError)]),
    Op("unsafe_splits_misuse", lambda L, a, which: [lambda: L.unsafe_split(a, [1, 3], 1),
                                                    lambda: L.unsafe_chunk(a, 0),
                                                    lambda: L.split_with_sizes(a, [1, 1])][which](),
       [], grad=False,
       errors=[(Sample((f(3, 4), 0)), TypeError), (Sample((f(3, 4), 1)), RuntimeError),
               (Sample((f(3, 4), 2)), RuntimeError)]),
]

# the as_strided_scatter entries compare with torch's CopySlices (see _as_strided_scatter)
NODE_NAMES_DIFFER = {"scatters"}
