"""Conformance entries: Tensor methods and their top-level forms (fill_diagonal_, put,
index_reduce, renorm, sum_to_size, the is_* predicates, dim_order, the legacy ``new``,
apply_/map_/map2_, typename)."""

import numpy as np
from op_table import Arg, Op, Sample, f, i64, nc, pos


def _fill_diagonal(L, a):
    wrapped = a * 1
    wrapped.fill_diagonal_(-1.5, wrap=True)
    return (a * 1).fill_diagonal_(0.5), wrapped


def _fill_diagonal_view(L, a):
    c = a * 1
    c.t().fill_diagonal_(3.0, wrap=True)  # a view of a non-leaf: the base's history is rewritten
    return c


PUT_IDX = np.array([0, -1, 4])


def _put(L, a, s):
    idx = L.tensor(PUT_IDX)
    return (a.put(idx, s), L.put(a, L.tensor([1, 1, 5]), s, accumulate=True), (a * 1).put_(idx, s),
            (a * 1).put_(L.tensor([[2, 2], [0, 2]]).view(-1)[:3], s, accumulate=True))


def _index_reduce(reduce):
    def fn(L, a, s):
        idx = L.tensor([0, 2, 0])
        return (L.index_reduce(a, 0, idx, s, reduce), a.index_reduce(0, idx, s, reduce, include_self=False),
                (a * 1).index_reduce_(0, idx, s, reduce), a.mT.index_reduce(1, idx, s.mT, reduce, include_self=False))
    return fn


def _index_reduce_args(L, a, idx, s):
    return L.index_reduce(a, 0, idx, s, "amax")


def _ties(*shape):
    """Floats drawn from {0, 1, 2}: ties between self and source, and zeros for 'prod'."""
    return i64(*shape, hi=3).astype(np.float32)


def _renorm(L, a):
    return (L.renorm(a, 2, 0, 1.0), a.renorm(1, 1, 0.5), a.renorm(3, -1, 2.0), (a * 1).renorm_(2, 0, 1.0),
            a.renorm(float("inf"), 0, 1.0))


def _sum_to_size(L, a):
    return a.sum_to_size(3, 1), a.sum_to_size((1, 3, 4)), a.sum_to_size(4), a.sum_to_size(2, 3, 4), \
        a.sum_to_size(L.Size([2, 1, 1]))


def _predicates(L, a, b):
    return (a.is_same_size(b), L.is_same_size(a, a), a.is_signed(), L.is_signed(a.long()), L.is_signed(a > 0),
            L.is_signed(a.to(L.uint8)), a.is_conj(), L.is_conj(a), a.is_neg(), L.is_neg(a), L.resolve_neg(a),
            a.resolve_neg(), a.ndimension(), a.const_data_ptr() == a.data_ptr(), L.is_signed(a.to(L.complex64)),
            L.is_conj(a.to(L.complex64)))


def _is_nonzero(L, a):
    return L.is_nonzero(a), a.is_nonzero(), L.is_nonzero(a * 0), L.is_nonzero(a > 0)


def _dim_order(L, a):
    return (a.dim_order(), a.permute(2, 0, 1).dim_order(), a.transpose(0, 1).dim_order(), a[:, :1].dim_order(),
            a[:, :, ::2].dim_order(), a[0].t().dim_order(), a[0, 0].dim_order(), a[0, 0, 0].dim_order(),
            a[:, None].dim_order(), a.expand(2, 2, 3, 4).dim_order(),
            a.permute(1, 2, 0).dim_order(ambiguity_check=True))


def _new(L, a):
    return (a.new([1, 2]), a.new((2, 3)), a.new(np.array([[1, 2]])), a.new().shape, a.new(2, 3).shape,
            a.new(L.Size([2, 1])).shape, a.new(()).shape, a.new(0).shape, a.new(a).data_ptr() == a.data_ptr(),
            a.long().new([1.5, -2.5]), a.new(3, device="cpu").shape)


def _python_maps(L, a, b):
    return (a.clone().apply_(lambda v: v * 2 + 1), a.clone().map_(b, lambda x, y: x * y - 1),
            a.clone().map2_(b, a, lambda x, y, z: x + y * z), a.long().apply_(lambda v: v + 0.7),
            a.long().map_(b.long(), lambda x, y: x - y), (a > 0).apply_(lambda v: not v))


def _resize(L, a):
    grown = a.clone().resize_(3, 4)
    return (a.clone().resize_(2, 2), L.resize_as_(a.clone(), L.zeros(1, 3)),
            grown.shape, grown.stride(), a.new_empty_strided((2, 3), (1, 2)).stride(),
            L.empty_strided((2, 2), (2, 1)).stride(), a.ndimension())


def _typename(L, a):
    return (L.typename(a), L.typename(a.long()), L.typename(a > 0), L.typename(3), L.typename(None),
            L.typename("s"), L.typename(np.float32), L.is_storage(a), L.is_storage(3))


OPS = [
    Op("fill_diagonal_", _fill_diagonal, [Sample((f(3, 3),), name="square"), Sample((f(7, 3),), name="tall"),
                                          Sample((f(2, 5),), name="wide"), Sample((f(3, 3, 3),), name="cube"),
                                          Sample((nc(f(8, 3)),), name="noncontig")],
       errors=[(Sample((f(3),)), RuntimeError), (Sample((f(2, 3, 3),)), RuntimeError)]),
    Op("fill_diagonal_view", _fill_diagonal_view, [Sample((f(3, 7),)), Sample((f(3, 3),))]),
    Op("fill_diagonal_int", lambda L, a: a.fill_diagonal_(7), [Sample((i64(3, 4),))], grad=False),
    Op("put", _put, [Sample((f(2, 3), f(3)), name="2d"), Sample((nc(f(3, 2)), f(3)), name="noncontig")],
       errors=[(Sample((f(2, 3), f(2))), IndexError), (Sample((f(1, 2), f(3))), IndexError),
               (Sample((f(2, 3), i64(3))), RuntimeError)]),
    *[Op(f"index_reduce_{r}", _index_reduce(r), [Sample((pos(4, 3), pos(3, 3)), name="pos"),
                                                  Sample((f(4, 3), f(3, 3)), name="signed")])
      for r in ("prod", "mean", "amax", "amin")],
    *[Op(f"index_reduce_{r}_ties", _index_reduce(r), [Sample((_ties(4, 3), _ties(3, 3)))], gradcheck=False)
      for r in ("prod", "amax", "amin")],
    Op("index_reduce_int", lambda L, a, s: tuple(L.index_reduce(a, 0, L.tensor([0, 0, 3]), s, r, include_self=b)
                                                 for r in ("prod", "mean", "amax", "amin") for b in (True, False)),
       [Sample((i64(4, 2, hi=9), i64(3, 2, hi=9)))], grad=False),
    Op("index_reduce_args", _index_reduce_args, [Sample((f(4, 3), np.array([3, 0, 3]), f(3, 3)))],
       errors=[(Sample((f(4, 3), Arg(np.array([0.0, 1.0, 2.0]), grad=False), f(3, 3))), RuntimeError),
               (Sample((f(4, 3), np.array([[0, 1, 2]]), f(3, 3))), IndexError),
               (Sample((f(4, 3), np.array([0, 1]), f(3, 3))), RuntimeError),
               (Sample((f(4, 3), np.array([0, 1, 4]), f(3, 3))), IndexError)]),
    Op("index_reduce_bad_reduce", lambda L, a, s: L.index_reduce(a, 0, L.tensor([0, 1]), s, "sum"), [],
       errors=[(Sample((f(3, 2), f(2, 2))), RuntimeError)], grad=False),
    Op("renorm", _renorm, [Sample((f(3, 4),), name="2d"), Sample((f(2, 3, 2),), name="3d"),
                           Sample((nc(f(3, 4)),), name="noncontig")],
       errors=[(Sample((f(3),)), RuntimeError)]),
    Op("renorm_args", lambda L, a, p, m: L.renorm(a, p, 0, m), [Sample((f(3, 3), 2, 1.0))],
       errors=[(Sample((f(3, 3), 0, 1.0)), RuntimeError), (Sample((f(3, 3), -1, 1.0)), RuntimeError),
               (Sample((f(3, 3), 2, -1.0)), RuntimeError), (Sample((i64(3, 3), 2, 1.0)), RuntimeError)]),
    Op("sum_to_size", _sum_to_size, [Sample((f(2, 3, 4),))], errors=[(Sample((f(2, 2, 4),)), RuntimeError)]),
    Op("predicates", _predicates, [Sample((f(2, 3), f(2, 3)), name="same"), Sample((f(2, 3), f(3, 2)), name="other"),
                                   Sample((f(), f(1)), name="0d")], grad=False),
    Op("is_nonzero", _is_nonzero, [Sample((np.array([0.5], np.float32),), name="1"),
                                   Sample((np.array([[-2.0]], np.float32),), name="1x1"),
                                   Sample((np.array(0.0, np.float32),), name="zero")], grad=False,
       errors=[(Sample((f(2),)), RuntimeError), (Sample((f(0),)), RuntimeError)]),
    Op("dim_order", _dim_order, [Sample((f(2, 3, 4),))], grad=False),
    Op("dim_order_check", lambda L, a: a.dim_order(ambiguity_check=True), [Sample((f(2, 3),)), Sample((f(),))],
       grad=False, errors=[(Sample((f(2, 1, 3),)), RuntimeError), (Sample((f(1),)), RuntimeError)]),
    Op("Tensor.new", _new, [Sample((f(2, 3),)), Sample((Arg(f(2).astype(np.float64)),))], grad=False),
    Op("Tensor.new_errors", lambda L, a, x: a.new(x), [],
       errors=[(Sample((f(2), 2.5)), TypeError), (Sample((f(2), Arg(f(2).astype(np.float64)))), TypeError)],
       grad=False),
    Op("apply_map", _python_maps, [Sample((f(2, 3), f(3)), name="broadcast"),
                                   Sample((nc(f(3, 2)), f(3, 2)), name="noncontig")], grad=False),
    Op("resize_", _resize, [Sample((f(2, 3),))], grad=False),
    Op("typename", _typename, [Sample((f(2),))], grad=False),
]
