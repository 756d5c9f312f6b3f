"""Compiled normalisation kernels (layer_norm, rms_norm, group_norm, instance_norm,
batch_norm) against the numpy path and torch: outputs, input and parameter gradients,
running statistics, layouts, float32 and float64."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cpu import kernels

TOL = {np.float32: (2e-5, 2e-5), np.float64: (1e-10, 1e-10)}
DTYPES = [np.float32, np.float64]


def _close(a, b, dt):
    rtol, atol = TOL[dt]
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale)


def _run_ember(fn, arrays, grad_of, g, layout=None):
    ts = []
    for i, a in enumerate(arrays):
        if a is None:
            ts.append(None)
            continue
        t = ember.tensor(a)
        if layout is not None and i == 0:
            t = t.contiguous(memory_format=layout)
        ts.append(t.requires_grad_(i in grad_of))
    y = fn(*ts)
    y.backward(ember.tensor(g))
    return [y.detach()] + [ts[i].grad for i in grad_of]


def _run_torch(fn, arrays, grad_of, g, layout=None):
    ts = []
    for i, a in enumerate(arrays):
        if a is None:
            ts.append(None)
            continue
        t = torch.tensor(a)
        if layout is not None and i == 0:
            t = t.contiguous(memory_format=layout)
        ts.append(t.requires_grad_(i in grad_of))
    y = fn(*ts)
    y.backward(torch.tensor(g))
    return [y.detach()] + [ts[i].grad for i in grad_of]


def _check(efn, tfn, arrays, grad_of, dt, seed=0, layouts=(None, None)):
    arrays = [None if a is None else a.astype(dt) for a in arrays]
    probe = efn(*[None if a is None else ember.tensor(a) for a in arrays])
    g = np.random.default_rng(seed + 1).standard_normal(probe.shape).astype(dt)
    got = _run_ember(efn, arrays, grad_of, g, layouts[0])
    with kernels.disabled():
        ref = _run_ember(efn, arrays, grad_of, g, layouts[0])
    want = _run_torch(tfn, arrays, grad_of, g, layouts[1])
    for a, b, c in zip(got, ref, want):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(c.shape)
        _close(a.numpy(), b.numpy(), dt)
        _close(a.numpy(), c.numpy(), dt)
    return got


def _rand(rng, *shape):
    return rng.standard_normal(shape) * 2.0 + 0.5


# ---- layer norm --------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,k", [((37, 53), 1), ((1, 7), 1), ((3, 5, 6, 7), 2), ((2, 1, 1), 1),
                                     ((0, 11), 1), ((4097, 3), 1)])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm(dt, shape, k, affine):
    rng = np.random.default_rng(0)
    ns = shape[len(shape) - k:]
    w = rng.standard_normal(ns) if affine != "none" else None
    b = rng.standard_normal(ns) if affine == "both" else None
    grad_of = [0] + ([1] if w is not None else []) + ([2] if b is not None else [])
    _check(lambda x, w, b: F.layer_norm(x, ns, w, b, 1e-5), lambda x, w, b: TF.layer_norm(x, ns, w, b, 1e-5),
           [_rand(rng, *shape), w, b], grad_of, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_layer_norm_non_contiguous_and_only_weight_grad(dt):
    rng = np.random.default_rng(1)
    x = _rand(rng, 19, 31).astype(dt)
    w = rng.standard_normal(19).astype(dt)
    g = rng.standard_normal((31, 19)).astype(dt)
    res = []
    for off in (False, True):
        ew = ember.tensor(w, requires_grad=True)
        ex = ember.tensor(x).t()  # [31, 19], transposed strides
        if off:
            with kernels.disabled():
                y = F.layer_norm(ex, (19,), ew)
                y.backward(ember.tensor(g))
        else:
            y = F.layer_norm(ex, (19,), ew)
            y.backward(ember.tensor(g))
        res.append((y.detach().numpy(), ew.grad.numpy()))
    tw = torch.tensor(w, requires_grad=True)
    ty = TF.layer_norm(torch.tensor(x).t(), (19,), tw)
    ty.backward(torch.tensor(g))
    for a, b, c in zip(res[0], res[1], (ty.detach().numpy(), tw.grad.numpy())):
        _close(a, b, dt)
        _close(a, c, dt)


def test_layer_norm_kernel_runs_and_double_backward(monkeypatch):
    calls = []
    for name in ("rows_forward", "rows_backward"):
        real = getattr(kernels.norm, name)
        monkeypatch.setattr(kernels.norm, name, lambda *a, _f=real, _n=name: calls.append(_n) or _f(*a))
    x = ember.tensor(np.random.default_rng(2).standard_normal((5, 8)), requires_grad=True)
    w = ember.tensor(np.linspace(0.5, 1.5, 8), requires_grad=True)
    F.layer_norm(x, (8,), w).pow(2).sum().backward()
    assert calls == (["rows_forward", "rows_backward"] if kernels.enabled() else [])
    # create_graph: the tensor rule, differentiable again, as torch
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    ex = x.detach().requires_grad_()
    ew = w.detach().requires_grad_()
    (gx,) = ember.autograd.grad(F.layer_norm(ex, (8,), ew).pow(3).sum(), ex, create_graph=True)
    (tgx,) = torch.autograd.grad(TF.layer_norm(tx, (8,), tw).pow(3).sum(), tx, create_graph=True)
    gx.pow(2).sum().backward()
    tgx.pow(2).sum().backward()
    _close(ex.grad.numpy(), tx.grad.numpy(), np.float64)
    _close(ew.grad.numpy(), tw.grad.numpy(), np.float64)


@pytest.mark.parametrize("shape", [(6, 10), (2, 3, 10)])
def test_layer_norm_input_grad_taken_without_a_copy(shape, monkeypatch):
    # the kernel writes the input gradient into an array of the input's shape, which
    # AccumulateGrad takes as .grad (it copies views); a second backward adds onto it
    written = []
    real = kernels.norm.rows_backward

    def recording(*a):
        written.append(id(a[8].base))  # the array of x's shape that gx_out views (not held)
        return real(*a)
    monkeypatch.setattr(kernels.norm, "rows_backward", recording)
    rng = np.random.default_rng(3)
    xa, ga = rng.standard_normal(shape), rng.standard_normal(shape)
    x = ember.tensor(xa, requires_grad=True)
    tx = torch.tensor(xa, requires_grad=True)
    for _ in range(2):
        F.layer_norm(x, (10,)).backward(ember.tensor(ga))
        TF.layer_norm(tx, (10,)).backward(torch.tensor(ga))
        _close(x.grad.numpy(), tx.grad.numpy(), np.float64)
        if kernels.enabled() and len(written) == 1:
            assert id(x.grad._data) == written[0]
    assert len(written) == (2 if kernels.enabled() else 0)


# ---- rms norm ----------------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,k", [((37, 53), 1), ((3, 5, 6, 7), 2), ((1, 1), 1), ((0, 5), 1)])
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(dt, shape, k, weighted, eps):
    rng = np.random.default_rng(3)
    ns = shape[len(shape) - k:]
    w = rng.standard_normal(ns) if weighted else None
    got = _check(lambda x, w: F.rms_norm(x, ns, w, eps), lambda x, w: TF.rms_norm(x, ns, w, eps),
                 [_rand(rng, *shape), w], [0, 1] if weighted else [0], dt)
    assert type(got[0]) is ember.Tensor


def test_rms_norm_node_name_and_double_backward():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6))
    w = rng.standard_normal(6)
    ex, ew = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ey, ty = F.rms_norm(ex, (6,), ew), TF.rms_norm(tx, (6,), tw)
    assert type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__
    (gx,) = ember.autograd.grad(ey.pow(3).sum(), ex, create_graph=True)
    (tgx,) = torch.autograd.grad(ty.pow(3).sum(), tx, create_graph=True)
    gx.sum().backward()
    tgx.sum().backward()
    _close(ex.grad.numpy(), tx.grad.numpy(), np.float64)
    _close(ew.grad.numpy(), tw.grad.numpy(), np.float64)


@pytest.mark.parametrize("shape,ns", [((6, 10), (10,)), ((2, 3, 4, 5), (4, 5))])
def test_rms_norm_input_grad_taken_without_a_copy(shape, ns, monkeypatch):
    # as layer_norm's: the kernel writes into a view of an array of x's shape, taken as .grad
    written = []
    real = kernels.norm.rms_backward

    def recording(*a):
        written.append(id(a[6].base))
        return real(*a)
    monkeypatch.setattr(kernels.norm, "rms_backward", recording)
    rng = np.random.default_rng(8)
    xa, wa, ga = rng.standard_normal(shape), rng.standard_normal(ns), rng.standard_normal(shape)
    x, w = ember.tensor(xa, requires_grad=True), ember.tensor(wa, requires_grad=True)
    tx, tw = torch.tensor(xa, requires_grad=True), torch.tensor(wa, requires_grad=True)
    for _ in range(2):
        F.rms_norm(x, ns, w, 1e-5).backward(ember.tensor(ga))
        TF.rms_norm(tx, ns, tw, 1e-5).backward(torch.tensor(ga))
        _close(x.grad.numpy(), tx.grad.numpy(), np.float64)
        _close(w.grad.numpy(), tw.grad.numpy(), np.float64)
        if kernels.enabled() and len(written) == 1:
            assert id(x.grad._data) == written[0]
    assert len(written) == (2 if kernels.enabled() else 0)


# ---- group / instance norm -------------------------------------------------------------------

@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,groups", [((6, 12, 5, 7), 4), ((1, 3, 11), 3), ((2, 6, 1, 1, 3), 2), ((3, 4), 1)])
def test_group_norm(dt, shape, groups):
    rng = np.random.default_rng(5)
    c = shape[1]
    _check(lambda x, w, b: F.group_norm(x, groups, w, b), lambda x, w, b: TF.group_norm(x, groups, w, b),
           [_rand(rng, *shape), rng.standard_normal(c), rng.standard_normal(c)], [0, 1, 2], dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("affine", ["weight", "none"])
def test_group_norm_partial_affine(dt, affine):
    rng = np.random.default_rng(12)
    w = rng.standard_normal(6) if affine == "weight" else None
    _check(lambda x, w: F.group_norm(x, 3, w), lambda x, w: TF.group_norm(x, 3, w),
           [_rand(rng, 2, 6, 4, 5), w], [0, 1] if affine == "weight" else [0], dt)


def test_group_norm_kernel_runs_node_and_double_backward(monkeypatch):
    calls = []
    for name in ("group_forward", "group_backward"):
        real = getattr(kernels.norm, name)
        monkeypatch.setattr(kernels.norm, name, lambda *a, _f=real, _n=name: calls.append(_n) or _f(*a))
    rng = np.random.default_rng(13)
    x, w, b = rng.standard_normal((2, 6, 3, 4)), rng.standard_normal(6), rng.standard_normal(6)
    ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ey, ty = F.group_norm(ex, 3, ew, eb), TF.group_norm(tx, 3, tw, tb)
    # one node with its affine step on the kernel path; the numpy path records the steps
    assert (type(ey.grad_fn).__name__ == type(ty.grad_fn).__name__) == kernels.enabled()
    ey.pow(2).sum().backward()
    assert calls == (["group_forward", "group_backward"] if kernels.enabled() else [])
    for a in (ex, ew, eb):
        a.grad = None
    (gx,) = ember.autograd.grad(F.group_norm(ex, 3, ew, eb).pow(3).sum(), ex, create_graph=True)
    (tgx,) = torch.autograd.grad(ty.pow(3).sum(), tx, create_graph=True)
    gx.pow(2).sum().backward()
    tgx.pow(2).sum().backward()
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        _close(e.grad.numpy(), t.grad.numpy(), np.float64)


@pytest.mark.parametrize("shape,groups", [((4, 6, 5, 3), 3), ((3, 4, 7), 2)])
def test_group_norm_input_grad_taken_without_a_copy(shape, groups, monkeypatch):
    # the kernel's input gradient owns its memory in x's shape: AccumulateGrad takes it
    written = []
    real = kernels.norm.group_backward

    def recording(*a):
        r = real(*a)
        written.append(id(r[0]))  # the id only: a held reference would make autograd copy
        return r
    monkeypatch.setattr(kernels.norm, "group_backward", recording)
    rng = np.random.default_rng(9)
    c = shape[1]
    xa, wa, ba, ga = rng.standard_normal(shape), rng.standard_normal(c), rng.standard_normal(c), \
        rng.standard_normal(shape)
    x, w, b = (ember.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    for _ in range(2):
        F.group_norm(x, groups, w, b).backward(ember.tensor(ga))
        TF.group_norm(tx, groups, tw, tb).backward(torch.tensor(ga))
        for e, t in ((x, tx), (w, tw), (b, tb)):
            _close(e.grad.numpy(), t.grad.numpy(), np.float64)
        if kernels.enabled() and len(written) == 1:
            assert id(x.grad._data) == written[0]
    assert len(written) == (2 if kernels.enabled() else 0)


@pytest.mark.parametrize("dt", DTYPES)
def test_group_norm_channels_last(dt):
    rng = np.random.default_rng(6)
    _check(lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: TF.group_norm(x, 2, w, b),
           [_rand(rng, 3, 6, 5, 4), rng.standard_normal(6), rng.standard_normal(6)], [0, 1, 2], dt,
           layouts=(ember.channels_last, torch.channels_last))


@pytest.mark.parametrize("dt", DTYPES)
def test_instance_norm_running_stats(dt):
    rng = np.random.default_rng(7)
    x = _rand(rng, 3, 4, 5, 6).astype(dt)
    rm, rv = rng.standard_normal(4).astype(dt), (rng.random(4) + 0.5).astype(dt)
    out = []
    for off in (False, True):
        erm, erv = ember.tensor(rm.copy()), ember.tensor(rv.copy())
        if off:
            with kernels.disabled():
                y = F.instance_norm(ember.tensor(x), erm, erv, use_input_stats=True, momentum=0.3)
        else:
            y = F.instance_norm(ember.tensor(x), erm, erv, use_input_stats=True, momentum=0.3)
        out.append((y.numpy(), erm.numpy(), erv.numpy()))
    trm, trv = torch.tensor(rm.copy()), torch.tensor(rv.copy())
    ty = TF.instance_norm(torch.tensor(x), trm, trv, use_input_stats=True, momentum=0.3)
    for a, b, c in zip(out[0], out[1], (ty.numpy(), trm.numpy(), trv.numpy())):
        _close(a, b, dt)
        _close(a, c, dt)


# ---- batch norm ----------------------------------------------------------------------------

def _bn(training, momentum, rm, rv):
    """ember and torch batch_norm closures over running statistics that the test keeps."""
    def efn(x, w, b):
        dt = x._data.dtype
        rm_e[:] = [ember.tensor(rm.astype(dt)), ember.tensor(rv.astype(dt))]
        return F.batch_norm(x, rm_e[0], rm_e[1], w, b, training, momentum, 1e-5)

    def tfn(x, w, b):
        dt = x.detach().numpy().dtype
        rm_t[:] = [torch.tensor(rm.astype(dt)), torch.tensor(rv.astype(dt))]
        return TF.batch_norm(x, rm_t[0], rm_t[1], w, b, training, momentum, 1e-5)
    rm_e, rm_t = [None, None], [None, None]
    return efn, tfn, rm_e, rm_t


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(6, 5, 7, 3), (2, 3, 11), (9, 4), (1, 3, 2, 2), (3, 2, 1, 1), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(dt, shape, training, affine):
    rng = np.random.default_rng(8)
    c = shape[1]
    rm, rv = rng.standard_normal(c), rng.random(c) + 0.5
    efn, tfn, rm_e, rm_t = _bn(training, 0.1, rm, rv)
    w, b = (rng.standard_normal(c), rng.standard_normal(c)) if affine else (None, None)
    _check(efn, tfn, [_rand(rng, *shape) + 3.0, w, b], [0, 1, 2] if affine else [0], dt)
    # the running statistics after the last (kernel, then numpy, then torch) call are torch's
    for e, t in zip(rm_e, rm_t):
        _close(e.numpy(), t.numpy(), dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_channels_last(dt, training):
    rng = np.random.default_rng(9)
    rm, rv = rng.standard_normal(5), rng.random(5) + 0.5
    efn, tfn, _, _ = _bn(training, 0.2, rm, rv)
    out = _check(efn, tfn, [_rand(rng, 4, 5, 3, 7), rng.standard_normal(5), rng.standard_normal(5)], [0, 1, 2], dt,
                 layouts=(ember.channels_last, torch.channels_last))
    assert out[0].is_contiguous(memory_format=ember.channels_last)
    # the numpy path gives a C-ordered gradient; the kernels keep the layout, as torch does
    assert out[1].is_contiguous(memory_format=ember.channels_last) or not kernels.enabled()


@pytest.mark.parametrize("dt", DTYPES)
def test_batch_norm_running_update_exact(dt):
    """The running statistics after several steps of BatchNorm2d: unbiased variance, the
    momentum, num_batches_tracked and momentum=None (the cumulative average)."""
    rng = np.random.default_rng(10)
    for momentum in (0.1, None):
        emod = ember.nn.BatchNorm2d(3, momentum=momentum, dtype=ember.float64 if dt is np.float64 else None)
        tmod = torch.nn.BatchNorm2d(3, momentum=momentum, dtype=torch.float64 if dt is np.float64 else None)
        for _ in range(3):
            x = (_rand(rng, 4, 3, 5, 5) * 3 + 100).astype(dt)  # a large mean: the shifted sums matter
            emod(ember.tensor(x))
            tmod(torch.tensor(x))
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            e, t = getattr(emod, name).numpy(), getattr(tmod, name).numpy()
            assert e.dtype == t.dtype
            _close(e, t, dt)


def test_batch_norm_kernel_runs(monkeypatch):
    calls = []
    for name in ("channel_stats", "channel_apply", "channel_backward"):
        real = getattr(kernels.norm, name)
        monkeypatch.setattr(kernels.norm, name, lambda *a, _f=real, _n=name: calls.append(_n) or _f(*a))
    x = ember.tensor(np.random.default_rng(11).standard_normal((4, 3, 5, 5)).astype(np.float32), requires_grad=True)
    F.batch_norm(x, None, None, training=True).sum().backward()
    assert calls == (["channel_stats", "channel_apply", "channel_backward"] if kernels.enabled() else [])


@pytest.mark.parametrize("dt", DTYPES)
def test_batch_norm_strided_input(dt):
    """A layout that is neither contiguous nor channels-last takes the numpy path."""
    rng = np.random.default_rng(14)
    rm, rv = rng.standard_normal(3), rng.random(3) + 0.5
    for training in (True, False):
        efn, tfn, _, _ = _bn(training, 0.1, rm, rv)
        _check(lambda x, w, b, f=efn: f(x[:, ::2], w, b), lambda x, w, b, f=tfn: f(x[:, ::2], w, b),
               [_rand(rng, 4, 6, 5, 3), rng.standard_normal(3), rng.standard_normal(3)], [0, 1, 2], dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_batch_norm_eval_empty_batch(dt):
    x = np.zeros((0, 3, 4, 4), dt)
    rm, rv = np.zeros(3, dt), np.ones(3, dt)
    e = F.batch_norm(ember.tensor(x), ember.tensor(rm), ember.tensor(rv), training=False)
    t = TF.batch_norm(torch.tensor(x), torch.tensor(rm), torch.tensor(rv), training=False)
    assert tuple(e.shape) == tuple(t.shape) and e.dtype == ember.tensor(x).dtype


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_statistics_with_an_outlier_first_value(channels_last):
    """float32 statistics stay accurate when a channel's values sit far from its first
    value (no sum of squares cancels): against torch in float64."""
    rng = np.random.default_rng(15)
    x = (rng.standard_normal((16, 3, 9, 7)) + 1000.0).astype(np.float32)
    x[0, :, 0, 0] = 1e5
    ex = ember.tensor(x)
    if channels_last:
        ex = ex.contiguous(memory_format=ember.channels_last)
    erm, erv = ember.zeros(3), ember.ones(3)
    y = F.batch_norm(ex, erm, erv, training=True, momentum=1.0)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    ty = TF.batch_norm(torch.tensor(x, dtype=torch.float64), trm, trv, training=True, momentum=1.0)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-6)
    # the numpy path sums squares around the mean in float32: less accurate here
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-5 if kernels.enabled() else 1e-3)
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-4, atol=1e-4)
