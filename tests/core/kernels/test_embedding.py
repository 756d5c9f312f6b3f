"""The embedding backward kernel (ember/cpu/kernels/embedding.py): numpy.add.at's sums bit
for bit (the same additions in the same order per cell) on repeated indices and awkward
widths, at one and two threads; and the embedding's weight gradient against torch."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.cpu import kernels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num,n,dim", [(1, 1, 1), (7, 0, 5), (5, 40, 3), (65, 2048, 256), (3, 17, 1031)])
@pytest.mark.parametrize("threads", [1, 2])
def test_add_rows_is_numpy_add_at_bit_for_bit(num, n, dim, dtype, threads):
    rng = np.random.default_rng(num * 31 + n + dim)
    index = rng.integers(0, num, n)
    rows = (rng.standard_normal((n, dim)) * 10 ** rng.uniform(-3, 3, (n, 1))).astype(dtype)
    start = rng.standard_normal((num, dim)).astype(dtype)
    ours, theirs = start.copy(), start.copy()
    saved = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        kernels.embedding.add_rows(ours, index, rows)
    finally:
        ember.set_num_threads(saved)
    np.add.at(theirs, index, rows)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"scale_grad_by_freq": True}])
def test_embedding_weight_gradient_as_torch(kw):
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((11, 9)).astype(np.float32)
    index = rng.integers(0, 11, (4, 13))
    grad = rng.standard_normal((4, 13, 9)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        w = lib.tensor(weight, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(index), w, **kw).backward(lib.tensor(grad))
        results.append(w.grad.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)
    with kernels.disabled():
        w = ember.tensor(weight, requires_grad=True)
        F.embedding(ember.tensor(index), w, **kw).backward(ember.tensor(grad))
    np.testing.assert_array_equal(results[0], w.grad.numpy())
