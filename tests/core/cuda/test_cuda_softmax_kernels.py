"""The softmax kernels on a GPU against numpy in float64, on awkward sizes (one element,
odd, prime, wider than one block, empty). Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest

import ember
from ember.cuda import kernels

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

SHAPES = [(1, 1), (3, 7), (5, 31), (2, 33), (7, 1000), (3, 4099), (0, 5)]
TOL = {"float32": dict(rtol=2e-6, atol=1e-7), "float64": dict(rtol=1e-12, atol=1e-15)}


def _softmax(x, log):
    shifted = x - x.max(-1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(-1, keepdims=True))
    return shifted - lse if log else np.exp(shifted - lse)


def _launch(name, rows, cols, *arrays):
    import cupy
    if rows:
        block = min(256, max(32, -(-cols // 32) * 32))
        kernels.function("softmax", name)((rows,), (block,), (*arrays, np.int64(cols)))
        cupy.cuda.Device().synchronize()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_forward_and_backward_match_float64(op, shape, dtype):
    import cupy
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    log = op == "log_softmax"
    y_ref = _softmax(x.astype(np.float64), log)
    y = cupy.empty(shape, dtype)
    _launch(f"{op}_forward_{dtype}", *shape, cupy.asarray(x), y)
    np.testing.assert_allclose(cupy.asnumpy(y), y_ref, **TOL[dtype])
    g64 = g.astype(np.float64)
    dx_ref = g64 - np.exp(y_ref) * g64.sum(-1, keepdims=True) if log else \
        y_ref * (g64 - (g64 * y_ref).sum(-1, keepdims=True))
    dx = cupy.empty(shape, dtype)
    _launch(f"{op}_backward_{dtype}", *shape, y, cupy.asarray(g), dx)
    np.testing.assert_allclose(cupy.asnumpy(dx), dx_ref, **TOL[dtype])


def test_nan_and_infinite_rows_as_torch():
    import cupy
    x = np.array([[np.nan, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0]], np.float32)
    y = cupy.empty(x.shape, np.float32)
    _launch("softmax_forward_float32", 3, 3, cupy.asarray(x), y)
    # torch: a NaN spreads over its row; an all -inf row is NaN; +inf gives NaN (inf - inf)
    assert np.isnan(cupy.asnumpy(y)).all()
