"""The convolution kernels on a GPU: conv1d/2d/3d and conv_transpose1d/2d/3d on cuda tensors
against torch in float64 (the truth), torch in the tested dtype and ember's CPU path, for
the output and the input, weight and bias gradients, float32 and float64: stride,
padding (asymmetric 'same' too), dilation, groups, depthwise with channel multipliers, odd
and prime sizes, planes larger than a block, kernels as large as the input, batch 1, an
empty batch, images in several chunks and the forward's kept columns.
Run where ``ember.cuda.is_available()``.

Tolerance: each result is a sum of products of the inputs, and for a sum of n products
computed in any order ``|error| <= n u / (1 - n u) * sum |terms|`` (Higham, Accuracy and
Stability of Numerical Algorithms, 3.1), u the unit roundoff (2^-24 for float32, 2^-53 for
float64). ``sum |terms|`` per element is the same convolution of the absolute values (torch,
float64). n is the longest chain of roundings behind the result: the forward sums
``C/groups * k`` taps, plus the bias; the input gradient sums ``out channels per group * k``
in the product and ``k`` more in col2im; the weight gradient ``N * prod(out)`` positions plus
one add per chunk; two more for the output's rounding. The bar against the float64 truth is
that bound with u + 2^-53 (the truth's own rounding); against torch and the CPU path, two
such bounds (each within one of the truth) plus ``64 u max|terms|`` for their Winograd
transforms, whose error is not a plain sum's. float64's bound is tight enough to catch a
missing or misplaced term; float32 shows its instantiation accumulates in float32 as it should.
cuBLAS must compute float32 products in float32 (no TF32: ``CUPY_TF32`` unset).
"""

import math
import os

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember.cuda.kernels import conv as cuda_conv

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU"),
              pytest.mark.skipif(os.environ.get("CUPY_TF32") == "1", reason="TF32 products break the float32 bound")]

DTYPES = ["float32", "float64"]
UNIT = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}

# function, input shape, weight shape, keyword arguments
CASES = [("conv2d", (2, 3, 9, 8), (5, 3, 3, 3), dict(padding=1)),
         ("conv2d", (1, 7, 13, 11), (5, 7, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
         ("conv2d", (3, 6, 10, 10), (9, 2, 3, 3), dict(stride=2, padding=1, groups=3)),
         ("conv2d", (2, 5, 67, 71), (4, 5, 5, 5), dict(padding=2)),
         ("conv2d", (0, 3, 8, 8), (4, 3, 3, 3), dict(padding=1)),
         ("conv2d", (2, 8, 15, 15), (8, 1, 3, 3), dict(padding=1, groups=8)),
         ("conv2d", (2, 6, 14, 9), (18, 1, 5, 3), dict(stride=2, padding=(2, 1), groups=6)),
         ("conv2d", (1, 4, 9, 9), (4, 4, 3, 3), dict(padding="same", dilation=2)),
         ("conv2d", (2, 4, 8, 8), (6, 4, 2, 4), dict(padding="same")),
         ("conv2d", (1, 3, 1, 1), (2, 3, 1, 1), dict()),
         ("conv2d", (2, 3, 5, 7), (4, 3, 5, 7), dict()),
         ("conv2d", (2, 16, 12, 12), (32, 16, 3, 3), dict(padding=1)),
         ("conv1d", (2, 3, 17), (4, 3, 5), dict(stride=2, padding=2, dilation=2)),
         ("conv1d", (1, 4, 10), (8, 1, 3), dict(padding=1, groups=4)),
         ("conv1d", (3, 6, 31), (4, 3, 4), dict(stride=3, groups=2)),
         ("conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
         ("conv_transpose2d", (1, 6, 7, 7), (6, 2, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=3)),
         ("conv_transpose2d", (2, 3, 6, 5), (3, 5, 2, 3), dict(dilation=2)),
         ("conv_transpose1d", (2, 4, 6), (4, 2, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
         ("conv3d", (2, 3, 5, 6, 4), (4, 3, 3, 2, 3), dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1))),
         ("conv3d", (1, 4, 5, 5, 5), (8, 1, 3, 3, 3), dict(padding=1, groups=4)),
         ("conv_transpose3d", (1, 4, 3, 4, 3), (4, 3, 2, 3, 2), dict(stride=2, padding=(0, 1, 0)))]


def _lengths(name, xshape, wshape, oshape, groups):
    """The rounding chains (see the module doc) behind the output, input, weight and bias
    gradients; a transposed convolution's output is its adjoint's input gradient and its
    input gradient that adjoint's output."""
    k = math.prod(wshape[2:])
    n = xshape[0]
    chunks = max(1, n)
    if name.startswith("conv_transpose"):  # weight [C_in, C_out/groups, *k]: adjoint of a conv from out to x
        out = (wshape[0] // groups + 1) * k + 2
        dx = wshape[1] * k + 2
        dw = n * math.prod(xshape[2:]) + chunks + 2
    else:
        out = wshape[1] * k + 2
        dx = (wshape[0] // groups + 1) * k + 2
        dw = n * math.prod(oshape[2:]) + chunks + 2
    return {"out": out, "dx": dx, "dw": dw, "db": n * math.prod(oshape[2:]) + 2}


def _run(lib, device, name, x, w, b, kw, g):
    """Output and gradients of ``name`` by ``lib`` on ``device``, as numpy arrays."""
    tx, tw, tb = (lib.tensor(a, device=device, requires_grad=True) for a in (x, w, b))
    out = getattr(lib.nn.functional, name)(tx, tw, tb, **kw)
    grads = lib.autograd.grad(out, (tx, tw, tb), lib.tensor(g, device=device))
    return {n: t.detach().cpu().numpy() for n, t in zip(("out", "dx", "dw", "db"), (out, *grads))}, out


@pytest.fixture
def launched(monkeypatch):
    """Counts the calls into the kernels' launchers (the ops must take them)."""
    seen = {"forward": 0, "input_grad": 0, "weight_grad": 0}
    for fn in seen:
        real = getattr(cuda_conv, fn)

        def spy(*args, _real=real, _fn=fn, **kwargs):
            seen[_fn] += 1
            return _real(*args, **kwargs)
        monkeypatch.setattr(cuda_conv, fn, spy)
    return seen


def _compare(name, xshape, wshape, kw, dtype, seed=0):
    import cupy
    rng = np.random.default_rng(seed + sum(xshape))
    groups = kw.get("groups", 1)
    x = rng.standard_normal(xshape).astype(dtype)
    w = rng.standard_normal(wshape).astype(dtype)
    b = rng.standard_normal(wshape[1] * groups if name.startswith("conv_transpose") else wshape[0]).astype(dtype)
    probe = getattr(TF, name)(torch.tensor(x.astype(np.float64)), torch.tensor(w.astype(np.float64)), None, **kw)
    g = rng.standard_normal(tuple(probe.shape)).astype(dtype)
    truth, _ = _run(torch, "cpu", name, *(a.astype(np.float64) for a in (x, w, b)), kw, g.astype(np.float64))
    terms, _ = _run(torch, "cpu", name, *(np.abs(a).astype(np.float64) for a in (x, w, b)), kw,
                    np.abs(g).astype(np.float64))
    lengths = _lengths(name, xshape, wshape, g.shape, groups)
    u = UNIT[dtype]

    got, out = _run(ember, "cuda", name, x, w, b, kw, g)
    assert isinstance(out._data, cupy.ndarray)
    others = {"torch": _run(torch, "cpu", name, x, w, b, kw, g)[0]}
    if xshape[0]:  # the CPU path's bias gradient fails on an empty batch (numpy cannot reshape 0 by -1)
        others["ember cpu"] = _run(ember, "cpu", name, x, w, b, kw, g)[0]
    for result, value in got.items():
        n = lengths[result]
        bound = n * (u + UNIT["float64"]) / (1 - n * u) * terms[result]
        err = np.abs(value.astype(np.float64) - truth[result])
        assert value.shape == truth[result].shape, result
        assert (err <= bound).all(), f"{result} vs float64: worst error / bound {(err / bound).max():.3g}"
        slack = 2 * bound + 64 * u * (terms[result].max() if terms[result].size else 0.0)
        for who, res in others.items():
            err = np.abs(value.astype(np.float64) - res[result].astype(np.float64))
            assert (err <= slack).all(), f"{result} vs {who}: worst error / bar {(err / slack).max():.3g}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,xshape,wshape,kw", CASES, ids=str)
def test_convolution_matches_torch_and_the_cpu_path(name, xshape, wshape, kw, dtype, launched):
    _compare(name, xshape, wshape, kw, dtype)
    # a transposed convolution's forward is the input gradient, its input gradient the forward
    assert launched == {"forward": 1, "input_grad": 1, "weight_grad": 1}


@pytest.mark.parametrize("dtype", DTYPES)
def test_images_in_several_chunks(dtype, monkeypatch):
    # a chunk of at most 4 KiB of columns: every image its own chunk, the columns not kept
    monkeypatch.setattr(cuda_conv, "CHUNK_BYTES", 4096)
    built = []
    real = cuda_conv._im2col
    monkeypatch.setattr(cuda_conv, "_im2col", lambda *a: built.append(a[2:]) or real(*a))
    _compare("conv2d", (5, 3, 9, 10), (4, 3, 3, 3), dict(stride=(1, 2), padding=1), dtype)
    assert built == [(i, i + 1) for i in range(5)] * 2  # the forward's, then the weight gradient's


def test_the_weight_gradient_uses_the_forwards_columns(monkeypatch):
    built = []
    real = cuda_conv._im2col
    monkeypatch.setattr(cuda_conv, "_im2col", lambda *a: built.append(a[2:]) or real(*a))
    _compare("conv2d", (2, 3, 9, 8), (5, 3, 3, 3), dict(padding=1), "float64")
    assert built == [(0, 2)]  # built once, by the forward


def test_second_derivatives_on_cuda():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 3))
    res = {}
    for lib, device in ((ember, "cuda"), (torch, "cpu")):
        tx, tw = (lib.tensor(a, device=device, requires_grad=True) for a in (x, w))
        out = lib.nn.functional.conv2d(tx, tw, stride=(2, 1), padding=1, groups=2)
        first = lib.autograd.grad((out * out).sum(), (tx, tw), create_graph=True)
        second = lib.autograd.grad(sum((f * f).sum() for f in first), (tx, tw))
        res[lib.__name__] = [t.detach().cpu().numpy() for t in (*first, *second)]
    for a, b in zip(res["ember"], res["torch"]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_three_dimensional_convolutions_take_the_kernels(launched):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 2, 5, 5, 5)), rng.standard_normal((3, 2, 2, 2, 2))
    got = ember.nn.functional.conv3d(ember.tensor(x, device="cuda"), ember.tensor(w, device="cuda"))
    np.testing.assert_allclose(got.cpu().numpy(), TF.conv3d(torch.tensor(x), torch.tensor(w)).numpy(), rtol=1e-12)
    assert launched["forward"] == 1
