"""One table of ops, walked by parametrized tests against torch.

Each entry names a function ``fn(L, *args, **kwargs)`` run with ``L`` = ember and torch on
the same inputs, and sample inputs.  A sample's array arguments become tensors in both
libraries (floating ones require grad when the op is differentiable); an ``Arg`` may ask
for a non-contiguous view of its values.  The tests compare forward values, dtypes and
shapes, the gradients of every differentiable input, a float64 gradcheck of the first
sample, and the exception type raised for invalid inputs.
"""

import importlib
import math
import pathlib

import numpy as np
import pytest
import torch
from conftest import assert_same
from op_table import (
    Arg,
    Op,
    Sample,
    _binary_op,
    _rng,
    _unary_op,
    build,
    f,
    i64,
    mask,
    nc,
    nonzero,
    pos,
    prob,
    spd,
    st,
    tensors_of,
    unary_samples,
    unit,
    well_conditioned,
    within,
)
from torch_namespace import COVERED, Recorder

import ember

# ---- the table ---------------------------------------------------------------------

def binary_samples():
    return [
        Sample((f(2, 3), f(2, 3)), name="same"),
        Sample((f(3, 1), f(1, 4)), name="broadcast"),
        Sample((f(2, 3), f(3)), name="rank"),
        Sample((f(2, 3), f()), name="zero-dim"),
        Sample((f(), f()), name="both-0d"),
        Sample((nc(f(3, 2)), st(f(3, 2))), name="noncontig"),
        Sample((f(0, 3), f(3)), name="empty"),
        Sample((f(2, 3), 1.5), name="scalar"),
        Sample((f(2, 2), i64(2, 2)), name="int-operand"),
    ]


def inplace_samples(samples):
    """Those samples whose broadcast result has the first operand's shape."""
    return [x for x in samples if x.name != "int-true-div" and (not isinstance(x.args[1], np.ndarray) or
            np.broadcast_shapes(x.args[0].value.shape if isinstance(x.args[0], Arg) else x.args[0].shape,
                                x.args[1].shape) == (x.args[0].value.shape if isinstance(x.args[0], Arg)
                                                     else x.args[0].shape))]


def div_samples():
    s = binary_samples()
    return [Sample((a[0], pos(*a[1].shape) if isinstance(a[1], np.ndarray) else a[1]), name=x.name)
            for x in s for a in [x.args] if not (isinstance(a[1], np.ndarray) and a[1].dtype.kind == "i")] + [
        Sample((i64(2, 2), i64(2, 2) + 1), name="int-true-div")]


BAD_BROADCAST = Sample((f(2, 3), f(4)), name="bad-broadcast")


def _iop(method):
    def fn(L, a, b):
        c = a * 1  # in-place on a non-leaf copy so both inputs get gradients
        getattr(c, method)(b)
        return c
    return fn


def _aug(op):
    def fn(L, a, b):
        c = a * 1
        if op == "+":
            c += b
        elif op == "-":
            c -= b
        elif op == "*":
            c *= b
        else:
            c /= b
        return c
    return fn


def _setitem(index, value_shape=None):
    def fn(L, a, v):
        c = a * 1
        c[index(L) if callable(index) else index] = v
        return c
    return fn


def _getitem(index):
    return lambda L, a: a[index(L) if callable(index) else index]


IDX = np.array([2, 0, 2])
BMASK = np.array([True, False, True, True])

OPS = [
    Op("add", lambda L, a, b: L.add(a, b), binary_samples(), errors=[(BAD_BROADCAST, RuntimeError)]),
    Op("add_alpha", lambda L, a, b: L.add(a, b, alpha=2), binary_samples()[:3]),
    Op("sub", lambda L, a, b: L.sub(a, b), binary_samples(), errors=[(BAD_BROADCAST, RuntimeError)]),
    Op("mul", lambda L, a, b: L.mul(a, b), binary_samples(), errors=[(BAD_BROADCAST, RuntimeError)]),
    Op("div", lambda L, a, b: L.div(a, b), div_samples(), errors=[(BAD_BROADCAST, RuntimeError)]),
    Op("op+", lambda L, a, b: a + b, binary_samples()),
    Op("op-", lambda L, a, b: a - b, binary_samples()),
    Op("op*", lambda L, a, b: a * b, binary_samples()),
    Op("op/", lambda L, a, b: a / b, div_samples()),
    Op("op+reflected", lambda L, a: 1.5 + a, unary_samples()),
    Op("op-reflected", lambda L, a: 2.5 - a, unary_samples()),
    Op("op/reflected", lambda L, a: 3 / a, unary_samples(pos)),
    Op("op*reflected", lambda L, a: 3 * a + 1, unary_samples()),
    Op("op**reflected", lambda L, a: 2.0 ** a, unary_samples()),
    Op("add_", _iop("add_"), inplace_samples(binary_samples()), errors=[(Sample((f(3), f(2, 3))), RuntimeError)]),
    Op("sub_", _iop("sub_"), inplace_samples(binary_samples())),
    Op("mul_", _iop("mul_"), inplace_samples(binary_samples())),
    Op("div_", _iop("div_"), inplace_samples(div_samples())),
    Op("iadd", _aug("+"), inplace_samples(binary_samples())),
    Op("isub", _aug("-"), inplace_samples(binary_samples())),
    Op("imul", _aug("*"), inplace_samples(binary_samples())),
    Op("idiv", _aug("/"), inplace_samples(div_samples())),
    Op("int-inplace-float", lambda L, a: a.add_(1.5), [], grad=False,
       errors=[(Sample((i64(3),)), RuntimeError)]),
    *[Op(n, (lambda op: lambda L, a, b: getattr(L, op)(a, b))(n), binary_samples() +
         [Sample((i64(2, 3), i64(2, 3)), name="int")], grad=False, errors=[(BAD_BROADCAST, RuntimeError)])
      for n in ("eq", "ne", "lt", "le", "gt", "ge")],
    Op("op<", lambda L, a, b: (a < b, a >= b, a == b, a != b, a > 0.5, 0.5 <= a), binary_samples()[:4], grad=False),
    Op("abs", lambda L, a: L.abs(a), unary_samples()),
    Op("neg", lambda L, a: -a, unary_samples()),
    Op("exp", lambda L, a: L.exp(a), unary_samples()),
    Op("log", lambda L, a: L.log(a), unary_samples(pos)),
    Op("log1p", lambda L, a: L.log1p(a), unary_samples(pos)),
    Op("expm1", lambda L, a: L.expm1(a), unary_samples()),
    Op("sqrt", lambda L, a: L.sqrt(a), unary_samples(pos)),
    Op("rsqrt", lambda L, a: L.rsqrt(a), unary_samples(pos)),
    Op("sin", lambda L, a: L.sin(a), unary_samples()),
    Op("cos", lambda L, a: L.cos(a), unary_samples()),
    Op("tanh", lambda L, a: L.tanh(a), unary_samples()),
    Op("sigmoid", lambda L, a: L.sigmoid(a), unary_samples() + [Sample((np.array([-100., 0, 100], np.float32),))]),
    Op("relu", lambda L, a: L.relu(a), unary_samples()),
    Op("int-unary", lambda L, a: (L.exp(a), L.sqrt(a), L.abs(a), -a, L.sigmoid(a)), [Sample((i64(3),))], grad=False),
    Op("exp_", lambda L, a: (a * 1).exp_(), unary_samples()),
    Op("pow_scalar", lambda L, a: L.pow(a, 3), unary_samples()),
    Op("pow_half", lambda L, a: a ** 0.5, unary_samples(pos)),
    Op("pow_neg", lambda L, a: a ** -2, unary_samples(pos)),
    Op("pow_tensor", lambda L, a, b: L.pow(a, b), [Sample((pos(2, 3), f(2, 3))), Sample((pos(3, 1), f(4))),
                                                     Sample((pos(2), f()))]),
    Op("pow_int", lambda L, a, *e: a ** (e[0] if e else 2), [Sample((i64(4),)),
       Sample((np.array([-2, -1, 0, 1, 2]), np.array([-1, -3, -2, -1, 2])))],
       grad=False, errors=[(Sample((i64(3), -1)), RuntimeError)]),
    Op("clamp", lambda L, a: L.clamp(a, -0.5, 0.7), unary_samples()),
    Op("clamp_min", lambda L, a: a.clamp(min=0.1), unary_samples()),
    Op("clamp_max", lambda L, a: L.clamp(a, max=0.1), unary_samples()),
    Op("clamp_tensor", lambda L, a, lo, hi: L.clamp(a, lo, hi), [Sample((f(2, 3), f(3, lo=-2, hi=-0.5),
                                                                          f(2, 1, lo=0.5, hi=2)))]),
    Op("clamp_int", lambda L, a: L.clamp(a, 1, 3), [Sample((i64(5),))], grad=False),
    Op("where", lambda L, c, a, b: L.where(c, a, b),
       [Sample((mask(2, 3), f(2, 3), f(2, 3))), Sample((mask(3, 1), f(1, 4), f(3, 4))),
        Sample((mask(2, 2), f(2, 2), 0.0)), Sample((mask(2), f(), f(2)))],
       errors=[(Sample((mask(2, 3), f(2, 3), f(4))), RuntimeError)]),
    Op("maximum", lambda L, a, b: L.maximum(a, b), binary_samples()[:7], errors=[(BAD_BROADCAST, RuntimeError)]),
    Op("minimum", lambda L, a, b: L.minimum(a, b), binary_samples()[:7]),
    Op("max_tie", lambda L, a, b: L.maximum(a, b), [Sample((np.array([1., 2, 3]), np.array([1., 0, 3])))],
       gradcheck=False),
    # ---- reductions
    Op("sum", lambda L, a, *r: a.sum(*r), [
        Sample((f(2, 3),)), Sample((f(2, 3), 1)), Sample((f(2, 3, 4), (0, 2))), Sample((f(2, 3), -1, True)),
        Sample((f(),)), Sample((f(0, 3),)), Sample((f(0, 3), 0)), Sample((nc(f(3, 4)), 0))],
       errors=[(Sample((f(2, 3), 2)), IndexError)]),
    Op("sum_int", lambda L, a: (a.sum(), a.sum(0)), [Sample((i64(3, 2),)), Sample((mask(3, 2),))], grad=False),
    Op("mean", lambda L, a, *r: L.mean(a, *r), [
        Sample((f(2, 3),)), Sample((f(2, 3), 0)), Sample((f(2, 3, 4), (-1, 0), True)), Sample((f(),)),
        Sample((st(f(3, 2)), 1))], errors=[(Sample((i64(3),)), RuntimeError), (Sample((f(2), 1)), IndexError)]),
    Op("prod", lambda L, a, *r: L.prod(a, *r), [
        Sample((f(2, 3),)), Sample((f(2, 3), 1)), Sample((f(2, 3), -2, True)), Sample((f(),)),
        Sample((np.array([[1., 0, 2], [3, 4, 5]]), 1)), Sample((np.array([[1., 0, 2], [0, 4, 5]]),))],
       gradcheck=True),
    Op("max_all", lambda L, a: L.max(a), unary_samples()[:3], errors=[(Sample((f(0, 2),)), RuntimeError)]),
    Op("min_all", lambda L, a: a.min(), unary_samples()[:3]),
    Op("max_dim", lambda L, a, *r: L.max(a, *r), [Sample((f(2, 3), 1)), Sample((f(2, 3), 0, True)),
                                                  Sample((f(3, 4), -1)), Sample((nc(f(3, 4)), 1)), Sample((f(), 0))],
       errors=[(Sample((f(2, 3), 2)), IndexError)]),
    Op("min_dim", lambda L, a, *r: a.min(*r), [Sample((f(2, 3), 1)), Sample((f(2, 3), -2, True))]),
    Op("max_dim_fields", lambda L, a: (L.max(a, 1).values, L.max(a, 1).indices, L.min(a, 0)[1]),
       [Sample((f(3, 4),))]),
    Op("argmax", lambda L, a, *r: (L.argmax(a, *r), L.argmin(a, *r)), [
        Sample((f(2, 3),)), Sample((f(2, 3), 1)), Sample((f(2, 3), 0, True)), Sample((f(),)),
        Sample((i64(4, 5), -1))], grad=False),
    Op("var", lambda L, a, *r, **k: L.var(a, *r, **k), [
        Sample((f(3, 4),)), Sample((f(3, 4), 1)), Sample((f(3, 4),), {"dim": 0, "correction": 0}),
        Sample((f(3, 4),), {"dim": (0, 1), "correction": 2, "keepdim": True}),
        Sample((f(3, 4), 1), {"unbiased": False}), Sample((nc(f(4, 3)), -1))]),
    Op("std", lambda L, a, *r, **k: L.std(a, *r, **k), [
        Sample((f(3, 4),)), Sample((f(3, 4), 1)), Sample((f(3, 4),), {"dim": 0, "correction": 0, "keepdim": True})]),
    Op("var_degenerate", lambda L, a: L.var(a), [Sample((f(1),))], grad=False),
    Op("logsumexp", lambda L, a, d, *r: L.logsumexp(a, d, *r), [
        Sample((f(3, 4), 1)), Sample((f(3, 4), 0, True)), Sample((f(2, 3, 4), (0, 2))),
        Sample((np.array([[1000., 1001], [-5, 3]], np.float32), 1))]),
    Op("norm", lambda L, a, *r, **k: L.norm(a, *r, **k), [
        Sample((f(3, 4),)), Sample((f(3, 4), 1)), Sample((f(3, 4), 2, 1)), Sample((f(3, 4), 3, 0, True)),
        Sample((f(3, 4), math.inf)), Sample((f(3, 4), -math.inf, 1)), Sample((f(3, 4), 0)), Sample((f(3, 4), 1.5, -1)),
        Sample((f(3, 4),), {"p": 2, "dim": (0, 1)}), Sample((f(),))]),
    Op("norm_method", lambda L, a: a.norm(), [Sample((f(5),))]),
    Op("all_any", lambda L, a, *r: (L.all(a, *r), L.any(a, *r), a.all(), a.any()), [
        Sample((mask(3, 4),)), Sample((mask(3, 4), 1)), Sample((mask(3, 4), 0, True)),
        Sample((f(2, 3),)), Sample((i64(3, 2), 0)), Sample((mask(0, 2),))], grad=False),
    Op("cumsum", lambda L, a, d: L.cumsum(a, d), [
        Sample((f(3, 4), 1)), Sample((f(3, 4), -2)), Sample((f(5), 0)), Sample((f(), 0)), Sample((nc(f(3, 4)), 0))],
       errors=[(Sample((f(3), 1)), IndexError)]),
    Op("cumsum_int", lambda L, a: a.cumsum(0), [Sample((i64(4),)), Sample((mask(4),))], grad=False),
    # ---- shape ops
    Op("view", lambda L, a, *s: a.view(*s), [Sample((f(2, 6), 3, 4)), Sample((f(2, 6), -1)), Sample((f(2, 6), (4, -1))),
                                             Sample((f(), 1, 1))],
       errors=[(Sample((nc(f(3, 4)), 12)), RuntimeError), (Sample((f(2, 3), 4)), RuntimeError)]),
    Op("reshape", lambda L, a, *s: a.reshape(*s), [Sample((f(2, 6), 3, 4)), Sample((nc(f(3, 4)), 12)),
                                                   Sample((f(), ())), Sample((f(0, 4), -1, 2))],
       errors=[(Sample((f(2, 3), 4)), RuntimeError), (Sample((f(2, 3), -1, -1)), RuntimeError)]),
    Op("flatten", lambda L, a, *r: L.flatten(a, *r), [Sample((f(2, 3, 4),)), Sample((f(2, 3, 4), 1)),
                                                      Sample((f(2, 3, 4), 0, -2)), Sample((f(),))]),
    Op("squeeze", lambda L, a, *r: L.squeeze(a, *r), [Sample((f(1, 3, 1),)), Sample((f(1, 3, 1), 0)),
                                                      Sample((f(1, 3, 1), -1)), Sample((f(2, 3), 1)),
                                                      Sample((f(1, 3, 1), (0, 2)))]),
    Op("unsqueeze", lambda L, a, d: a.unsqueeze(d), [Sample((f(2, 3), 0)), Sample((f(2, 3), -1)), Sample((f(), 0))],
       errors=[(Sample((f(2, 3), 3)), IndexError)]),
    Op("permute", lambda L, a, *d: a.permute(*d), [Sample((f(2, 3, 4), 2, 0, 1)), Sample((f(2, 3, 4), (-1, 0, 1)))],
       errors=[(Sample((f(2, 3, 4), 0, 1)), RuntimeError), (Sample((f(2, 3), 0, 0)), RuntimeError)]),
    Op("transpose", lambda L, a, d0, d1: L.transpose(a, d0, d1), [Sample((f(2, 3, 4), 0, 2)), Sample((f(2, 3), -1, 0))],
       errors=[(Sample((f(2, 3), 0, 2)), IndexError)]),
    Op("t", lambda L, a: a.t(), [Sample((f(2, 3),)), Sample((f(3),)), Sample((nc(f(2, 3)),))],
       errors=[(Sample((f(2, 3, 4),)), RuntimeError)]),
    Op("T", lambda L, a: (a.T, a.mT), [Sample((f(2, 3),))]),
    Op("expand", lambda L, a, *s: a.expand(*s), [Sample((f(3, 1), 3, 4)), Sample((f(3, 1), 2, -1, 4)),
                                                 Sample((f(), 2, 2))],
       errors=[(Sample((f(3, 2), 3, 4)), RuntimeError)]),
    Op("expand_as", lambda L, a, b: a.expand_as(b), [Sample((f(1, 4), Arg(f(3, 4), grad=False)))]),
    Op("repeat", lambda L, a, *s: a.repeat(*s), [Sample((f(2, 3), 2, 1)), Sample((f(3), 2, 2)), Sample((f(), 3))],
       errors=[(Sample((f(2, 3), 2)), RuntimeError)]),
    Op("cat", lambda L, ts, *d: L.cat(ts, *d), [Sample(([f(2, 3), f(1, 3)],)), Sample(([f(2, 3), f(2, 1)], 1)),
                                               Sample(([f(2, 3), f(2, 3), f(2, 3)], -1)),
                                               Sample(([f(2, 3), np.zeros(0, np.float32)],)),
                                               Sample(([nc(f(2, 3)), f(2, 2)], 1))],
       errors=[(Sample(([f(2, 3), f(2, 4)],)), RuntimeError), (Sample(([f(2, 3), f(3)],)), RuntimeError)]),
    Op("cat_promote", lambda L, ts: L.cat(ts), [Sample(([f(2), i64(3)],))], grad=False),
    Op("stack", lambda L, ts, *d: L.stack(ts, *d), [Sample(([f(2, 3), f(2, 3)],)), Sample(([f(2, 3), f(2, 3)], -1)),
                                                   Sample(([f(), f()],))],
       errors=[(Sample(([f(2, 3), f(3, 2)],)), RuntimeError)]),
    Op("split", lambda L, a, s, *d: L.split(a, s, *d), [Sample((f(5, 2), 2)), Sample((f(5, 2), [1, 4])),
                                                       Sample((f(2, 6), 3, 1)), Sample((f(2, 6), [2, 2, 2], -1))],
       errors=[(Sample((f(5, 2), [1, 2])), RuntimeError)]),
    Op("split_partial", lambda L, a: L.split(a, 2)[1], [Sample((f(5, 2),))]),
    Op("chunk", lambda L, a, c, *d: a.chunk(c, *d), [Sample((f(5, 2), 2)), Sample((f(6, 2), 3)),
                                                     Sample((f(2, 7), 3, 1))]),
    Op("unbind", lambda L, a, *d: a.unbind(*d), [Sample((f(3, 2),)), Sample((f(3, 2), 1))]),
    Op("contiguous", lambda L, a: (a.contiguous(), a.contiguous().is_contiguous()), [
        Sample((nc(f(3, 4)),)), Sample((f(3, 4),))]),
    Op("flip", lambda L, a, d: L.flip(a, d), [Sample((f(3, 4), (0,))), Sample((f(3, 4), (0, 1)))]),
    Op("narrow", lambda L, a, d, s, n: a.narrow(d, s, n), [Sample((f(5, 3), 0, 1, 3)), Sample((f(5, 3), -1, 0, 2))]),
    # ---- indexing
    Op("getitem", lambda L, a, i: a[i], [Sample((f(4, 3), 1)), Sample((f(4, 3), -1)), Sample((f(4, 3), slice(1, 3))),
                                         Sample((f(4, 3), (slice(None), 2))), Sample((f(4, 3), (None, 1))),
                                         Sample((f(4, 3, 2), (Ellipsis, 0))),
                                         Sample((f(4, 3), (slice(None, None, 2), -1))),
                                         Sample((f(4, 3), (1, None, slice(0, 2)))), Sample((f(4, 3), ())),
                                         Sample((nc(f(3, 4)), (slice(1, None), 1)))],
       errors=[(Sample((f(4, 3), 4)), IndexError), (Sample((f(), 0)), IndexError),
               (Sample((f(4, 3), (0, 0, 0))), IndexError)]),
    Op("getitem_mask", lambda L, a, m: a[m], [Sample((f(4, 3), Arg(BMASK))), Sample((f(4, 3), Arg(mask(4, 3)))),
                                              Sample((f(4, 3), Arg(f(4, 3) > 0)))],
       errors=[(Sample((f(4, 3), Arg(np.array([True, False])))), IndexError)]),
    Op("getitem_int_tensor", lambda L, a, i: a[i], [Sample((f(4, 3), Arg(IDX))),
                                                    Sample((f(4, 3), Arg(i64(2, 2, hi=4)))),
                                                    Sample((f(4, 3), (slice(None), Arg(np.array([0, 2, 2]))))),
                                                    Sample((f(4, 3), (Arg(np.array([0, 1])), Arg(np.array([2, 2]))))),
                                                    Sample((f(4, 3), [0, 3, 3]))],
       errors=[(Sample((f(4, 3), Arg(np.array([5])))), IndexError)]),
    Op("setitem_basic", lambda L, a, v: _setitem(1)(L, a, v), [Sample((f(4, 3), f(3))), Sample((f(4, 3), f()))]),
    Op("setitem_slice", lambda L, a, v: _setitem((slice(None), slice(0, 2)))(L, a, v), [Sample((f(4, 3), f(4, 2))),
                                                                                        Sample((f(4, 3), f(2)))],
       errors=[(Sample((f(4, 3), f(3))), RuntimeError)]),
    Op("setitem_scalar", lambda L, a: _setitem((0, 1))(L, a, 5.0), [Sample((f(4, 3),))]),
    Op("setitem_mask", lambda L, a, m, v: (lambda c: (c.__setitem__(m, v), c)[1])(a * 1),
       [Sample((f(4, 3), Arg(mask(4, 3)), 0.0)), Sample((f(4, 3), Arg(BMASK), f(3)))]),
    Op("setitem_int_tensor", lambda L, a, i, v: (lambda c: (c.__setitem__(i, v), c)[1])(a * 1),
       [Sample((f(4, 3), Arg(np.array([0, 2])), f(2, 3))), Sample((f(4, 3), Arg(np.array([3, 1])), f(3)))]),
    Op("matmul", lambda L, a, b: a @ b, [Sample((f(2, 3), f(3, 4))), Sample((f(3), f(3))), Sample((f(2, 3), f(3))),
                                         Sample((f(3), f(3, 2))), Sample((f(2, 2, 3), f(3, 4))),
                                         Sample((f(2, 1, 2, 3), f(3, 3, 2))), Sample((nc(f(2, 3)), st(f(3, 4))))],
       errors=[(Sample((f(2, 3), f(4, 2))), RuntimeError), (Sample((f(), f(3))), RuntimeError),
               (Sample((f(3), f(4))), RuntimeError)]),
    Op("matmul_fn", lambda L, a, b: L.matmul(a, b), [Sample((f(2, 3), f(3, 4)))]),
    Op("mm", lambda L, a, b: L.mm(a, b), [Sample((f(2, 3), f(3, 4))), Sample((nc(f(2, 3)), f(3, 1)))],
       errors=[(Sample((f(2, 3), f(4, 2))), RuntimeError), (Sample((f(3), f(3, 2))), RuntimeError)]),
    Op("bmm", lambda L, a, b: L.bmm(a, b), [Sample((f(2, 2, 3), f(2, 3, 4)))],
       errors=[(Sample((f(2, 2, 3), f(3, 3, 4))), RuntimeError), (Sample((f(2, 3), f(3, 4))), RuntimeError)]),
    Op("einsum", lambda L, eq, *ops: L.einsum(eq, *ops), [
        Sample(("ij,jk->ik", f(2, 3), f(3, 4))), Sample(("bij,bjk->bik", f(2, 2, 3), f(2, 3, 2))),
        Sample(("i,j->ij", f(3), f(2))), Sample(("ij->", f(2, 3))), Sample(("ij->j", f(2, 3))),
        Sample(("ij,ij->i", f(2, 3), f(2, 3))), Sample(("ij,jk", f(2, 3), f(3, 2))), Sample(("ji", f(2, 3)))]),
    Op("gather", lambda L, a, d, i: L.gather(a, d, i), [
        Sample((f(3, 4), 1, Arg(i64(3, 2, hi=4)))), Sample((f(3, 4), 0, Arg(i64(2, 4, hi=3)))),
        Sample((f(3, 4), -1, Arg(np.array([[0, 0], [1, 1], [3, 3]]))))],
       errors=[(Sample((f(3, 4), 1, Arg(np.array([[0], [1], [2]], np.float32)))), RuntimeError),
               (Sample((f(3, 4), 1, Arg(np.array([[4], [1], [2]])))), RuntimeError)]),
    Op("scatter", lambda L, a, d, i, s: L.scatter(a, d, i, s), [
        Sample((f(3, 4), 1, Arg(np.array([[0, 1], [2, 3], [1, 0]])), f(3, 2))),
        Sample((f(3, 4), 0, Arg(np.array([[0, 1, 2, 0]])), f(1, 4)))]),
    Op("scatter_value", lambda L, a, i: a.scatter(1, i, 2.5), [Sample((f(3, 4), Arg(np.array([[0], [2], [3]]))))]),
    Op("scatter_add", lambda L, a, i, s: L.scatter_add(a, 0, i, s), [
        Sample((f(3, 4), Arg(np.array([[0, 1, 2, 0], [0, 0, 0, 0]])), f(2, 4)))]),
    Op("index_select", lambda L, a, d, i: L.index_select(a, d, i), [
        Sample((f(4, 3), 0, Arg(IDX))), Sample((f(4, 3), 1, Arg(np.array([2, 2])))),
        Sample((f(4, 3), -1, Arg(np.array([], np.int64)))),
        Sample((f(4), 0, Arg(np.array(1))))],
       errors=[(Sample((f(4, 3), 0, Arg(np.array([4])))), IndexError),
               (Sample((f(4, 3), 0, Arg(np.array([[1]])))), IndexError)]),
    Op("masked_fill", lambda L, a, m, v: L.masked_fill(a, m, v), [
        Sample((f(3, 4), Arg(mask(3, 4)), 0.5)), Sample((f(3, 4), Arg(mask(4)), -1.0)),
        Sample((f(3, 4), Arg(mask(3, 1)), f()))],
       errors=[(Sample((f(3, 4), Arg(i64(3, 4)), 0.0)), RuntimeError)]),
    Op("masked_fill_", lambda L, a, m: (a * 1).masked_fill_(m, 2.0), [Sample((f(3, 4), Arg(mask(3, 4))))]),
    Op("sort", lambda L, a, *r, **k: L.sort(a, *r, **k), [
        Sample((f(3, 4),)), Sample((f(3, 4), 0)), Sample((f(3, 4),), {"descending": True}),
        Sample((f(5), -1, True)), Sample((i64(6),), {"stable": True}), Sample((nc(f(4, 3)), 1))]),
    Op("sort_fields", lambda L, a: (L.sort(a).values, L.sort(a).indices, L.argsort(a, descending=True)),
       [Sample((f(2, 5),))]),
    Op("topk", lambda L, a, k, *r, **kw: L.topk(a, k, *r, **kw), [
        Sample((f(3, 5), 2)), Sample((f(3, 5), 2, 0)), Sample((f(3, 5), 3), {"largest": False}), Sample((f(6), 6))],
       errors=[(Sample((f(3, 5), 6)), RuntimeError)]),
]


# elementwise math and torch.special
OPS += [
    _unary_op("asin", unit), _unary_op("acos", unit), _unary_op("atan"),
    _unary_op("arcsin", unit), _unary_op("arccos", unit), _unary_op("arctan"),
    _unary_op("sinh"), _unary_op("cosh"), _unary_op("asinh"), _unary_op("acosh", within(1.1, 3.0)),
    _unary_op("atanh", unit), _unary_op("arcsinh"), _unary_op("arccosh", within(1.1, 3.0)), _unary_op("arctanh", unit),
    _unary_op("tan", within(-1.2, 1.2)), _unary_op("exp2"), _unary_op("log2", pos), _unary_op("log10", pos),
    _unary_op("erf"), _unary_op("erfc"), _unary_op("erfinv", unit), _unary_op("lgamma", pos),
    _unary_op("digamma", pos), _unary_op("i0"), _unary_op("sinc"), _unary_op("frac"),
    _unary_op("reciprocal", nonzero), _unary_op("square"), _unary_op("sign", grad=False), _unary_op("sgn", grad=False),
    _unary_op("floor", grad=False), _unary_op("ceil", grad=False), _unary_op("trunc", grad=False),
    _unary_op("round", grad=False), _unary_op("deg2rad"), _unary_op("rad2deg"), _unary_op("positive"),
    _unary_op("logit", prob),
    Op("logit_eps", lambda L, a: L.logit(a, eps=0.2), unary_samples(within(0.01, 0.99))),
    Op("round_decimals", lambda L, a: L.round(a * 100, decimals=1), unary_samples(), grad=False),
    Op("polygamma", lambda L, a: (L.polygamma(1, a), L.polygamma(2, a)), unary_samples(pos)),
    Op("polygamma_method", lambda L, a: a.polygamma(1), unary_samples(pos)),
    Op("digamma_pole", lambda L, a: L.digamma(a), [Sample((np.array([0.0, -1.0, 1.0], np.float32),))], grad=False),
    _unary_op("special.expit"), _unary_op("special.logit", prob), _unary_op("special.erf"),
    _unary_op("special.erfc"), _unary_op("special.erfcx", within(-1.0, 2.0)), _unary_op("special.erfinv", unit),
    _unary_op("special.exp2"), _unary_op("special.expm1"), _unary_op("special.log1p", pos),
    _unary_op("special.gammaln", pos), _unary_op("special.digamma", pos), _unary_op("special.psi", pos),
    _unary_op("special.i0"), _unary_op("special.i0e"), _unary_op("special.i1"), _unary_op("special.i1e"),
    _unary_op("special.ndtr"), _unary_op("special.ndtri", prob), _unary_op("special.log_ndtr"),
    _unary_op("special.sinc"), _unary_op("special.entr", pos), _unary_op("special.round", grad=False),
    Op("special.polygamma", lambda L, a: L.special.polygamma(2, a), unary_samples(pos)),
    Op("special.multigammaln", lambda L, a: L.special.multigammaln(a, 3), unary_samples(within(1.5, 3.0))),
    Op("special.logsumexp", lambda L, a: L.special.logsumexp(a, -1), [Sample((f(2, 3),)), Sample((nc(f(3, 4)),))]),
    Op("special.softmax", lambda L, a: L.special.softmax(a, 0), [Sample((f(2, 3),)), Sample((nc(f(3, 4)),))]),
    Op("special.log_softmax", lambda L, a: L.special.log_softmax(a, 1), [Sample((f(2, 3),))]),
    _binary_op("atan2", f, nonzero), _binary_op("arctan2", f, nonzero), _binary_op("hypot", nonzero, nonzero),
    _binary_op("copysign", nonzero, f), _binary_op("xlogy", f, pos), _binary_op("special.xlogy", f, pos),
    _binary_op("special.xlog1py", f, pos), _binary_op("logaddexp"), _binary_op("logaddexp2"),
    _binary_op("float_power", pos, f),
    Op("xlogy_zero", lambda L, a, b: L.xlogy(a, b), [Sample((np.array([0.0, 0.0, 1.0], np.float32),
                                                            np.array([0.0, np.nan, 2.0], np.float32)))], grad=False),
    Op("special.zeta", lambda L, a, b: L.special.zeta(a, b),
       [Sample((Arg(within(1.5, 3.0)(2, 3), grad=False), pos(2, 3))),
        Sample((Arg(within(1.5, 3.0)(3), grad=False), pos()))]),
    Op("int-math", lambda L, a: (L.asin(a), L.lgamma(a), L.special.ndtr(a), L.atan2(a, a)), [Sample((i64(3),))],
       grad=False),
]

# rearranging: roll, triangles, diagonals, stacking and splitting helpers, strided views
OPS += [
    Op("roll", lambda L, a: (L.roll(a, 1, 0), a.roll((2, -1), (1, 0)), L.roll(a, 3)),
       [Sample((f(3, 4),)), Sample((nc(f(4, 3)),))]),
    Op("rot90", lambda L, a: (L.rot90(a), L.rot90(a, 2, (1, 0)), a.rot90(3, [0, 1]), L.rot90(a, 0)),
       [Sample((f(3, 4),)), Sample((nc(f(2, 3)),))]),
    Op("fliplr", lambda L, a: (L.fliplr(a), a.flipud()), [Sample((f(3, 4),)), Sample((nc(f(2, 3)),))]),
    Op("tile", lambda L, a: (L.tile(a, (2,)), a.tile((2, 1, 3))), [Sample((f(2, 3),)), Sample((f(),))]),
    Op("repeat_interleave", lambda L, a: (L.repeat_interleave(a, 2), a.repeat_interleave(2, dim=1),
                                          L.repeat_interleave(a, L.tensor([1, 0, 2]), dim=1)),
       [Sample((f(2, 3),)), Sample((nc(f(2, 3)),))]),
    Op("repeat_interleave_counts", lambda L, a: L.repeat_interleave(a), [Sample((i64(4),))], grad=False),
    Op("tril", lambda L, a: (L.tril(a), a.tril(1), L.tril(a, -1)), [Sample((f(3, 4),)), Sample((f(2, 3, 3),)),
                                                                     Sample((nc(f(4, 3)),))],
       errors=[(Sample((f(3),)), RuntimeError)]),
    Op("triu", lambda L, a: (L.triu(a), a.triu(1), L.triu(a, -2)), [Sample((f(3, 4),)), Sample((f(2, 3, 3),))]),
    Op("diagonal", lambda L, a: (L.diagonal(a), a.diagonal(1), L.diagonal(a, -1, 1, 0)),
       [Sample((f(3, 4),)), Sample((nc(f(4, 3)),))], errors=[(Sample((f(3),)), IndexError)]),
    Op("diagonal_3d", lambda L, a: (L.diagonal(a, 0, 0, 2), a.diagonal(dim1=-1, dim2=1)), [Sample((f(3, 4, 3),))]),
    Op("diag_embed", lambda L, a: (L.diag_embed(a), L.diag_embed(a, 1), L.diag_embed(a, -1, 0, 2)),
       [Sample((f(2, 3),))]),
    Op("diag", lambda L, a: (L.diag(a), a.diag(1), L.diag(a, -1)), [Sample((f(3),)), Sample((f(3, 4),))]),
    Op("diagflat", lambda L, a: (L.diagflat(a), L.diagflat(a, 1)), [Sample((f(2, 2),))]),
    Op("trace", lambda L, a: L.trace(a), [Sample((f(3, 4),)), Sample((nc(f(3, 3)),))]),
    Op("trace_int", lambda L, a: a.trace(), [Sample((i64(3, 3),))], grad=False),
    Op("atleast", lambda L, a: (L.atleast_1d(a), L.atleast_2d(a), L.atleast_3d(a)),
       [Sample((f(),)), Sample((f(3),)), Sample((f(2, 3),)), Sample((f(2, 2, 2),))]),
    Op("atleast_many", lambda L, a, b: L.atleast_2d(a, b), [Sample((f(), f(3)))]),
    Op("hstack", lambda L, a, b: (L.hstack([a, b]), L.vstack((a, b)), L.dstack([a, b]), L.column_stack([a, b]),
                                  L.row_stack([a, b])), [Sample((f(3), f(3))), Sample((f(2, 3), f(2, 3)))]),
    Op("tensor_split", lambda L, a: (L.tensor_split(a, 3), a.tensor_split([1, 4], 1), L.tensor_split(a, (-1,), 0)),
       [Sample((f(5, 5),)), Sample((nc(f(5, 5)),))]),
    Op("hsplit", lambda L, a: (L.hsplit(a, 2), a.vsplit([1]), L.dsplit(a, 2)), [Sample((f(2, 4, 2),))],
       errors=[(Sample((f(3, 3, 3),)), RuntimeError)]),
    Op("meshgrid", lambda L, a, b: (L.meshgrid(a, b, indexing="ij"), L.meshgrid([a, b], indexing="xy"),
                                    L.meshgrid(a, b, a, indexing="xy")), [Sample((f(3), f(2)))]),
    Op("broadcast_tensors", lambda L, a, b: L.broadcast_tensors(a, b), [Sample((f(3, 1), f(4))),
                                                                       Sample((f(), f(2, 2)))]),
    Op("broadcast_shapes", lambda L: L.broadcast_shapes((2, 1), (3,), (1, 1, 1)), [Sample(())], grad=False),
    Op("broadcast_to_method", lambda L, a: a.broadcast_to((2, 3, 4)), [Sample((f(3, 1),))]),
    Op("ravel", lambda L, a: (L.ravel(a), a.ravel()), [Sample((f(2, 3),)), Sample((nc(f(3, 2)),))]),
    Op("unfold", lambda L, a: (a.unfold(1, 2, 1), a.unfold(0, 2, 2), a.unfold(-1, 3, 2)),
       [Sample((f(4, 5),)), Sample((nc(f(5, 4)),))], errors=[(Sample((f(2, 2),)), RuntimeError)]),
    Op("as_strided", lambda L, a: (L.as_strided(a, (2, 2), (1, 2)), a.as_strided((3,), (2,), 1)),
       [Sample((f(2, 3),)), Sample((f(6),))]),
]


def ties(*shape):
    """Small integers as floats: rows with repeated values (for median, mode, cummax)."""
    return _rng.integers(0, 4, size=shape).astype(np.float32)


def _quantile_with(interpolation):
    return lambda L, a: L.quantile(a, L.tensor([0.0, 0.3, 0.5, 1.0]), 1, interpolation=interpolation)


NAN_ROWS = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 1.0, 2.0, 2.0], [np.nan, 5.0, np.nan, np.nan]], np.float32)

# reductions, order statistics, cumulative ops and counting
OPS += [
    Op("amax", lambda L, a: (L.amax(a), a.amax(1), L.amax(a, (0, 1), keepdim=True), a.amin(-1), L.amin(a)),
       [Sample((f(3, 4),)), Sample((ties(3, 4),)), Sample((nc(f(4, 3)),))]),
    Op("aminmax", lambda L, a: (L.aminmax(a), a.aminmax(dim=1), L.aminmax(a, dim=0, keepdim=True)),
       [Sample((f(3, 4),)), Sample((ties(3, 4),))], grad=False),
    Op("median", lambda L, a: (L.median(a), a.median(1), L.median(a, 0, keepdim=True)),
       [Sample((f(3, 4),)), Sample((f(3, 5),)), Sample((ties(4, 4),)), Sample((nc(f(4, 3)),))]),
    Op("median_nan", lambda L, a: (L.median(a), L.median(a, 1), L.nanmedian(a), L.nanmedian(a, 1)),
       [Sample((NAN_ROWS,))], grad=False),
    Op("nanmedian", lambda L, a: (L.nanmedian(a), a.nanmedian(1)), [Sample((f(3, 4),)), Sample((ties(3, 5),))]),
    # torch's kthvalue selects without a stable order: ties would make the index arbitrary
    Op("kthvalue", lambda L, a: (L.kthvalue(a, 2), a.kthvalue(1, 0), L.kthvalue(a, 3, -1, True)),
       [Sample((f(3, 4),)), Sample((nc(f(4, 3)),))]),
    Op("mode", lambda L, a: (L.mode(a), a.mode(0), L.mode(a, 1, True)), [Sample((ties(3, 6),)), Sample((ties(5, 4),))],
       gradcheck=False),  # finite differences break the ties that make a mode
    Op("quantile", lambda L, a: (L.quantile(a, 0.3), a.quantile(0.5, dim=1), L.quantile(a, L.tensor([0.1, 0.9]), 0),
                                 L.quantile(a, 0.25, 1, keepdim=True)),
       [Sample((f(3, 4),)), Sample((nc(f(4, 3)),))]),
    *[Op(f"quantile_{m}", _quantile_with(m), [Sample((f(3, 5),))], grad=False)
      for m in ("lower", "higher", "midpoint", "nearest")],
    Op("nanquantile", lambda L, a: (L.nanquantile(a, 0.4), L.nanquantile(a, 0.5, 1), L.quantile(a, 0.5, 1)),
       [Sample((NAN_ROWS,))], grad=False),
    Op("nanmean", lambda L, a: (L.nanmean(a), a.nanmean(1), L.nansum(a), a.nansum(0)), [Sample((NAN_ROWS,))],
       grad=False),
    Op("nanmean_grad", lambda L, a: (L.nanmean(a, 0), L.nansum(a, 1)), [Sample((f(3, 4),))]),
    Op("count_nonzero", lambda L, a: (L.count_nonzero(a), a.count_nonzero(1)), [Sample((ties(3, 4),))], grad=False),
    Op("var_mean", lambda L, a: (L.var_mean(a), L.std_mean(a, 1), L.var_mean(a, 0, correction=0)),
       [Sample((f(3, 4),))]),
    Op("cumprod", lambda L, a: (L.cumprod(a, 0), a.cumprod(1)), [Sample((f(3, 4),)), Sample((nc(f(4, 3)),))]),
    Op("cumprod_zeros", lambda L, a: L.cumprod(a, 1), [Sample((np.array([[1.5, 0.0, 2.0, 0.0], [0.5, 2.0, 0.0, 3.0],
                                                                      [1.0, 2.0, 3.0, 4.0]], np.float32),))]),
    Op("cumprod_int", lambda L, a: L.cumprod(a, 0), [Sample((i64(4),))], grad=False),
    Op("cummax", lambda L, a: (L.cummax(a, 1), a.cummin(0)), [Sample((f(3, 4),)), Sample((ties(3, 5),))]),
    Op("logcumsumexp", lambda L, a: (L.logcumsumexp(a, 1), a.logcumsumexp(0)),
       [Sample((f(3, 4),)), Sample((f(2, 3) * 30,))]),
    Op("diff", lambda L, a: (L.diff(a), a.diff(2, 0), L.diff(a, dim=0, prepend=a[:1], append=a[-1:])),
       [Sample((f(4, 5),)), Sample((nc(f(5, 4)),))]),
    Op("diff_bool", lambda L, a: L.diff(a), [Sample((mask(6),))], grad=False),
    Op("unique", lambda L, a: (L.unique(a), L.unique(a, return_inverse=True, return_counts=True),
                               a.unique(return_counts=True), L.unique(a, dim=0, return_inverse=True)),
       [Sample((ties(4, 3),)), Sample((i64(6, 2),))], grad=False),
    Op("unique_consecutive", lambda L, a: (L.unique_consecutive(a), L.unique_consecutive(a, return_inverse=True,
                                                                                       return_counts=True),
                                           a.unique_consecutive(dim=0)),
       [Sample((np.array([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]], np.int64),))], grad=False),
    Op("bincount", lambda L, a, w: (L.bincount(a), a.bincount(minlength=8), L.bincount(a, w),
                                    L.bincount(a, w.double())),
       [Sample((i64(10), Arg(f(10), grad=False)))], grad=False,
       errors=[(Sample((np.array([-1, 2]), Arg(f(2), grad=False))), RuntimeError)]),
    Op("histc", lambda L, a: (L.histc(a, 5), a.histc(4, -1.0, 1.0), L.histc(a, bins=3, min=5, max=5)),
       [Sample((f(20),))], grad=False),
    Op("searchsorted", lambda L, s, v: (L.searchsorted(s, v), L.searchsorted(s, v, right=True),
                                        L.searchsorted(s, v, side="right", out_int32=True), L.searchsorted(s, 0.5)),
       [Sample((np.array([0.0, 0.5, 1.0, 1.0, 2.0], np.float32), np.array([[0.5, 1.0], [-1.0, 3.0]], np.float32)))],
       grad=False),
    Op("searchsorted_nd", lambda L, s, v: L.searchsorted(s, v),
       [Sample((np.sort(f(3, 5), axis=1), f(3, 2)))], grad=False),
    Op("bucketize", lambda L, v, b: (L.bucketize(v, b), L.bucketize(v, b, right=True, out_int32=True)),
       [Sample((np.array([[0.5, 1.0], [-1.0, 3.0]], np.float32), np.array([0.0, 1.0, 2.0], np.float32)))],
       grad=False),
]


def _seeded(fn):
    """A random op's entry: both libraries seeded alike; compared through properties that
    do not depend on the generator (shape, dtype, range)."""
    def run(L, *args):
        L.manual_seed(0)
        return fn(L, *args)
    return run


IDX = np.array([2, 0, 2], np.int64)

# indexing extras and products
OPS += [
    Op("take", lambda L, a: (L.take(a, L.tensor([[0, 5], [-1, 2]])), a.take(L.tensor([3]))), [Sample((f(2, 3),)),
                                                                                          Sample((nc(f(3, 2)),))]),
    Op("take_along_dim", lambda L, a, i: (L.take_along_dim(a, i, 1), a.take_along_dim(i)),
       [Sample((f(3, 4), np.array([[0, 3], [1, 1], [2, 0]])))]),
    Op("index_add", lambda L, a, s: (L.index_add(a, 0, L.tensor(IDX), s), a.index_add(0, L.tensor(IDX), s, alpha=2)),
       [Sample((f(3, 4), f(3, 4)))]),
    Op("index_copy", lambda L, a, s: L.index_copy(a, 1, L.tensor([2, 0]), s), [Sample((f(3, 4), f(3, 2)))]),
    Op("index_fill", lambda L, a: (L.index_fill(a, 1, L.tensor([0, 2]), -1.5), a.index_fill(0, L.tensor([1]), 2.0)),
       [Sample((f(3, 4),)), Sample((nc(f(4, 3)),))]),
    Op("scatter_reduce_sum", lambda L, a, s: (L.scatter_reduce(a, 1, L.tensor([[0, 0, 2], [1, 1, 1]]), s, "sum"),
                                              a.scatter_reduce(1, L.tensor([[0, 0, 2], [1, 1, 1]]), s, "mean",
                                                               include_self=False)),
       [Sample((f(2, 3), f(2, 3)))]),
    Op("scatter_reduce_other", lambda L, a, s: tuple(L.scatter_reduce(a, 0, L.tensor([[0, 1], [0, 0]]), s, r,
                                                                      include_self=inc)
                                                     for r in ("prod", "amax", "amin") for inc in (True, False)),
       [Sample((f(2, 2), f(2, 2)))], grad=False),
    Op("masked_scatter", lambda L, a, m, s: L.masked_scatter(a, m, s), [Sample((f(2, 3), mask(2, 3), f(6)))]),
    Op("nonzero", lambda L, a: (L.nonzero(a), a.nonzero(), L.nonzero(a, as_tuple=True), L.argwhere(a)),
       [Sample((ties(3, 4),)), Sample((ties(),))], grad=False),
    Op("masked_select", lambda L, a, m: (L.masked_select(a, m), a.masked_select(m)), [Sample((f(2, 3), mask(2, 3))),
                                                                                     Sample((f(2, 3), mask(3)))]),
    Op("outer", lambda L, a, b: (L.outer(a, b), a.ger(b)), [Sample((f(3), f(4)))]),
    Op("inner", lambda L, a, b: L.inner(a, b), [Sample((f(3), f(3))), Sample((f(2, 3), f(4, 3))), Sample((f(), f(2)))]),
    Op("vdot", lambda L, a, b: L.vdot(a, b), [Sample((f(3), f(3)))]),
    Op("tensordot", lambda L, a, b: (L.tensordot(a, b, 1), L.tensordot(a, b.transpose(0, 1), ([1], [1]))),
       [Sample((f(2, 3), f(3, 4)))]),
    Op("tensordot_dims", lambda L, a, b: (L.tensordot(a, b), L.tensordot(a, b, dims=([0, 2], [2, 1]))),
       [Sample((f(2, 3, 4), f(3, 4, 2)))]),
    Op("kron", lambda L, a, b: L.kron(a, b), [Sample((f(2, 3), f(2, 2))), Sample((f(3), f(2, 2)))]),
    Op("cross", lambda L, a, b: (L.cross(a, b, dim=1), a.cross(b)), [Sample((f(2, 3), f(2, 3)))]),
    Op("cdist", lambda L, a, b: (L.cdist(a, b), L.cdist(a, b, p=1.0), L.cdist(a, b, p=3.0)),
       [Sample((f(3, 4), f(2, 4))), Sample((f(2, 3, 4), f(2, 2, 4)))]),
    Op("addmm", lambda L, c, a, b: (L.addmm(c, a, b), c.addmm(a, b, beta=0.5, alpha=2.0)),
       [Sample((f(2, 4), f(2, 3), f(3, 4))), Sample((f(4), f(2, 3), f(3, 4)))]),
    Op("addmv", lambda L, c, a, v: L.addmv(c, a, v, alpha=0.5), [Sample((f(2), f(2, 3), f(3)))]),
    Op("addr", lambda L, c, a, b: L.addr(c, a, b, beta=2.0), [Sample((f(2, 3), f(2), f(3)))]),
    Op("addbmm", lambda L, c, a, b: (L.addbmm(c, a, b), L.baddbmm(c, a, b, alpha=0.5)),
       [Sample((f(2, 4), f(3, 2, 5), f(3, 5, 4)))]),
    Op("mvlgamma", lambda L, a: (L.mvlgamma(a, 2), a.mvlgamma(3)), unary_samples(within(1.5, 3.0))),
]

# creation and tensor plumbing (values compared where they are defined)
OPS += [
    Op("zeros", lambda L: (L.zeros(2, 3), L.ones((2,)), L.full((2, 2), 1.5), L.full((2,), 3), L.zeros(0),
                           L.empty(2, 3).fill_(2.0), L.eye(3), L.eye(2, 3), L.arange(5), L.arange(1.0, 2.0, 0.25),
                           L.linspace(0, 1, 5), L.zeros(2, dtype=L.int64), L.ones(3, dtype=L.bool)),
       [Sample(())], grad=False),
    Op("like", lambda L, a: (L.zeros_like(a), L.ones_like(a), L.full_like(a, 7.0), L.empty_like(a).zero_(),
                             a.new_zeros(2), a.new_ones((1, 2)), a.new_full((2,), 3.0), a.new_tensor([1.0, 2.0]),
                             a.new_empty(3).fill_(1.0)),
       [Sample((f(2, 3),))], grad=False),
    Op("tensor_from", lambda L, a: (L.tensor([[1, 2], [3, 4]]), L.as_tensor([1.5, 2.5]), L.tensor(3.0),
                                    L.from_numpy(np.arange(3.0))), [Sample((f(2),))], grad=False),
    Op("random_shapes", _seeded(lambda L, a: (L.rand(2, 3).shape, bool((L.rand(100) < 1).all()), L.randn(3, 2).shape,
                                              L.randint(0, 5, (4,)).dtype == L.int64, L.randperm(5).sort().values,
                                              L.rand_like(a).shape, L.randn_like(a).shape,
                                              bool((L.randint_like(a, 3) < 3).all()), L.normal(0.0, 1.0, (2,)).shape)),
       [Sample((f(2, 3),))], grad=False),
    Op("metadata", lambda L, a: (a.size(), a.size(1), a.dim(), a.numel(), L.numel(a), a.nelement(), a.element_size(),
                                 a.is_contiguous(), a.stride(), a.storage_offset(), a.is_floating_point(),
                                 L.is_floating_point(a), L.is_tensor(a), a.tolist()),
       [Sample((f(2, 3),)), Sample((nc(f(3, 2)),))], grad=False),
    Op("item", lambda L, a: (a.item(), float(a), a.tolist()), [Sample((f(),))], grad=False),
    Op("from_dlpack", lambda L, a: L.from_dlpack(a), [Sample((f(2, 3),)), Sample((i64(4),))], grad=False),
    Op("conversions", lambda L, a: (a.float(), a.double(), a.half(), a.bfloat16(), a.int(), a.long(), a.short(),
                                    a.char(), a.byte(), a.bool(), a.to(L.float64), a.type(L.float16),
                                    a.type_as(a.int()), a.cpu(), a.to("cpu"), a.clone(), a.detach(), L.detach(a),
                                    a.contiguous()),
       [Sample((f(2, 3),))], grad=False),
    Op("clone_grad", lambda L, a: (a.clone(), L.clone(a) * 2, a.contiguous(), a.float(), a.double()),
       [Sample((f(2, 3),)), Sample((nc(f(3, 2)),))], gradcheck=False),  # float() rounds a float64 check
    Op("reshape_like", lambda L, a, b: (a.view_as(b), a.reshape_as(b), b.expand_as(a.view(2, 3, 1).expand(2, 3, 2))),
       [Sample((f(2, 3), f(3, 2)))]),
    Op("unflatten", lambda L, a: (a.unflatten(1, (2, 3)), L.unflatten(a, 0, (1, -1)), L.movedim(a.view(2, 2, 3), 0, 2),
                                  L.moveaxis(a.view(2, 2, 3), (0, 1), (1, 2)), L.swapaxes(a, 0, 1),
                                  L.swapdims(a, 1, 0), a.select(1, 2), L.narrow(a, 1, 2, 3)),
       [Sample((f(2, 6),))]),
    Op("argsort", lambda L, a: (L.argsort(a), a.argsort(0, descending=True), L.argmin(a), a.argmin(1)),
       [Sample((f(3, 4),))], grad=False),
    Op("all_any_bool", lambda L, a: (L.all(a), a.any(), L.all(a, 1), a.any(0)), [Sample((mask(3, 4),))], grad=False),
    Op("checks", lambda L, a: (L.isnan(a), a.isinf(), L.isfinite(a), L.nan_to_num(a), a.nan_to_num(1.0, 2.0, -2.0),
                               L.isneginf(a), L.isposinf(a), L.isreal(a)),
       [Sample((np.array([1.0, np.nan, np.inf, -np.inf], np.float32),))], grad=False),
    Op("lerp", lambda L, a, b, w: (L.lerp(a, b, 0.3), a.lerp(b, w)), [Sample((f(2, 3), f(2, 3), f(2, 3)))]),
    Op("addcmul", lambda L, a, b, c: (L.addcmul(a, b, c, value=0.5), a.addcdiv(b, c.abs() + 0.5, value=2.0)),
       [Sample((f(2, 3), f(2, 3), f(2, 3)))]),
    Op("fmod", lambda L, a, b: (L.fmod(a, b), a.remainder(b), L.floor_divide(a, b), a.fmod(1.5), L.remainder(a, -1.5)),
       [Sample((f(2, 3), nonzero(2, 3))), Sample((i64(2, 3), i64(2, 3) + 1))], grad=False),
    Op("logic", lambda L, a, b: (L.logical_and(a, b), a.logical_or(b), L.logical_xor(a, b), L.logical_not(a),
                                 L.bitwise_and(a, b), a.bitwise_or(b), L.bitwise_xor(a, b), L.bitwise_not(a),
                                 a & b, a | b, a ^ b, ~a),
       [Sample((mask(2, 3), mask(2, 3))), Sample((i64(2, 3), i64(2, 3)))], grad=False),
    Op("shifts", lambda L, a, b: (L.bitwise_left_shift(a, b), a.bitwise_right_shift(b), a << 1, a >> b),
       [Sample((i64(2, 3, hi=100), i64(2, 3)))], grad=False),
    Op("compare", lambda L, a, b: (L.equal(a, b), L.equal(a, a), L.isclose(a, b), a.allclose(a), L.greater(a, b),
                                   L.less_equal(a, b), L.not_equal(a, b), L.greater_equal(a, b), L.less(a, b)),
       [Sample((f(2, 3), f(2, 3)))], grad=False),
    Op("clamp_methods", lambda L, a: (L.clamp_min(a, 0.0), a.clamp_max(0.5), L.clip(a, -1, 1), a.clip(max=0.0)),
       [Sample((f(2, 3),))]),
    Op("more_unary", lambda L, a: (L.neg(a), L.negative(a), L.absolute(a), L.fix(a), a.sign(), L.reciprocal(a),
                                   L.square(a), L.rsqrt(a.abs()), L.exp2(a), L.sigmoid(a), L.tanh(a), a.softmax(0),
                                   L.softmax(a, 1), L.log_softmax(a, 0), a.log_softmax(1)),
       [Sample((nonzero(2, 3),))]),
    Op("arith_aliases", lambda L, a, b: (L.multiply(a, b), L.divide(a, b), L.subtract(a, b), L.true_divide(a, b),
                                         L.div(a, b, rounding_mode="floor"), L.div(a, b, rounding_mode="trunc")),
       [Sample((f(2, 3), nonzero(2, 3)))], grad=False),
]


def _F(name, *args, **kwargs):
    """``L.nn.functional.<name>(x, *args, **kwargs)``."""
    return lambda L, *xs: getattr(L.nn.functional, name)(*xs, *args, **kwargs)


def classes(n, hi):
    return Arg(_rng.integers(0, hi, size=n).astype(np.int64), grad=False)


# torch.nn.functional: the layers ember has (their modules are tested in test_nn_modules)
OPS += [
    Op("F.relu", lambda L, a: (L.nn.functional.relu(a), L.nn.functional.gelu(a),
                               L.nn.functional.gelu(a, approximate="tanh"), L.nn.functional.silu(a),
                               L.nn.functional.elu(a, 0.5), L.nn.functional.leaky_relu(a, 0.1),
                               L.nn.functional.softplus(a, 2.0), L.nn.functional.sigmoid(a), L.nn.functional.tanh(a),
                               L.nn.functional.softmax(a, 1), L.nn.functional.log_softmax(a, -1),
                               L.nn.functional.dropout(a, 0.5, training=False)),
       [Sample((f(2, 3),)), Sample((nc(f(3, 2)),))]),
    Op("F.pad", lambda L, a: (L.nn.functional.pad(a, (1, 2)), L.nn.functional.pad(a, (2, 1, 1, 0), "reflect"),
                              L.nn.functional.pad(a, (1, 1, 2, 2), "replicate"),
                              L.nn.functional.pad(a, (3, 1), "circular"), L.nn.functional.pad(a, (-1, 1), value=2.5)),
       [Sample((f(2, 3, 4),)), Sample((nc(f(2, 4, 3)),))]),
    Op("F.pad_reflect_too_big", lambda L, a: L.nn.functional.pad(a, (4, 0), "reflect"), [Sample((f(2, 5),))],
       errors=[(Sample((f(2, 3),)), RuntimeError)]),
    Op("F.activations", lambda L, a: tuple(getattr(L.nn.functional, n)(a) for n in (
        "relu6", "selu", "celu", "softsign", "hardtanh", "hardsigmoid", "hardswish", "mish", "logsigmoid",
        "tanhshrink", "softshrink", "hardshrink")) + (L.nn.functional.threshold(a, 0.1, -2.0),
                                                     L.nn.functional.glu(a, 0), L.nn.functional.softmin(a, 1),
                                                     L.nn.functional.celu(a, 0.5),
                                                     L.nn.functional.hardtanh(a * 4, -2.0, 3.0),
                                                     L.nn.functional.rrelu(a),
                                                     L.nn.functional.prelu(a, L.tensor([0.2, -0.1, 0.3]))),
       [Sample((f(2, 3) * 3,)), Sample((f(4, 3) * 2,))]),
    Op("F.linear", _F("linear"), [Sample((f(4, 3), f(5, 3), f(5))), Sample((f(2, 4, 3), f(5, 3)))]),
    Op("F.conv1d", _F("conv1d", padding=1), [Sample((f(2, 3, 7), f(4, 3, 3), f(4)))]),
    Op("F.conv2d", _F("conv2d", stride=2, padding=1), [Sample((f(2, 3, 6, 6), f(4, 3, 3, 3), f(4)))]),
    Op("F.pool", lambda L, a: (L.nn.functional.max_pool2d(a, 2), L.nn.functional.avg_pool2d(a, 2),
                               L.nn.functional.adaptive_avg_pool2d(a, (2, 3)),
                               L.nn.functional.max_pool1d(a.flatten(2), 3),
                               L.nn.functional.avg_pool1d(a.flatten(2), 2)),
       [Sample((f(2, 3, 4, 6),))]),
    Op("F.batch_norm", lambda L, a, w, b: (L.nn.functional.batch_norm(a, None, None, w, b, training=True),
                                           L.nn.functional.layer_norm(a, (4,), None, None)),
       [Sample((f(3, 2, 4), f(2), f(2)))]),
    Op("F.losses", lambda L, x, y, p: (L.nn.functional.cross_entropy(x, y), L.nn.functional.nll_loss(x, y),
                                       L.nn.functional.mse_loss(x, p), L.nn.functional.l1_loss(x, p),
                                       L.nn.functional.binary_cross_entropy(x.sigmoid(), p.sigmoid()),
                                       L.nn.functional.binary_cross_entropy_with_logits(x, p.sigmoid())),
       [Sample((f(4, 5), classes(4, 5), Arg(f(4, 5), grad=False)))]),
]


def _Fk(name):
    """``L.nn.functional.<name>(*xs, **sample_kwargs)``."""
    return lambda L, *xs, **k: getattr(L.nn.functional, name)(*xs, **k)


def signs(*shape):
    """+-1 float targets (margin and embedding losses), no gradient."""
    return Arg(np.where(_rng.random(size=shape) < 0.5, -1.0, 1.0).astype(np.float32), grad=False)


def _unpool(L, a):
    F = L.nn.functional
    out2, idx2 = F.max_pool2d(a, 2, return_indices=True)
    out1, idx1 = F.max_pool1d(a.flatten(2), 3, return_indices=True)
    out3, idx3 = F.max_pool3d(a.unsqueeze(2), (1, 2, 2), return_indices=True)
    # the output size is the input's: pooling an odd size drops a row that the indices may point past
    return (F.max_unpool2d(out2, idx2, 2, output_size=a.shape[-2:]),
            F.max_unpool1d(out1, idx1, 3), F.max_unpool1d(out1, idx1, 3, stride=3, output_size=[25]),
            F.max_unpool3d(out3, idx3, (1, 2, 2), output_size=a.unsqueeze(2).shape[2:]))


def _interpolate(L, a):
    F = L.nn.functional
    return (F.interpolate(a, scale_factor=2), F.interpolate(a, size=(5, 7), mode="nearest-exact"),
            F.interpolate(a, size=(3, 8), mode="bilinear", align_corners=True),
            F.interpolate(a, scale_factor=1.5, mode="bilinear"),
            F.interpolate(a, scale_factor=(0.7, 1.3), mode="bilinear", recompute_scale_factor=True),
            F.interpolate(a, size=(6, 5), mode="bicubic"), F.interpolate(a, size=(3, 3), mode="bicubic",
                                                                         align_corners=True),
            F.interpolate(a, size=(2, 3), mode="area"), F.interpolate(a, size=(2, 3), mode="bilinear", antialias=True),
            F.interpolate(a.flatten(2), size=9, mode="linear"), F.interpolate(a.flatten(2), scale_factor=0.5),
            F.interpolate(a.unsqueeze(2), size=(2, 5, 7), mode="trilinear"),
            F.interpolate(a.unsqueeze(2), scale_factor=(2, 1, 0.5), mode="nearest"),
            F.upsample(a, scale_factor=2, mode="nearest"), F.upsample_nearest(a, size=(6, 6)),
            F.upsample_bilinear(a, scale_factor=2))


def _instance_norm_running(L, a, rm, rv):
    out = L.nn.functional.instance_norm(a, rm, rv, use_input_stats=True, momentum=0.3)
    return out, rm, rv  # the running statistics, updated in place


def _norms(L, a, w, b, rm, rv):
    F = L.nn.functional
    return (F.group_norm(a, 2, w, b), F.group_norm(a, 1, eps=1e-3), F.group_norm(a, 4, w),
            F.instance_norm(a, weight=w, bias=b), F.instance_norm(a, rm, rv, use_input_stats=False, weight=w))


def _norms_other(L, a, w_last):
    F = L.nn.functional
    return (F.rms_norm(a, a.shape[-1:]), F.rms_norm(a, a.shape[-2:], eps=1e-3), F.rms_norm(a, [a.shape[-1]], w_last),
            F.local_response_norm(a, 3), F.local_response_norm(a, 2, alpha=0.1, beta=0.5, k=2.0),
            F.local_response_norm(a.flatten(2), 3), F.local_response_norm(a.unsqueeze(2), 2),
            F.normalize(a), F.normalize(a, p=1, dim=-1), F.normalize(a, p=3.0, dim=(2, 3)))


def _embedding_bag(L, idx, offsets, w, psw):
    F = L.nn.functional
    return (F.embedding_bag(idx, w, offsets), F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=psw),
            F.embedding_bag(idx, w, offsets, mode="max"), F.embedding_bag(idx.view(2, 3), w),
            F.embedding_bag(idx.view(3, 2), w, mode="max"),
            F.embedding_bag(idx, w, L.tensor([0, 2, 6]), include_last_offset=True),
            F.embedding_bag(idx, w, offsets, padding_idx=2))


def _regression_losses(L, x, y):
    F = L.nn.functional
    return (F.kl_div(x.log_softmax(1), y.softmax(1), reduction="batchmean"),
            F.kl_div(x, y, reduction="sum", log_target=True), F.kl_div(x, y.softmax(1), reduction="none"),
            F.kl_div(x.log_softmax(1), y.softmax(1)),
            F.huber_loss(x, y), F.huber_loss(x, y, reduction="none", delta=0.5),
            F.smooth_l1_loss(x, y, beta=0.7), F.smooth_l1_loss(x, y, reduction="sum"),
            F.poisson_nll_loss(x, y.abs()), F.poisson_nll_loss(x.exp(), y.abs(), log_input=False, full=True,
                                                                reduction="sum"),
            F.poisson_nll_loss(x, y.abs() + 1, full=True, reduction="none"))


def _class_losses(L, x, y, ys, ybin, w):
    F = L.nn.functional
    return (F.multi_margin_loss(x, y), F.multi_margin_loss(x, y, p=2, margin=0.5, weight=w, reduction="sum"),
            F.multi_margin_loss(x, y, reduction="none"),
            F.multilabel_margin_loss(x, ys), F.multilabel_margin_loss(x, ys, reduction="none"),
            F.multilabel_soft_margin_loss(x, ybin), F.multilabel_soft_margin_loss(x, ybin, weight=w, reduction="sum"),
            F.soft_margin_loss(x, ybin * 2 - 1), F.soft_margin_loss(x, ybin * 2 - 1, reduction="none"))


def _pair_losses(L, a, b, c, t):
    F = L.nn.functional
    return (F.margin_ranking_loss(a[:, 0], b[:, 0], t[:, 0], margin=0.2),
            F.margin_ranking_loss(a, b, t, reduction="none"),
            F.hinge_embedding_loss(a, t), F.hinge_embedding_loss(a, t, margin=0.5, reduction="sum"),
            F.cosine_embedding_loss(a, b, t[:, 0]), F.cosine_embedding_loss(a, b, t[:, 0], margin=0.1,
                                                                            reduction="none"),
            F.triplet_margin_loss(a, b, c), F.triplet_margin_loss(a, b, c, margin=0.5, p=1, swap=True,
                                                                  reduction="none"),
            F.triplet_margin_with_distance_loss(a, b, c),
            F.triplet_margin_with_distance_loss(a, b, c, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v),
                                                margin=0.5, swap=True, reduction="sum"),
            F.pairwise_distance(a, b), F.pairwise_distance(a, b, p=1, keepdim=True),
            F.pairwise_distance(a, b[0], p=3.0), F.pairwise_distance(a, b, p=math.inf),
            F.cosine_similarity(a, b), F.cosine_similarity(a, b[:1], dim=-1), F.cosine_similarity(a, b, dim=0))


def _ctc(L, logits, targets):
    F = L.nn.functional
    lp = logits.log_softmax(2)
    il, tl = L.tensor([6, 5]), L.tensor([3, 2])
    flat = L.cat([targets[0, :3], targets[1, :2]])
    return (F.ctc_loss(lp, targets, il, tl), F.ctc_loss(lp, targets, (6, 5), (3, 2), reduction="sum"),
            F.ctc_loss(lp, flat, il, tl, reduction="none"), F.ctc_loss(lp, targets, il, L.tensor([3, 3])),
            F.ctc_loss(lp, targets.clamp(max=2), il, tl, blank=3),
            F.ctc_loss(lp[:2], targets, L.tensor([2, 2]), tl, reduction="none", zero_infinity=True))


def _attention(L, q, k, v, fmask, bmask):
    F = L.nn.functional
    return (F.scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v, attn_mask=bmask),
            F.scaled_dot_product_attention(q, k, v, attn_mask=fmask),
            F.scaled_dot_product_attention(q, k[..., :3, :], v[..., :3, :], is_causal=True),
            F.scaled_dot_product_attention(q, k, v, scale=0.3))


def _mha(L, q, k, v, in_w, in_b, out_w, out_b, bias_k, bias_v, kpm):
    F = L.nn.functional
    common = dict(embed_dim_to_check=q.shape[-1], num_heads=2, in_proj_weight=in_w, in_proj_bias=in_b, dropout_p=0.0,
                  out_proj_weight=out_w, out_proj_bias=out_b, training=False)
    return (F.multi_head_attention_forward(q, k, v, bias_k=None, bias_v=None, add_zero_attn=False, **common),
            F.multi_head_attention_forward(q, k, v, bias_k=bias_k, bias_v=bias_v, add_zero_attn=True,
                                           average_attn_weights=False, **common),
            F.multi_head_attention_forward(q, k, v, bias_k=None, bias_v=None, add_zero_attn=False,
                                           key_padding_mask=kpm, need_weights=False, **common))


# attention masks: every query keeps at least one key (a fully masked row is NaN in both libraries)
_KEEP = np.array([[True, False, True, True, False], [False, False, True, False, True],
                  [True, True, True, True, True]])
# multilabel_margin_loss targets: each row's class indices up to the first -1
_MULTILABEL = np.array([[3, 0, -1, 1, 2], [1, 2, 4, 0, 3], [-1, 0, 1, 2, 3], [4, -1, 2, 2, 2]], np.int64)

# torch.nn.functional, continued: 3-d and transposed convolutions, the other pools, resampling, the other
# norms, embeddings, dropouts in their deterministic settings, the other losses, attention
OPS += [
    Op("F.conv3d", _Fk("conv3d"), [Sample((f(1, 2, 3, 4, 4), f(3, 2, 2, 3, 2), f(3)), {"stride": (1, 2, 1),
                                                                                      "padding": 1}),
                                   Sample((f(1, 4, 3, 3, 4), f(2, 2, 2, 1, 2)), {"groups": 2, "dilation": (1, 2, 2)}),
                                   Sample((f(2, 3, 3, 3), f(2, 2, 2, 2, 2)), {"padding": "same"})],
       errors=[(Sample((f(2, 3, 4), f(3, 2, 2, 2, 2))), RuntimeError),
               (Sample((f(1, 3, 4, 4, 4), f(2, 2, 2, 2, 2))), RuntimeError)]),
    Op("F.conv_transpose1d", _Fk("conv_transpose1d"),
       [Sample((f(2, 3, 5), f(3, 4, 3), f(4)), {"stride": 2, "padding": 1, "output_padding": 1}),
        Sample((f(1, 4, 5), f(4, 2, 3)), {"groups": 2, "dilation": 2}), Sample((f(3, 5), f(3, 2, 2)))],
       errors=[(Sample((f(2, 3, 5), f(4, 2, 3))), RuntimeError)]),
    Op("F.conv_transpose2d", _Fk("conv_transpose2d"),
       [Sample((f(1, 2, 3, 4), f(2, 3, 3, 2), f(3)), {"stride": (2, 1), "padding": (1, 0)}),
        Sample((f(2, 4, 2, 3), f(4, 1, 2, 2)), {"groups": 2, "stride": 2, "output_padding": 1, "dilation": 1})],
       errors=[(Sample((f(1, 2, 3, 4), f(2, 3, 3, 2)), {"stride": 2, "output_padding": 2}), RuntimeError)]),
    Op("F.conv_transpose3d", _Fk("conv_transpose3d"),
       [Sample((f(1, 2, 2, 3, 2), f(2, 2, 2, 2, 2), f(2)), {"stride": 2, "output_padding": (1, 0, 1)}),
        Sample((f(2, 2, 2, 2), f(2, 1, 1, 2, 2)), {"padding": (0, 1, 0), "dilation": 2})]),
    Op("F.unfold", lambda L, a: (L.nn.functional.unfold(a, (2, 3), padding=1, stride=(1, 2)),
                                 L.nn.functional.unfold(a, 2, dilation=(2, 1)), L.nn.functional.unfold(a[0], 3)),
       [Sample((f(2, 3, 4, 5),)), Sample((nc(f(1, 2, 5, 4)),))],
       errors=[(Sample((f(1, 2, 3, 4, 4),)), RuntimeError)]),
    Op("F.fold", lambda L, a: (L.nn.functional.fold(a, (4, 5), 2),
                               L.nn.functional.fold(a, (3, 11), (2, 2), stride=(1, 2), padding=(0, 1)),
                               L.nn.functional.fold(a[0], [4, 4], 2, dilation=(2, 1), padding=(1, 0))),
       [Sample((f(2, 12, 12),))], errors=[(Sample((f(2, 12, 11),)), RuntimeError)]),
    Op("F.pool3d", lambda L, a: (L.nn.functional.max_pool3d(a, 2),
                                 L.nn.functional.max_pool3d(a, (2, 1, 2), stride=1, padding=(1, 0, 1), ceil_mode=True),
                                 L.nn.functional.max_pool3d(a, 2, stride=1, dilation=(1, 2, 2)),
                                 L.nn.functional.avg_pool3d(a, 2, stride=1, padding=1, count_include_pad=False),
                                 L.nn.functional.avg_pool3d(a, 2, ceil_mode=True, divisor_override=3),
                                 L.nn.functional.adaptive_avg_pool3d(a, (2, None, 3)),
                                 L.nn.functional.adaptive_max_pool3d(a, 2), L.nn.functional.lp_pool3d(a.abs(), 2, 2)),
       [Sample((f(1, 3, 3, 4),)), Sample((f(1, 2, 4, 3, 5),))],
       errors=[(Sample((f(1, 2, 1, 3, 3),)), RuntimeError)]),
    Op("F.pool1d", lambda L, a: (L.nn.functional.adaptive_avg_pool1d(a, 4), L.nn.functional.adaptive_max_pool1d(a, 3),
                                 L.nn.functional.lp_pool1d(a, 2, 3), L.nn.functional.lp_pool1d(a, 1.5, 3, stride=2,
                                                                                               ceil_mode=True),
                                 L.nn.functional.max_pool1d(a, 2, stride=1, padding=1, dilation=2, ceil_mode=True),
                                 L.nn.functional.avg_pool1d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
       [Sample((pos(2, 3, 7),)), Sample((pos(3, 8),))],
       errors=[(Sample((pos(2, 3, 1, 1, 7),)), RuntimeError)]),
    Op("F.pool2d", lambda L, a: (L.nn.functional.adaptive_max_pool2d(a, (2, 3)),
                                 L.nn.functional.adaptive_avg_pool2d(a, (None, 4)),
                                 L.nn.functional.lp_pool2d(a, 2, 2), L.nn.functional.lp_pool2d(a, 3, (2, 3), stride=1),
                                 L.nn.functional.max_pool2d(a, 3, 2, 1, ceil_mode=True),
                                 L.nn.functional.avg_pool2d(a, 3, 2, 1, count_include_pad=False, divisor_override=2)),
       [Sample((pos(2, 3, 5, 6),))]),
    Op("F.pool_indices", lambda L, a: (L.nn.functional.max_pool3d(a, 2, return_indices=True),
                                       L.nn.functional.max_pool3d_with_indices(a, (1, 2, 2), stride=1),
                                       L.nn.functional.max_pool2d(a.flatten(3), 2, return_indices=True),
                                       L.nn.functional.max_pool2d_with_indices(a.flatten(3), 3, padding=1),
                                       L.nn.functional.max_pool1d(a.flatten(2), 3, return_indices=True),
                                       L.nn.functional.max_pool1d_with_indices(a.flatten(2), 2),
                                       L.nn.functional.adaptive_max_pool1d(a.flatten(2), 5, return_indices=True),
                                       L.nn.functional.adaptive_max_pool2d_with_indices(a.flatten(3), (3, 2)),
                                       L.nn.functional.adaptive_max_pool1d_with_indices(a.flatten(2), 4),
                                       L.nn.functional.adaptive_max_pool3d(a, (1, 2, 2), True),
                                       L.nn.functional.adaptive_max_pool3d_with_indices(a, 1)),
       [Sample((f(1, 2, 2, 4, 3),))]),
    Op("F.max_unpool", _unpool, [Sample((f(1, 2, 4, 6),)), Sample((f(2, 1, 5, 5),))]),
    Op("F.max_unpool_output_size", lambda L, a, size: L.nn.functional.max_unpool2d(
        *L.nn.functional.max_pool2d(a, 2, return_indices=True), 2, output_size=size),
       [Sample((f(1, 2, 4, 6), (5, 7)))], errors=[(Sample((f(1, 2, 4, 6), (9, 9))), ValueError)]),
    Op("F.interpolate", _interpolate, [Sample((nc(f(1, 1, 3, 3)),)), Sample((f(2, 2, 4, 5),))]),
    Op("F.interpolate_args", _Fk("interpolate"), [Sample((f(1, 2, 4, 5),), {"size": 3, "mode": "bilinear"})],
       errors=[(Sample((f(1, 2, 4, 5),), {"size": 3, "scale_factor": 2}), ValueError),
               (Sample((f(1, 2, 4, 5),), {"size": (3, 3), "mode": "linear"}), NotImplementedError),
               (Sample((f(1, 2, 4, 5),), {"size": (3, 3), "mode": "cubic"}), NotImplementedError)]),
    Op("F.grid_sample", lambda L, x, g, g5: (L.nn.functional.grid_sample(x, g, align_corners=False),
                                         L.nn.functional.grid_sample(x, g, mode="nearest", padding_mode="border",
                                                                     align_corners=True),
                                         L.nn.functional.grid_sample(x, g, mode="bicubic", padding_mode="reflection",
                                                                     align_corners=False),
                                         L.nn.functional.grid_sample(x, g, padding_mode="reflection",
                                                                     align_corners=True),
                                         L.nn.functional.grid_sample(x.unsqueeze(2).expand(-1, -1, 2, -1, -1) * 1, g5,
                                                                     align_corners=False),
                                         L.nn.functional.grid_sample(x.unsqueeze(2).expand(-1, -1, 2, -1, -1) * 1, g5,
                                                                     mode="nearest", padding_mode="border")),
       [Sample((f(1, 1, 3, 3), f(1, 2, 2, 2, lo=-1.2, hi=1.2), f(1, 1, 2, 2, 3, lo=-1.2, hi=1.2))),
        Sample((f(2, 3, 4, 5), f(2, 3, 2, 2, lo=-1.2, hi=1.2), f(2, 2, 1, 2, 3, lo=-1.2, hi=1.2)))],
       errors=[(Sample((f(1, 2, 3, 3), f(1, 3, 2, 3), f(1, 1, 2, 2, 3))), RuntimeError)]),
    Op("F.affine_grid", lambda L, t, x: (L.nn.functional.affine_grid(t, (1, 2, 3, 4), align_corners=False),
                                         L.nn.functional.affine_grid(t, [1, 1, 2, 3], align_corners=True),
                                         L.nn.functional.grid_sample(x, L.nn.functional.affine_grid(t * 0.8, x.shape,
                                                                                                    False),
                                                                     align_corners=False)),
       [Sample((f(1, 2, 3, lo=-1, hi=1), f(1, 2, 4, 5)))],
       errors=[(Sample((f(1, 3, 3), f(1, 2, 4, 5))), ValueError)]),
    Op("F.affine_grid_3d", lambda L, t: (L.nn.functional.affine_grid(t, (1, 1, 2, 3, 2), align_corners=False),
                                         L.nn.functional.affine_grid(t, (1, 3, 3, 2, 2), align_corners=True)),
       [Sample((f(1, 3, 4, lo=-1, hi=1),))]),
    Op("F.shuffles", lambda L, a: (L.nn.functional.pixel_shuffle(a, 2), L.nn.functional.pixel_unshuffle(a, 2),
                                   L.nn.functional.channel_shuffle(a, 2), L.nn.functional.pixel_shuffle(a[0], 1),
                                   L.nn.functional.pixel_unshuffle(a.unsqueeze(0), 1)),
       [Sample((f(2, 4, 2, 4),)), Sample((nc(f(1, 4, 4, 2)),))],
       errors=[(Sample((f(1, 3, 2, 2),)), RuntimeError)]),
    Op("F.norms", _norms, [Sample((f(1, 4, 2, 3), f(4), f(4), Arg(f(4), grad=False), Arg(pos(4), grad=False))),
                           Sample((f(2, 4, 3, 5), f(4), f(4), Arg(f(4), grad=False), Arg(pos(4), grad=False)))],
       errors=[(Sample((f(2, 4, 3, 5), f(4), f(3), Arg(f(4), grad=False), Arg(pos(4), grad=False))),
                RuntimeError)]),
    Op("F.norms_other", _norms_other, [Sample((f(1, 3, 2, 3), f(3))), Sample((f(2, 4, 3, 5), f(5)))]),
    Op("F.instance_norm_running", _instance_norm_running,
       [Sample((f(2, 3, 4), Arg(f(3), grad=False), Arg(pos(3), grad=False)))], grad=False),
    Op("F.group_norm_groups", lambda L, a: L.nn.functional.group_norm(a, 2), [Sample((f(2, 4, 3),))],
       errors=[(Sample((f(2, 3, 4),)), RuntimeError)]),
    Op("F.embedding", _Fk("embedding"), [Sample((i64(2, 3), f(5, 3))), Sample((np.array(3), f(6, 2)))],
       errors=[(Sample((np.array([0, 5]), f(5, 3))), IndexError), (Sample((f(2), f(5, 3))), RuntimeError)]),
    # torch's gradient is by design not the derivative here (the padding row gets none, scale_grad_by_freq
    # divides by the count, max_norm rescales rows outside the graph): compared with torch, no gradcheck.
    # (embedding_bag's scale_grad_by_freq is left out: torch 2.13's CPU kernel divides some rows by another
    # index's count, and ember follows the documented rule)
    Op("F.embedding_options", lambda L, i, w: (L.nn.functional.embedding(i, w, padding_idx=1),
                                               L.nn.functional.embedding(i, w, padding_idx=-2, scale_grad_by_freq=True),
                                               L.nn.functional.embedding(i, w.clone(), max_norm=1.0)),
       [Sample((i64(2, 3), f(5, 3)))], gradcheck=False),
    Op("F.embedding_bag", _embedding_bag, [Sample((i64(6), np.array([0, 2, 2, 5]), f(5, 3), f(6)))],
       errors=[(Sample((i64(6), np.array([0, 2, 2, 5]), f(5, 3), f(5))), ValueError)]),
    Op("F.one_hot", lambda L, i: (L.nn.functional.one_hot(i), L.nn.functional.one_hot(i, 7)),
       [Sample((i64(2, 3),)), Sample((np.array([0, 4]),))], grad=False,
       errors=[(Sample((np.array([[1, 8]]),)), RuntimeError), (Sample((np.array([-1, 2]),)), RuntimeError)]),
    Op("F.bilinear", lambda L, a, b, w, *bias: L.nn.functional.bilinear(a, b, w, *bias),
       [Sample((f(2, 3), f(2, 4), f(5, 3, 4), f(5))), Sample((f(2, 2, 3), f(2, 2, 4), f(2, 3, 4)))],
       errors=[(Sample((f(2, 3), f(3, 4), f(5, 3, 4))), RuntimeError)]),
    Op("F.dropouts", lambda L, a: (L.nn.functional.dropout1d(a.flatten(2), 0.3, training=False),
                                   L.nn.functional.dropout2d(a, 0.5, training=False),
                                   L.nn.functional.dropout3d(a.unsqueeze(2), training=False),
                                   L.nn.functional.alpha_dropout(a, 0.4), L.nn.functional.alpha_dropout(a, 0.0, True),
                                   L.nn.functional.feature_alpha_dropout(a, 0.5, training=False),
                                   L.nn.functional.feature_alpha_dropout(a, 0.0, training=True),
                                   L.nn.functional.dropout(a, 0.0, training=True),
                                   L.nn.functional.dropout2d(a, 0.0, training=True)),
       [Sample((f(2, 3, 2, 4),))]),
    Op("F.dropout_args", _Fk("dropout1d"), [Sample((f(2, 3, 4),), {"p": 0.3, "training": False})],
       errors=[(Sample((f(2, 3, 4),), {"p": 1.5}), ValueError), (Sample((f(2, 3, 2, 4),), {"p": 0.0}), RuntimeError)]),
    Op("F.regression_losses", _regression_losses, [Sample((f(3, 4), f(3, 4)))],
       errors=[(Sample((f(3, 4), f(2, 4))), RuntimeError)]),
    Op("F.class_losses", _class_losses, [Sample((f(4, 5), classes(4, 5), _MULTILABEL,
                                                 Arg(mask(4, 5).astype(np.float32), grad=False),
                                                 Arg(pos(5), grad=False)))]),
    Op("F.multi_margin_args", _Fk("multi_margin_loss"), [Sample((f(4, 5), classes(4, 5)), {"p": 2, "margin": 0.3})],
       errors=[(Sample((f(4, 5), classes(4, 5)), {"p": 3}), ValueError),
               (Sample((f(4, 5), classes(3, 5))), RuntimeError)]),
    Op("F.pair_losses", _pair_losses, [Sample((f(2, 3), f(2, 3), f(2, 3), signs(2, 3))),
                                       Sample((f(4, 5), f(4, 5), f(4, 5), signs(4, 5)))],
       errors=[(Sample((f(4, 5), f(3, 5), f(4, 5), signs(4, 5))), RuntimeError)]),
    Op("F.gaussian_nll_loss", lambda L, x, y, v: (L.nn.functional.gaussian_nll_loss(x, y, v),
                                                  L.nn.functional.gaussian_nll_loss(x, y, v[:, :1], full=True,
                                                                                    reduction="sum"),
                                                  L.nn.functional.gaussian_nll_loss(x, y, v[:, 0], reduction="none"),
                                                  L.nn.functional.gaussian_nll_loss(x, y, v.detach() * 0, eps=0.1)),
       [Sample((f(3, 4), f(3, 4), pos(3, 4)))],
       errors=[(Sample((f(3, 4), f(3, 4), -pos(3, 4))), ValueError)]),
    # torch's ctc gradient is itself not differentiable, and neither is ember's: no float64 gradcheck (which
    # also checks second derivatives); the first derivatives are compared with torch's all the same
    Op("F.ctc_loss", _ctc, [Sample((f(6, 2, 4), np.array([[1, 2, 2], [3, 1, 1]])))], gradcheck=False),
    Op("F.ctc_loss_args", lambda L, x, *r: L.nn.functional.ctc_loss(x.log_softmax(2), *r),
       [Sample((f(4, 2, 3), np.array([[1, 2], [2, 2]]), (4, 3), (2, 1)))], gradcheck=False,
       errors=[(Sample((f(4, 2, 3), np.array([[1, 2], [2, 2]]), (4, 3), (3, 1))), RuntimeError),
               (Sample((f(4, 2, 3), np.array([[1, 2], [2, 2]]), (5, 3), (2, 1))), RuntimeError)]),
    Op("F.scaled_dot_product_attention", _attention,
       [Sample((f(1, 3, 2), f(1, 5, 2), f(1, 5, 2), f(3, 5), Arg(_KEEP, grad=False))),
        Sample((f(2, 3, 4), f(2, 5, 4), f(2, 5, 6), f(3, 5), Arg(_KEEP, grad=False))),
        Sample((f(1, 2, 3, 4), f(1, 2, 5, 4), f(1, 2, 5, 2), f(2, 1, 5), Arg(_KEEP, grad=False)))],
       errors=[(Sample((f(2, 3, 4), f(2, 5, 3), f(2, 5, 6), f(3, 5), Arg(_KEEP, grad=False))), RuntimeError)]),
    Op("F.multi_head_attention_forward", _mha,
       [Sample((f(1, 1, 2), f(2, 1, 2), f(2, 1, 2), f(6, 2), f(6), f(2, 2), f(2), f(1, 1, 2), f(1, 1, 2),
                Arg(_KEEP[:1, :2] == 0, grad=False))),
        Sample((f(3, 2, 4), f(5, 2, 4), f(5, 2, 4), f(12, 4), f(12), f(4, 4), f(4), f(1, 1, 4), f(1, 1, 4),
                Arg(_KEEP[:2] == 0, grad=False)))]),
]


WITH_ZERO = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]], np.float32)
ALL_ZERO = np.zeros((2, 3), np.float32)
TIED = np.array([[2.0, 5.0, 5.0], [1.0, 1.0, 1.0]], np.float32)

# gradients at the edges, where torch documents a particular value (a subgradient, inf, nan)
OPS += [
    Op("edge_norm_at_zero", lambda L, a: (L.norm(a), a.norm(dim=1), L.norm(a, p=1)), [Sample((ALL_ZERO,)),
                                                                                       Sample((WITH_ZERO,))],
       gradcheck=False),
    Op("edge_sqrt_at_zero", lambda L, a: (L.sqrt(a.abs()), a.abs() ** 0.5), [Sample((WITH_ZERO,))], gradcheck=False),
    Op("edge_std_of_constant", lambda L, a: (L.std(a), a.std(1), L.var(a, 0)), [Sample((np.full((2, 3), 1.5,
                                                                                              np.float32),))],
       gradcheck=False),
    Op("edge_max_ties", lambda L, a: (L.max(a), a.max(1), L.amax(a, 1), L.min(a, 0), a.amin()), [Sample((TIED,))],
       gradcheck=False),
    Op("edge_max_pool_ties", lambda L, a: L.nn.functional.max_pool2d(a, 2, 1), [Sample((np.ones((1, 1, 3, 3),
                                                                                               np.float32),))],
       gradcheck=False),
    Op("edge_pow_at_zero", lambda L, a: (a ** 2, a ** 0, a ** 3.0, a ** -1.0, L.pow(a, 1)), [Sample((WITH_ZERO,))],
       gradcheck=False),
    Op("edge_pow_base_zero", lambda L, a, b: (L.pow(a, b), L.pow(0.0, b)), [Sample((ALL_ZERO, f(2, 3)))],
       gradcheck=False),
    Op("edge_repeated_indices", lambda L, a: (a[L.tensor([0, 0, 1, 0])], a[:, [2, 2]],
                                              L.index_select(a, 1, L.tensor([1, 1, 1])),
                                              L.index_put(a, (L.tensor([0, 0]), L.tensor([1, 1])), L.tensor(2.0),
                                                          accumulate=True),
                                              a.gather(1, L.tensor([[0, 0], [2, 2]]))),
       [Sample((f(2, 3),))]),
]


def _sym(L, a):
    return (a + a.mT) / 2  # eigh reads one triangle: symmetrize so both libraries see one matrix


# torch.linalg (sign-free outputs where a decomposition's signs are the library's choice)
OPS += [
    Op("linalg.inv", lambda L, a: (L.linalg.inv(a), L.inverse(a), a.inverse()),
       [Sample((well_conditioned(3, 3),)), Sample((well_conditioned(2, 4, 4),))],
       errors=[(Sample((np.zeros((2, 2), np.float32),)), RuntimeError), (Sample((f(2, 3),)), RuntimeError)]),
    Op("linalg.det", lambda L, a: (L.linalg.det(a), L.det(a), a.det(), L.linalg.slogdet(a), L.logdet(a), a.slogdet()),
       [Sample((well_conditioned(3, 3),)), Sample((well_conditioned(2, 3, 3),))]),
    Op("linalg.solve", lambda L, a, b: (L.linalg.solve(a, b), L.linalg.solve(a, b[..., 0]),
                                        L.linalg.solve(a, b.mT, left=False)),
       [Sample((well_conditioned(3, 3), f(3, 2))), Sample((well_conditioned(2, 3, 3), f(2, 3, 3)))]),
    Op("linalg.solve_triangular", lambda L, a, b: (L.linalg.solve_triangular(a, b, upper=True),
                                                   L.linalg.solve_triangular(a, b, upper=False, unitriangular=True)),
       [Sample((well_conditioned(3, 3), f(3, 2)))]),
    Op("linalg.cholesky", lambda L, a: (L.linalg.cholesky(_sym(L, a)), L.linalg.cholesky(_sym(L, a), upper=True)),
       [Sample((spd(3, 3),)), Sample((spd(2, 4, 4),))],
       errors=[(Sample((-np.eye(2, dtype=np.float32),)), RuntimeError)]),
    Op("linalg.qr", lambda L, a: tuple(x for Q, R in [L.linalg.qr(a)] for x in (Q @ R, Q.abs(), R.abs())),
       [Sample((f(4, 3),)), Sample((well_conditioned(3, 3),))]),
    Op("linalg.eigh", lambda L, a: tuple(x for w, V in [L.linalg.eigh(_sym(L, a))] for x in (w, V * V)) +
       (L.linalg.eigvalsh(_sym(L, a)),), [Sample((f(3, 3),)), Sample((f(2, 4, 4),))]),
    Op("linalg.svd", lambda L, a: tuple(x for U, S, Vh in [L.linalg.svd(a, full_matrices=False)]
                                        for x in (S, U * U, Vh * Vh, (U * S.unsqueeze(-2)) @ Vh)) +
       (L.linalg.svdvals(a),), [Sample((f(4, 3),)), Sample((f(3, 5),)), Sample((f(2, 3, 3),))]),
    Op("linalg.pinv", lambda L, a: (L.linalg.pinv(a), L.pinverse(a)), [Sample((f(4, 3),)), Sample((f(2, 3),))]),
    Op("linalg.lstsq", lambda L, a, b: L.linalg.lstsq(a, b).solution, [Sample((f(5, 3), f(5, 2)))]),
    Op("linalg.matrix_rank", lambda L, a: (L.linalg.matrix_rank(a), L.linalg.matrix_rank(a @ a.mT)),
       [Sample((f(3, 2),)), Sample((f(2, 4, 4),))], grad=False),
    Op("linalg.matrix_power", lambda L, a: (L.linalg.matrix_power(a, 3), L.matrix_power(a, 0), a.matrix_power(-2),
                                            L.linalg.matrix_power(a, 1)),
       [Sample((well_conditioned(3, 3),))]),
    Op("linalg.multi_dot", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [Sample((f(2, 3), f(3, 4), f(4)))]),
    Op("linalg.norms", lambda L, a: (L.linalg.vector_norm(a), L.linalg.vector_norm(a, 1, 1),
                                     L.linalg.vector_norm(a, float("inf"), -1, keepdim=True),
                                     L.linalg.vector_norm(a, 0.5), L.linalg.matrix_norm(a),
                                     L.linalg.matrix_norm(a, "nuc"), L.linalg.matrix_norm(a, 2),
                                     L.linalg.matrix_norm(a, -2), L.linalg.matrix_norm(a, 1),
                                     L.linalg.matrix_norm(a, float("-inf"), keepdim=True),
                                     L.linalg.norm(a), L.linalg.norm(a, dim=1), L.linalg.norm(a, "fro", (0, 1))),
       [Sample((f(3, 4),)), Sample((f(2, 3, 3),))]),
    Op("linalg.norm_ord_needs_dim", lambda L, a: L.linalg.norm(a, 1), [Sample((f(3, 4),))],
       errors=[(Sample((f(2, 2, 2),)), RuntimeError)]),
    Op("linalg.vecdot", lambda L, a, b: (L.linalg.vecdot(a, b), L.linalg.vecdot(a, b, dim=0),
                                         L.linalg.cross(a[:, :3], b[:, :3]), L.linalg.matmul(a, b.mT),
                                         L.linalg.diagonal(a @ b.mT)),
       [Sample((f(2, 4), f(2, 4)))]),
]


def _inplace_unary(L, a):
    # (torch has no gradient for asinh_ and atanh_; logit_ needs (0, 1): they are in the next entry)
    names = ["asin_", "acos_", "atan_", "sinh_", "cosh_", "erf_", "erfc_", "erfinv_", "sinc_", "frac_",
             "deg2rad_", "rad2deg_", "reciprocal_", "square_", "exp2_", "log1p_", "expm1_", "sin_", "cos_", "tan_",
             "absolute_", "negative_", "clamp_min_", "clamp_max_"]
    args = {"clamp_min_": (0.1,), "clamp_max_": (0.2,)}
    return tuple(getattr(a * 0.5, n)(*args.get(n, ())) for n in names)


def _inplace_binary(L, a, b):
    return ((a * 1).atan2_(b), (a * 1).hypot_(b), (a * 1).copysign_(b), (a * 1).xlogy_(b.abs() + 0.5),
            (a * 1).lerp_(b, 0.3), (a * 1).addcmul_(a, b, value=0.5), (a * 1).addcdiv_(a, b.abs() + 0.5),
            (a * 1).fmod_(1.5),
            (a * 1).remainder_(b.abs() + 0.5), (a * 1).tril_(), (a * 1).triu_(1),
            (a * 1).index_add_(0, L.tensor([1, 1]), b), (a * 1).index_fill_(1, L.tensor([0]), 2.0),
            (a * 1).cumsum_(1), (a * 1).cumprod_(0), (a * 1).multiply_(b), (a * 1).divide_(b.abs() + 0.5),
            (a * 1).subtract_(b), (a * 1).lgamma_())


# the in-place forms: values, and gradients flowing through the in-place writes
OPS += [
    Op("inplace_unary", _inplace_unary, [Sample((unit(2, 3),))]),
    Op("inplace_binary", _inplace_binary, [Sample((nonzero(2, 3), f(2, 3)))]),
    Op("inplace_no_grad", lambda L, a: ((a * 1).atanh_(), (a * 1).asinh_(), (a * 1).logit_(), (a * 1).round_(),
                                        (a * 1).sgn_()),
       [Sample((prob(2, 3),))], grad=False),
    Op("inplace_int", lambda L, a, b: ((a * 1).bitwise_and_(b), (a * 1).bitwise_left_shift_(b),
                                       (a * 1).floor_divide_(b + 1), (a * 1).logical_not_()),
       [Sample((i64(2, 3), i64(2, 3)))], grad=False),
    Op("inplace_polygamma", lambda L, a: ((a * 1).polygamma_(1), (a * 1).mvlgamma_(2)),
       [Sample((within(1.5, 3.0)(2, 3),))]),
]


def _poly(name):
    return Op(f"special.{name}", lambda L, a: (getattr(L.special, name)(a, 3), getattr(L.special, name)(a, 0),
                                                getattr(L.special, name)(a, L.tensor([[0, 1, 2], [5, -1, 4]]))),
              [Sample((f(2, 3),))], grad=False)


# torch.special's functions without gradients in torch: Bessel functions and polynomials
OPS += [
    *[_unary_op(f"special.{n}", domain, grad=False)
      for n, domain in [("bessel_j0", f), ("bessel_j1", f), ("bessel_y0", pos), ("bessel_y1", pos),
                        ("modified_bessel_i0", f), ("modified_bessel_i1", f), ("modified_bessel_k0", pos),
                        ("modified_bessel_k1", pos), ("scaled_modified_bessel_k0", pos),
                        ("scaled_modified_bessel_k1", pos), ("spherical_bessel_j0", f), ("airy_ai", f)]],
    *[_poly(n) for n in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                         "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
                         "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p")],
    Op("special.gammainc", lambda L, a, x: (L.special.gammainc(a, x), L.special.gammaincc(a, x)),
       [Sample((Arg(pos(2, 3), grad=False), pos(2, 3))), Sample((Arg(pos(3), grad=False), pos()))]),
]

# entries kept beside this file, one module per area (collected after the ones above, so
# that their samples draw later from the shared generator); a module's NODE_NAMES_DIFFER
# names its entries whose graph nodes are not torch's (see _NODE_NAMES_DIFFER)
_ENTRY_NODES_DIFFER = set()
for _path in sorted(pathlib.Path(__file__).parent.glob("op_entries_*.py")):
    _module = importlib.import_module(_path.stem)
    OPS += _module.OPS
    _ENTRY_NODES_DIFFER |= set(getattr(_module, "NODE_NAMES_DIFFER", ()))

OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS)

CASES = [pytest.param(op.name, i, id=f"{op.name}-{s.name or i}") for op in OPS for i, s in enumerate(op.samples)]
GRAD_CASES = [c for c in CASES if OPS_BY_NAME[c.values[0]].grad]
GRADCHECK_CASES = [pytest.param(op.name, id=op.name) for op in OPS if op.grad and op.gradcheck]
ERROR_CASES = [pytest.param(op.name, i, id=f"{op.name}-{i}") for op in OPS for i in range(len(op.errors))]


def _run(L, op, sample, requires_grad):
    args, leaves = build(L, sample, requires_grad)
    return op.fn(L, *args, **sample.kwargs), leaves


@pytest.mark.parametrize("name,i", CASES)
def test_forward(name, i):
    op = OPS_BY_NAME[name]
    s = op.samples[i]
    t_args, _ = build(torch, s, False)
    with Recorder() as seen:  # the torch callables this op's entry exercises
        t_out = op.fn(torch, *t_args, **s.kwargs)
    e_out, _ = _run(ember, op, s, False)
    assert_same(e_out, t_out, op.rtol, op.atol)
    COVERED.update(seen.names)


def check_backward(name, i, check=lambda t: None):
    """Gradients of sample ``i`` of op ``name`` equal torch's; ``check`` sees each ember
    output and gradient (the strict-backend suite checks their array type)."""
    op = OPS_BY_NAME[name]
    s = op.samples[i]
    t_out, t_leaves = _run(torch, op, s, True)
    e_out, e_leaves = _run(ember, op, s, True)
    t_outs = [o for o in tensors_of(t_out) if o.requires_grad]
    e_outs = [o for o in tensors_of(e_out) if o.requires_grad]
    assert len(e_outs) == len(t_outs)
    assert [type(o.grad_fn).__name__ for o in e_outs] == [type(o.grad_fn).__name__ for o in t_outs] or \
        name in _NODE_NAMES_DIFFER
    for o in tensors_of(e_out):
        check(o)
    if not t_outs:
        return
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal(tuple(o.shape)).astype(np.float32) for o in t_outs]
    torch.autograd.backward(t_outs, [torch.tensor(g).to(o.dtype) for g, o in zip(grads, t_outs)])
    ember.autograd.backward(e_outs, [ember.tensor(g).to(o.dtype) for g, o in zip(grads, e_outs)])
    assert len(e_leaves) == len(t_leaves)
    for e, t in zip(e_leaves, t_leaves):
        if t.grad is None:
            assert e.grad is None
        else:
            assert e.grad is not None, "ember gave no gradient where torch gave one"
            check(e.grad)
            assert_same(e.grad, t.grad, max(op.rtol, 1e-4), max(op.atol, 1e-4))


@pytest.mark.parametrize("name,i", GRAD_CASES)
def test_backward(name, i):
    check_backward(name, i)


# torch decomposes these differently, or has one fused node where ember composes the op
# from others; the gradients are compared all the same
_NODE_NAMES_DIFFER = {"op/reflected", "einsum", "matmul", "special.ndtr", "repeat_interleave", "diag", "quantile",
                      "nanmean_grad", "var_mean", "take", "take_along_dim", "index_add", "index_copy", "index_fill",
                      "scatter_reduce_sum", "masked_scatter", "masked_select", "vdot", "kron", "cdist", "addmm",
                      "addmv", "addr", "addbmm", "lerp", "addcmul", "clamp_methods", "cross", "tensordot",
                      "tensordot_dims", "inner", "outer", "mvlgamma", "clone_grad", "unflatten", "more_unary",
                      "F.relu", "F.activations",
                      "F.pool", "F.batch_norm", "F.pad", "F.pad_reflect_too_big", "F.losses", "F.linear",
                      "F.conv1d", "F.pool1d", "F.pool2d", "F.pool3d", "F.pool_indices", "F.max_unpool",
                      "F.max_unpool_output_size", "F.grid_sample", "F.affine_grid", "F.affine_grid_3d", "F.shuffles",
                      "F.norms", "F.group_norm_groups", "F.embedding_bag", "F.embedding_options", "F.bilinear",
                      "F.regression_losses", "F.class_losses", "F.multi_margin_args", "F.pair_losses", "F.ctc_loss",
                      "F.ctc_loss_args", "F.scaled_dot_product_attention", "F.multi_head_attention_forward",
                      "linalg.solve",
                      "linalg.qr", "linalg.eigh", "linalg.svd", "linalg.pinv",
                      "linalg.lstsq", "linalg.matrix_power", "linalg.multi_dot", "linalg.norms", "linalg.vecdot",
                      "linalg.det", "linalg.cholesky", "special.gammainc", "inplace_unary", "inplace_binary",
                      "inplace_polygamma"} | _ENTRY_NODES_DIFFER


@pytest.mark.parametrize("name", GRADCHECK_CASES)
def test_gradcheck(name):
    op = OPS_BY_NAME[name]
    s = op.samples[0]
    _, leaves = build(ember, s, True, dtype=np.float64)
    assert leaves

    def fn(*xs):
        args, _ = build(ember, s, True, dtype=np.float64, given=iter(xs))
        out = op.fn(ember, *args, **s.kwargs)
        return tuple(o for o in tensors_of(out) if o.dtype.is_floating_point)

    assert ember.autograd.gradcheck(fn, tuple(leaves), eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name", GRADCHECK_CASES)
def test_gradgradcheck(name):
    """Second derivatives of the first sample in float64, by finite differences of ember's
    own gradient (the gradient rules are differentiable ember ops)."""
    op = OPS_BY_NAME[name]
    s = op.samples[0]
    _, leaves = build(ember, s, True, dtype=np.float64)

    def fn(*xs):
        args, _ = build(ember, s, True, dtype=np.float64, given=iter(xs))
        out = op.fn(ember, *args, **s.kwargs)
        return tuple(o for o in tensors_of(out) if o.dtype.is_floating_point)

    assert ember.autograd.gradgradcheck(fn, tuple(leaves), eps=1e-6, atol=1e-5, rtol=1e-3)


@pytest.mark.parametrize("name,i", ERROR_CASES)
def test_errors(name, i):
    op = OPS_BY_NAME[name]
    s, exc = op.errors[i]
    with pytest.raises(exc):
        _run(torch, op, s, op.grad)
    with pytest.raises(exc):
        _run(ember, op, s, op.grad)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_results_hold_arrays_of_their_dtype(dtype):
    # numpy multiplies bfloat16 into float32 and scipy answers integers in float64: every
    # output and gradient of every entry run on half-precision inputs must still hold an
    # array of the dtype it reports (entries that refuse those inputs are left out)
    import ml_dtypes
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    wrong = []
    for op in OPS:
        for s in op.samples:
            try:
                args, leaves = build(ember, s, op.grad, dtype=np_dtype)
                out = op.fn(ember, *args, **s.kwargs)
            except (RuntimeError, NotImplementedError, ValueError, TypeError, BufferError):
                continue
            grads = []
            outs = [o for o in tensors_of(out) if o.requires_grad]
            if outs and leaves:
                total = sum(o.float().sum() for o in outs)
                grads = [g for g in ember.autograd.grad(total, leaves, allow_unused=True) if g is not None]
            for t in tensors_of(out) + grads:
                if t._data.dtype != np.dtype(t.dtype.np):
                    wrong.append(f"{op.name} {s.name}: {t.dtype} holding {t._data.dtype}")
    assert not wrong, wrong


def test_table_covers_required_ops():
    required = """add sub mul div eq ne lt le gt ge abs neg exp log log1p expm1 sqrt rsqrt sin cos tanh sigmoid relu
    clamp where maximum minimum sum mean prod max_dim min_dim argmax var std logsumexp norm all_any view reshape
    flatten squeeze unsqueeze permute transpose t expand repeat cat stack split chunk contiguous getitem getitem_mask
    getitem_int_tensor setitem_basic matmul mm bmm einsum gather scatter index_select masked_fill sort topk
    cumsum""".split()
    assert set(required) <= set(OPS_BY_NAME)
