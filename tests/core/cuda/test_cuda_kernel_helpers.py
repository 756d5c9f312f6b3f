"""The Python side of the CUDA kernels, on the CPU: launch shapes, argument packing, the
guards that keep numpy arrays on their own paths, and the fused cross entropy's gradient
rule (the kernel's formula written with ember ops) against torch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
from ember.cuda.kernels import _common, dropout, embedding, loss, optim, pool, rnn
from ember.ops.pool import _Geom


def test_grid_covers_the_work_with_a_bounded_grid():
    assert _common.grid(0) == (1,)  # a launch needs a block; the loop runs no iteration
    assert _common.grid(1) == (1,)
    assert _common.grid(256) == (1,)
    assert _common.grid(257) == (2,)
    assert _common.grid(1000, block=128) == (8,)
    assert _common.grid(2 ** 40) == (_common.MAX_BLOCKS,)  # larger than the grid: each thread loops


def test_null_pointer_and_the_numpy_guard():
    assert _common.pointer(None) == 0 and _common.pointer(None).dtype == np.uint64
    x = np.zeros(3, np.float32)
    assert _common.pointer(x) is x
    assert not _common.on_cupy(x) and not _common.on_cupy(None) and not _common.on_cupy()
    assert not _common.is_cupy(x)
    idx = np.zeros(3, np.int64)
    # the ops ask these before launching: numpy arrays never reach a CUDA kernel
    assert not loss.accepts(x, idx) and not embedding.accepts(x, idx) and not dropout.accepts(x)
    assert not pool.accepts(x) and not rnn.accepts(x, x) and not optim.accepts(x)


def test_dropout_counter_arithmetic():
    assert [dropout.groups(n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    seed, offset = dropout.stream_args(-1, 2 ** 64 + 3)
    assert seed == 2 ** 64 - 1 and offset == 3 and seed.dtype == offset.dtype == np.uint64


@pytest.mark.parametrize("nd,k,s,p,d,ceil", [(1, (3,), (2,), (1,), (1,), False),
                                             (2, (2, 3), (2, 1), (1, 1), (1, 2), True),
                                             (3, (2, 2, 2), (1, 2, 2), (0, 1, 0), (1, 1, 1), False)])
def test_pool_geometry_is_three_dimensional(nd, k, s, p, d, ceil):
    size = (9, 8, 7)[:nd]
    geo = _Geom(size, k, s, p, d, ceil)
    args = pool.geometry(geo)
    assert len(args) == 18 and all(a.dtype == np.int64 for a in args)
    lead = 3 - nd
    kernel, stride, pad, dil, sz, out = (tuple(int(v) for v in args[i:i + 3]) for i in range(0, 18, 3))
    assert kernel == (1,) * lead + k and stride == (1,) * lead + s and pad == (0,) * lead + p
    assert dil == (1,) * lead + d and sz == (1,) * lead + size and out == (1,) * lead + geo.out


def test_pool_overlap_decides_the_atomic_scatter():
    assert not pool.overlapping(_Geom((8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False))
    assert pool.overlapping(_Geom((8, 8), (3, 3), (2, 2), (1, 1), (1, 1), False))
    assert pool.overlapping(_Geom((8,), (2,), (2,), (0,), (2,), False))  # dilated: extent 3 > stride 2
    assert not pool.overlapping(_Geom((8,), (2,), (3,), (0,), (2,), False))


def test_optimizer_chunk_table():
    numels, starts = optim.chunk_table([1, optim.CHUNK, optim.CHUNK + 1, 7])
    assert numels.tolist() == [1, optim.CHUNK, optim.CHUNK + 1, 7]
    assert starts.tolist() == [0, 1, 2, 4, 5]  # the last entry is the grid


def test_kernel_families_define_the_names_the_launchers_use():
    sources = ember.cuda.kernels.sources()
    assert set(sources) >= {"loss", "embedding", "dropout", "pool", "rnn", "optim"}
    assert "sgd_float32" in sources["optim"].names and "adam_float64" in sources["optim"].names
    for d in ("float32", "float64"):
        for i in pool.INDEX_TYPES:
            assert f"max_pool_forward_{d}_{i}" in sources["pool"].names
        assert f"cross_entropy_backward_{d}" in sources["loss"].names
        assert f"gru_backward_{d}" in sources["rnn"].names


OPTIONS = [dict(), dict(weight=True), dict(ignore_index=2), dict(label_smoothing=0.3),
           dict(weight=True, ignore_index=0, label_smoothing=0.1)]


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("opts", OPTIONS, ids=str)
def test_fused_cross_entropy_rule_is_torchs_gradient(opts, reduction):
    # the kernel's gradient formula as ember ops (the rule a graph of the gradient runs), on
    # numpy arrays: equal to torch's gradient, and differentiable again
    from ember.ops.loss import _cross_entropy_fused_rule
    rng = np.random.default_rng(3)
    n, c = 9, 5
    x = rng.standard_normal((n, c))
    t = rng.integers(0, c, n)
    w = rng.uniform(0.5, 2, c) if opts.get("weight") else None
    ignore, eps = opts.get("ignore_index", -100), opts.get("label_smoothing", 0.0)
    g = rng.standard_normal(n) if reduction == "none" else np.array(0.7)
    tx = torch.tensor(x, requires_grad=True)
    out = TF.cross_entropy(tx, torch.tensor(t), weight=None if w is None else torch.tensor(w), ignore_index=ignore,
                           reduction=reduction, label_smoothing=eps)
    (gx,) = torch.autograd.grad(out, tx, torch.tensor(g), create_graph=True)
    ex = ember.tensor(x, requires_grad=True)
    lse = np.log(np.exp(x).sum(1))
    total = np.where(t != ignore, w[t] if w is not None else 1.0, 0.0).sum() if reduction == "mean" else None
    got = _cross_entropy_fused_rule(ember.tensor(g), ex, lse, t, w, total, ignore, eps)
    np.testing.assert_allclose(got.detach().numpy(), gx.detach().numpy(), rtol=1e-10, atol=1e-12)
    # second order: the rule is built from differentiable ops
    probe = rng.standard_normal((n, c))
    (ggx,) = torch.autograd.grad(gx, tx, torch.tensor(probe))
    (egg,) = ember.autograd.grad(got, ex, ember.tensor(probe))
    np.testing.assert_allclose(egg.numpy(), ggx.numpy(), rtol=1e-9, atol=1e-11)
