"""Conformance entries for tensor functions ember has had without a table entry: dtype
queries, conversions to and from numpy and DLPack, products, the random samplers,
save/load, and the fft helpers.

Random draws cannot match torch's streams: their entries compare shape, dtype, support
and a loose statistic of a large sample, and that one seed gives one draw within each
library; the generator's state is restored afterwards.
"""

import io
import math
import os
import tempfile

import numpy as np
import torch
from op_entries_settings import _n
from op_table import Arg, Op, Sample, f, i64, mask, nc, prob, st

import ember

_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "complex64", "complex128")


def _dtype_queries(L, a, b):
    dts = [getattr(L, d) for d in _DTYPES]
    return [[L.can_cast(x, y) for y in dts] for x in dts] + \
        [[_n(L.promote_types(x, y)) for y in dts] for x in dts] + \
        [_n(L.result_type(*args)) for args in (
            (a, b), (a, 2.5), (b, 2.5), (b, 2), (b, True), (a, 1j), (b.to(L.uint8), -1), (a[0, 0], b),
            (L.tensor(1.0, dtype=L.float64), a), (2, 3.0), (True, 2), (a.to(L.float16), b.to(L.int64)))]


def _asarray(L, a, n):
    shared = L.asarray(a)
    from_np = L.asarray(n)
    copied = L.asarray(n, copy=True)
    n[0, 0] = 42.0  # seen through the shared tensor only
    return [shared is a, L.asarray(a, copy=True) is a, L.asarray(a, dtype=L.float64), L.asarray(a, copy=False) is a,
            from_np, copied, L.asarray([[1, 2], [3, 4]]), L.asarray([1.5, 2]), L.asarray(3), L.asarray(True),
            L.asarray(np.float64(2.5)), L.asarray([1, 2], dtype=L.float16),
            L.asarray([1.0, 2.0], requires_grad=True).requires_grad, L.asarray(a, requires_grad=True).requires_grad]


def _asarray_error(L, kind):
    if kind == "dtype":
        return L.asarray(L.ones(2), dtype=L.float64, copy=False)
    if kind == "sequence":
        return L.asarray([1, 2], copy=False)
    if kind == "int_grad":
        return L.asarray([1, 2], requires_grad=True)
    return L.asarray(np.arange(3), dtype=L.float32, copy=False)


def _copy(L, src, dst):
    out = dst * 1  # in place on a non-leaf copy so both inputs get gradients
    out.copy_(src)
    return out


def _data_ptr(L, a):
    """Only relations hold between libraries: views share the address, offsets in bytes."""
    p = a.data_ptr()
    return [a.view(-1).data_ptr() == p, a.t().data_ptr() == p, a[1].data_ptr() - p == a.stride(0) * a.element_size(),
            a[:, 1].data_ptr() - p == a.element_size(), a.clone().data_ptr() != p, a.detach().data_ptr() == p,
            a.to(L.float64).data_ptr() != p, a.contiguous().data_ptr() == p]


def _numpy(L, a, grad=None):
    if grad:
        a.requires_grad_()
        return a.numpy()
    n = a.numpy()
    n[0, 0] = 7.0  # the array is the tensor's memory
    leaf = a.detach().clone().requires_grad_()
    return [n.tolist(), str(n.dtype), a[0, 0].item(), str(a.t().numpy().dtype), a.t().numpy().shape,
            leaf.numpy(force=True).tolist(), L.tensor([1, 2]).numpy().dtype.name, L.tensor(True).numpy().shape]


def _from_numpy(L, bad=None):
    if bad == "list":
        return L.from_numpy([1, 2])
    if bad == "byteorder":
        return L.from_numpy(np.zeros(2, dtype=">f4"))
    arr = np.arange(6.0).reshape(2, 3)
    t = L.from_numpy(arr)
    arr[0, 0] = 9.0
    return [t, L.from_numpy(np.array([True, False])), L.from_numpy(np.zeros((0, 3), np.int32)),
            L.from_numpy(arr.T), L.from_numpy(np.array(1.5, np.float32)), L.from_numpy(np.arange(4, dtype=np.int8))]


def _from_dlpack(L, a):
    other = ember if L is torch else torch
    shared = L.from_dlpack(a)
    theirs = other.tensor(np.arange(4.0))
    crossed = L.from_dlpack(theirs)  # another library's tensor, through the protocol
    theirs[0] = 5.0
    a[0, 0] = 11.0
    return [shared, L.from_dlpack(np.arange(3.0)), crossed, L.from_dlpack(np.array([1, 2], np.int32))]


def _pinned(L, a):
    try:
        a.pin_memory()
        pinned = "pinned"
    except RuntimeError as e:  # torch's CPU build has no pinned allocator
        pinned = type(e).__name__
    return [a.is_pinned(), pinned]


def _cuda(L, a, raising=False):
    if raising:
        return a.cuda()
    try:
        a.cuda()
        moved = "moved"
    except (AssertionError, RuntimeError) as e:  # the CPU build's answer
        moved = type(e).__name__
    return [moved, a.get_device(), L.get_device(a), a.is_cuda]


def _grad_flags(L, a):
    x = a.detach().clone().requires_grad_()
    y = x * 2
    y.retain_grad()
    seen = []
    handle = y.register_hook(lambda g: seen.append(g.clone()) or g * 3)
    (y ** 2).sum().backward()
    first = [x.grad.clone(), y.grad.clone(), len(seen)]
    handle.remove()
    x.grad = None
    z = x * 2
    z.retain_grad()
    (z ** 2).sum().backward()
    leaf_hook = x.register_hook(lambda g: g + 1)
    w = L.ones(2)
    flags = [w.requires_grad_().requires_grad, w.requires_grad_(False).requires_grad, y.is_leaf, x.is_leaf]
    leaf_hook.remove()
    return first + [seen[0], x.grad, z.grad] + flags


def _grad_flag_error(L, kind):
    if kind == "nonleaf":
        return (L.ones(2, requires_grad=True) * 2).requires_grad_(False)
    if kind == "hook":
        return L.ones(2).register_hook(lambda g: g)
    if kind == "retain":
        return L.ones(2).retain_grad()
    return L.ones(2, dtype=L.int64).requires_grad_()


def _scalar_tensor(L, bad=None):
    if bad is not None:
        value, dtype = bad
        return L.scalar_tensor(L.ones(1) if value == "tensor" else value, dtype=getattr(L, dtype))
    return [L.scalar_tensor(3.5), L.scalar_tensor(2), L.scalar_tensor(2, dtype=L.int64),
            L.scalar_tensor(3.7, dtype=L.int64), L.scalar_tensor(True), L.scalar_tensor(1j, dtype=L.complex64),
            L.scalar_tensor(1 + 0j, dtype=L.float32), L.scalar_tensor(2j, dtype=L.bool),
            L.scalar_tensor(np.float64(2.5)), L.scalar_tensor(255, dtype=L.uint8),
            L.scalar_tensor(-1.5, dtype=L.float64)]


def _logspace(L, bad=None):
    if bad is not None:
        L.logspace(0, 2, bad)
    return [L.logspace(0, 2, 5), L.logspace(-1, 1, 3, base=2), L.logspace(0, 3, 4, dtype=L.float64),
            L.logspace(1, 1, 1), L.logspace(0, 2, 0), L.logspace(0, 2, 3, base=2, dtype=L.int64),
            L.logspace(2, 0, 3, base=10.0)]


def _fft_helpers(L, a):
    return [L.fft.fftfreq(5), L.fft.fftfreq(4, d=0.5), L.fft.fftfreq(3, dtype=L.float64), L.fft.rfftfreq(5),
            L.fft.rfftfreq(6, 0.1), L.fft.ifftn(a), L.fft.ifftn(a, s=(2, 2), dim=(0, 1)), L.fft.ifftn(a, norm="ortho"),
            L.fft.rfftn(a), L.fft.rfftn(a, s=(4, 4), dim=(1, 2)), L.fft.rfftn(a, norm="forward"),
            L.fft.ifftn(L.fft.fftn(a.to(L.complex64))).real]


def _save_load(L, a, b):
    """Written by one library, read by the other, written again and read back."""
    other = ember if L is torch else torch
    obj = {"a": a, "row": a[1], "list": [b, 3, "x"], "n": 2.5, "empty": a[:0]}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "obj.pt")
        L.save(obj, path)
        other.save(other.load(path, weights_only=True), path)
        back = L.load(path, weights_only=True)
    buf = io.BytesIO()
    L.save(back, buf)
    buf.seek(0)
    again = L.load(buf)
    again["a"][1, 0] = 99.0  # the row is still a view of the matrix
    return [back["a"], back["list"][0], back["list"][1:], back["n"], back["empty"], again["row"][0].item(),
            sorted(again)]


# ---- random samplers -------------------------------------------------------------------

def _random(draw, check, repeats_differ=True):
    """An entry body: ``draw(L)`` three times (seeds 11, 11, 12); shape, dtype, ``check``
    on the values as float64, and whether the draws repeat and differ as seeds say."""
    def fn(L):
        prev_seed, prev = L.initial_seed(), L.get_rng_state()
        try:
            L.manual_seed(11)
            x = draw(L)
            L.manual_seed(11)
            y = draw(L)
            L.manual_seed(12)
            z = draw(L)
        finally:
            L.manual_seed(prev_seed)
            L.set_rng_state(prev)
        values = np.asarray(x.detach().to(L.float64).numpy())
        out = [tuple(x.shape), _n(x.dtype), bool(L.equal(x, y)), [bool(c) for c in check(values)]]
        return out + ([not bool(L.equal(x, z))] if repeats_differ else [])
    return fn


def _near(value, target, tol):
    return abs(float(value) - target) <= tol


_P = prob(2000)
_W = np.array([[0.5, 0.0, 2.0, 1.0, 1.5], [1.0, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 3.0, 1.0, 0.0]], np.float32)


def _multinomial_draws(L):
    w = L.tensor(_W)
    without = L.multinomial(w, 3)
    with_ = L.multinomial(w[0], 4000, replacement=True)
    return L.cat([without.flatten(), with_])


def _multinomial_check(v):
    without, with_ = v[:9].reshape(3, 3).astype(int), v[9:].astype(int)
    freq = np.bincount(with_, minlength=5) / with_.size
    # zero weights come only after every positive one; with replacement, never
    return [all(len(set(r)) == 3 for r in without), set(without[2][:2]) == {2, 3}, without[2][2] in (0, 1, 4),
            1 not in with_, np.allclose(freq, _W[0] / _W[0].sum(), atol=0.03)]


_RANDOM = [
    ("bernoulli", lambda L: L.bernoulli(L.tensor(_P)),
     lambda v: [set(np.unique(v)) <= {0.0, 1.0}, _near(v.mean(), _P.mean(), 0.05)]),
    ("bernoulli_p", lambda L: L.bernoulli(L.zeros(2000, dtype=L.float64), p=0.3),
     lambda v: [set(np.unique(v)) <= {0.0, 1.0}, _near(v.mean(), 0.3, 0.05)]),
    ("bernoulli_", lambda L: L.empty(2000).bernoulli_(0.8),
     lambda v: [set(np.unique(v)) <= {0.0, 1.0}, _near(v.mean(), 0.8, 0.05)]),
    ("bernoulli_tensor_p", lambda L: L.empty(2000, dtype=L.int64).bernoulli_(L.tensor(_P)),
     lambda v: [set(np.unique(v)) <= {0.0, 1.0}, _near(v.mean(), _P.mean(), 0.05)]),
    ("cauchy_", lambda L: L.empty(4000).cauchy_(1.0, 0.5),
     lambda v: [np.isfinite(v).all(), _near(np.median(v), 1.0, 0.1)]),
    ("exponential_", lambda L: L.empty(4000).exponential_(2.0),
     lambda v: [(v >= 0).all(), _near(v.mean(), 0.5, 0.05)]),
    ("geometric_", lambda L: L.empty(4000, dtype=L.float64).geometric_(0.3),
     lambda v: [(v >= 1).all(), (v == np.round(v)).all(), _near(v.mean(), 1 / 0.3, 0.3)]),
    ("geometric_int", lambda L: L.empty(2000, dtype=L.int64).geometric_(0.5),
     lambda v: [(v >= 1).all(), _near(v.mean(), 2.0, 0.2)]),
    ("log_normal_", lambda L: L.empty(4000).log_normal_(0.0, 0.5),
     lambda v: [(v > 0).all(), _near(np.log(v).mean(), 0.0, 0.05), _near(np.log(v).std(), 0.5, 0.05)]),
    ("random_bounds", lambda L: L.empty(2000, dtype=L.int64).random_(0, 10),
     lambda v: [set(np.unique(v)) == set(range(10))]),
    ("random_to", lambda L: L.empty(2000, dtype=L.int32).random_(5),
     lambda v: [set(np.unique(v)) == set(range(5))]),
    ("random_negative", lambda L: L.empty(2000).random_(-3, 3),
     lambda v: [set(np.unique(v)) == set(range(-3, 3))]),
    ("random_float", lambda L: L.empty(2000).random_(),
     lambda v: [(v >= 0).all(), (v <= 2 ** 24).all(), (v == np.round(v)).all(), v.max() > 2 ** 20]),
    ("random_uint8", lambda L: L.empty(2000, dtype=L.uint8).random_(),
     lambda v: [(v >= 0).all(), (v <= 255).all(), v.max() > 200]),
    ("uniform_", lambda L: L.empty(4000).uniform_(-1.0, 3.0),
     lambda v: [(v >= -1).all(), (v < 3).all(), _near(v.mean(), 1.0, 0.1)]),
    ("uniform_float64", lambda L: L.empty(100, dtype=L.float64).uniform_(),
     lambda v: [(v >= 0).all(), (v < 1).all()]),
    ("multinomial", _multinomial_draws, _multinomial_check),
    ("poisson", lambda L: L.poisson(L.cat([L.full((2000,), 3.0), L.zeros(5)])),
     lambda v: [(v >= 0).all(), (v == np.round(v)).all(), _near(v[:2000].mean(), 3.0, 0.15), (v[2000:] == 0).all()]),
]

_RANDOM_ERRORS = [
    (lambda L: L.bernoulli(L.tensor([1.5])), RuntimeError),
    (lambda L: L.bernoulli(L.tensor([1, 0])), NotImplementedError),
    (lambda L: L.zeros(3).bernoulli_(1.5), RuntimeError), (lambda L: L.zeros(3, dtype=L.int64).cauchy_(), RuntimeError),
    (lambda L: L.zeros(3, dtype=L.int64).exponential_(), RuntimeError),
    (lambda L: L.zeros(3).exponential_(-1.0), RuntimeError),
    (lambda L: L.zeros(3, dtype=L.int64).log_normal_(), NotImplementedError),
    (lambda L: L.zeros(3).log_normal_(0.0, -1.0), RuntimeError),
    (lambda L: L.zeros(3, dtype=L.int64).uniform_(), NotImplementedError),
    (lambda L: L.zeros(3, dtype=L.int64).normal_(), NotImplementedError),
    (lambda L: L.zeros(3).uniform_(2.0, 1.0), RuntimeError), (lambda L: L.zeros(3).random_(2, 1), RuntimeError),
    (lambda L: L.zeros(3).random_(1, 1), RuntimeError), (lambda L: L.zeros(3).geometric_(0.0), RuntimeError),
    (lambda L: L.zeros(3, dtype=L.bool).geometric_(0.5), NotImplementedError),
    (lambda L: L.multinomial(L.tensor([1.0, 1.0]), 0), RuntimeError),
    (lambda L: L.multinomial(L.tensor([-1.0, 1.0]), 1), RuntimeError),
    (lambda L: L.multinomial(L.tensor([1.0, 1.0]), 3), RuntimeError),
    (lambda L: L.poisson(L.tensor([-1.0])), RuntimeError), (lambda L: L.poisson(L.tensor([1, 2])), NotImplementedError),
]


def _errors(table):
    """An entry that only raises: ``table`` lists (call, exception type)."""
    return dict(samples=[], grad=False, errors=[(Sample((i,)), exc) for i, (_, exc) in enumerate(table)])


OPS = [
    Op("dtype_queries", _dtype_queries, [Sample((f(2, 3), i64(2, 3)))], grad=False),
    Op("asarray", _asarray, [Sample((f(2, 3), Arg(f(2, 3), grad=False)))], grad=False),
    Op("asarray_errors", lambda L, k: _asarray_error(L, k), [], grad=False,
       errors=[(Sample(("dtype",)), ValueError), (Sample(("sequence",)), ValueError),
               (Sample(("numpy",)), ValueError), (Sample(("int_grad",)), RuntimeError)]),
    Op("complex_casts", lambda L, a, b: (a.cdouble(), a.cfloat(), b.cfloat(), b.cdouble().dtype is L.complex128),
       [Sample((f(2, 3), i64(3)))], grad=False),
    Op("copy_", _copy, [Sample((f(2, 3), f(2, 3)), name="same"), Sample((f(3), f(2, 3)), name="broadcast"),
                        Sample((nc(f(3, 3)), f(3, 3)), name="noncontig"), Sample((i64(2, 3), f(2, 3)), name="int-src"),
                        Sample((f(2, 3).astype(np.float64), f(2, 3)), name="float64-src")],
       errors=[(Sample((f(4), f(2, 3))), RuntimeError)]),
    Op("data_ptr", _data_ptr, [Sample((f(3, 4),))], grad=False),
    Op("dot", lambda L, a, b: (L.dot(a, b), a.dot(b)), [Sample((f(4), f(4))), Sample((st(f(3)), f(3)))],
       errors=[(Sample((f(3), f(4))), RuntimeError), (Sample((f(2, 3), f(2, 3))), RuntimeError)]),
    Op("mm_method", lambda L, a, b: (L.mm(a, b), a.mm(b)), [Sample((f(2, 3), f(3, 4))), Sample((nc(f(3, 3)), f(3, 2))),
                                                   Sample((f(0, 3), f(3, 2)))],
       errors=[(Sample((f(3), f(3))), RuntimeError), (Sample((f(2, 3), f(2, 3))), RuntimeError)]),
    Op("mv", lambda L, a, v: (L.mv(a, v), a.mv(v)), [Sample((f(2, 3), f(3))), Sample((nc(f(3, 2)), st(f(2))))],
       errors=[(Sample((f(2, 3), f(2))), RuntimeError)]),
    Op("rsub", lambda L, a, b: (L.rsub(a, b), L.rsub(a, b, alpha=2), L.rsub(a, 3.0)),
       [Sample((f(2, 3), f(2, 3))), Sample((f(3, 1), f(1, 4)))]),
    Op("rsub_int", lambda L, a, b: (L.rsub(a, b), L.rsub(a, 2)), [Sample((i64(3), i64(3)))], grad=False,
       errors=[(Sample((mask(3), mask(3))), RuntimeError)]),
    Op("scalar_tensor", _scalar_tensor, [Sample(())], grad=False,
       errors=[(Sample((("tensor", "float32"),)), TypeError), (Sample(((1j, "float32"),)), RuntimeError),
               (Sample(((300, "uint8"),)), RuntimeError), (Sample(((math.inf, "int64"),)), RuntimeError),
               (Sample((("a", "float32"),)), TypeError)]),
    Op("logspace", _logspace, [Sample(())], grad=False, errors=[(Sample((-1,)), RuntimeError)]),
    Op("from_numpy", _from_numpy, [Sample(())], grad=False,
       errors=[(Sample(("list",)), TypeError), (Sample(("byteorder",)), ValueError)]),
    Op("from_dlpack_shared", _from_dlpack, [Sample((f(2, 3),))], grad=False),
    Op("numpy", _numpy, [Sample((f(2, 3),))], grad=False, errors=[(Sample((f(2, 3), True)), RuntimeError)]),
    Op("pin_memory", _pinned, [Sample((f(2, 3),))], grad=False),
    Op("cuda", _cuda, [Sample((f(2, 3),))], grad=False, errors=[(Sample((f(2, 3), True)), AssertionError)]),
    Op("grad_flags", _grad_flags, [Sample((f(2, 3),))], grad=False),
    Op("grad_flag_errors", lambda L, k: _grad_flag_error(L, k), [], grad=False,
       errors=[(Sample((k,)), RuntimeError) for k in ("nonleaf", "hook", "retain", "int")]),
    Op("fft_helpers", _fft_helpers, [Sample((f(2, 3, 4),))], grad=False),
    Op("save_load", _save_load, [Sample((f(2, 3), i64(4)))], grad=False),
    *[Op(f"random.{name}", _random(draw, check), [Sample(())], grad=False) for name, draw, check in _RANDOM],
    Op("random_errors", lambda L, i: _RANDOM_ERRORS[i][0](L), **_errors(_RANDOM_ERRORS)),
]
