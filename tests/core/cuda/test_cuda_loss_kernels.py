"""The fused cross entropy and nll_loss's gradient kernel on a GPU: cross_entropy on cuda
against torch on the CPU, ember's CPU path and the float64 reference (``_references.py``),
forward and gradient, over weights, ignore_index, label smoothing and the three
reductions, on awkward sizes (one class, batch 1, odd, prime, wider than one block,
empty); torch's IndexError for a class out of range; NaN rows; a graph of the gradient.
Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
import torch
from _references import cross_entropy, cross_entropy_grad, cross_entropy_rows

import ember
from ember.cuda.kernels import loss as cuda_loss

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

SHAPES = [(1, 1), (1, 7), (5, 3), (13, 1000), (3, 4099), (0, 5)]
OPTIONS = [dict(), dict(weight=True), dict(ignore_index=1), dict(label_smoothing=0.2),
           dict(weight=True, ignore_index=0, label_smoothing=0.1)]
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def _inputs(shape, opts, dtype):
    rng = np.random.default_rng(sum(shape) + len(opts))
    n, c = shape
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.integers(0, c, n)
    if "ignore_index" in opts and n > 1:
        t[::3] = opts["ignore_index"]  # some rows ignored, not all
    w = rng.uniform(0.5, 2.0, c).astype(dtype) if opts.get("weight") else None
    return x, t, w


def _run(lib, device, x, t, w, opts, reduction, g):
    tx = lib.tensor(x, device=device, requires_grad=True)
    out = lib.nn.functional.cross_entropy(
        tx, lib.tensor(t, device=device), weight=None if w is None else lib.tensor(w, device=device),
        ignore_index=opts.get("ignore_index", -100), reduction=reduction,
        label_smoothing=opts.get("label_smoothing", 0.0))
    out.backward(lib.tensor(g, device=device))
    return out, tx.grad


def _numpy(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("opts", OPTIONS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_matches_torch_the_cpu_path_and_float64(shape, opts, reduction, dtype):
    import cupy
    x, t, w = _inputs(shape, opts, dtype)
    rng = np.random.default_rng(7)
    g = rng.standard_normal(shape[0]).astype(dtype) if reduction == "none" else np.array(1.3, dtype)
    out, grad = _run(ember, "cuda", x, t, w, opts, reduction, g)
    assert isinstance(out._data, cupy.ndarray) and isinstance(grad._data, cupy.ndarray)
    cpu_out, cpu_grad = _run(ember, "cpu", x, t, w, opts, reduction, g)
    t_out, t_grad = _run(torch, "cpu", x, t, w, opts, reduction, g)
    assert type(out.grad_fn).__name__ == type(t_out.grad_fn).__name__  # torch's top node
    assert out.dtype == cpu_out.dtype and tuple(out.shape) == tuple(t_out.shape)
    for ours, other in ((out, cpu_out), (out, t_out), (grad, cpu_grad), (grad, t_grad)):
        np.testing.assert_allclose(_numpy(ours), _numpy(other), equal_nan=True, **TOL[dtype])
    ignore, eps = opts.get("ignore_index", -100), opts.get("label_smoothing", 0.0)
    w64 = None if w is None else w.astype(np.float64)
    np.testing.assert_allclose(_numpy(out), cross_entropy(x.astype(np.float64), t, w64, ignore, eps, reduction),
                               equal_nan=True, **TOL[dtype])
    np.testing.assert_allclose(_numpy(grad), cross_entropy_grad(x.astype(np.float64), t, w64, ignore, eps, reduction,
                                                                g.astype(np.float64)), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_kernel_saves_logsumexp_and_target_weights(dtype):
    import cupy
    x, t, w = _inputs((37, 129), dict(weight=True, ignore_index=2), dtype)
    loss, lse, wt = cuda_loss.cross_entropy_forward(cupy.asarray(x), cupy.asarray(t), cupy.asarray(w), 2, 0.25)
    ref_loss, ref_lse, ref_wt = cross_entropy_rows(x.astype(np.float64), t, w.astype(np.float64), 2, 0.25)
    for got, want in ((loss, ref_loss), (lse, ref_lse), (wt, ref_wt)):
        assert got.dtype == x.dtype and got.shape == (37,)
        np.testing.assert_allclose(cupy.asnumpy(got), want, **TOL[dtype])


@pytest.mark.parametrize("targets,bad", [([0, 5, 1, 7], 5), ([2, 0, -3], -3), ([4, 4, 9, -1], 9)])
def test_a_class_out_of_range_raises_torchs_index_error(targets, bad):
    x = np.zeros((len(targets), 5), np.float32)
    for device in ("cuda", "cpu"):  # the first offending target, as the CPU path reports it
        with pytest.raises(IndexError, match=f"^Target {bad} is out of bounds.$"):
            ember.nn.functional.cross_entropy(ember.tensor(x, device=device), ember.tensor(targets, device=device))


def test_ignored_targets_may_lie_outside_the_classes_and_all_ignored_is_nan():
    x = ember.tensor(np.ones((3, 4), np.float32), device="cuda", requires_grad=True)
    t = ember.tensor([-100, -100, -100], device="cuda")
    loss = ember.nn.functional.cross_entropy(x, t, label_smoothing=0.1)
    loss.backward()
    assert np.isnan(loss.item())  # 0 / 0, as torch
    np.testing.assert_array_equal(_numpy(x.grad), np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_nan_and_infinite_logits_as_torch(reduction):
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [0.5, -1.0, 3.0]], np.float32)
    t = np.array([1, 1, 0, 2])
    g = np.ones(4, np.float32) if reduction == "none" else np.array(1.0, np.float32)
    out, grad = _run(ember, "cuda", x, t, None, {}, reduction, g)
    t_out, t_grad = _run(torch, "cpu", x, t, None, {}, reduction, g)
    np.testing.assert_allclose(_numpy(out), _numpy(t_out), equal_nan=True, rtol=1e-5)
    np.testing.assert_allclose(_numpy(grad), _numpy(t_grad), equal_nan=True, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opts", [dict(), dict(weight=True, label_smoothing=0.2, ignore_index=0)], ids=str)
def test_second_derivative_through_the_fused_node(opts):
    x, t, w = _inputs((6, 5), opts, "float64")
    probe = np.random.default_rng(1).standard_normal((6, 5))
    grads = []
    for lib, device in ((ember, "cuda"), (torch, "cpu")):
        tx = lib.tensor(x, device=device, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(
            tx, lib.tensor(t, device=device), weight=None if w is None else lib.tensor(w, device=device),
            ignore_index=opts.get("ignore_index", -100), label_smoothing=opts.get("label_smoothing", 0.0))
        (gx,) = lib.autograd.grad(loss, tx, create_graph=True)
        (gx * lib.tensor(probe, device=device)).sum().backward()
        grads.append((_numpy(gx), _numpy(tx.grad)))
    for ours, theirs in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 3), (7, 11), (3, 5, 2, 9), (2, 1030)], ids=str)
@pytest.mark.parametrize("opts", [dict(), dict(weight=True, ignore_index=1)], ids=str)
def test_nll_loss_gradient_kernel(shape, opts, dtype):
    import cupy
    rng = np.random.default_rng(sum(shape))
    n, c = shape[:2]
    logp = np.log(rng.dirichlet(np.ones(c), size=(n,) + shape[2:])).astype(dtype)
    logp = np.moveaxis(logp, -1, 1) if len(shape) > 2 else logp
    logp = np.ascontiguousarray(logp)
    t = rng.integers(0, c, (n,) + shape[2:])
    if "ignore_index" in opts:
        t.reshape(-1)[::4] = 1
    w = rng.uniform(0.5, 2.0, c).astype(dtype) if opts.get("weight") else None
    results = []
    for lib, device in ((ember, "cuda"), (torch, "cpu")):
        tx = lib.tensor(logp, device=device, requires_grad=True)
        out = lib.nn.functional.nll_loss(tx, lib.tensor(t, device=device),
                                         weight=None if w is None else lib.tensor(w, device=device),
                                         ignore_index=opts.get("ignore_index", -100))
        out.backward()
        results.append((_numpy(out), _numpy(tx.grad)))
    (out, grad), (t_out, t_grad) = results
    np.testing.assert_allclose(out, t_out, **TOL[dtype])
    np.testing.assert_allclose(grad, t_grad, **TOL[dtype])
    # the kernel alone: coef at the target class, 0 elsewhere (targets outside [0, C) match none)
    tt = cupy.asarray(np.where(t == 1, -1, t))
    coef = cupy.asarray(rng.standard_normal(t.shape).astype(dtype))
    dense = cupy.asnumpy(cuda_loss.nll_grad(tt, coef, c))
    expected = np.where(np.expand_dims(cupy.asnumpy(tt), 1) == np.arange(c).reshape((1, c) + (1,) * (t.ndim - 1)),
                        np.expand_dims(cupy.asnumpy(coef), 1), 0)
    np.testing.assert_array_equal(dense, expected)
