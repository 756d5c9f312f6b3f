"""Counter-based dropout on a GPU: the device's Philox4x32-10 words equal the numpy
reference (itself checked against Random123's known answers), each dropout's mask is the
reference draw at the generator's (seed, offset), the offset advances by the groups used,
a restored state or an activation checkpoint replays the mask, and the values, gradients,
feature and alpha forms follow the CPU path's formulas. Run where
``ember.cuda.is_available()``."""

import math

import numpy as np
import pytest
from _references import dropout_keep, philox_words

import ember
import ember.nn.functional as F
from ember.cuda.kernels import dropout as cuda_dropout

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

SIZES = [0, 1, 3, 4, 5, 1023, 4099]


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("seed", [0, 1, 2 ** 40 + 7, 2 ** 64 - 1])
@pytest.mark.parametrize("offset", [0, 2 ** 32 - 2, 2 ** 64 - 3])
def test_device_words_are_the_reference(seed, offset):
    import cupy
    got = cupy.asnumpy(cuda_dropout.words(1000, seed, offset))
    np.testing.assert_array_equal(got, philox_words(1000, seed, offset))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("n", SIZES)
def test_mask_is_the_reference_draw_and_the_offset_advances(n, p, dtype):
    ember.cuda.manual_seed(1234)
    x = ember.ones(n, dtype=getattr(ember, dtype), device="cuda")
    for offset in (0, cuda_dropout.groups(n)):  # the second draw starts past the first's counters
        y = _np(F.dropout(x, p))
        keep = dropout_keep(n, p, 1234, offset)
        np.testing.assert_array_equal(y != 0, keep)
        np.testing.assert_allclose(y[keep], np.full(keep.sum(), 1 / (1 - p), dtype), rtol=1e-7)
    state = ember.cuda.get_rng_state()
    assert ember.random.default_generator("cuda").philox_seed_offset(0) == (1234, 2 * cuda_dropout.groups(n))
    ember.cuda.set_rng_state(state)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_gradient_as_the_cpu_formulas(dtype):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((7, 37)).astype(dtype)
    g_np = rng.standard_normal((7, 37)).astype(dtype)
    ember.cuda.manual_seed(99)
    x = ember.tensor(x_np, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.3)
    y.backward(ember.tensor(g_np, device="cuda"))
    keep = dropout_keep(x_np.size, 0.3, 99, 0).reshape(x_np.shape)
    scale = x_np.dtype.type(1 / 0.7)
    np.testing.assert_array_equal(_np(y), x_np * np.where(keep, scale, 0).astype(dtype))
    np.testing.assert_array_equal(_np(x.grad), g_np * np.where(keep, scale, 0).astype(dtype))
    assert type(y.grad_fn).__name__ == "MulBackward0"


def test_a_restored_state_replays_the_mask():
    x = ember.randn(1000, device="cuda")
    state = ember.cuda.get_rng_state()
    first = _np(F.dropout(x, 0.5))
    second = _np(F.dropout(x, 0.5))
    ember.cuda.set_rng_state(state)
    np.testing.assert_array_equal(_np(F.dropout(x, 0.5)), first)
    assert (first != second).any()


def test_activation_checkpointing_replays_dropout():
    from ember.utils.checkpoint import checkpoint
    w = ember.randn(64, 64, device="cuda", requires_grad=True)
    x = ember.randn(16, 64, device="cuda", requires_grad=True)

    def block(inp):
        return F.dropout(inp @ w, 0.5).tanh()

    ember.cuda.manual_seed(5)
    plain = block(x)
    plain.sum().backward()
    want_x, want_w = _np(x.grad), _np(w.grad)
    x.grad = w.grad = None
    ember.cuda.manual_seed(5)
    again = checkpoint(block, x, use_reentrant=False)
    ember.randn(3, device="cuda")  # the stream moves on before backward
    F.dropout(ember.ones(10, device="cuda"), 0.5)
    again.sum().backward()  # recomputes block with the generator state of the first run
    np.testing.assert_array_equal(_np(again), _np(plain))
    np.testing.assert_allclose(_np(x.grad), want_x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(w.grad), want_w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 1, 1, 1), (3, 7, 2, 2)], ids=str)
def test_feature_dropout_draws_one_value_per_channel(shape):
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal(shape).astype(np.float32)
    ember.cuda.manual_seed(77)
    y = _np(F.dropout2d(ember.tensor(x_np, device="cuda"), 0.4))
    keep = dropout_keep(shape[0] * shape[1], 0.4, 77, 0).reshape(shape[:2] + (1, 1))
    np.testing.assert_array_equal(y, x_np * np.where(keep, np.float32(1 / 0.6), np.float32(0)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_alpha_dropout_formula(dtype):
    rng = np.random.default_rng(2)
    x_np = rng.standard_normal(1001).astype(dtype)
    p = 0.2
    ember.cuda.manual_seed(3)
    x = ember.tensor(x_np, device="cuda", requires_grad=True)
    y = F.alpha_dropout(x, p, training=True)
    y.sum().backward()
    keep = dropout_keep(x_np.size, p, 3, 0).astype(dtype)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    t = x_np.dtype.type
    want = x_np * (keep * t(a)) + ((keep - 1) * t(alpha * a) + t(alpha * a * p))
    np.testing.assert_allclose(_np(y), want, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-7)
    np.testing.assert_allclose(_np(x.grad), keep * t(a), rtol=1e-7)


def test_keep_rate():
    ember.cuda.manual_seed(11)
    y = _np(F.dropout(ember.ones(1_000_000, device="cuda"), 0.3))
    assert abs((y != 0).mean() - 0.7) < 0.003
