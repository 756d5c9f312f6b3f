"""ember.optim.swa_utils against torch.optim.swa_utils: averaged weights, buffers,
BatchNorm statistics and the SWALR schedule."""

import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember

import ember


def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.ReLU(), lib.nn.Linear(6, 3))


def _pair():
    """The same network in both libraries (ember's weights copied from torch's)."""
    torch.manual_seed(0)
    t = _net(torch)
    e = _net(ember)
    e.load_state_dict({k: to_ember(v) for k, v in t.state_dict().items()})
    return e, t


def _perturb(e, t, rng):
    """Move both models' weights (and BatchNorm statistics) to the same new values."""
    with torch.no_grad():
        for (key, tp), (_, ep) in zip(t.state_dict().items(), e.state_dict().items()):
            if tp.is_floating_point():
                values = rng.uniform(0.5, 1.5, tp.shape) if "var" in key else rng.normal(size=tuple(tp.shape))
                new = torch.from_numpy(values.astype(np.float32))
                tp.copy_(new)
                ep.copy_(to_ember(new))
            else:
                tp.add_(1)
                ep.add_(1)


AVERAGING = {
    "swa": lambda lib: {},
    "ema_multi": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.9)},
    "ema_single": lambda lib: {"avg_fn": lib.optim.swa_utils.get_ema_avg_fn(0.8)},
    "swa_single": lambda lib: {"avg_fn": lib.optim.swa_utils.get_swa_avg_fn()},
    "swa_buffers": lambda lib: {"use_buffers": True},
    "ema_buffers": lambda lib: {"multi_avg_fn": lib.optim.swa_utils.get_ema_multi_avg_fn(0.7), "use_buffers": True},
}


@pytest.mark.parametrize("name", sorted(AVERAGING))
def test_averaged_model_equals_torch(name):
    e, t = _pair()
    e_avg = ember.optim.swa_utils.AveragedModel(e, **AVERAGING[name](ember))
    t_avg = torch.optim.swa_utils.AveragedModel(t, **AVERAGING[name](torch))
    rng = np.random.default_rng(1)
    for _ in range(5):
        _perturb(e, t, rng)
        e_avg.update_parameters(e)
        t_avg.update_parameters(t)
    esd, tsd = e_avg.state_dict(), t_avg.state_dict()
    assert list(esd) == list(tsd)
    for k in tsd:
        assert_same(esd[k], tsd[k])
    x = torch.randn(5, 4)
    assert_same(e_avg.eval()(to_ember(x)), t_avg.eval()(x))
    # the averaged copy is separate from the model it follows
    assert e_avg.module[0].weight is not e[0].weight


def test_ema_decay_checked():
    for lib in (ember, torch):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5"):
            lib.optim.swa_utils.get_ema_multi_avg_fn(1.5)
        with pytest.raises(ValueError, match=r"Invalid decay value -0.1"):
            lib.optim.swa_utils.get_ema_avg_fn(-0.1)
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            lib.optim.swa_utils.AveragedModel(_net(lib), avg_fn=lib.optim.swa_utils.get_swa_avg_fn(),
                                              multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn())


def test_update_bn_equals_torch():
    e, t = _pair()
    e.eval()
    t.eval()
    batches = [torch.randn(8, 4) * (i + 1) + i for i in range(4)]
    torch.optim.swa_utils.update_bn([(b, 0) for b in batches], t)
    ember.optim.swa_utils.update_bn([(to_ember(b), 0) for b in batches], e)
    for k, tv in t.state_dict().items():
        assert_same(e.state_dict()[k], tv)
    assert not e.training  # mode restored
    assert e[1].momentum == t[1].momentum == 0.1
    # the cumulative average over the batches, by hand
    hidden = [torch.nn.functional.linear(b, t[0].weight, t[0].bias) for b in batches]
    means = torch.stack([h.mean(0) for h in hidden])
    np.testing.assert_allclose(e[1].running_mean.numpy(), means.mean(0).detach().numpy(), rtol=1e-5, atol=1e-6)


def _swalr_run(lib, **kwargs):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in (0.5, 0.1)]
    opt = lib.optim.SGD(groups, lr=0.5)
    sched = lib.optim.swa_utils.SWALR(opt, **kwargs)
    lrs = [sched.get_last_lr()]
    for _ in range(8):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs, sched.state_dict()


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.2], anneal_epochs=3),
                                    dict(swa_lr=0.01, anneal_epochs=4, anneal_strategy="linear"),
                                    dict(swa_lr=0.02, anneal_epochs=0)])
def test_swalr_equals_torch(kwargs):
    e_lrs, e_sd = _swalr_run(ember, **kwargs)
    t_lrs, t_sd = _swalr_run(torch, **kwargs)
    assert e_lrs == t_lrs
    assert e_sd == t_sd


def test_swalr_errors_match_torch():
    for lib in (ember, torch):
        opt = lib.optim.SGD([lib.zeros(2, requires_grad=True)], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
            lib.optim.swa_utils.SWALR(opt, 0.05, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
            lib.optim.swa_utils.SWALR(opt, 0.05, anneal_epochs=-1)
        with pytest.raises(ValueError, match="swa_lr must have the same length"):
            lib.optim.swa_utils.SWALR(opt, [0.05, 0.1])
