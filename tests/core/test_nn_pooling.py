"""Pooling layers and functions in 1, 2 and 3 dims, checked against torch on the same inputs:
values, indices, dtypes, gradients (and one double backward), errors and module reprs."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import assert_same, to_ember, to_torch

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

rng = np.random.default_rng(0)


def _input(shape, ties=False, dtype=torch.float64):
    arr = rng.integers(-3, 4, shape).astype(np.float64) if ties else rng.standard_normal(shape)
    return torch.tensor(arr, dtype=dtype)


def _spatial(nd, sizes=(7, 6, 5)):
    return sizes[:nd]


def _check(fe, ft, t, grad=True):
    """``fe(ember input)`` against ``ft(torch input)``: outputs, then the input gradients for
    a random upstream gradient on the first output."""
    tx = t.clone().requires_grad_(grad)
    ex = to_ember(t, requires_grad=grad)
    tout, eout = ft(tx), fe(ex)
    assert_same(eout, tout)
    if not grad:
        return
    first_t = tout[0] if isinstance(tout, tuple) else tout
    first_e = eout[0] if isinstance(eout, tuple) else eout
    up = torch.tensor(rng.standard_normal(tuple(first_t.shape)), dtype=first_t.dtype)
    first_t.backward(up)
    first_e.backward(to_ember(up))
    assert_same(ex.grad, tx.grad)


POOL = {1: (F.max_pool1d, TF.max_pool1d), 2: (F.max_pool2d, TF.max_pool2d), 3: (F.max_pool3d, TF.max_pool3d)}
AVG = {1: (F.avg_pool1d, TF.avg_pool1d), 2: (F.avg_pool2d, TF.avg_pool2d), 3: (F.avg_pool3d, TF.avg_pool3d)}

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=2, stride=3, ceil_mode=True),
    dict(kernel_size=2, stride=1, dilation=2),
    dict(kernel_size=4, stride=2, padding=2, dilation=2, ceil_mode=True),
    dict(kernel_size=(3,), stride=(1,), padding=(1,)),
]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", MAX_CASES)
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool_values_indices_grads(nd, kw, ties):
    t = _input((2, 3) + _spatial(nd), ties=ties)
    fe, ft = POOL[nd]
    _check(lambda x: fe(x, **kw, return_indices=True), lambda x: ft(x, **kw, return_indices=True), t)
    _check(lambda x: fe(x, **kw), lambda x: ft(x, **kw), t)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_per_axis_arguments_and_unbatched(nd):
    kw = dict(kernel_size=(3, 2, 2)[:nd], stride=(2, 1, 2)[:nd], padding=(1, 0, 1)[:nd], dilation=(1, 2, 1)[:nd])
    t = _input((3,) + _spatial(nd))
    fe, ft = POOL[nd]
    _check(lambda x: fe(x, **kw, return_indices=True), lambda x: ft(x, **kw, return_indices=True), t)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_with_indices_functions(nd):
    t = _input((1, 2) + _spatial(nd))
    fe = getattr(F, f"max_pool{nd}d_with_indices")
    ft = getattr(TF, f"max_pool{nd}d_with_indices")
    _check(lambda x: fe(x, 3, 2, 1), lambda x: ft(x, 3, 2, 1), t)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_nan_and_all_lowest_windows(nd):
    t = _input((1, 2) + _spatial(nd))
    flat = t.view(-1)
    flat[::3] = float("nan")
    fe, ft = POOL[nd]
    _check(lambda x: fe(x, 3, 2, 1, return_indices=True), lambda x: ft(x, 3, 2, 1, return_indices=True), t)
    low = torch.full((1, 2) + _spatial(nd), -math.inf, dtype=torch.float64)
    _check(lambda x: fe(x, 3, 2, 1, return_indices=True), lambda x: ft(x, 3, 2, 1, return_indices=True), low,
           grad=False)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.int32])
def test_max_pool_other_dtypes(dtype):
    t = _input((2, 3, 6, 5), ties=True, dtype=dtype)
    _check(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
           lambda x: TF.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True), t, grad=False)


ERRORS = [
    (lambda L: L.nn.functional.max_pool2d(L.zeros(2, 3, 5, 5), 3, padding=2), RuntimeError),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(2, 3, 5, 5), 7), RuntimeError),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 1, 9, 9), 3, 1, 2, 2), RuntimeError),  # dilated kernel
    (lambda L: L.nn.functional.max_pool3d(L.zeros(2, 3, 4), 2), RuntimeError),
    (lambda L: L.nn.functional.max_pool1d(L.zeros(1, 1, 2, 2, 2), 2), RuntimeError),
    (lambda L: L.nn.functional.max_pool2d(L.zeros(1, 1, 4, 4), 2, stride=0), RuntimeError),
    (lambda L: L.nn.functional.avg_pool3d(L.zeros(1, 1, 4, 4, 4), 2, padding=2), RuntimeError),
    (lambda L: L.nn.functional.avg_pool2d(L.zeros(1, 1, 4, 4), 2, divisor_override=0), RuntimeError),
    (lambda L: L.nn.functional.avg_pool1d(L.zeros(5), 2), RuntimeError),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(2, 0, 4), 2), RuntimeError),
    (lambda L: L.nn.functional.adaptive_max_pool3d(L.zeros(4, 4), 2), RuntimeError),
    (lambda L: L.nn.functional.adaptive_max_pool2d(L.zeros(1, 2, 0, 4), 2), RuntimeError),
    (lambda L: L.nn.functional.adaptive_avg_pool2d(L.zeros(1, 2, 4, 4), (2, 2, 2)), RuntimeError),
    (lambda L: L.nn.functional.max_unpool2d(L.zeros(1, 1, 2, 2), L.zeros(1, 1, 2, 2), 2), RuntimeError),
    (lambda L: L.nn.functional.max_unpool2d(L.zeros(1, 1, 2, 2), L.zeros(1, 1, 1, 2, dtype=L.int64), 2),
     RuntimeError),
    (lambda L: L.nn.functional.max_unpool2d(L.zeros(1, 1, 2, 2), L.full((1, 1, 2, 2), 99, dtype=L.int64), 2),
     RuntimeError),
    (lambda L: L.nn.functional.max_unpool2d(L.zeros(1, 1, 2, 2), L.zeros(1, 1, 2, 2, dtype=L.int64), 2,
                                            output_size=(9, 9)), ValueError),
    (lambda L: L.nn.functional.max_unpool3d(L.zeros(2, 2, 2), L.zeros(2, 2, 2, dtype=L.int64), 2), RuntimeError),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    fn, exc = ERRORS[case]
    with pytest.raises(exc):
        fn(torch)
    with pytest.raises(exc):
        fn(ember)


# ---- max unpool --------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw, sizes, out", [
    (dict(kernel_size=2), (6, 4, 4), None),
    (dict(kernel_size=3, stride=2, padding=1), (7, 5, 5), None),
    (dict(kernel_size=2, stride=2), (7, 5, 5), "input"),
    (dict(kernel_size=2, stride=2), (7, 5, 5), "full"),
])
def test_max_unpool(nd, kw, sizes, out):
    t = _input((2, 2) + sizes[:nd])
    _, ti = POOL[nd][1](t, **kw, return_indices=True)
    vals = _input(tuple(ti.shape))
    size = {None: None, "input": list(t.shape[2:]), "full": tuple(t.shape)}[out]
    fe, ft = getattr(F, f"max_unpool{nd}d"), getattr(TF, f"max_unpool{nd}d")
    ei = to_ember(ti)
    _check(lambda x: fe(x, ei, **kw, output_size=size), lambda x: ft(x, ti, **kw, output_size=size), vals)
    if out != "full":
        _check(lambda x: fe(x[0], ei[0], **kw, output_size=size), lambda x: ft(x[0], ti[0], **kw, output_size=size),
               vals)  # unbatched


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_module_inverts_pool(nd):
    t = _input((1, 2) + _spatial(nd, (6, 4, 4)))
    tp, ep = getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True), getattr(ember.nn, f"MaxPool{nd}d")(
        2, return_indices=True)
    tu, eu = getattr(torch.nn, f"MaxUnpool{nd}d")(2), getattr(ember.nn, f"MaxUnpool{nd}d")(2)
    assert repr(eu) == repr(tu)
    _check(lambda x: eu(*ep(x), output_size=x.shape), lambda x: tu(*tp(x), output_size=x.shape), t)


# ---- average pool ------------------------------------------------------------------

AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=3, ceil_mode=True),
    dict(kernel_size=(2,), stride=(1,), padding=(1,), count_include_pad=False),
]


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool(nd, kw):
    t = _input((2, 3) + _spatial(nd))
    fe, ft = AVG[nd]
    _check(lambda x: fe(x, **kw), lambda x: ft(x, **kw), t)
    _check(lambda x: fe(x[0], **kw), lambda x: ft(x[0], **kw), t)  # unbatched


@pytest.mark.parametrize("nd", [2, 3])
def test_avg_pool_divisor_override_and_ints(nd):
    t = _input((2, 3) + _spatial(nd))
    fe, ft = AVG[nd]
    _check(lambda x: fe(x, 3, 2, 1, ceil_mode=True, divisor_override=5),
           lambda x: ft(x, 3, 2, 1, ceil_mode=True, divisor_override=5), t)
    ints = _input((1, 2) + _spatial(nd), ties=True, dtype=torch.int64) * 7
    _check(lambda x: fe(x, 2), lambda x: ft(x, 2), ints, grad=False)


# ---- adaptive pools ----------------------------------------------------------------

ADAPTIVE_SIZES = {1: [3, 1, 7, (4,), 10], 2: [(3, 4), 1, (None, 2), (7, 6), 4], 3: [(2, 3, 4), 1, (None, 2, None), 3]}


@pytest.mark.parametrize("nd, size", [(nd, s) for nd, sizes in ADAPTIVE_SIZES.items() for s in sizes])
def test_adaptive_avg_pool(nd, size):
    t = _input((2, 3) + _spatial(nd))
    fe, ft = getattr(F, f"adaptive_avg_pool{nd}d"), getattr(TF, f"adaptive_avg_pool{nd}d")
    _check(lambda x: fe(x, size), lambda x: ft(x, size), t)
    _check(lambda x: fe(x[0], size), lambda x: ft(x[0], size), t)


@pytest.mark.parametrize("nd, size", [(nd, s) for nd, sizes in ADAPTIVE_SIZES.items() for s in sizes])
@pytest.mark.parametrize("ties", [False, True])
def test_adaptive_max_pool(nd, size, ties):
    t = _input((2, 3) + _spatial(nd), ties=ties)
    fe, ft = getattr(F, f"adaptive_max_pool{nd}d"), getattr(TF, f"adaptive_max_pool{nd}d")
    _check(lambda x: fe(x, size, return_indices=True), lambda x: ft(x, size, return_indices=True), t)
    _check(lambda x: fe(x[0], size), lambda x: ft(x[0], size), t)
    fe, ft = getattr(F, f"adaptive_max_pool{nd}d_with_indices"), getattr(TF, f"adaptive_max_pool{nd}d_with_indices")
    _check(lambda x: fe(x, size), lambda x: ft(x, size), t, grad=False)


def test_adaptive_max_pool_nan():
    t = _input((1, 2, 9))
    t[0, 0, 2] = t[0, 0, 3] = t[0, 1, 8] = float("nan")
    _check(lambda x: F.adaptive_max_pool1d(x, 4, True), lambda x: TF.adaptive_max_pool1d(x, 4, True), t)


# ---- power-average pool ------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("norm_type, kw", [(2, dict(kernel_size=2)), (3.0, dict(kernel_size=3, stride=2)),
                                           (1.5, dict(kernel_size=2, stride=2, ceil_mode=True)),
                                           (math.inf, dict(kernel_size=2, stride=1))])
def test_lp_pool(nd, norm_type, kw):
    t = _input((2, 3) + _spatial(nd)).abs() + 0.1
    fe, ft = getattr(F, f"lp_pool{nd}d"), getattr(TF, f"lp_pool{nd}d")
    _check(lambda x: fe(x, norm_type, **kw), lambda x: ft(x, norm_type, **kw), t)
    tm, em = getattr(torch.nn, f"LPPool{nd}d")(norm_type, **kw), getattr(ember.nn, f"LPPool{nd}d")(norm_type, **kw)
    assert repr(em) == repr(tm)
    _check(em, tm, t[0])


@pytest.mark.filterwarnings("ignore:invalid value encountered in power")
def test_lp_pool_signed_input_odd_power():
    # a window with a negative sum gives NaN in both (a negative base to the power 1/3)
    t = _input((1, 2, 6, 6))
    _check(lambda x: F.lp_pool2d(x, 3, 2), lambda x: TF.lp_pool2d(x, 3, 2), t)


# ---- higher-order gradients ----------------------------------------------------------

@pytest.mark.parametrize("name, args", [("max_pool2d", (3, 2, 1)), ("max_pool2d", (2,)), ("max_pool3d", (2, 1)),
                                        ("avg_pool2d", (3, 2, 1, True, False)), ("adaptive_max_pool2d", ((3, 2),)),
                                        ("max_pool1d", (3, 2, 1, 2, True))])
def test_double_backward_matches_torch(name, args):
    t = _input((2, 2, 5, 6, 4)[: 2 + int(name[-2]) if name[-2].isdigit() else 4], ties=True)
    w = _input(tuple(t.shape))
    results = []
    for L, x0, w0 in ((torch, t, w), (ember, to_ember(t), to_ember(w))):
        x = x0.clone().requires_grad_(True) if L is torch else x0.detach().requires_grad_(True)
        out = getattr(L.nn.functional, name)(x, *args)
        (g,) = L.autograd.grad((out * out).sum(), x, create_graph=True)
        (gg,) = L.autograd.grad((g * w0).sum(), x)
        results.append((g, gg))
    assert_same(results[1][0], results[0][0])
    assert_same(results[1][1], results[0][1])


def test_gradcheck_pools():
    x = ember.randn(1, 2, 5, 6, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a: F.max_pool2d(a, 3, 2, 1, dilation=(1, 2), ceil_mode=True), (x,))
    assert gradcheck(lambda a: F.avg_pool3d(a.unsqueeze(0), 2, 1, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda a: F.adaptive_avg_pool2d(a, (3, 4)), (x,))
    assert gradcheck(lambda a: F.adaptive_max_pool2d(a, (3, 4)), (x,))
    assert gradcheck(lambda a: F.lp_pool2d(a.abs() + 1, 2, 2), (x,))
    assert gradgradcheck(lambda a: F.max_pool3d(a, 2, 1), (x,))
    assert gradgradcheck(lambda a: F.avg_pool1d(a.flatten(2), 3, 2, 1), (x,))
    assert gradgradcheck(lambda a: F.adaptive_avg_pool3d(a, (1, 4, 4)), (x,))


# ---- modules -----------------------------------------------------------------------

MODULES = [
    ("MaxPool1d", (3,), {}), ("MaxPool2d", ((3, 2), 2, 1), dict(ceil_mode=True)),
    ("MaxPool3d", (2,), dict(stride=1, dilation=2, return_indices=True)),
    ("AvgPool1d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("AvgPool2d", ((3, 2),), dict(padding=1, divisor_override=2)), ("AvgPool3d", (2, 1), {}),
    ("AdaptiveAvgPool1d", (4,), {}), ("AdaptiveAvgPool2d", ((None, 3),), {}), ("AdaptiveAvgPool3d", (2,), {}),
    ("AdaptiveMaxPool1d", (4, True), {}), ("AdaptiveMaxPool2d", ((3, None),), {}),
    ("AdaptiveMaxPool3d", ((2, 3, 2),), dict(return_indices=True)),
    ("LPPool1d", (2, 3), {}), ("LPPool2d", (1.5, (2, 3), 1), dict(ceil_mode=True)), ("LPPool3d", (2, 2), {}),
]


@pytest.mark.parametrize("name, args, kw", MODULES)
def test_modules_match_torch(name, args, kw):
    tm, em = getattr(torch.nn, name)(*args, **kw), getattr(ember.nn, name)(*args, **kw)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict()) == []
    nd = int(name[-2])
    t = _input((2, 3) + _spatial(nd)).abs() + 0.1
    _check(em, tm, t)


@pytest.mark.parametrize("name, args", [("adaptive_max_pool2d", ((0, 2), True)), ("adaptive_avg_pool2d", ((0, 2),)),
                                        ("max_pool2d", (2, 2, 0, 1, False, True)), ("avg_pool3d", (2,))])
@pytest.mark.parametrize("shape", [(0, 2, 4, 4, 4), (1, 2, 4, 4, 4)])
def test_empty_batch_and_empty_output(name, args, shape):
    shape = shape[:5 if name.endswith("3d") else 4]
    t = _input(shape)
    _check(lambda x: getattr(F, name)(x, *args), lambda x: getattr(TF, name)(x, *args), t, grad=False)


def test_pool_keeps_float32_and_contiguity():
    t = _input((2, 3, 8, 8), dtype=torch.float32)
    e = to_ember(t)
    for fn in (lambda L, x: L.nn.functional.max_pool2d(x, 2), lambda L, x: L.nn.functional.avg_pool2d(x, 3, 2, 1),
               lambda L, x: L.nn.functional.adaptive_avg_pool2d(x, 3),
               lambda L, x: L.nn.functional.adaptive_max_pool2d(x, 3)):
        out = fn(ember, e)
        assert_same(out, fn(torch, t))
        assert out.is_contiguous()
    assert to_torch(F.max_pool2d(e, 2)).dtype == torch.float32
