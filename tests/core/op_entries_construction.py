"""Conformance entries: tensors built from others or from a description (block_diag,
cartesian_prod, combinations, vander, tril/triu_indices, unravel_index, isin,
empty_strided, empty_permuted, frombuffer, range, constant_pad_nd)."""

import array
import warnings

import numpy as np
import torch
from op_table import Arg, Op, Sample, f, i64, nc


def _warned(fn):
    """``fn()`` and the categories of the warnings it gave (compared with torch's)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = fn()
    return result, tuple(w.category.__name__ for w in seen)


def _block_diag(L, a, b, c):
    return (L.block_diag(a, b, c), L.block_diag(c, a), L.block_diag(a, b[:, :0]), L.block_diag(b[:0], c),
            L.block_diag(a))


def _block_diag_dtypes(L, a, i, m):
    return (L.block_diag(a, i), L.block_diag(i, i), L.block_diag(a, a.double()), L.block_diag(m, ~m),
            L.block_diag(), L.block_diag(a, i.to(L.complex64)))


def _cartesian(L, a, b, c):
    return L.cartesian_prod(a, b), L.cartesian_prod(a, b, c), L.cartesian_prod(a), L.cartesian_prod(a, b[:0])


def _combinations(L, a):
    return (L.combinations(a), L.combinations(a, 3), L.combinations(a, 2, with_replacement=True),
            L.combinations(a, r=1), L.combinations(a, 5))


def _vander_grad(L, x):
    if L is torch:  # torch's vander raises in backward (it writes its result in place): powers instead
        return x.unsqueeze(1) ** torch.arange(3, -1, -1), x.unsqueeze(1) ** torch.arange(5)
    return L.vander(x, 4), L.vander(x, 5, increasing=True)


def _vander(L, x):
    return L.vander(x), L.vander(x, 2), L.vander(x, N=5, increasing=True), L.vander(x, 1), L.vander(x, 0)


def _indices(L):
    return tuple(fn(*args, **kw) for fn in (L.tril_indices, L.triu_indices)
                 for args, kw in (((3, 3), {}), ((3, 4, 1), {}), ((4, 3, -1), {}), ((3, 3), {"dtype": L.int32}),
                                  ((0, 3), {}), ((3, 3, -5), {}), ((3, 3, 10), {}), ((1, 1), {"offset": 0})))


def _unravel(L, i):
    return (L.unravel_index(i, (3, 4)), L.unravel_index(i[0], (2, 2, 3)), L.unravel_index(i, 12),
            L.unravel_index(i - 5, L.Size([3, 4])), L.unravel_index(i.to(L.int32), (12,)), L.unravel_index(i, ()))


def _isin(L, a, t, x):
    return (L.isin(a, t), L.isin(a, t, invert=True), L.isin(a, 2), L.isin(3, t), L.isin(x, t),
            L.isin(a, t.double()), L.isin(a, t.unsqueeze(0), assume_unique=False),
            L.isin(L.tensor([np.nan, 1.0]), L.tensor([np.nan])), L.isin(a.to(L.uint8), t.to(L.int8)),
            L.isin(a, t, out=L.empty(0, dtype=L.bool)))


def _strided(L):
    made = [L.empty_strided((2, 3), (1, 2)), L.empty_strided((2, 3), (4, 1), dtype=L.int64),
            L.empty_strided((2, 3), (0, 1)), L.empty_strided((2, 3, 2), (1, 4, 2), dtype=L.float64),
            L.empty_permuted((2, 3, 4), (0, 2, 1)), L.empty_permuted((2, 3, 4), (2, 0, 1), dtype=L.float64),
            L.empty_permuted((3, 2), (1, 0), requires_grad=True)]
    out = []
    for t in made:
        out += [t.stride(), t.dtype == L.float64, t.requires_grad, t.detach().fill_(1.5)]
    return tuple(out)


def _frombuffer(L):
    buf = bytearray(np.arange(1, 7, dtype=np.int32).tobytes())
    whole = L.frombuffer(buf, dtype=L.int32)
    part = L.frombuffer(buf, dtype=L.int32, count=2, offset=4)
    shorts = L.frombuffer(buf, dtype=L.int16, offset=2)
    floats = L.frombuffer(array.array("f", [1.5, 2.5]), dtype=L.float32, requires_grad=True)
    buf[0] = 9  # the tensors share the buffer's memory
    ro, warned = _warned(lambda: L.frombuffer(bytes(buf), dtype=L.uint8, count=3))
    return whole, part, shorts, floats, floats.requires_grad, ro, warned


def _range(L):
    return tuple(_warned(lambda args=args, kw=kw: L.range(*args, **kw))
                 for args, kw in (((1, 4), {}), ((1, 4, 0.5), {}), ((0, 1, 0.3), {}), ((0, 1, 0.1), {}),
                                  ((1, 4), {"dtype": L.int64}), ((4, 1, -1), {}), ((1, 1), {}),
                                  ((0.5, 2), {"dtype": L.int64}), ((0, 10, 3), {"dtype": L.float64}),
                                  ((), {"start": 1, "end": 3}), ((1, 4), {"out": L.empty(0)})))


def _pad(L, a):
    return (L.constant_pad_nd(a, (1, 2)), L.constant_pad_nd(a, [1, 0, 0, 1], 2.5), L.constant_pad_nd(a, (-1, 1)),
            L.constant_pad_nd(a, (0, 0, -1, 2), value=1), L.constant_pad_nd(a, ()))


OPS = [
    Op("block_diag", _block_diag, [Sample((f(2, 2), f(2, 3), f(3))), Sample((nc(f(2, 3)), f(1, 2), f()))],
       errors=[(Sample((f(2, 3, 4), f(2), f(2))), RuntimeError)]),
    Op("block_diag_dtypes", _block_diag_dtypes, [Sample((f(2, 2), i64(1, 3), np.array([True, False])))], grad=False),
    Op("cartesian_prod", _cartesian, [Sample((f(3), f(2), f(2)))],
       errors=[(Sample((f(3), i64(2), f(2))), RuntimeError), (Sample((f(3), f(2, 2), f(2))), RuntimeError)]),
    Op("cartesian_prod_ints", lambda L, a, b: L.cartesian_prod(a, b), [Sample((i64(3), i64(4)))], grad=False),
    Op("combinations", _combinations, [Sample((f(4),)), Sample((f(3),))],
       errors=[(Sample((f(2, 2),)), RuntimeError)]),
    Op("combinations_empty", lambda L, a: (L.combinations(a, 0), L.combinations(a[:0]), L.combinations(a, 4)),
       [Sample((f(3),))], grad=False),
    Op("combinations_negative", lambda L, a: L.combinations(a, -1), [], grad=False,
       errors=[(Sample((f(3),)), RuntimeError)]),
    Op("combinations_ints", lambda L, a: (L.combinations(a), L.combinations(a, 2, True)), [Sample((i64(4),))],
       grad=False),
    Op("vander", _vander, [Sample((f(3),)), Sample((f(4),))], grad=False,
       errors=[(Sample((f(2, 2),)), RuntimeError)]),
    Op("vander_grad", _vander_grad, [Sample((f(3),)), Sample((f(4),))]),
    Op("vander_dtypes", lambda L, i, m, x: (L.vander(i), L.vander(i.to(L.int8), 4), L.vander(m), L.vander(x.half(), 3),
                                            L.vander(x.double(), increasing=True)),
       [Sample((i64(3), np.array([True, False]), f(3)))], grad=False,
       errors=[(Sample((i64(3), np.array([True]), f())), RuntimeError)]),
    Op("vander_negative", lambda L, x: L.vander(x, -1), [], grad=False, errors=[(Sample((f(3),)), RuntimeError)]),
    Op("tril_indices", _indices, [Sample(())], grad=False),
    Op("tril_indices_misuse", lambda L, r, d: L.tril_indices(r, 3, dtype=getattr(L, d)), [], grad=False,
       errors=[(Sample((-1, "int64")), RuntimeError), (Sample((3, "float32")), NotImplementedError)]),
    Op("triu_indices_misuse", lambda L, c: L.triu_indices(3, c), [], grad=False,
       errors=[(Sample((-2,)), RuntimeError)]),
    Op("unravel_index", _unravel, [Sample((np.array([[4, 1, 7], [11, 0, 5]]),)), Sample((i64(2, 2, hi=12) - 6,))],
       grad=False),
    Op("unravel_index_misuse", lambda L, i, shape: L.unravel_index(i, shape), [], grad=False,
       errors=[(Sample((Arg(f(2), grad=False), (3, 3))), TypeError), (Sample((np.array([True]), (3,))), TypeError),
               (Sample((i64(2), (3, -3))), ValueError), (Sample((i64(2), (3, 0))), RuntimeError)]),
    Op("isin", _isin, [Sample((np.array([[1, 2], [3, 4]]), np.array([2, 4, 7]),
                               np.array([1.0, 2.5, 4.0], np.float32)))],
       grad=False, errors=[(Sample((np.array([True]), np.array([True]), f(1))), RuntimeError),
                           (Sample((i64(2), Arg(f(2).astype(np.complex64)), f(1))), RuntimeError)]),
    Op("empty_strided", _strided, [Sample(())], grad=False),
    Op("empty_strided_misuse", lambda L, size, stride: L.empty_strided(size, stride), [], grad=False,
       errors=[(Sample(((2, 3), (1,))), RuntimeError), (Sample(((2, 3), (-1, 1))), RuntimeError)]),
    Op("empty_permuted_misuse", lambda L, size, order: L.empty_permuted(size, order), [], grad=False,
       errors=[(Sample(((2, 3), (0, 0))), RuntimeError), (Sample(((2, 3), (0,))), RuntimeError),
               (Sample(((2, 3), (0, 2))), RuntimeError)]),
    Op("frombuffer", _frombuffer, [Sample(())], grad=False),
    Op("frombuffer_misuse", lambda L, buf, kw: L.frombuffer(buf, dtype=L.int32, **kw), [], grad=False,
       errors=[(Sample((bytearray(12), {"offset": 13})), ValueError),
               (Sample((bytearray(12), {"offset": 2})), ValueError),
               (Sample((bytearray(12), {"count": 4})), ValueError), (Sample((bytearray(12), {"count": 0})), ValueError),
               (Sample((bytearray(), {})), ValueError), (Sample((bytearray(12), {"offset": -1})), ValueError),
               (Sample(([1, 2], {})), ValueError)]),
    Op("range", _range, [Sample(())], grad=False),
    Op("range_misuse", lambda L, lo, hi, st: L.range(lo, hi, st), [], grad=False,
       errors=[(Sample((1, 4, 0)), RuntimeError), (Sample((4, 1, 1)), RuntimeError)]),
    Op("constant_pad_nd", _pad, [Sample((f(2, 3),)), Sample((nc(f(3, 4)),))],
       errors=[(Sample((f(2),)), RuntimeError)]),
    Op("constant_pad_nd_misuse", lambda L, a, pad: L.constant_pad_nd(a, pad), [], grad=False,
       errors=[(Sample((f(2, 2), (1,))), RuntimeError), (Sample((f(2, 2), (1, 1, 1, 1, 1, 1))), RuntimeError),
               (Sample((f(2, 2), (-3, 0))), RuntimeError)]),
    Op("constant_pad_nd_ints", lambda L, i: (L.constant_pad_nd(i, (1, 1), 2.5), L.constant_pad_nd(i, (0, 0, 1, 0))),
       [Sample((i64(2, 2),))], grad=False),
]

# composed of other ops: the last node is theirs (torch's vander ends in a CopySlices)
NODE_NAMES_DIFFER = {"vander_grad"}
