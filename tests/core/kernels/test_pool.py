"""Compiled pooling kernels (max_pool1d/2d/3d, avg_pool1d/2d/3d, global average pooling)
against the numpy path and torch: values, indices, input gradients, float32 and float64,
with padding, dilation, ceil_mode, count_include_pad, divisor_override and odd layouts."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cpu import kernels

DTYPES = [np.float32, np.float64]
TOL = {np.float32: (1e-5, 1e-6), np.float64: (1e-10, 1e-12)}

# kernel, stride, padding, dilation, ceil_mode
MAX_GEOMS = [(2, 2, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 1, 0, 2, False),
             (3, 3, 1, 1, True), (2, 3, 1, 1, True), (3, 1, 1, 2, False), (1, 1, 0, 1, False)]
AVG_GEOMS = [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (3, 3, 1, True), (2, 3, 1, True), (4, 1, 2, False)]
SHAPES = {1: [(2, 3, 11), (1, 1, 7), (3, 8)], 2: [(2, 3, 9, 8), (1, 2, 7, 13), (4, 7, 5)],
          3: [(2, 3, 5, 6, 7), (3, 5, 4, 6)]}


def _close(a, b, dt, what):
    rtol, atol = TOL[dt]
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=what)


def _data(shape, dt, seed, special=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if special:
        flat = x.reshape(-1)
        flat[::7] = np.nan
        flat[3::11] = -np.inf
        x.reshape(-1, shape[-1])[0] = -np.inf  # a whole row of -inf: windows with no finite value
        x = x.round(1)  # ties: the first maximum must win
    return x.astype(dt)


def _ember(fn, x, g, layout=None):
    t = ember.tensor(x)
    if layout is not None:
        t = t.contiguous(memory_format=layout)
    t.requires_grad_()
    res = fn(F, t)
    out = res[0] if isinstance(res, tuple) else res
    out.backward(ember.tensor(g))
    extra = [res[1].numpy()] if isinstance(res, tuple) else []
    return [out.detach().numpy(), t.grad.numpy()] + extra, out


def _compare(fn, x, dt, layout=(None, None)):
    tx = torch.tensor(x)
    if layout[1] is not None:
        tx = tx.contiguous(memory_format=layout[1])
    tx.requires_grad_()
    tres = fn(TF, tx)
    tout = tres[0] if isinstance(tres, tuple) else tres
    g = np.random.default_rng(99).standard_normal(tout.shape).astype(dt)
    tout.backward(torch.tensor(g))
    want = [tout.detach().numpy(), tx.grad.numpy()] + ([tres[1].numpy()] if isinstance(tres, tuple) else [])
    got, out = _ember(fn, x, g, layout[0])
    with kernels.disabled():
        ref, _ = _ember(fn, x, g, layout[0])
    for name, a, b, c in zip(("values", "grad", "indices"), got, ref, want):
        assert a.shape == c.shape and a.dtype == b.dtype
        if name == "indices":
            np.testing.assert_array_equal(a, c)
            np.testing.assert_array_equal(a, b)
        else:
            _close(a, b, dt, name + " vs numpy")
            _close(a, c, dt, name + " vs torch")
    return out


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("geom", MAX_GEOMS)
def test_max_pool(dt, nd, geom):
    k, s, p, d, ceil = geom
    for i, shape in enumerate(SHAPES[nd]):
        x = _data(shape, dt, i)

        def fn(M, t):
            return getattr(M, f"max_pool{nd}d")(t, k, s, p, d, ceil, True)
        _compare(fn, x, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("geom", AVG_GEOMS)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool(dt, nd, geom, count_include_pad):
    k, s, p, ceil = geom
    for i, shape in enumerate(SHAPES[nd]):
        x = _data(shape, dt, i, special=False)
        for div in ((None, 5) if nd > 1 else (None,)):
            extra = () if nd == 1 else (div,)

            def fn(M, t, extra=extra):
                return getattr(M, f"avg_pool{nd}d")(t, k, s, p, ceil, count_include_pad, *extra)
            _compare(fn, x, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_pool_channels_last_and_strided_inputs(dt):
    x = _data((3, 5, 9, 10), dt, 7)
    cl = (ember.channels_last, torch.channels_last)
    out = _compare(lambda M, t: M.max_pool2d(t, 3, 2, 1), x, dt, cl)
    assert out.is_contiguous(memory_format=ember.channels_last)
    out = _compare(lambda M, t: M.avg_pool2d(t, 2), np.nan_to_num(x, nan=0.5, neginf=-3.0), dt, cl)
    assert out.is_contiguous(memory_format=ember.channels_last)
    # a transposed view (non-contiguous)
    _compare(lambda M, t: M.max_pool2d(t.transpose(2, 3), 2, return_indices=True), x, dt)
    _compare(lambda M, t: M.avg_pool1d(t[:, :, 1::2, 0], 2, 1, 1), x, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_pool_empty_batch(dt):
    x = np.zeros((0, 3, 6, 6), dt)
    for fn in (lambda M, t: M.max_pool2d(t, 2), lambda M, t: M.avg_pool2d(t, 3, 2, 1)):
        e = fn(F, ember.tensor(x))
        t = fn(TF, torch.tensor(x))
        assert tuple(e.shape) == tuple(t.shape)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("nd,layout", [(1, "contiguous"), (1, "strided"), (2, "contiguous"), (2, "channels_last"),
                                       (2, "strided"), (3, "contiguous"), (3, "channels_last"), (3, "strided")])
def test_global_average_pool(dt, nd, layout):
    shape = {1: (3, 4, 10), 2: (3, 5, 7, 7), 3: (2, 3, 4, 5, 3)}[nd]
    x = _data(shape, dt, 3, special=False)
    fmt = {2: (ember.channels_last, torch.channels_last), 3: (ember.channels_last_3d, torch.channels_last_3d)}
    lay = fmt[nd] if layout == "channels_last" else (None, None)

    def fn(M, t):
        if layout == "strided":
            t = t[:, ::2]
        return getattr(M, f"adaptive_avg_pool{nd}d")(t, 1)
    out = _compare(fn, x, dt, lay)
    assert type(out.grad_fn).__name__ == "MeanBackward1"


def test_kernels_run(monkeypatch):
    calls = []
    for name in ("max_forward", "max_backward", "avg_forward", "avg_backward", "spatial_mean"):
        real = getattr(kernels.pool, name)
        monkeypatch.setattr(kernels.pool, name, lambda *a, _f=real, _n=name: calls.append(_n) or _f(*a))
    x = ember.tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32), requires_grad=True)
    (F.max_pool2d(x, 2).sum() + F.avg_pool2d(x, 2).sum() + F.adaptive_avg_pool2d(x, 1).sum()).backward()
    expected = ["max_forward", "max_backward", "avg_forward", "avg_backward", "spatial_mean"]
    assert sorted(calls) == (sorted(expected) if kernels.enabled() else [])


def test_double_backward():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 7, 6))
    for name, args in (("max_pool2d", (3, 2, 1)), ("avg_pool2d", (3, 2, 1, True, False))):
        ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        (eg,) = ember.autograd.grad(getattr(F, name)(ex, *args).pow(2).sum(), ex, create_graph=True)
        (tg,) = torch.autograd.grad(getattr(TF, name)(tx, *args).pow(2).sum(), tx, create_graph=True)
        _close(eg.detach().numpy(), tg.detach().numpy(), np.float64, name)
        eg.pow(2).sum().backward()
        tg.pow(2).sum().backward()
        _close(ex.grad.numpy(), tx.grad.numpy(), np.float64, name + " second order")
