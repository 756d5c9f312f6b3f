"""embedding's backward kernel (atomic scatter of the gradient rows) on a GPU against torch
and ember's CPU path: repeated indices, padding_idx (a row that gets nothing, not even a
NaN), scale_grad_by_freq, int32 and int64 indices, one embedding, one column, widths past
one block, and no indices. Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
import torch

import ember
from ember.cuda.kernels import embedding as cuda_embedding

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

# num_embeddings, embedding_dim, index shape, padding_idx, scale_grad_by_freq
CASES = [(10, 3, (4,), None, False), (7, 33, (5, 9), 2, False), (5, 1, (17,), None, True),
         (13, 300, (3, 101), -1, True), (3, 4, (0,), None, False), (1, 5, (6,), None, False),
         (1000, 257, (2, 3, 5), 0, True)]
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


def _run(lib, device, w, idx, g, padding_idx, scale):
    tw = lib.tensor(w, device=device, requires_grad=True)
    out = lib.nn.functional.embedding(lib.tensor(idx, device=device), tw, padding_idx=padding_idx,
                                      scale_grad_by_freq=scale)
    out.backward(lib.tensor(g, device=device))
    return out.detach().cpu().numpy(), tw.grad.detach().cpu().numpy()


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_weight_gradient_matches_torch_and_the_cpu_path(case, dtype, index_dtype):
    num, dim, shape, padding_idx, scale = case
    rng = np.random.default_rng(num + dim)
    w = rng.standard_normal((num, dim)).astype(dtype)
    idx = rng.integers(0, num, shape).astype(index_dtype)
    if idx.size > 3:
        idx.reshape(-1)[:3] = idx.reshape(-1)[3]  # one row looked up several times
    g = rng.standard_normal(shape + (dim,)).astype(dtype)
    out, grad = _run(ember, "cuda", w, idx, g, padding_idx, scale)
    cpu_out, cpu_grad = _run(ember, "cpu", w, idx, g, padding_idx, scale)
    t_out, t_grad = _run(torch, "cpu", w, idx.astype(np.int64), g, padding_idx, scale)
    np.testing.assert_array_equal(out, t_out)
    np.testing.assert_allclose(grad, t_grad, **TOL[dtype])
    np.testing.assert_allclose(grad, cpu_grad, **TOL[dtype])


def test_padding_row_gets_nothing_even_from_nan():
    import cupy
    g = cupy.asarray(np.array([[np.nan, 1.0], [2.0, 3.0], [np.inf, 4.0]], np.float32))
    out = cupy.asnumpy(cuda_embedding.backward(g, cupy.asarray([1, 0, 1]), 3, 1, False))
    np.testing.assert_array_equal(out, np.array([[2.0, 3.0], [0.0, 0.0], [0.0, 0.0]], np.float32))


def test_many_adds_into_one_row():
    import cupy
    rows = 100_000
    g = cupy.ones((rows, 3), np.float64)
    out = cupy.asnumpy(cuda_embedding.backward(g, cupy.zeros(rows, np.int64), 2, None, False))
    np.testing.assert_array_equal(out, np.array([[rows] * 3, [0.0] * 3]))
