"""Conformance entries: statistics of samples (cov, corrcoef, histogram, histogramdd,
dist, pdist, msort) and the integrals and derivatives of sampled functions (trapezoid,
trapz, cumulative_trapezoid, gradient)."""

import numpy as np
from op_table import Arg, Op, Sample, f, i64, nc, pos

FWEIGHTS = np.array([1, 2, 1, 1, 3], np.int64)
# integer-valued points away from the edges torch and ember compute alike
HIST_DATA = np.array([0.1, 0.5, 0.5, 2.0, 3.0, -1.0, 1.25, 2.75, 0.0, 1.0], np.float32)
EDGES = np.array([0.0, 1.0, 2.5, 3.0], np.float32)
STEPS = np.array([[1.0, 2.0, 4.0, 7.0, 11.0], [0.0, 1.0, 0.0, 2.0, 5.0], [3.0, 1.0, 4.0, 1.0, 5.0]], np.float32)
COORDS = np.array([0.0, 1.0, 3.0, 4.0, 7.0], np.float32)


def _cov(L, a, aw):
    return (L.cov(a), a.cov(correction=0), L.cov(a[0]), L.cov(a, fweights=L.tensor(FWEIGHTS)),
            L.cov(a, aweights=aw), L.cov(a, correction=2, fweights=L.tensor(FWEIGHTS), aweights=aw))


def _hist(L, x, w):
    return (L.histogram(x, 4), x.histogram(3, range=(0.0, 2.0)), L.histogram(x, 3, weight=w),
            L.histogram(x, 5, density=True), L.histogram(x, L.tensor(EDGES)),
            L.histogram(x, L.tensor(EDGES), weight=w, density=True), L.histogram(x.double(), bins=6),
            L.histogram(x[:2] * 0 + 2, 3), L.histogram(x[:0], 3), L.histogram(x.reshape(2, 5), 3, weight=w))


def _histdd(L, p, w):
    return (L.histogramdd(p, 3), L.histogramdd(p, [2, 3]), L.histogramdd(p, (2, 3), weight=w),
            L.histogramdd(p, [L.tensor([0.0, 0.5, 1.0]), L.tensor([0.0, 1.0])]),
            L.histogramdd(p, [2, 3], range=[0.0, 1.0, 0.0, 2.0], density=True),
            L.histogramdd(p.reshape(2, 3, 2), 2), L.histogramdd(p[:, :1], 4), L.histogramdd(p[:0], 2))


def _trapezoid(L, y, x):
    return (L.trapezoid(y), L.trapezoid(y, x), L.trapezoid(y, dx=0.5), L.trapezoid(y, dim=0),
            L.trapezoid(y, x.expand(3, 5)), L.trapz(y), L.trapz(y, x), L.trapz(y, dx=2, dim=0),
            L.trapezoid(y[:, :1]), L.trapezoid(y, x[:3], dim=0))


def _cumulative_trapezoid(L, y, x):
    return (L.cumulative_trapezoid(y), L.cumulative_trapezoid(y, x), L.cumulative_trapezoid(y, dx=2.0),
            L.cumulative_trapezoid(y, dim=0), L.cumulative_trapezoid(y[:, :1]))


def _gradient(L, y, c):
    return (L.gradient(y), L.gradient(y, dim=1), L.gradient(y, spacing=2.0), L.gradient(y, spacing=[2.0, 3.0]),
            L.gradient(y, spacing=(c,), dim=1), L.gradient(y, dim=1, edge_order=2),
            L.gradient(y, spacing=[c], dim=[1], edge_order=2), L.gradient(y, spacing=2, dim=(0, 1), edge_order=2),
            L.gradient(y[0], spacing=(c,)))


def _gradient_uneven(L, y, c):
    return L.gradient(y, spacing=[c[:3], c], edge_order=2)


def _dist(L, a, b):
    return (L.dist(a, b), a.dist(b, 1), L.dist(a, b, 3.5), L.dist(a, b, float("inf")),
            L.dist(a, b, -float("inf")))


def _pdist(L, a):
    return L.pdist(a), L.pdist(a, 1), L.nn.functional.pdist(a, 3.0), L.pdist(a, float("inf"))


OPS = [
    Op("cov", _cov, [Sample((f(3, 5), Arg(pos(5), grad=False))), Sample((nc(f(3, 5)), Arg(pos(5), grad=False)))],
       errors=[(Sample((f(2, 3, 5), Arg(pos(5), grad=False))), RuntimeError)]),
    Op("cov_aweights_grad", lambda L, a, aw: L.cov(a, aweights=aw), [Sample((f(3, 5), pos(5)))]),
    Op("cov_dtypes", lambda L, i, a: (L.cov(i), L.cov(a.double()), L.cov(a, aweights=L.ones(5, dtype=L.float64)),
                                      L.cov(a[:, :1]), L.cov(a[:0]), L.cov(a.half())),
       [Sample((i64(3, 5), f(3, 5)))], grad=False),
    Op("cov_misuse", lambda L, a, w: L.cov(a, fweights=w), [], grad=False,
       errors=[(Sample((f(3, 5), Arg(pos(5), grad=False))), RuntimeError),
               (Sample((f(3, 5), np.array([1, -2, 1, 1, 3]))), RuntimeError),
               (Sample((f(3, 5), i64(4))), RuntimeError), (Sample((f(3, 5), i64(1, 5))), RuntimeError),
               (Sample((np.array([True, False]), i64(2))), RuntimeError)]),
    Op("cov_aweights_misuse", lambda L, a, w: L.cov(a, aweights=w), [], grad=False,
       errors=[(Sample((f(3, 5), i64(5))), RuntimeError), (Sample((f(3, 5), Arg(-pos(5), grad=False))), RuntimeError)]),
    Op("cov_correction_type", lambda L, a: L.cov(a, correction=2.5), [], grad=False,
       errors=[(Sample((f(3, 5),)), TypeError)]),
    Op("corrcoef", lambda L, a: (L.corrcoef(a), a.corrcoef(), L.corrcoef(a[0])),
       [Sample((f(3, 5),)), Sample((nc(f(6, 4)),))], errors=[(Sample((f(2, 3, 4),)), RuntimeError)]),
    Op("corrcoef_dtypes", lambda L, i, a: (L.corrcoef(i), L.corrcoef(a.double()), L.corrcoef(a * 0 + 1)),
       [Sample((i64(3, 5), f(3, 5)))], grad=False),
    Op("histogram", _hist, [Sample((HIST_DATA, np.linspace(0.5, 2.0, 10, dtype=np.float32)))], grad=False),
    Op("histogram_out", lambda L, x: L.histogram(x, 3, out=(L.empty(0), L.empty(0))), [Sample((HIST_DATA,))],
       grad=False),
    Op("histogram_misuse", lambda L, x, b: L.histogram(x, b), [], grad=False,
       errors=[(Sample((HIST_DATA, 0)), RuntimeError), (Sample((i64(4), 3)), NotImplementedError),
               (Sample((Arg(HIST_DATA.astype(np.float16)), 3)), NotImplementedError),
               (Sample((np.array([np.nan, 1.0], np.float32), 3)), RuntimeError),
               (Sample((HIST_DATA, EDGES.astype(np.float64))), RuntimeError),
               (Sample((HIST_DATA, EDGES[None])), RuntimeError)]),
    Op("histogram_range_misuse", lambda L, x, w: L.histogram(x, 3, range=(2.0, 1.0), weight=w), [], grad=False,
       errors=[(Sample((HIST_DATA, HIST_DATA)), RuntimeError)]),
    Op("histogram_weight_misuse", lambda L, x, w: L.histogram(x, 3, weight=w), [], grad=False,
       errors=[(Sample((HIST_DATA, HIST_DATA.astype(np.float64))), RuntimeError),
               (Sample((HIST_DATA, HIST_DATA[:3])), RuntimeError)]),
    Op("histogramdd", _histdd, [Sample((f(6, 2, lo=0.0, hi=1.0), f(6, lo=0.0, hi=1.0)))], grad=False),
    Op("histogramdd_misuse", lambda L, p, b: L.histogramdd(p, b), [], grad=False,
       errors=[(Sample((f(5), 3)), RuntimeError), (Sample((f(5, 2), [2, 3, 4])), RuntimeError),
               (Sample((f(5, 2), [2, 0])), RuntimeError), (Sample((f(5, 2), [EDGES])), RuntimeError)]),
    Op("histogramdd_range_misuse", lambda L, p: L.histogramdd(p, 2, range=[0.0, 1.0]), [], grad=False,
       errors=[(Sample((f(5, 2),)), RuntimeError)]),
    Op("trapezoid", _trapezoid, [Sample((STEPS, COORDS)), Sample((f(3, 5), np.sort(f(5))))],
       errors=[(Sample((STEPS, COORDS[:3])), RuntimeError), (Sample((f(), COORDS)), IndexError)]),
    Op("trapezoid_dtypes", lambda L, i, x: (L.trapezoid(i), L.trapezoid(i, dx=2), L.trapezoid(i, x),
                                            L.trapezoid(i.float(), x.double()), L.trapezoid(i.float()[:, :0]),
                                            L.cumulative_trapezoid(i), L.cumulative_trapezoid(i, x)),
       [Sample((i64(3, 5), np.array([1, 2, 3, 5, 8])))], grad=False,
       errors=[(Sample((np.array([[True, False]]), np.array([1, 2]))), RuntimeError)]),
    Op("cumulative_trapezoid", _cumulative_trapezoid, [Sample((STEPS, COORDS)), Sample((f(3, 5), np.sort(f(5))))],
       errors=[(Sample((STEPS, COORDS[:3])), RuntimeError), (Sample((f(), COORDS)), IndexError)]),
    Op("gradient", _gradient, [Sample((STEPS, Arg(COORDS, grad=False))), Sample((f(3, 5), Arg(COORDS, grad=False)))]),
    Op("gradient_coordinates_grad", _gradient_uneven, [Sample((f(3, 5), COORDS))]),
    Op("gradient_dtypes", lambda L, i, c: (L.gradient(i), L.gradient(i, spacing=2.5), L.gradient(i.float().half()),
                                           L.gradient(i, spacing=(c,), dim=1), L.gradient(i[0, 0]),
                                           L.gradient(i.float(), spacing=L.tensor(2.0))),
       [Sample((i64(3, 5), np.array([0, 1, 3, 4, 7])))], grad=False),
    Op("gradient_misuse", lambda L, y, e: L.gradient(y, edge_order=e), [], grad=False,
       errors=[(Sample((f(3, 5), 3)), RuntimeError), (Sample((f(3, 2), 2)), RuntimeError),
               (Sample((f(3, 1), 1)), RuntimeError), (Sample((Arg(i64(3, 3).astype(np.uint8)), 1)), RuntimeError)]),
    Op("gradient_spacing_misuse", lambda L, y: L.gradient(y, spacing=[2.0, 3.0], dim=1), [], grad=False,
       errors=[(Sample((f(3, 5),)), RuntimeError)]),
    Op("dist", _dist, [Sample((f(2, 3), f(3))), Sample((f(3, 4), f(3, 4)))],
       errors=[(Sample((f(2, 4), f(3))), RuntimeError), (Sample((i64(3), i64(3))), RuntimeError)]),
    Op("dist_dtypes", lambda L, a, b: (L.dist(a, b.double()), L.dist(a.half(), b.half()), L.dist(a, a),
                                          L.dist(a, b, p=0), L.dist(a, b.round(), -1)),
       [Sample((f(2, 3), f(2, 3)))], grad=False),
    Op("pdist", _pdist, [Sample((f(4, 3),)), Sample((nc(f(3, 5)),))],
       errors=[(Sample((f(2, 4, 3),)), RuntimeError), (Sample((f(3),)), RuntimeError),
               (Sample((i64(3, 2),)), RuntimeError)]),
    Op("pdist_edges", lambda L, a: (L.pdist(a, 0), L.pdist(a[:1]), L.pdist(a[:0]), L.pdist(a.double(), 1.5)),
       [Sample((f(4, 3),))], grad=False),
    Op("pdist_negative_p", lambda L, a: L.pdist(a, -1), [], grad=False, errors=[(Sample((f(4, 3),)), RuntimeError)]),
    Op("msort", lambda L, a: (L.msort(a), a.msort()), [Sample((f(4, 3),)), Sample((nc(f(3, 4)),)), Sample((f(),))]),
    Op("msort_int_out", lambda L, i: (L.msort(i), L.msort(i.float(), out=L.empty(0))), [Sample((i64(4, 3),))],
       grad=False),
]

# composed of other ops: the last node is theirs (torch's are named after its own
# decompositions: MulBackward1, DistBackward0, PdistBackward0, ...)
NODE_NAMES_DIFFER = {"cov", "cov_aweights_grad", "corrcoef", "trapezoid", "cumulative_trapezoid", "gradient",
                     "gradient_coordinates_grad", "dist", "pdist"}
