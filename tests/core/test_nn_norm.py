"""Normalisation layers against torch: BatchNorm1d/2d/3d, SyncBatchNorm, InstanceNorm1d/2d/3d,
GroupNorm, LayerNorm, RMSNorm, LocalResponseNorm and their functional forms (forward,
gradients of input and parameters, running statistics, state_dict, repr, errors)."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from conftest import assert_same, to_ember

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _pair(shape, dtype=torch.float64):
    t = torch.randn(*shape, dtype=dtype, requires_grad=True)
    return t, to_ember(t)


def _load(emod, tmod):
    emod.load_state_dict({k: to_ember(v) for k, v in tmod.state_dict().items()})


def _check_module(emod, tmod, shape, steps=2, train=True):
    """Run both modules ``steps`` times (fresh input each), comparing outputs, input and
    parameter gradients, then the buffers and the state_dict layout."""
    emod.train(train)
    tmod.train(train)
    for _ in range(steps):
        tx, ex = _pair(shape, next(tmod.parameters(), torch.empty(0, dtype=torch.float64)).dtype)
        tout, eout = tmod(tx), emod(ex)
        assert_same(eout, tout)
        g = torch.randn_like(tout)
        tout.backward(g)
        eout.backward(to_ember(g))
        assert_same(ex.grad, tx.grad)
    for (tn, tp), (en, ep) in zip(tmod.named_parameters(), emod.named_parameters()):
        assert en == tn
        assert_same(ep.grad, tp.grad)
    tsd, esd = tmod.state_dict(), emod.state_dict()
    assert list(esd) == list(tsd)
    for k in tsd:
        assert_same(esd[k], tsd[k])
    assert repr(emod) == repr(tmod)


# ---- batch norm ------------------------------------------------------------------------

BN_CASES = [("BatchNorm1d", (4, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (3, 3, 4, 2)),
            ("BatchNorm3d", (2, 3, 2, 3, 2)), ("SyncBatchNorm", (3, 3, 4))]


@pytest.mark.parametrize("name,shape", BN_CASES)
@pytest.mark.parametrize("affine,track,momentum", [(True, True, 0.1), (False, True, None), (True, False, 0.3)])
def test_batchnorm_train_then_eval(name, shape, affine, track, momentum):
    kw = dict(affine=affine, track_running_stats=track, momentum=momentum, dtype=torch.float64)
    tmod = getattr(tnn, name)(3, **kw)
    emod = getattr(nn, name)(3, **{**kw, "dtype": ember.float64})
    if affine:
        with torch.no_grad():
            tmod.weight.uniform_(0.5, 1.5)
            tmod.bias.uniform_(-1, 1)
        _load(emod, tmod)
    _check_module(emod, tmod, shape, steps=3, train=True)
    _check_module(emod, tmod, shape, steps=1, train=False)


def test_batchnorm_bias_false_and_untracked_buffers():
    tmod, emod = tnn.BatchNorm2d(4, bias=False), nn.BatchNorm2d(4, bias=False)
    assert list(emod.state_dict()) == list(tmod.state_dict())
    assert repr(emod) == repr(tmod)
    emod = nn.BatchNorm1d(4, track_running_stats=False)
    assert emod.running_mean is None and emod.num_batches_tracked is None
    assert list(emod.state_dict()) == ["weight", "bias"]


@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (2, 3, 4, 5)), ("BatchNorm1d", (3,)),
                                        ("BatchNorm2d", (2, 3, 4)), ("BatchNorm3d", (2, 3, 4, 5)),
                                        ("SyncBatchNorm", (3,))])
def test_batchnorm_wrong_dims(name, shape):
    with pytest.raises(ValueError, match="input"):
        getattr(nn, name)(3)(ember.randn(*shape))
    with pytest.raises(ValueError):
        getattr(tnn, name)(3)(torch.randn(*shape))


@pytest.mark.parametrize("shape", [(1, 3), (1, 3, 1)])
def test_batchnorm_one_value_per_channel(shape):
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(ember.randn(*shape))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        tnn.BatchNorm1d(3)(torch.randn(*shape))
    out = nn.BatchNorm1d(3).eval()(ember.ones(*shape))  # eval mode uses the running statistics
    assert_same(out, tnn.BatchNorm1d(3).eval()(torch.ones(*shape)))


def test_convert_sync_batchnorm():
    emod = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3, momentum=None), nn.Sequential(nn.BatchNorm2d(3)))
    emod.eval()
    weight, running = emod[1].weight, emod[1].running_mean
    out = nn.SyncBatchNorm.convert_sync_batchnorm(emod)
    assert type(out[1]) is nn.SyncBatchNorm and type(out[2][0]) is nn.SyncBatchNorm
    assert out[1].weight is weight and out[1].running_mean is running and out[1].momentum is None
    assert not out[1].training and type(out[0]) is nn.Linear
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(3, affine=False))
    tsingle = tnn.SyncBatchNorm.convert_sync_batchnorm(tnn.BatchNorm2d(3, affine=False))
    assert repr(single) == repr(tsingle)
    assert list(single.state_dict()) == list(tsingle.state_dict())


def test_batchnorm_loads_checkpoint_without_num_batches_tracked():
    emod = nn.BatchNorm1d(2)
    emod.load_state_dict({k: v for k, v in emod.state_dict().items() if k != "num_batches_tracked"})
    assert emod.num_batches_tracked.item() == 0


# ---- instance norm -------------------------------------------------------------------------

IN_CASES = [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)), ("InstanceNorm2d", (2, 3, 3, 4)),
            ("InstanceNorm2d", (3, 3, 4)), ("InstanceNorm3d", (2, 3, 2, 2, 3))]


@pytest.mark.parametrize("name,shape", IN_CASES)
@pytest.mark.parametrize("affine,track", [(False, False), (True, True), (True, False)])
def test_instancenorm(name, shape, affine, track):
    kw = dict(affine=affine, track_running_stats=track, dtype=torch.float64)
    tmod = getattr(tnn, name)(3, **kw)
    emod = getattr(nn, name)(3, **{**kw, "dtype": ember.float64})
    if affine:
        with torch.no_grad():
            tmod.weight.uniform_(0.5, 1.5)
            tmod.bias.uniform_(-1, 1)
        _load(emod, tmod)
    _check_module(emod, tmod, shape, steps=2, train=True)
    _check_module(emod, tmod, shape, steps=1, train=False)


def test_instancenorm_errors_and_warning():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.InstanceNorm1d(3)(ember.randn(3))
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        nn.InstanceNorm3d(3)(ember.randn(3, 2, 2))
    with pytest.raises(ValueError, match="to match num_features"):
        nn.InstanceNorm1d(4, affine=True)(ember.randn(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(ember.randn(2, 3, 5))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        nn.InstanceNorm1d(3)(ember.randn(2, 3, 1))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        tnn.InstanceNorm1d(3)(torch.randn(2, 3, 1))


# ---- group, layer, rms and local response norm ----------------------------------------------

@pytest.mark.parametrize("groups,shape,affine", [(2, (3, 4, 5), True), (4, (2, 4, 3, 2), False),
                                                 (1, (2, 4), True)])
def test_groupnorm(groups, shape, affine):
    tmod = tnn.GroupNorm(groups, 4, affine=affine, dtype=torch.float64)
    emod = nn.GroupNorm(groups, 4, affine=affine, dtype=ember.float64)
    if affine:
        with torch.no_grad():
            tmod.weight.uniform_(0.5, 1.5)
            tmod.bias.uniform_(-1, 1)
        _load(emod, tmod)
    _check_module(emod, tmod, shape)


def test_groupnorm_errors():
    with pytest.raises(ValueError, match="divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(ember.randn(2, 6, 4), 4)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector"):
        F.group_norm(ember.randn(2, 6, 4), 3, ember.ones(3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.group_norm(ember.randn(1, 2, 1), 2)
    repr_cases = [(tnn.GroupNorm(2, 4, bias=False), nn.GroupNorm(2, 4, bias=False)),
                  (tnn.GroupNorm(2, 4, affine=False), nn.GroupNorm(2, 4, affine=False))]
    for t, e in repr_cases:
        assert repr(e) == repr(t)
        assert list(e.state_dict()) == list(t.state_dict())


@pytest.mark.parametrize("kwargs", [dict(normalized_shape=5), dict(normalized_shape=(3, 5), bias=False),
                                    dict(normalized_shape=[5], elementwise_affine=False)])
def test_layernorm(kwargs):
    tmod = tnn.LayerNorm(**kwargs, dtype=torch.float64)
    emod = nn.LayerNorm(**kwargs, dtype=ember.float64)
    if tmod.weight is not None:
        with torch.no_grad():
            tmod.weight.uniform_(0.5, 1.5)
        _load(emod, tmod)
    _check_module(emod, tmod, (2, 3, 5))


@pytest.mark.parametrize("kwargs", [dict(normalized_shape=5), dict(normalized_shape=(3, 5), eps=1e-3),
                                    dict(normalized_shape=[5], elementwise_affine=False)])
def test_rmsnorm(kwargs):
    tmod = tnn.RMSNorm(**kwargs, dtype=torch.float64)
    emod = nn.RMSNorm(**kwargs, dtype=ember.float64)
    if tmod.weight is not None:
        with torch.no_grad():
            tmod.weight.uniform_(0.5, 1.5)
        _load(emod, tmod)
    _check_module(emod, tmod, (2, 3, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_rms_norm_default_eps_follows_dtype(dtype):
    t = (torch.rand(3, 4) * 1e-4).to(dtype)
    assert_same(F.rms_norm(to_ember(t), (4,)), TF.rms_norm(t, (4,)))


HALF_NORMS = {
    "layer_norm": lambda lib, x, w: lib.nn.functional.layer_norm(x, x.shape[-1:], w.flatten()[:x.shape[-1]], None),
    "batch_norm train": lambda lib, x, w: lib.nn.functional.batch_norm(x, None, None, w[0], w[1], training=True),
    "batch_norm eval": lambda lib, x, w: lib.nn.functional.batch_norm(x, w[0] * 0.1, w[1].abs() + 0.5, w[0], w[1]),
    "group_norm": lambda lib, x, w: lib.nn.functional.group_norm(x, 4, w[0], w[1]),
    "instance_norm": lambda lib, x, w: lib.nn.functional.instance_norm(x),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("norm", sorted(HALF_NORMS))
def test_half_precision_norms_compute_in_float32(norm, dtype):
    # float16/bfloat16 inputs are normalized in float32 and rounded once (torch's accumulate
    # type): against the exact result of the same rounded inputs, ember is within one unit in
    # the last place, or no further off than torch (whose batch and instance norms round
    # midway); statistics taken in the half type were 15-2000 units off
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 8, 9, 10)) * 3 + 5).astype(np.float32)
    w = rng.standard_normal((2, 8)).astype(np.float32)
    halves = [torch.tensor(a).to(getattr(torch, dtype)) for a in (x, w)]
    exact = HALF_NORMS[norm](torch, *(t.double() for t in halves)).numpy()
    theirs = HALF_NORMS[norm](torch, *halves).double().numpy()
    ours = HALF_NORMS[norm](ember, *(to_ember(t) for t in halves))
    assert ours.dtype is getattr(ember, dtype)
    bits = 7 if dtype == "bfloat16" else 10  # explicit mantissa bits
    ulp = np.maximum(np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64) * 2.0 ** (23 - bits), 2.0 ** -24)
    ours_off = (np.abs(ours.double().numpy() - exact) / ulp).max()
    assert ours_off <= max(1.0, (np.abs(theirs - exact) / ulp).max())


def test_rms_norm_errors():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(ember.randn(2, 6, 4), (3,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.rms_norm(ember.randn(2, 6, 4), (4,), ember.ones(3))


@pytest.mark.parametrize("size,shape", [(3, (2, 5, 4)), (2, (2, 4, 3, 2)), (5, (1, 6, 2, 2, 2)), (1, (2, 3, 4))])
def test_local_response_norm(size, shape):
    tmod = tnn.LocalResponseNorm(size, alpha=0.5, beta=0.6, k=2.0)
    emod = nn.LocalResponseNorm(size, alpha=0.5, beta=0.6, k=2.0)
    _check_module(emod, tmod, shape)
    with pytest.raises(ValueError, match="3D or higher"):
        emod(ember.randn(2, 3))


# ---- functional forms: values, gradients, higher order --------------------------------------

def _check_fn(efn, tfn, *tensors):
    ts = [t.detach().clone().requires_grad_(True) for t in tensors]
    es = [to_ember(t) for t in ts]
    tout, eout = tfn(*ts), efn(*es)
    assert_same(eout, tout)
    g = torch.randn_like(tout)
    tout.backward(g)
    eout.backward(to_ember(g))
    for e, t in zip(es, ts):
        assert_same(e.grad, t.grad)


def test_functional_forms():
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    w, b = torch.rand(4, dtype=torch.float64) + 0.5, torch.randn(4, dtype=torch.float64)
    _check_fn(lambda x, w, b: F.group_norm(x, 2, w, b, 1e-3), lambda x, w, b: TF.group_norm(x, 2, w, b, 1e-3), x, w, b)
    _check_fn(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
              lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), x, w, b)
    _check_fn(lambda x: F.rms_norm(x, (4, 5), eps=None), lambda x: TF.rms_norm(x, (4, 5), eps=None), x)
    _check_fn(lambda x: F.local_response_norm(x, 3), lambda x: TF.local_response_norm(x, 3), x)
    for p, dim in [(2.0, 1), (1.0, -1), (3.5, 0)]:
        _check_fn(lambda x, p=p, dim=dim: F.normalize(x, p, dim), lambda x, p=p, dim=dim: TF.normalize(x, p, dim), x)
    out = ember.empty(3, 4, 5, dtype=ember.float64)
    F.normalize(to_ember(x), out=out)
    assert_same(out, TF.normalize(x))


def test_instance_norm_functional_running_stats():
    x = torch.randn(3, 2, 6, dtype=torch.float64)
    trm, trv = torch.randn(2, dtype=torch.float64), torch.rand(2, dtype=torch.float64) + 0.5
    erm, erv = to_ember(trm), to_ember(trv)
    assert_same(F.instance_norm(to_ember(x), erm, erv, momentum=0.3),
                TF.instance_norm(x, trm, trv, momentum=0.3))
    assert_same(erm, trm)
    assert_same(erv, trv)
    assert_same(F.instance_norm(to_ember(x), erm, erv, use_input_stats=False),
                TF.instance_norm(x, trm, trv, use_input_stats=False))
    with pytest.raises(RuntimeError, match="running_mean and running_var"):
        F.instance_norm(to_ember(x), use_input_stats=False)
    with pytest.raises(RuntimeError, match="should contain"):
        F.instance_norm(to_ember(x), weight=ember.ones(3))


@pytest.mark.parametrize("fn", [lambda x, w, b: F.group_norm(x, 2, w, b),
                                lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                                lambda x, w, b: F.rms_norm(x.transpose(1, 2), (4,), w),
                                lambda x, w, b: F.local_response_norm(x, 3, alpha=0.3) * w.reshape(1, 4, 1)])
def test_gradcheck(fn):
    x = ember.randn(2, 4, 3, dtype=ember.float64, requires_grad=True)
    w = (ember.rand(4, dtype=ember.float64) + 0.5).requires_grad_()
    b = ember.randn(4, dtype=ember.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(fn, (x, w, b))
        assert gradgradcheck(fn, (x, w, b))


def test_float32_dtype_kept():
    x = np.random.randn(2, 4, 3).astype(np.float32)
    for fn in (lambda m, t: m.group_norm(t, 2), lambda m, t: m.instance_norm(t), lambda m, t: m.rms_norm(t, (3,)),
               lambda m, t: m.local_response_norm(t, 2), lambda m, t: m.normalize(t)):
        assert_same(fn(F, ember.tensor(x)), fn(TF, torch.tensor(x)))
