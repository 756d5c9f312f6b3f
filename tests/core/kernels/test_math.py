"""The kernels' vectorizable float32 elementary functions against float64 references."""

import numpy as np
import pytest
import scipy.special

from ember.cpu.kernels import _math as M
from ember.cpu.kernels._runtime import jit


def _map(fn):
    @jit
    def kernel(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])
    return kernel


SPECIALS = [0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 0.3, -0.3, 0.4, -0.4, 88.7, 88.8, -87.3, -87.4, -104.0,
            -200.0, 200.0, np.inf, -np.inf, np.nan]
REFERENCES = {  # function: (float64 reference, bound on |relative error|, domain)
    "exp": (np.exp, 3e-7, "all"),
    "expm1": (np.expm1, 3e-7, "all"),
    "tanh": (np.tanh, 4e-7, "all"),
    "sigmoid": (lambda v: scipy.special.expit(v), 3e-7, "all"),
    "erfc": (scipy.special.erfc, 1e-5, "all"),
    "log": (np.log, 3e-7, "positive"),
    "log1p": (np.log1p, 4e-7, "above -1"),
}


def _points(domain):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(200_000) * 3, rng.standard_normal(20_000) * 1e-3,
                        rng.uniform(-100, 100, 20_000), SPECIALS]).astype(np.float32)
    if domain == "positive":
        x = np.concatenate([np.abs(x), np.float32([0, np.inf, np.nan, 1e-45, 1.17e-38])])
    elif domain == "above -1":
        x = np.concatenate([np.abs(x), np.float32([-0.5, -0.999, -1, -2, 1e-30])])
    return x


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_float32_form_is_accurate_over_the_whole_range(name):
    ref, bound, domain = REFERENCES[name]
    x = _points(domain)
    out = np.empty_like(x)
    _map(getattr(M, name))(x, out)
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
        want32 = want.astype(np.float32)  # what a correctly rounded float32 result would be
    finite = np.isfinite(want32) & (np.abs(want32) >= np.finfo(np.float32).tiny)
    rel = np.abs(out[finite].astype(np.float64) - want[finite]) / np.abs(want[finite])
    assert rel.max() <= bound, f"{name}: worst relative error {rel.max():.3g} at x={x[finite][rel.argmax()]}"
    # infinities, NaNs, exact zeros and underflow land where the correctly rounded result does
    special = ~finite
    np.testing.assert_array_equal(np.isnan(out[special]), np.isnan(want32[special]))
    both = special & ~np.isnan(want32)
    np.testing.assert_allclose(out[both], want32[both], rtol=0, atol=np.finfo(np.float32).tiny)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_float64_arguments_take_the_precise_functions(name):
    ref, _, domain = REFERENCES[name]
    x = _points(domain).astype(np.float64)
    out = np.empty_like(x)
    _map(getattr(M, name))(x, out)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out, ref(x), rtol=1e-14, atol=1e-300)  # scipy flushes subnormals
