"""ember's one pool for products and kernels (ember/_blas.py): numpy's OpenBLAS stays on
one thread per call and ``_blas.matmul`` splits large products over ember's threads. The
split products equal numpy's own (each part is the same OpenBLAS kernel on a block), from
several threads at once and from inside a kernel part; the thread count is ember's."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import ember
from ember import _blas
from ember.cpu.kernels._runtime import parallel_for

SHAPES = {  # (a, b): the split each takes
    "rows": ((3000, 200), (200, 40)),
    "columns": ((20, 2000), (2000, 4000)),
    "batches": ((8, 300, 200), (8, 200, 400)),
    "broadcast batch": ((6, 500, 300), (300, 700)),
    "broadcast both": ((4, 1, 300, 200), (1, 3, 200, 500)),
    "transposed operands": ((200, 3000), (40, 200)),
    "small (one thread)": ((7, 5), (5, 3)),
}


def assert_same_product(got, a, b):
    """``got`` equals ``a @ b`` up to rounding: two float64 dot products of length n, summed
    in any order, differ by at most n * eps * (|a| @ |b|) (the classic bound n * u * |a||b|
    for each, u = eps / 2). OpenBLAS builds block their sums differently, so entries that
    cancel to near zero can differ by far more than a relative 1e-12."""
    bound = a.shape[-1] * np.finfo(np.float64).eps * np.matmul(np.abs(a), np.abs(b))
    assert np.all(np.abs(got - np.matmul(a, b)) <= bound)


@pytest.fixture
def two_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int64])
@pytest.mark.parametrize("case", sorted(SHAPES))
def test_split_products_equal_numpys(case, dtype, two_threads):
    rng = np.random.default_rng(0)
    sa, sb = SHAPES[case]
    a, b = (rng.standard_normal(sa) * 4).astype(dtype), (rng.standard_normal(sb) * 4).astype(dtype)
    if dtype == np.complex64:
        a, b = a + 1j * a[..., ::-1], b - 2j * b[..., ::-1]
    if case == "transposed operands":
        a, b = a.T, b.T
    want = np.matmul(a, b)
    got = _blas.matmul(a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == np.int64:
        np.testing.assert_array_equal(got, want)
        return
    # a block may round differently from the whole product: as close to the exact one as numpy's
    wide = np.clongdouble if np.iscomplexobj(a) else np.longdouble
    exact = np.matmul(a.astype(wide), b.astype(wide))
    numpy_error = np.abs(want - exact).max()
    assert np.abs(got - exact).max() <= 2 * numpy_error + np.finfo(dtype).tiny


def test_split_products_write_into_out_and_its_slices(two_threads):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((20, 2000)), rng.standard_normal((2000, 4000))
    out = np.zeros((20, 4100))
    r = _blas.matmul(a, b, out=out[:, 50:4050])  # a column slice of a wider array
    assert_same_product(out[:, 50:4050], a, b)
    assert r.base is out or r is out or np.shares_memory(r, out)
    assert not out[:, :50].any() and not out[:, 4050:].any()


def test_a_stacked_product_into_a_band_of_its_result_splits_by_batch(monkeypatch, two_threads):
    # causal attention writes each band of query rows into a strided slice of the scores:
    # the stack is split by its first dim, each part writing its own batches in place
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((6, 3, 64, 50)), rng.standard_normal((6, 3, 50, 90))
    out = np.zeros((6, 3, 128, 100))
    parts = []
    part = _blas._batch_part
    monkeypatch.setattr(_blas, "_batch_part", lambda lo, hi, *arrays: (parts.append((lo, hi)), part(lo, hi, *arrays)))
    _blas.matmul(a, b, out=out[..., 32:96, :90])
    assert sorted(parts) == [(0, 3), (3, 6)]  # two parts of the first dim, in either order
    assert_same_product(out[..., 32:96, :90], a, b)
    assert not out[..., :32, :].any() and not out[..., 96:, :].any() and not out[..., 90:].any()


def test_products_from_several_threads_at_once(two_threads):
    rng = np.random.default_rng(2)
    pairs = [(rng.standard_normal((600, 300)), rng.standard_normal((300, 500))) for _ in range(6)]
    got = [None] * len(pairs)

    def work(i):
        got[i] = _blas.matmul(*pairs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (a, b), g in zip(pairs, got):
        assert_same_product(g, a, b)


def test_a_product_inside_a_kernel_part_runs_on_its_thread(two_threads):
    # a pool thread that split again would wait on the pool it occupies
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 800, 300)), rng.standard_normal((4, 300, 900))
    out = np.empty((4, 800, 900))

    def part(start, stop):
        for i in range(start, stop):
            _blas.matmul(a[i], b[i], out=out[i])

    parallel_for(part, 4, work_per_item=1 << 20)
    assert_same_product(out, a, b)


def test_the_thread_count_is_embers_and_openblas_keeps_one():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(3)
        assert ember.get_num_threads() == 3
        if _blas.POOL:
            assert _blas._GET_THREADS() == 1
        x = ember.randn(256, 512, requires_grad=True)
        w = ember.randn(1024, 512, requires_grad=True)
        y = ember.nn.functional.linear(x, w)
        y.backward(ember.ones_like(y))
        tx, tw = torch.tensor(x.detach().numpy(), requires_grad=True), torch.tensor(w.detach().numpy(),
                                                                                    requires_grad=True)
        ty = torch.nn.functional.linear(tx, tw)
        ty.backward(torch.ones_like(ty))
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-4, atol=1e-3)
    finally:
        ember.set_num_threads(before)


SWITCH_OFF = """
import numpy, ember
from ember import _blas
print(_blas.POOL, ember.get_num_threads() == _blas._GET_THREADS())
ember.set_num_threads(1)
print(_blas._GET_THREADS())
"""


def test_ember_blas_pool_0_leaves_openblas_its_threads():
    env = {**os.environ, "EMBER_BLAS_POOL": "0"}
    out = subprocess.run([sys.executable, "-c", SWITCH_OFF], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    assert out == ["False", "True", "1"]  # ember's count is OpenBLAS's, and sets it


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1000, (1 << 20) + 7])  # one call, and parts over the pool
def test_optimizer_updates_split_or_not_equal_the_formula(n, dtype, two_threads):
    rng = np.random.default_rng(4)
    x, y0 = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    y = y0.copy()
    _blas.axpy(-0.25, x, y)
    np.testing.assert_allclose(y, y0 - 0.25 * x, rtol=1e-6)
    y = y0.copy()
    _blas.axpby(0.5, x, 0.9, y)
    np.testing.assert_allclose(y, 0.5 * x + 0.9 * y0, rtol=1e-6)
