"""The pooling kernels on a GPU (max_pool1d/2d/3d with indices, avg_pool1d/2d/3d) against
torch and ember's CPU path: values, indices and input gradients, float32 and float64, with
padding, stride, dilation, ceil_mode, count_include_pad and divisor_override, on inputs
holding NaN, -inf rows and ties, batch 1, an empty batch and planes wider than one block.
Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.cuda.kernels import pool as cuda_pool
from ember.ops.pool import _Geom

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

DTYPES = ["float32", "float64"]
TOL = {"float32": dict(rtol=1e-5, atol=1e-6), "float64": dict(rtol=1e-12, atol=1e-13)}

# kernel, stride, padding, dilation, ceil_mode
MAX_GEOMS = [(2, 2, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (2, 1, 0, 2, False),
             (3, 3, 1, 1, True), (2, 3, 1, 1, True), (3, 1, 1, 2, False), (1, 1, 0, 1, False)]
# kernel, stride, padding, ceil_mode
AVG_GEOMS = [(2, 2, 0, False), (3, 2, 1, False), (3, 2, 1, True), (3, 3, 1, True), (2, 3, 1, True), (4, 1, 2, False)]
SHAPES = {1: [(2, 3, 11), (1, 1, 7), (3, 8)], 2: [(2, 3, 9, 8), (1, 2, 7, 13), (4, 7, 5), (0, 2, 6, 6), (2, 3, 67, 71)],
          3: [(2, 3, 5, 6, 7), (3, 5, 4, 6)]}


def _data(shape, dtype, seed, special=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if special and x.size:
        flat = x.reshape(-1)
        flat[::7] = np.nan
        flat[3::11] = -np.inf
        x.reshape(-1, shape[-1])[0] = -np.inf  # a row of -inf: windows with no finite value
        x = x.round(1)  # ties: the first maximum wins
    return x.astype(dtype)


def _run(lib, fn, x, g, device):
    tx = lib.tensor(x, device=device, requires_grad=True)
    res = fn(lib.nn.functional, tx)
    out = res[0] if isinstance(res, tuple) else res
    out.backward(lib.tensor(g, device=device))
    got = [out, tx.grad] + ([res[1]] if isinstance(res, tuple) else [])
    return [t.detach().cpu().numpy() for t in got], out


def _compare(fn, x, dtype):
    import cupy
    tx = torch.tensor(x, requires_grad=True)
    probe = fn(TF, tx)
    probe_out = probe[0] if isinstance(probe, tuple) else probe
    g = np.random.default_rng(99).standard_normal(tuple(probe_out.shape)).astype(dtype)
    want, _ = _run(torch, fn, x, g, "cpu")
    cpu, _ = _run(ember, fn, x, g, "cpu")
    got, out = _run(ember, fn, x, g, "cuda")
    assert isinstance(out._data, cupy.ndarray)
    for name, a, b, c in zip(("values", "grad", "indices"), got, cpu, want):
        assert a.shape == c.shape, name
        if name == "indices":
            np.testing.assert_array_equal(a, c)
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, equal_nan=True, err_msg=name + " vs ember cpu", **TOL[dtype])
            np.testing.assert_allclose(a, c, equal_nan=True, err_msg=name + " vs torch", **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("geom", MAX_GEOMS, ids=str)
def test_max_pool(geom, nd, dtype):
    k, s, p, d, ceil = geom
    for i, shape in enumerate(SHAPES[nd]):
        if min(shape[-nd:]) + 2 * p < d * (k - 1) + 1:
            continue  # no window fits
        x = _data(shape, dtype, i)
        name = f"max_pool{nd}d"

        def fn(Fm, t, name=name):
            return getattr(Fm, name)(t, k, s, p, d, ceil, True)
        _compare(fn, x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("geom", AVG_GEOMS, ids=str)
def test_avg_pool(geom, count_include_pad, nd, dtype):
    k, s, p, ceil = geom
    for i, shape in enumerate(SHAPES[nd]):
        if min(shape[-nd:]) + 2 * p < k:
            continue
        x = _data(shape, dtype, i, special=False)
        name = f"avg_pool{nd}d"

        def fn(Fm, t, name=name):
            return getattr(Fm, name)(t, k, s, p, ceil, count_include_pad)
        _compare(fn, x, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("divisor", [1, 3, 7])
def test_avg_pool_divisor_override(divisor, dtype):
    x = _data((2, 3, 10, 9), dtype, 5, special=False)

    def fn(Fm, t):
        return Fm.avg_pool2d(t, 3, 2, 1, True, True, divisor)
    _compare(fn, x, dtype)


def test_overlapping_windows_add_their_gradients():
    # stride 1, kernel 3: a maximum shared by nine windows gets nine gradients (atomic adds)
    x = np.zeros((1, 1, 5, 5), np.float32)
    x[0, 0, 2, 2] = 1.0
    t = ember.tensor(x, device="cuda", requires_grad=True)
    F.max_pool2d(t, 3, 1, 1).sum().backward()
    assert t.grad.cpu().numpy()[0, 0, 2, 2] == 9.0


@pytest.mark.parametrize("arg_dtype", ["int16", "int64"])
def test_kernel_offsets_in_both_index_dtypes(arg_dtype):
    import cupy
    x = _data((2, 3, 9, 8), "float64", 3)
    geo = _Geom((9, 8), (3, 3), (2, 2), (1, 1), (1, 1), True)
    vals, arg, idx = cuda_pool.max_forward(cupy.asarray(x), geo, np.dtype(arg_dtype), True)
    assert arg.dtype == np.dtype(arg_dtype) and idx.dtype == np.int64
    t_vals, t_idx = TF.max_pool2d(torch.tensor(x), 3, 2, 1, 1, True, True)
    np.testing.assert_array_equal(cupy.asnumpy(vals), t_vals.numpy())
    np.testing.assert_array_equal(cupy.asnumpy(idx), t_idx.numpy())
    g = cupy.asarray(np.random.default_rng(0).standard_normal(vals.shape))
    gx = cupy.asnumpy(cuda_pool.max_backward(g, arg, geo))
    want = np.zeros_like(x).reshape(6, -1)
    np.add.at(want, (np.arange(6)[:, None], cupy.asnumpy(idx).reshape(6, -1)), cupy.asnumpy(g).reshape(6, -1))
    np.testing.assert_allclose(gx, want.reshape(x.shape), rtol=1e-12)
