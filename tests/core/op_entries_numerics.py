"""Conformance entries: floating-point and integer numerics (fmax/fmin, frexp/ldexp,
gcd/lcm, heaviside, nextafter, signbit) and binomial's deterministic edges."""

import numpy as np
import torch
from op_table import Arg, Op, Sample, f, i64, nc, pos, st

NANS = np.array([[1.0, np.nan, 3.0, 2.0], [np.nan, -1.0, 0.5, -2.0]], np.float32)
NANS_OTHER = np.array([[np.nan, np.nan, 1.0, 2.5], [0.5, -3.0, np.nan, -1.0]], np.float32)
SIGNED = np.array([[-0.0, 0.0, -1.5, 2.0], [np.inf, -np.inf, np.nan, 1e-40]], np.float32)
INTS = np.array([[4, 6, -9, 0], [12, -15, 7, 0]], np.int64)
INTS_OTHER = np.array([[6, 4, 6, 0], [-18, 10, 0, 5]], np.int32)


def _fmax_fmin(L, a, b):
    return L.fmax(a, b), a.fmin(b), a.fmax(b), L.fmin(b, a)


def _pair_samples():
    return [Sample((f(2, 3), f(2, 3)), name="same"),
            Sample((f(3, 1), f(1, 4)), name="broadcast"),
            Sample((f(2, 3), f()), name="zero-dim"),
            Sample((nc(f(3, 2)), st(f(3, 2))), name="noncontig"),
            Sample((f(0, 3), f(3)), name="empty")]


def _frexp(L, a):
    m, e = L.frexp(a)
    return m, e, a.frexp(), L.frexp(a * 1000.0)


def _frexp_out(L, a):
    m, e = L.empty(0), L.empty(0, dtype=L.int32)
    r = L.frexp(a, out=(m, e))
    return r, m, e


def _ldexp(L, x, e):
    return L.ldexp(x, e), x.ldexp(e)


def _ldexp_(L, a, b):
    c = a * 1  # in-place on a non-leaf copy so both inputs get gradients
    c.ldexp_(b)
    return c


def _inplace_numerics(L, a, b, i, j):
    c = a.clone()
    c.ldexp_(b)
    n = a.clone()
    n.nextafter_(b)
    k = i.clone()
    k.gcd_(j)
    m = i.clone()
    m.lcm_(j)
    h = a.clone()
    h.heaviside_(b)
    return c, n, k, m, h


OPS = [
    Op("fmax", _fmax_fmin, _pair_samples() + [Sample((NANS, NANS_OTHER), name="nan"),
                                              Sample((np.array([1.0, 2.0, 3.0], np.float32),
                                                      np.array([1.0, 2.5, 3.0], np.float32)), name="ties")],
       errors=[(Sample((f(2, 3), f(4))), RuntimeError)]),
    Op("fmax_dtypes", lambda L, i, j, a, b: (L.fmax(i, j), L.fmin(i, a), L.fmax(a, L.tensor(2.0, dtype=L.float64)),
                                             L.fmax(b, b), L.fmin(b, ~b), L.fmax(a.half(), a),
                                             L.fmin(i, j.to(L.uint8))),
       [Sample((INTS, INTS_OTHER, f(2, 4), np.array([True, False, True])))], grad=False),
    Op("fmax_out", lambda L, a, b: (L.fmax(a, b, out=L.empty(0)), L.fmin(a, b, out=L.empty(2, 4))),
       [Sample((NANS, NANS_OTHER))], grad=False),
    Op("fmax_misuse", lambda L, a, b: L.fmax(a, b), [], grad=False,
       errors=[(Sample((f(2), 2.0)), TypeError), (Sample((Arg(f(2).astype(np.complex64)), f(2))), RuntimeError)]),
    Op("frexp", _frexp, [Sample((f(2, 3),)), Sample((SIGNED,), name="edges"), Sample((f(),), name="0d"),
                         Sample((nc(f(3, 4)),), name="noncontig"), Sample((f(0, 2),), name="empty")],
       errors=[(Sample((i64(3),)), RuntimeError)]),
    Op("frexp_dtypes", lambda L, a: tuple(L.frexp(a.to(d)) for d in (L.float16, L.bfloat16, L.float64)),
       [Sample((SIGNED,))], grad=False),
    Op("frexp_out", _frexp_out, [Sample((f(2, 3),))], grad=False),
    Op("ldexp", _ldexp, [Sample((f(2, 3), f(2, 3)), name="float-exponent"),
                         Sample((f(2, 3), i64(2, 3, hi=4)), name="int-exponent"),
                         Sample((f(3, 1), f(1, 4)), name="broadcast"),
                         Sample((nc(f(3, 2)), st(f(3, 2))), name="noncontig"),
                         Sample((f(2, 3), f()), name="zero-dim")],
       errors=[(Sample((f(2, 3), f(4))), RuntimeError), (Sample((f(2), 2)), TypeError)]),
    # torch's gradient for a negative integer exponent is 0 (it raises 2 to it in integers);
    # ember's is 2 ** other, the derivative, as torch gives it for the same exponent in float
    Op("ldexp_negative_int_exponent", lambda L, x, e: L.ldexp(x, e if L is not torch else e.float()),
       [Sample((f(2, 3), i64(2, 3, hi=6) - 3))]),
    Op("ldexp_dtypes", lambda L, i, j, a: (L.ldexp(i, i), L.ldexp(i, j), L.ldexp(a.half(), i), L.ldexp(i, a.half()),
                                           L.ldexp(a, L.tensor(2.0, dtype=L.float64)), L.ldexp(a.double(), j),
                                           L.ldexp(i > 0, i > 0), L.ldexp(a, i, out=L.empty(0))),
       [Sample((INTS, INTS_OTHER, f(2, 4)))], grad=False),
    Op("gcd", lambda L, i, j: (L.gcd(i, j), i.lcm(j), L.lcm(i, j), i.gcd(j), L.gcd(i.to(L.uint8), j.to(L.int8)),
                               L.gcd(i, j, out=L.empty(0, dtype=L.int64)), L.lcm(i.to(L.int16), j[0])),
       [Sample((INTS, INTS_OTHER)), Sample((i64(3, 4, hi=60), i64(3, 4, hi=60)))], grad=False,
       errors=[(Sample((i64(3), Arg(f(3), grad=False))), NotImplementedError),
               (Sample((INTS, 3)), TypeError), (Sample((INTS, i64(3))), RuntimeError),
               (Sample((np.array([True]), np.array([False]))), NotImplementedError)]),
    Op("heaviside", lambda L, a, v: (L.heaviside(a, v), a.heaviside(v), L.heaviside(a, v[..., :1]),
                                     L.heaviside(a, v, out=L.empty(0))),
       [Sample((np.array([[-1.5, 0.0, 2.0, np.nan], [0.0, 3.0, -0.0, -2.0]], np.float32), f(2, 4)))], grad=False,
       errors=[(Sample((f(3), Arg(f(3).astype(np.float64)))), RuntimeError), (Sample((f(3), 0.5)), TypeError),
               (Sample((INTS, INTS_OTHER)), RuntimeError)]),
    Op("heaviside_dtypes", lambda L, i, j, b: (L.heaviside(i, i * 0 + 7), L.heaviside(j, j), L.heaviside(b, ~b)),
       [Sample((INTS, INTS_OTHER, np.array([True, False])))], grad=False),
    # heaviside and binomial record a node whose backward raises, as torch's do
    Op("no_derivative", lambda L, a, v: L.heaviside(a, v).sum().backward(), [], gradcheck=False,
       errors=[(Sample((f(3), f(3))), RuntimeError)]),
    Op("no_derivative_binomial", lambda L, n, p: L.binomial(n, p).sum().backward(), [], gradcheck=False,
       errors=[(Sample((pos(3) * 5, Arg(f(3, lo=0.1, hi=0.9), grad=False))), RuntimeError)]),
    Op("nextafter", lambda L, a, b: (L.nextafter(a, b), a.nextafter(b)),
       _pair_samples() + [Sample((NANS, NANS_OTHER), name="nan")],
       errors=[(Sample((f(2, 3), f(4))), RuntimeError), (Sample((f(2), 1.0)), TypeError),
               (Sample((i64(3), i64(3))), NotImplementedError)]),
    Op("nextafter_dtypes", lambda L, a, b: (L.nextafter(a, b.double()), L.nextafter(a.half(), b.half()),
                                            L.nextafter(a.bfloat16(), b.bfloat16()), L.nextafter(a, L.tensor(1.0)),
                                            L.nextafter(a, b, out=L.empty(0))),
       [Sample((SIGNED, NANS_OTHER))], grad=False),
    Op("signbit", lambda L, a, i, b: (L.signbit(a), a.signbit(), L.signbit(i), L.signbit(b), L.signbit(a.double()),
                                      L.signbit(a.half()), L.signbit(a, out=L.empty(0, dtype=L.bool))),
       [Sample((SIGNED, INTS, np.array([True, False])))], grad=False,
       errors=[(Sample((Arg(f(3).astype(np.complex64)), INTS, INTS)), NotImplementedError)]),
    Op("ldexp_", _ldexp_, [Sample((f(2, 3), f(2, 3))), Sample((f(2, 3), f(3)), name="broadcast")]),
    Op("inplace_numerics", _inplace_numerics, [Sample((f(2, 3), f(2, 3), INTS[:, :3], INTS_OTHER[:, :3]))],
       grad=False),
    # binomial's samples at the ends of its support are certain
    Op("binomial_edges", lambda L, n, p: (L.binomial(n, p), L.binomial(n.double(), p.double())),
       [Sample((np.array([0.0, -3.0, 5.0, 7.0, 4.0, 9.0], np.float32),
                np.array([0.5, 0.5, 1.0, 0.0, 1.5, -0.5], np.float32)))], grad=False,
       errors=[(Sample((i64(3), f(3))), ValueError), (Sample((f(3), Arg(f(3).astype(np.float64)))), RuntimeError),
               (Sample((f(3), f(2))), RuntimeError)]),
]
