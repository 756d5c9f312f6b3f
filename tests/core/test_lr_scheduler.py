"""ember.optim.lr_scheduler against torch.optim.lr_scheduler: lr sequences and state dicts."""

import pytest
import torch

import ember
import ember.optim


def _opt(lib, lrs=(0.1,)):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return lib.optim.SGD(groups, lr=lrs[0], momentum=0.9)


def _adam(lib, lrs=(0.1,)):
    groups = [{"params": [lib.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return lib.optim.Adam(groups, lr=lrs[0])


def _momenta(opt):
    return [g["betas"] if "betas" in g else g["momentum"] for g in opt.param_groups]


def _sequence(lib, make, lrs=(0.1,), epochs=30):
    """The lrs and momenta after each of ``epochs`` steps (cyclic schedules move momentum too)."""
    opt = (_adam if make in ADAM_CASES else _opt)(lib, lrs)
    sched = make(lib, opt)
    seq = [(list(sched.get_last_lr()), _momenta(opt))]
    for _ in range(epochs):
        opt.step()
        sched.step()
        seq.append((list(sched.get_last_lr()), _momenta(opt)))
        assert seq[-1][0] == [g["lr"] for g in opt.param_groups]
    return seq, sched


def _lambda_factor(epoch):
    return 0.95 ** epoch


CASES = {
    "step": lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=4),
    "step_gamma": lambda lib, o: lib.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
    "cosine": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10),
    "cosine_eta": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "lambda": lambda lib, o: lib.optim.lr_scheduler.LambdaLR(o, lr_lambda=_lambda_factor),
    "lambda_list": lambda lib, o: lib.optim.lr_scheduler.LambdaLR(
        o, lr_lambda=[_lambda_factor, lambda e: 1.0 / (e + 1)]),
    "multiplicative": lambda lib, o: lib.optim.lr_scheduler.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "multistep": lambda lib, o: lib.optim.lr_scheduler.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.5),
    "constant": lambda lib, o: lib.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=6),
    "linear": lambda lib, o: lib.optim.lr_scheduler.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=8),
    "linear_default": lambda lib, o: lib.optim.lr_scheduler.LinearLR(o),
    "exponential": lambda lib, o: lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "polynomial": lambda lib, o: lib.optim.lr_scheduler.PolynomialLR(o, total_iters=12, power=2.0),
    "warm_restarts": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=4),
    "warm_restarts_mult": lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001),
    "cyclic": lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    "cyclic2": lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, base_lr=[0.01, 0.001], max_lr=0.2, step_size_up=3, step_size_down=5, mode="triangular2"),
    "cyclic_exp": lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range", gamma=0.97, cycle_momentum=False),
    "cyclic_fn": lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        o, base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 1 / (x + 1), scale_mode="iterations"),
    "one_cycle": lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=30),
    "one_cycle_linear3": lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(
        o, max_lr=[0.5, 0.2], epochs=6, steps_per_epoch=5, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, div_factor=10.0),
    "sequential": lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
        o, [lib.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=4),
            lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
            lib.optim.lr_scheduler.StepLR(o, step_size=3)], milestones=[5, 12]),
    "chained": lambda lib, o: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=6),
         lib.optim.lr_scheduler.ExponentialLR(o, gamma=0.95)]),
}
ADAM_CASES = {CASES["one_cycle_linear3"], CASES["cyclic_exp"]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lr_sequence_equals_torch(name):
    lrs = (0.1, 0.03)
    e_seq, e_sched = _sequence(ember, CASES[name], lrs)
    t_seq, t_sched = _sequence(torch, CASES[name], lrs)
    # same recursion, same float operations: equal to the last bit
    assert e_seq == t_seq
    assert getattr(e_sched, "last_epoch", None) == getattr(t_sched, "last_epoch", None)


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_equals_torch(name):
    _, e_sched = _sequence(ember, CASES[name], (0.1, 0.03), epochs=5)
    _, t_sched = _sequence(torch, CASES[name], (0.1, 0.03), epochs=5)
    esd, tsd = e_sched.state_dict(), t_sched.state_dict()
    assert set(esd) == set(tsd)
    if name == "cyclic_fn":  # a lambda's state is not saved
        assert esd.pop("_scale_fn_custom") is tsd.pop("_scale_fn_custom") is None
    assert esd == tsd


def _resumed(lib, make):
    """8 steps, then the optimizer's and scheduler's state dicts loaded into fresh ones
    that take 12 more steps: the lrs of those 12."""
    opt = _opt(lib)
    sched = make(lib, opt)
    for _ in range(8):
        opt.step()
        sched.step()
    sd, osd = sched.state_dict(), opt.state_dict()
    opt2 = _opt(lib)
    opt2.load_state_dict(osd)
    sched2 = make(lib, opt2)
    sched2.load_state_dict(sd)
    seq = []
    for _ in range(12):
        opt2.step()
        sched2.step()
        seq.append(sched2.get_last_lr()[0])
    return seq


@pytest.mark.parametrize("name", ["step", "cosine", "lambda", "warm_restarts_mult", "cyclic", "sequential",
                                  "chained"])
def test_resume_from_state_dict(name):
    """A resumed scheduler continues as torch's resumed one does (for most schedules, the
    uninterrupted sequence; compositions rebuilt on a loaded optimizer scale it again in
    torch too)."""
    seq = _resumed(ember, CASES[name])
    assert seq == _resumed(torch, CASES[name])
    if name not in ("sequential", "chained"):
        t_seq, _ = _sequence(torch, CASES[name], epochs=20)
        assert seq == [s[0][0] for s in t_seq[9:]]


def test_last_epoch_resume_requires_initial_lr():
    for lib in (torch, ember):
        opt = _opt(lib)
        with pytest.raises(KeyError, match="initial_lr"):
            lib.optim.lr_scheduler.StepLR(opt, step_size=2, last_epoch=3)


def test_lambda_count_mismatch():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
            lib.optim.lr_scheduler.LambdaLR(_opt(lib, (0.1, 0.2)), [_lambda_factor])


def test_callable_object_lambda_state_saved():
    class Warm:
        def __init__(self):
            self.k = 3

        def __call__(self, e):
            return min(1.0, (e + 1) / self.k)

    results = []
    for lib in (torch, ember):
        sched = lib.optim.lr_scheduler.LambdaLR(_opt(lib), Warm())
        results.append(sched.state_dict()["lr_lambdas"])
    assert results[0] == results[1] == [{"k": 3}]


def test_factor_errors_match_torch():
    for lib in (torch, ember):
        opt = _opt(lib)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.ConstantLR(opt, factor=1.5)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.0)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.LinearLR(opt, end_factor=2.0)


METRICS = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.8, 0.81, 0.82, 0.83, 0.84]
PLATEAU_CASES = [dict(), dict(patience=2), dict(patience=1, factor=0.5, cooldown=2),
                 dict(mode="max", patience=1, threshold_mode="abs", threshold=0.01),
                 dict(patience=0, min_lr=[0.02, 0.001]), dict(patience=1, factor=0.99999, eps=1e-3)]


@pytest.mark.parametrize("kwargs", PLATEAU_CASES)
def test_reduce_on_plateau_equals_torch(kwargs):
    out = []
    for lib in (ember, torch):
        opt = _opt(lib, (0.1, 0.03))
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        lrs = []
        for m in METRICS:
            opt.step()
            sched.step(m)
            lrs.append(list(sched.get_last_lr()))
        out.append((lrs, sched.state_dict()))
    assert out[0][0] == out[1][0]
    assert out[0][1] == out[1][1]


def test_reduce_on_plateau_errors_match_torch():
    for lib in (torch, ember):
        opt = _opt(lib)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="middle")
        with pytest.raises(ValueError):
            lib.optim.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1, 0.2])


def _bad_constructions(lib):
    S = lib.optim.lr_scheduler
    opt = _opt(lib, (0.1, 0.2))
    plain = lib.optim.Adagrad([lib.zeros(2, requires_grad=True)])
    yield lambda: S.CyclicLR(opt, 0.01, 0.1, mode="sawtooth")
    yield lambda: S.CyclicLR(plain, 0.01, 0.1)
    yield lambda: S.CyclicLR(opt, [0.01], 0.1)
    yield lambda: S.OneCycleLR(opt, 0.1)
    yield lambda: S.OneCycleLR(opt, 0.1, total_steps=0)
    yield lambda: S.OneCycleLR(opt, 0.1, epochs=2, steps_per_epoch=-1)
    yield lambda: S.OneCycleLR(opt, 0.1, total_steps=10, pct_start=1)
    yield lambda: S.OneCycleLR(opt, 0.1, total_steps=10, anneal_strategy="exp")
    yield lambda: S.CosineAnnealingWarmRestarts(opt, T_0=0)
    yield lambda: S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=0)
    yield lambda: S.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1)
    yield lambda: S.SequentialLR(opt, [S.StepLR(opt, 2)], milestones=[3])
    yield lambda: S.SequentialLR(opt, [], milestones=[])
    yield lambda: S.ChainedScheduler([S.StepLR(opt, 2), S.ReduceLROnPlateau(opt)])
    yield lambda: S.ChainedScheduler([S.StepLR(opt, 2), S.StepLR(_opt(lib), 2)])


def test_cyclic_and_composition_errors_match_torch():
    for e_make, t_make in zip(_bad_constructions(ember), _bad_constructions(torch)):
        with pytest.raises(Exception) as t_err:
            t_make()
        with pytest.raises(type(t_err.value)) as e_err:
            e_make()
        if "different from" not in str(t_err.value):  # that one names the optimizer's repr
            assert str(e_err.value) == str(t_err.value)


def test_one_cycle_refuses_steps_past_total():
    for lib in (ember, torch):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=3)
        for _ in range(3):
            opt.step()
            sched.step()
        with pytest.raises(ValueError, match="Tried to step 4 times"):
            sched.step()


def test_warm_restarts_fractional_epochs_equal_torch():
    """step(epoch + i / iters), SGDR's per-batch form, with T_mult > 1 (the closed form)."""
    out = []
    for lib in (ember, torch):
        opt = _opt(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3, eta_min=0.005)
        lrs = []
        for epoch in range(12):
            for i in range(4):
                opt.step()
                sched.step(epoch + i / 4)
                lrs.append((sched.get_last_lr()[0], sched.last_epoch, sched.T_i))
        out.append(lrs)
    assert out[0] == out[1]
