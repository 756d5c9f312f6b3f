"""The dropout kernel (ember/cpu/kernels/dropout.py): the same seeded results, bit for bit,
as ember's numpy path (same draws, same mask, same scale), gradients included; and
torch's dropout semantics (kept values scaled by 1/(1-p), the rest 0, the gradient the
same mask and scale) checked against torch's own arithmetic on ember's mask."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.cpu import kernels


def _run(arr, p, grad, seed, op=F.dropout):
    ember.manual_seed(seed)
    x = ember.from_numpy(arr).requires_grad_()
    y = op(x, p)
    (y.sum() if grad is None else y).backward(None if grad is None else ember.from_numpy(grad))
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(0,), (1,), (1, 7), (13, 17), (3, 5, 7, 11), (100003,)])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_kernel_equals_numpy_path(shape, p, dtype):
    rng = np.random.default_rng(len(shape) * 7 + int(p * 10))
    arr = (rng.standard_normal(shape) * 3).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    for g in (grad, None):
        ky, kg = _run(arr, p, g, 11)
        with kernels.disabled():
            ny, ng = _run(arr, p, g, 11)
        assert ky.dtype == dtype and kg.dtype == dtype
        np.testing.assert_array_equal(ky, ny)
        np.testing.assert_array_equal(kg, ng)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_equals_numpy_path(op, dtype):
    fn = getattr(F, op)

    def call(x, p):
        return fn(x, p, training=True)
    rng = np.random.default_rng(8)
    for shape in [(1, 1), (13, 17), (4, 6, 5, 3), (100003, 2)]:
        arr = (rng.standard_normal(shape) * 3).astype(dtype)
        for p in (0.2, 0.7):
            ky, kg = _run(arr, p, None, 21, call)
            with kernels.disabled():
                ny, ng = _run(arr, p, None, 21, call)
            np.testing.assert_array_equal(ky, ny)
            np.testing.assert_array_equal(kg, ng)
    # torch's rescaling keeps zero mean and unit variance of standard normal input
    x = ember.from_numpy(rng.standard_normal((400, 500)).astype(dtype))
    y = F.alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    ty = torch.nn.functional.alpha_dropout(torch.from_numpy(x.numpy()), 0.3, training=True).numpy()
    assert abs(ty.mean() - y.mean()) < 0.02 and abs(ty.std() - y.std()) < 0.02
    def dropped_value(a):  # every dropped element takes one value: the most frequent
        values, counts = np.unique(a, return_counts=True)
        return values[counts.argmax()]
    np.testing.assert_allclose(dropped_value(y), dropped_value(ty), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_torch_semantics(dtype):
    p = 0.3
    rng = np.random.default_rng(5)
    arr = (rng.standard_normal((257, 129)) * 2).astype(dtype)
    grad = rng.standard_normal(arr.shape).astype(dtype)
    y, gx = _run(arr, p, grad, 4)
    keep = y != 0
    assert abs(1 - keep.mean() - p) < 0.01
    tx = torch.from_numpy(arr).requires_grad_()
    tmask = torch.from_numpy(keep)
    ty = torch.where(tmask, tx * (1.0 / (1.0 - p)), torch.zeros((), dtype=tx.dtype))
    ty.backward(torch.from_numpy(grad))
    np.testing.assert_array_equal(y, ty.detach().numpy())
    np.testing.assert_array_equal(gx, tx.grad.numpy())
    t_out = torch.nn.functional.dropout(tx.detach(), p)  # torch's own kept values: the same scaling
    tk = t_out != 0
    np.testing.assert_array_equal(t_out[tk].numpy(), (tx.detach()[tk] * (1.0 / (1.0 - p))).numpy())


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy warns of inf * 0
def test_nonfinite_and_layouts():
    # an inf dropped gives nan as on the numpy path; non-contiguous inputs take that path
    arr = np.array([[np.inf, -np.inf, np.nan, 1.0] * 8] * 9, np.float32)
    for a in (arr, arr.T, arr[:, ::2]):
        ky, kg = _run(a, 0.5, None, 2)
        with kernels.disabled():
            ny, ng = _run(a, 0.5, None, 2)
        np.testing.assert_array_equal(ky, ny)
        np.testing.assert_array_equal(kg, ng)


def test_inplace_and_modes():
    arr = np.random.default_rng(0).standard_normal((31, 8)).astype(np.float32)
    for inplace in (False, True):
        out = []
        for off in (False, True):
            ember.manual_seed(9)
            leaf = ember.from_numpy(arr.copy()).requires_grad_()
            h = leaf * 1.0
            if off:
                with kernels.disabled():
                    y = F.dropout(h, 0.4, inplace=inplace)
            else:
                y = F.dropout(h, 0.4, inplace=inplace)
            assert (y is h) == inplace
            y.sum().backward()
            out.append((y.detach().numpy(), leaf.grad.numpy()))
        np.testing.assert_array_equal(out[0][0], out[1][0])
        np.testing.assert_array_equal(out[0][1], out[1][1])
    x = ember.from_numpy(arr)
    assert F.dropout(x, 0.4, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), np.zeros_like(arr))


def test_kernel_path_runs(monkeypatch):
    calls = []
    fam = kernels.dropout
    for fname in ("apply", "apply_alpha", "grad"):
        real = getattr(fam, fname)
        monkeypatch.setattr(fam, fname, lambda *a, _real=real, _n=fname: calls.append(_n) or _real(*a))
    x = ember.randn(40, 30, requires_grad=True)
    F.dropout(x, 0.2).sum().backward()
    F.alpha_dropout(x, 0.2, training=True).sum().backward()
    assert calls == (["apply", "grad", "apply_alpha", "grad"] if kernels.enabled() else [])
    calls.clear()
    F.dropout2d(ember.randn(2, 3, 4, 4, requires_grad=True), 0.2).sum().backward()  # a broadcast mask
    with kernels.disabled():
        F.dropout(x, 0.2).sum().backward()
    assert calls == []
