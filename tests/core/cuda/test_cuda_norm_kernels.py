"""layer_norm and rms_norm on the GPU kernels against torch on the CPU, forward and every
gradient, on awkward widths (one element, odd, prime, wider than one block) with and
without the affine parameters. Run where ``ember.cuda.is_available()``."""

import numpy as np
import pytest
import torch

import ember

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]

SHAPES = [(3, 1), (5, 7), (2, 3, 33), (4, 1000), (2, 4099)]
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-12)}


def _run(lib, op, x, w, b, g, device):
    def t(a):
        return None if a is None else lib.tensor(a, device=device, requires_grad=True)
    tx, tw, tb = t(x), t(w), t(b)
    F = lib.nn.functional
    width = (x.shape[-1],)
    y = F.layer_norm(tx, width, tw, tb, 1e-5) if op == "layer_norm" else F.rms_norm(tx, width, tw, 1e-6)
    y.backward(lib.tensor(g, device=device))
    return [a.detach().cpu().numpy() for a in (y, tx.grad, *(p.grad for p in (tw, tb) if p is not None))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", ["layer_norm", "rms_norm"])
def test_matches_torch(op, shape, affine, dtype):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype) if affine else None
    b = rng.standard_normal(shape[-1]).astype(dtype) if affine and op == "layer_norm" else None
    ours = _run(ember, op, x, w, b, g, "cuda")
    reference = _run(torch, op, x, w, b, g, "cpu")
    assert len(ours) == len(reference)
    for e, t in zip(ours, reference):
        np.testing.assert_allclose(e, t, **TOL[dtype])
