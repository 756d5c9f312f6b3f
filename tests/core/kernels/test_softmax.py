"""The compiled softmax / log_softmax kernels (ember.cpu.kernels.softmax) against the numpy
path of the same op (``kernels.disabled()``) and against torch: values, gradients, dtypes
and memory layouts, over awkward shapes, every dim, strided and channels-last inputs, and
the extreme values softmax meets (-inf entries, huge logits, NaN)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from conftest import count_calls

import ember
import ember.nn.functional as F
from ember.cpu import kernels

TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-10, atol=1e-12)}
OPS = ["softmax", "log_softmax"]

# (shape, dim): odd and prime sizes, batch 1, long rows, every dim of a 3-d array (the
# non-last dims take the blocked kernel), inner dims split into several blocks, empty arrays
CASES = [((7,), 0), ((1, 13), -1), ((5, 97), 1), ((3, 1031), -1), ((5, 97), 0), ((3, 4, 5), 0), ((3, 4, 5), 1),
         ((3, 4, 5), 2), ((2, 3, 300), 1), ((2, 600, 3), 1), ((2, 9, 1031), 1), ((1, 200, 1500), 1), ((1, 1, 1), 1),
         ((0, 5), 1), ((4, 0), 1), ((4, 0), 0), ((2, 3, 2, 17), -2)]


def _data(shape, dtype, seed, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def _run(op, arr, dim, grad_arr, layout=None):
    """ember op forward and x.grad with the given upstream gradient; ``layout`` rewrites the
    input (a strided or channels-last view)."""
    x = ember.tensor(arr)
    if layout is not None:
        x = layout(x)
    x = x.detach().requires_grad_(True)
    y = getattr(F, op)(x, dim)
    y.backward(ember.tensor(grad_arr))
    return y.detach(), x.grad


def _torch(op, arr, dim, grad_arr, layout=None):
    x = torch.tensor(arr)
    if layout is not None:
        x = layout(x)
    x = x.detach().requires_grad_(True)
    y = getattr(TF, op)(x, dim)
    y.backward(torch.tensor(grad_arr))
    return y.detach(), x.grad


def _close(a, b, dtype):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,dim", CASES)
def test_matches_numpy_path_and_torch(op, shape, dim, dtype):
    x = _data(shape, dtype, 1)
    g = _data(shape, dtype, 2, 1.0)
    y, gx = _run(op, x, dim, g)
    with kernels.disabled():
        y_np, gx_np = _run(op, x, dim, g)
    y_t, gx_t = _torch(op, x, dim, g)
    assert y.dtype == y_np.dtype == getattr(ember, dtype) and gx.dtype == y.dtype
    assert tuple(y.shape) == tuple(shape) and tuple(gx.shape) == tuple(shape)
    _close(y.numpy(), y_np.numpy(), dtype)
    _close(gx.numpy(), gx_np.numpy(), dtype)
    _close(y.numpy(), y_t.detach().numpy(), dtype)
    _close(gx.numpy(), gx_t.numpy(), dtype)


def _channels_last(t):
    lib = ember if isinstance(t, ember.Tensor) else torch
    return t.contiguous(memory_format=lib.channels_last)


LAYOUTS = {"strided": lambda t: t[:, ::2], "transposed": lambda t: t.transpose(0, 1), "channels_last": _channels_last}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dim", [1, -1, 0])
@pytest.mark.parametrize("kind", ["strided", "transposed", "channels_last"])
def test_layouts(op, kind, dim, dtype):
    shape = (3, 10, 5, 7) if kind != "transposed" else (9, 11)
    if kind == "transposed" and dim == 1:
        dim = 0
    layout = LAYOUTS[kind]
    x = _data(shape, dtype, 3)
    out_shape = tuple(layout(torch.tensor(x)).shape)
    g = _data(out_shape, dtype, 4, 1.0)
    y, gx = _run(op, x, dim, g, layout)
    with kernels.disabled():
        y_np, gx_np = _run(op, x, dim, g, layout)
    y_t, gx_t = _torch(op, x, dim, g, layout)
    _close(y.numpy(), y_np.numpy(), dtype)
    _close(gx.numpy(), gx_np.numpy(), dtype)
    _close(y.numpy(), y_t.detach().numpy(), dtype)
    _close(gx.numpy(), gx_t.numpy(), dtype)
    assert y.stride() == y_np.stride()  # the result keeps the input's memory layout


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the numpy path's inf - inf
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dim", [0, 1])
def test_extreme_values(op, dim, dtype):
    x = _data((6, 9), dtype, 5)
    x[0, :] = -np.inf           # a row of -inf: NaN, as torch
    x[1, 3] = -np.inf           # one -inf entry: probability 0
    x[2, :] = [1e4 if dtype == "float64" else 80.0] * 9
    x[3, 4] = 1e30 if dtype == "float64" else 3e38  # one huge logit takes everything
    x[4, 2] = np.nan            # NaN spreads over its row
    x[5, :] *= 1e-30            # all but equal
    g = _data((6, 9), dtype, 6, 1.0)
    y, gx = _run(op, x, dim, g)
    with kernels.disabled():
        y_np, gx_np = _run(op, x, dim, g)
    y_t, gx_t = _torch(op, x, dim, g)
    np.testing.assert_allclose(y.numpy(), y_np.numpy(), equal_nan=True, **TOL[dtype])
    np.testing.assert_allclose(y.numpy(), y_t.detach().numpy(), equal_nan=True, **TOL[dtype])
    np.testing.assert_allclose(gx.numpy(), gx_np.numpy(), equal_nan=True, **TOL[dtype])
    np.testing.assert_allclose(gx.numpy(), gx_t.numpy(), equal_nan=True, **TOL[dtype])


@pytest.mark.parametrize("op", OPS)
def test_float32_accuracy_on_long_rows(op):
    # the float32 sums are reassociated: they stay within a few ulp of a float64 computation
    x = _data((3, 100003), "float32", 7, 10.0)
    y = getattr(F, op)(ember.tensor(x), -1).numpy()
    ref = getattr(TF, op)(torch.tensor(x, dtype=torch.float64), -1).numpy()
    np.testing.assert_allclose(y, ref, rtol=2e-5, atol=1e-9 if op == "softmax" else 1e-4)


@pytest.mark.parametrize("op", OPS)
def test_double_backward(op):
    x = _data((4, 6), "float64", 8)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ge, = ember.autograd.grad((getattr(F, op)(xe, 1) ** 3).sum(), xe, create_graph=True)
    gt, = torch.autograd.grad((getattr(TF, op)(xt, 1) ** 3).sum(), xt, create_graph=True)
    _close(ge.detach().numpy(), gt.detach().numpy(), "float64")
    he, = ember.autograd.grad((ge * ge).sum(), xe)
    ht, = torch.autograd.grad((gt * gt).sum(), xt)
    _close(he.numpy(), ht.numpy(), "float64")


def test_dtype_argument_and_node_names():
    x = _data((3, 5), "float32", 9)
    for op, name in (("softmax", "SoftmaxBackward0"), ("log_softmax", "LogSoftmaxBackward0")):
        ye = getattr(F, op)(ember.tensor(x, requires_grad=True), 1, dtype=ember.float64)
        yt = getattr(TF, op)(torch.tensor(x, requires_grad=True), 1, dtype=torch.float64)
        assert ye.dtype == ember.float64 and type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__ == name
        _close(ye.detach().numpy(), yt.detach().numpy(), "float64")


def _counting(monkeypatch, names):
    return count_calls(monkeypatch, kernels.softmax, names)


def test_kernel_path_runs(monkeypatch):
    names = ["softmax", "log_softmax", "softmax_backward", "log_softmax_backward"]
    calls = _counting(monkeypatch, names)
    x = ember.tensor(_data((8, 33), "float32", 10), requires_grad=True)
    F.softmax(x, 1).sum().backward()
    F.log_softmax(x, 0).sum().backward()
    assert calls == {n: int(kernels.enabled()) for n in names}
    with kernels.disabled():
        F.softmax(x, 1).sum().backward()
    n = int(kernels.enabled())
    assert calls["softmax"] == n and calls["softmax_backward"] == n
    F.softmax(x.half(), 1)  # float16 takes the numpy path
    assert calls["softmax"] == n


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_attention_through_the_kernel(monkeypatch, dtype):
    # scaled_dot_product_attention's softmax (with fully masked rows giving zeros) and its
    # backward (softmax's and the scale, one pass) take the kernels; the numpy path and torch agree
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)))
    mask = rng.random((5, 7)) > 0.4
    mask[2] = False  # a query that sees no key

    def run(lib, fn):
        qs, ks, vs = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
        out = fn(qs, ks, vs, attn_mask=lib.tensor(mask))
        out.backward(lib.tensor(np.ones(out.shape, dtype)))
        return [out.detach().numpy()] + [t.grad.numpy() for t in (qs, ks, vs)]

    calls = _counting(monkeypatch, ["softmax", "softmax_backward", "attention_grad"])
    got = run(ember, F.scaled_dot_product_attention)
    n = int(kernels.enabled())
    assert calls == {"softmax": n, "softmax_backward": 0, "attention_grad": n}  # dS and its scale in one pass
    with kernels.disabled():
        ref = run(ember, F.scaled_dot_product_attention)
    want = run(torch, TF.scaled_dot_product_attention)
    for a, b, c in zip(got, ref, want):
        _close(a, b, dtype)
        _close(a, c, dtype)
    assert not np.isnan(got[0]).any() and np.all(got[0][:, :, 2] == 0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L,S", [(5, 5), (5, 9), (9, 5), (1, 1), (128, 128)])
def test_attention_probs_scale_mask_and_softmax_in_one_pass(monkeypatch, L, S, causal, dtype):
    # without a mask, and with is_causal (torch's top-left aligned tril, also when L != S),
    # scaling, masking and the softmax are one kernel pass over each row of the scores: the
    # numpy path (scale, where, softmax) and torch agree on values and gradients
    rng = np.random.default_rng(L * 10 + S)
    q, k, v = (rng.standard_normal(s).astype(dtype) * 2 for s in ((2, 3, L, 8), (2, 3, S, 8), (2, 3, S, 4)))

    def run(lib, fn):
        qs, ks, vs = (lib.tensor(a, requires_grad=True) for a in (q, k, v))
        out = fn(qs, ks, vs, is_causal=causal, scale=0.3)
        out.backward(lib.tensor(np.linspace(-1, 1, out.numel()).reshape(out.shape).astype(dtype)))
        return [out.detach().numpy()] + [t.grad.numpy() for t in (qs, ks, vs)]

    calls = _counting(monkeypatch, ["attention_probs", "softmax"])
    got = run(ember, F.scaled_dot_product_attention)
    assert calls == {"attention_probs": int(kernels.enabled()), "softmax": 0}
    with kernels.disabled():
        ref = run(ember, F.scaled_dot_product_attention)
    want = run(torch, TF.scaled_dot_product_attention)
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    exact = run(torch, TF.scaled_dot_product_attention)  # float64: float32 results are allowed
    for ours, numpy_path, theirs, best in zip(got, ref, want, exact):  # 8x torch's own distance
        tol = 8 * np.abs(theirs - best).max() + 1e-6 * np.abs(best).max() if dtype == "float32" else 1e-10
        assert np.abs(ours - best).max() <= tol and np.abs(numpy_path - best).max() <= tol


def test_attention_probs_rows_of_minus_inf_and_nan():
    # a row whose scores are all -inf gives zeros (as the masked path's dead rows); a NaN
    # score spreads to its row only; the masked columns of a causal row are zeros even
    # where the scores are NaN
    scores = np.random.default_rng(3).standard_normal((2, 4, 4)).astype(np.float32)
    scores[0, 1] = -np.inf
    scores[1, 2, 0] = np.nan
    scores[1, 0, 3] = np.nan
    probs = kernels.softmax.attention_probs(scores.copy(), 0.5, True)
    assert np.all(probs[0, 1] == 0)
    assert np.isnan(probs[1, 2, :3]).all() and np.all(probs[1, 2, 3:] == 0)
    assert probs[1, 0, 0] == 1 and np.all(probs[1, 0, 1:] == 0)
    rows = np.delete(probs.reshape(8, 4), [1, 6], axis=0)
    np.testing.assert_allclose(rows.sum(-1), 1, rtol=1e-6)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape,dim", [((700, 300), 1), ((3, 400, 700), 1), ((1, 300, 999), 1)])
def test_threads_give_the_same_bits(op, shape, dim):
    # rows and column blocks are split over threads; each is computed whole by one thread
    x = _data(shape, "float32", 12)
    g = _data(shape, "float32", 13, 1.0)
    saved = ember.get_num_threads()
    try:
        results = []
        for n in (1, 3):
            ember.set_num_threads(n)
            y, gx = _run(op, x, dim, g)
            results.append((y.numpy(), gx.numpy()))
    finally:
        ember.set_num_threads(saved)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1])
def test_dead_slices_give_zeros(dim, dtype):
    # attention's option: a slice of only -inf gives zeros (rows and column blocks alike);
    # the others are the plain softmax
    x = _data((5, 6), dtype, 14)
    if dim == 1:
        x[2, :] = -np.inf
    else:
        x[:, 3] = -np.inf
    y = kernels.softmax.softmax(x, dim, dead_zero=True)
    want = torch.softmax(torch.tensor(x), dim).numpy()
    dead = np.isnan(want)
    assert dead.any() and np.all(y[dead] == 0)
    _close(y[~dead], want[~dead], dtype)
