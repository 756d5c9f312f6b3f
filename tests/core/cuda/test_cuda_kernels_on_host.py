"""Every kernel family computed on the host: the CUDA sources compiled for the CPU with a
thread per CUDA thread (``_host_cuda``), driven by the launchers of ``ember.cuda.kernels`` on
the cupy stand-in, against torch on the CPU in float64 (the same inputs, rounded to the
kernel's dtype first), in the four kernel dtypes. This is the numerical check of the kernels
on machines without a GPU; the GPU tests check the same kernels on the device. Sizes are
awkward (one element, odd, prime, wider than one block) and small: every CUDA thread is an
OS thread here."""

import _host_cuda
import numpy as np
import pytest
import torch
from _cupy_stand_in import fake, install
from _references import dropout_keep, philox_words

from ember.cpu.kernels import rnn as cpu_rnn
from ember.cuda import kernels
from ember.cuda.kernels import attention, conv, dropout, embedding, loss, norm, optim, pool, rnn, softmax
from ember.ops.pool import _Geom

DTYPES = ["float32", "float64", "float16", "bfloat16"]
# unit roundoff of each dtype's results: float32 and float64 compute in their own type, the
# half types in float32 and round once
ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


@pytest.fixture(autouse=True)
def on_host(monkeypatch):
    """The launchers' ``import cupy`` gives the stand-in, their kernels run on the host."""
    install(monkeypatch)
    monkeypatch.setattr(kernels, "function", _host_cuda.function)


def _array(shape, dtype, seed, scale=1.0, low=None):
    """Random values of ``shape`` rounded to ``dtype`` (normal, or uniform in [low, scale])."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * scale if low is None else rng.uniform(low, scale, shape)
    return fake(np.asarray(values).astype(np.dtype(dtype)))


def _t(a):
    """``a``'s values as a float64 torch tensor."""
    return torch.tensor(np.asarray(a).astype(np.float64))


def _check(got, want, dtype, ulps=64, rounds=4):
    """``got`` (the kernel's, in ``dtype``) against the float64 ``want``: within ``ulps``
    roundings of the type the kernel computes in plus, for the half types, ``rounds``
    roundings of the result's type, of each value or, near zero, of the result's largest
    magnitude."""
    got = np.asarray(got).astype(np.float64)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want, np.float64)
    assert got.shape == want.shape
    half = dtype in ("float16", "bfloat16")
    tol = ulps * ROUNDOFF["float32" if half else dtype] + (rounds * ROUNDOFF[dtype] if half else 0.0)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((1, 1), 1), ((3, 7), 1), ((2, 1100), 1), ((37, 5), 0)], ids=str)
@pytest.mark.parametrize("log", [False, True])
def test_softmax(log, shape, dim, dtype):
    x, g = _array(shape, dtype, 0, 3.0), _array(shape, dtype, 1)
    xt = _t(x).requires_grad_()
    yt = torch.log_softmax(xt, dim) if log else torch.softmax(xt, dim)
    yt.backward(_t(g))
    y = softmax.forward(x, dim, log)
    _check(y, yt, dtype)
    # the backward from the float64 output rounded to the dtype, as the forward gave it
    _check(softmax.backward(g, fake(yt.detach().numpy().astype(np.dtype(dtype))), dim, log), xt.grad, dtype,
           ulps=256)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 7, 300, 1500])
def test_layer_norm(width, dtype):
    x = fake((np.asarray(_array((5, width), dtype, 0, 2.0)).astype(np.float64) + 1.5).astype(np.dtype(dtype)))
    g, w, b = _array((5, width), dtype, 1), _array((width,), dtype, 2), _array((width,), dtype, 3)
    xt, wt, bt = (_t(a).requires_grad_() for a in (x, w, b))
    want = torch.nn.functional.layer_norm(xt, (width,), wt, bt, 1e-5)  # rows off zero mean
    want.backward(_t(g))
    out, mean, _, rstd = norm.rows_forward(x, w, b, 1e-5)
    stats = "float64" if dtype == "float64" else "float32"
    assert mean.dtype == rstd.dtype == np.dtype(stats)
    _check(out, want, dtype, ulps=256)
    _check(mean, xt.detach().mean(1), stats, ulps=256)
    gx, gw, gb = norm.rows_backward(g, x, w, mean, rstd, rstd, True, True)
    _check(gx, xt.grad, dtype, ulps=1024)
    _check(gw, wt.grad, dtype, ulps=1024)
    _check(gb, bt.grad, dtype, ulps=256)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", [1, 7, 1500])
def test_rms_norm(width, dtype):
    x, g, w = _array((5, width), dtype, 0, 2.0), _array((5, width), dtype, 1), _array((width,), dtype, 2)
    xt, wt = _t(x).requires_grad_(), _t(w).requires_grad_()
    want = torch.nn.functional.rms_norm(xt, (width,), wt, 1e-6)
    want.backward(_t(g))
    out, rstd = norm.rms_forward(x, w, 1e-6)
    _check(out, want, dtype, ulps=256)
    gx, gw = norm.rms_backward(g, x, w, rstd, True, True)
    _check(gx, xt.grad, dtype, ulps=1024)
    _check(gw, wt.grad, dtype, ulps=1024)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", [dict(), dict(weight=True, ignore_index=2, smoothing=0.2)], ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 1301)], ids=str)
def test_cross_entropy(shape, options, dtype):
    n, c = shape
    x = _array(shape, dtype, 0, 3.0)
    t = fake(np.random.default_rng(1).integers(0, c, n))
    ignore = options.get("ignore_index", -100)
    if n > 1 and "ignore_index" in options:
        t[0] = ignore
    w = _array((c,), dtype, 2, 2.0, low=0.5) if options.get("weight") else None
    smoothing = options.get("smoothing", 0.0)
    xt = _t(x).requires_grad_()
    kwargs = dict(weight=None if w is None else _t(w), ignore_index=ignore, label_smoothing=smoothing)
    want = torch.nn.functional.cross_entropy(xt, torch.tensor(np.asarray(t)), reduction="none", **kwargs)
    per_row, lse, wt = loss.cross_entropy_forward(x, t, w, ignore, smoothing)
    _check(per_row, want, "float64" if dtype == "float64" else "float32", ulps=1024)
    _check(lse, torch.logsumexp(xt.detach(), 1), "float64" if dtype == "float64" else "float32", ulps=256)
    # the 'mean' reduction's gradient, its total from the kernel's weights
    mean = torch.nn.functional.cross_entropy(xt, torch.tensor(np.asarray(t)), reduction="mean", **kwargs)
    mean.backward()
    g = fake(np.array(1.0, np.dtype(dtype)))
    dx = loss.cross_entropy_backward(g, x, lse, t, w, fake(np.asarray(wt).sum()), ignore, smoothing)
    _check(dx, xt.grad, dtype, ulps=1024)


def test_cross_entropy_target_out_of_range_raises_torchs_index_error():
    x = _array((4, 3), "float32", 0)
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        loss.cross_entropy_forward(x, fake(np.array([0, 7, 1, 9])), None, -100, 0.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nll_grad(dtype):
    t = fake(np.array([[0, 2, -100], [1, 1, 2]]))
    coef = _array((2, 3), dtype, 0)
    got = np.asarray(loss.nll_grad(t, coef, 3)).astype(np.float64)
    want = np.zeros((2, 3, 3))
    for i in range(2):
        for j in range(3):
            if 0 <= t[i, j] < 3:
                want[i, t[i, j], j] = float(coef[i, j])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_draws_the_philox_stream(dtype):
    seed, offset, n = 2 ** 63 + 12345, 2 ** 32 - 3, 1001  # the counter's low word wraps
    np.testing.assert_array_equal(np.asarray(dropout.words(-(-n // 4), seed, offset)),
                                  philox_words(-(-n // 4), seed, offset))
    x = _array((n,), dtype, 0)
    out, scaled = dropout.apply(x, 0.3, 1 / 0.7, seed, offset)
    words = philox_words(-(-n // 4), seed, offset).reshape(-1)[:n]
    keep = (words >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24) >= np.float32(0.3)
    scale = np.asarray(np.dtype(dtype).type(1 / 0.7)).astype(np.float64)  # rounded to the dtype, as the CPU path
    np.testing.assert_array_equal(np.asarray(scaled).astype(np.float64), np.where(keep, scale, 0.0))
    _check(out, np.asarray(x).astype(np.float64) * np.where(keep, scale, 0.0), dtype, ulps=1)
    mask = dropout.mask((n,), np.dtype(dtype), 0.3, 1 / 0.7, seed, offset)
    np.testing.assert_array_equal(np.asarray(mask), np.asarray(scaled))


@pytest.mark.parametrize("dtype", DTYPES)
def test_alpha_dropout(dtype):
    n, p, seed = 257, 0.2, 99
    x = _array((n,), dtype, 0)
    a, c1, c2 = 0.9, 1.5, 0.3
    out, scaled = dropout.apply_alpha(x, p, a, c1, c2, seed, 0)
    words = philox_words(-(-n // 4), seed, 0).reshape(-1)[:n]
    keep = ((words >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24) >= np.float32(p)).astype(float)
    r = [float(np.asarray(np.dtype(dtype).type(v))) for v in (a, c1, c2)]  # the scalars in the dtype
    _check(scaled, keep * r[0], dtype, ulps=1)
    _check(out, np.asarray(x).astype(np.float64) * keep * r[0] + (keep - 1) * r[1] + r[2], dtype, ulps=4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("padding_idx,by_freq", [(None, False), (3, True)])
def test_embedding_backward(padding_idx, by_freq, dtype):
    index = np.random.default_rng(0).integers(0, 10, (6, 7))  # rows repeat
    g = _array((6, 7, 5), dtype, 1)
    w = torch.zeros(10, 5, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor(index), w, padding_idx=padding_idx,
                                  scale_grad_by_freq=by_freq).backward(_t(g))
    got = embedding.backward(g, fake(index.reshape(-1).astype(np.int32)), 10, padding_idx, by_freq)
    assert got.dtype == np.dtype(dtype)
    _check(got, w.grad, dtype, ulps=64)


POOLS = [((9,), (3,), (2,), (1,), (1,)), ((7, 6), (3, 2), (2, 2), (1, 0), (1, 2)), ((5, 6, 4), (2, 3, 2), (1, 2, 2),
                                                                                     (1, 1, 0), (1, 1, 1))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size,k,s,p,d", POOLS, ids=["1d", "2d", "3d"])
def test_pooling(size, k, s, p, d, dtype):
    nd = len(size)
    x = _array((2, 3) + size, dtype, 0)
    geo = _Geom(size, k, s, p, d, True)
    xt = _t(x).requires_grad_()
    max_pool = getattr(torch.nn.functional, f"max_pool{nd}d")
    want, where = max_pool(xt, k, s, p, d, ceil_mode=True, return_indices=True)
    g = _array(tuple(want.shape), dtype, 1)
    want.backward(_t(g))
    vals, arg, idx = pool.max_forward(x, geo, np.dtype(np.int16), True)
    _check(vals, want, dtype, ulps=0)
    np.testing.assert_array_equal(np.asarray(idx), where.numpy())
    _check(pool.max_backward(g, arg, geo), xt.grad, dtype, ulps=4)  # overlapping windows add
    xt.grad = None
    avg_pool = getattr(torch.nn.functional, f"avg_pool{nd}d")
    want = avg_pool(xt, k, s, p, ceil_mode=True, count_include_pad=False)
    g = _array(tuple(want.shape), dtype, 2)
    want.backward(_t(g))
    geo_avg = _Geom(size, k, s, p, (1,) * nd, True)
    # the divisor per output cell: its window's cells inside the input, dim by dim
    div = np.ones(())
    for n, kk, ss, pp, out in zip(size, k, s, p, geo_avg.out):
        start = np.arange(out) * ss - pp
        div = np.multiply.outer(div, np.minimum(start + kk, n) - np.maximum(start, 0))
    _check(pool.avg_forward(x, geo_avg, fake(div)), want, dtype, ulps=8)
    _check(pool.avg_backward(g, geo_avg, fake(div)), xt.grad, dtype, ulps=8)


# input shape, weight shape, stride, padding (before, after) per dim, dilation, groups
CONVS = {"1d": ((2, 3, 11), (4, 3, 3), (2,), ((1, 1),), (1,), 1),
         "2d-dense": ((2, 4, 9, 7), (5, 4, 3, 2), (2, 1), ((1, 1), (0, 1)), (1, 2), 1),
         "2d-grouped": ((2, 4, 9, 7), (6, 2, 3, 3), (2, 1), ((1, 1), (0, 1)), (1, 2), 2),
         "2d-depthwise": ((2, 4, 9, 7), (8, 1, 3, 3), (2, 1), ((1, 1), (0, 1)), (1, 2), 4),
         "3d-grouped": ((2, 4, 5, 6, 4), (6, 2, 2, 3, 2), (1, 2, 1), ((1, 0), (1, 1), (0, 1)), (2, 1, 1), 2),
         "3d-depthwise": ((2, 4, 5, 6, 4), (8, 1, 3, 2, 3), (1, 2, 1), ((1, 0), (1, 1), (0, 1)), (2, 1, 1), 4)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONVS)
def test_convolution(case, dtype):
    xshape, wshape, stride, pad, dilation, groups = CONVS[case]
    x, w, b = _array(xshape, dtype, 0), _array(wshape, dtype, 1), _array((wshape[0],), dtype, 2)
    xt, wt, bt = (_t(a).requires_grad_() for a in (x, w, b))
    padded = torch.nn.functional.pad(xt, [v for lo_hi in reversed(pad) for v in lo_hi])
    want = getattr(torch.nn.functional, f"conv{len(stride)}d")(padded, wt, bt, stride, 0, dilation, groups)
    g = _array(tuple(want.shape), dtype, 3)
    want.backward(_t(g))
    out, kept = conv.forward(x, w, b, stride, pad, dilation, groups, keep=True)
    # the half types' products are the stand-in's (numpy's), each value rounded to the dtype;
    # the input gradient sums the product's values
    _check(out, want, dtype, ulps=64)
    _check(conv.input_grad(g, w, x.shape, stride, pad, dilation, groups), xt.grad, dtype, ulps=64, rounds=16)
    _check(conv.weight_grad(x, g, w.shape, stride, pad, dilation, groups, kept=kept), wt.grad, dtype, ulps=64,
           rounds=16)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask", ["none", "causal", "bool", "float"])
def test_attention(mask, dtype):
    q, k, v = _array((2, 19, 8), dtype, 0), _array((2, 21, 8), dtype, 1), _array((2, 21, 5), dtype, 2)
    rng = np.random.default_rng(3)
    bool_mask = fake(rng.random((19, 21)) > 0.3)
    bool_mask[4] = False  # a row with every key masked: zeros out, zero gradients
    masks = {"none": None, "causal": None, "bool": bool_mask, "float": _array((1, 21), dtype, 4)}
    m = masks[mask]
    qt, kt, vt = (_t(a).requires_grad_() for a in (q, k, v))
    mt = None if m is None else (torch.tensor(np.asarray(m)) if mask == "bool" else _t(m).requires_grad_())
    out, lse = attention.forward(q, k, v, m, mask == "causal", 0.4)
    if mask == "bool":
        assert not np.asarray(out)[:, 4].any() and np.isneginf(np.asarray(lse)[:, 4]).all()
    # torch's math path gives a fully masked row zeros too (its safe softmax)
    want = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, mt, is_causal=mask == "causal", scale=0.4)
    g = _array(tuple(want.shape), dtype, 5)
    want.backward(_t(g))
    _check(out, want, dtype, ulps=64)
    dq, dk, dv, ds = attention.backward(g, q, k, v, out, lse, m, mask == "causal", 0.4, mask_grad=mask == "float")
    for got, ref in ((dq, qt.grad), (dk, kt.grad), (dv, vt.grad)):
        _check(got, ref, dtype, ulps=256, rounds=8)
    if mask == "float":
        _check(np.asarray(ds).sum(axis=(0, 1), keepdims=True)[0], mt.grad, dtype, ulps=1024, rounds=8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_dropout(causal, dtype):
    q, k, v = _array((2, 3, 19, 8), dtype, 0), _array((2, 3, 21, 8), dtype, 1), _array((2, 3, 21, 5), dtype, 2)
    p, seed, offset = 0.25, 1234, 77
    shape = attention.dropout_shape(q, k, v)
    assert shape == (2, 3, 19, 21)
    # the probabilities' multipliers: the dropout kernels' mask of that shape, from the same counters
    z = np.where(dropout_keep(int(np.prod(shape)), p, seed, offset).reshape(shape), 1 / (1 - p), 0.0)
    np.testing.assert_array_equal(np.asarray(dropout.mask(shape, np.dtype("float64"), p, 1 / (1 - p), seed, offset)), z)
    qt, kt, vt = (_t(a).requires_grad_() for a in (q, k, v))
    scores = qt @ kt.transpose(-1, -2) * 0.4
    if causal:
        scores = scores.masked_fill(~torch.ones(19, 21, dtype=torch.bool).tril(), float("-inf"))
    want = (torch.softmax(scores, -1) * torch.tensor(z)) @ vt
    g = _array(tuple(want.shape), dtype, 5)
    want.backward(_t(g))
    out, lse = attention.forward(q, k, v, None, causal, 0.4, p, seed, offset)
    _check(out, want, dtype, ulps=64)
    dq, dk, dv, _ = attention.backward(g, q, k, v, out, lse, None, causal, 0.4, False, p, seed, offset)
    for got, ref in ((dq, qt.grad), (dk, kt.grad), (dv, vt.grad)):
        _check(got, ref, dtype, ulps=256, rounds=8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_steps_match_the_cpu_kernels(cell, dtype):
    b, h = 3, 37
    arrays = {"lstm": [(b, 4 * h), (b, 4 * h), (1, 4 * h), (b, h)], "gru": [(b, 3 * h), (1, 3 * h), (1, 3 * h),
                                                                           (b, 3 * h), (b, h)]}[cell]
    inputs = [_array(shape, dtype, seed) for seed, shape in enumerate(arrays)]
    as64 = [np.asarray(a).astype(np.float64) for a in inputs]
    n_out = {"lstm": [(b, h)] * 3, "gru": [(b, 2 * h), (b, h), (b, h), (b, h)]}[cell]
    outs = [fake(np.zeros(shape, np.dtype(dtype))) for shape in n_out]
    outs64 = [np.zeros(shape) for shape in n_out]
    getattr(rnn, f"{cell}_forward_step")(*inputs, *outs)
    getattr(cpu_rnn, f"{cell}_forward_step")(*as64, *outs64)
    for got, want in zip(inputs[:1] + outs, as64[:1] + outs64):  # lstm's pre holds the activations
        _check(got, want, dtype, ulps=16)
    grads = [_array(shape, dtype, 10 + i) for i, shape in enumerate([(b, h)] * (2 if cell == "lstm" else 3))]
    grads64 = [np.asarray(a).astype(np.float64) for a in grads]
    if cell == "lstm":
        acts, c_prev, tanh_c = inputs[0], inputs[3], outs[1]
        d_gates = fake(np.zeros((b, 4 * h), np.dtype(dtype)))
        d64 = np.zeros((b, 4 * h))
        rnn.lstm_backward_step(grads[0], grads[1], fake(np.array(grads[0])), acts, c_prev, tanh_c, d_gates)
        carry64 = grads64[0].copy()
        cpu_rnn.lstm_backward_step(grads64[0], grads64[1], carry64, np.asarray(acts).astype(np.float64),
                                   as64[3], np.asarray(tanh_c).astype(np.float64), d64)
        _check(d_gates, d64, dtype, ulps=16)
    else:
        rz, n_, hn = outs[0], outs[1], outs[2]
        d_proj, d_rec = (fake(np.zeros((b, 3 * h), np.dtype(dtype))) for _ in range(2))
        dp64, dr64 = np.zeros((b, 3 * h)), np.zeros((b, 3 * h))
        rnn.gru_backward_step(grads[0], grads[1], grads[2], rz, n_, hn, inputs[4], d_proj, d_rec)
        cpu_rnn.gru_backward_step(*grads64, *(np.asarray(a).astype(np.float64) for a in (rz, n_, hn)), as64[4], dp64,
                                  dr64)
        _check(d_proj, dp64, dtype, ulps=16)
        _check(d_rec, dr64, dtype, ulps=16)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", [dict(weight_decay=0.1, decoupled_weight_decay=True, amsgrad=False),
                                     dict(weight_decay=0.1, decoupled_weight_decay=False, amsgrad=True)],
                         ids=["adamw", "adam-amsgrad"])
def test_adam_matches_torch(options, dtype):
    shapes = [(3,), (optim.CHUNK + 5,)]  # one chunk and two: the launch's tensor table
    params = [_array(s, dtype, i) for i, s in enumerate(shapes)]
    grads = [_array(s, dtype, 10 + i, 1.5, low=0.5) for i, s in enumerate(shapes)]
    states = [[fake(np.zeros(s, np.dtype(dtype))) for _ in range(3)] for s in shapes]
    torch_params = [_t(p).requires_grad_() for p in params]
    torch_opt = torch.optim.Adam(torch_params, lr=0.01, betas=(0.9, 0.99), eps=1e-8, foreach=False, **options)
    for step in (1, 2):
        for tp, g in zip(torch_params, grads):
            tp.grad = _t(g)
        torch_opt.step()
        optim.adam([(p, g, m, v, vmax, step) for p, g, (m, v, vmax) in zip(params, grads, states)], lr=0.01,
                   beta1=0.9, beta2=0.99, eps=1e-8, **options)
    for p, tp in zip(params, torch_params):
        _check(p, tp, dtype, ulps=16)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sgd_matches_torch(dtype):
    shapes = [(5,), (optim.CHUNK + 1,)]
    params = [_array(s, dtype, i) for i, s in enumerate(shapes)]
    grads = [_array(s, dtype, 10 + i) for i, s in enumerate(shapes)]
    bufs = [fake(np.zeros(s, np.dtype(dtype))) for s in shapes]
    torch_params = [_t(p).requires_grad_() for p in params]
    torch_opt = torch.optim.SGD(torch_params, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01,
                                nesterov=False, maximize=True, foreach=False)
    for first in (True, False):
        for tp, g in zip(torch_params, grads):
            tp.grad = _t(g)
        torch_opt.step()
        optim.sgd([(p, g, buf, first) for p, g, buf in zip(params, grads, bufs)], lr=0.1, momentum=0.9,
                  dampening=0.1, weight_decay=0.01, nesterov=False, maximize=True)
    for p, tp in zip(params, torch_params):
        _check(p, tp, dtype, ulps=16)
