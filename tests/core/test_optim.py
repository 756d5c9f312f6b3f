"""ember.optim against torch.optim: trajectories, state and state_dict structure."""

import copy

import numpy as np
import pytest
import torch
from conftest import as_numpy, to_ember

import ember
import ember.optim

STEPS = 20


# "large" has a weight of 20480 floats: big enough for the BLAS update path (ember._blas)
SIZES = {"small": (3, 4), "large": (128, 160)}


def _problem(seed=0, size="small"):
    out_features, in_features = SIZES[size]
    g = torch.Generator().manual_seed(seed)
    W = torch.randn(out_features, in_features, generator=g) / in_features ** 0.5
    b = torch.randn(out_features, generator=g)
    X = torch.randn(16, in_features, generator=g)
    Y = torch.randn(16, out_features, generator=g)
    return W, b, X, Y


def _least_squares(lib, W, b, X, Y):
    return ((X @ W.T + b - Y) ** 2).mean()


def _rosenbrock(lib, xy):
    return (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _run(lib, opt_cls, kwargs, params, loss_fn, steps=STEPS, use_closure=False):
    opt = opt_cls(params, **kwargs)
    traj = []
    for _ in range(steps):
        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss
        if use_closure:
            opt.step(closure)
        else:
            closure()
            opt.step()
        traj.append([np.array(as_numpy(p)) for p in params])
    return opt, traj


# Trajectories are compared in float64, to F64_TOL: rounding (1e-16 per operation) stays
# far below it even where an update amplifies it ~1e4-fold (RMSprop's and Adam's division by
# the small root of a near-zero gradient), while a wrong update moves the parameters by far
# more. A float32 trajectory cannot be compared that way: the same amplification turns
# differences in rounding order (FMA, vector width, the BLAS kernel: they differ between
# processors) into relative differences up to ~1e-3 on single elements, and Rprop's sign
# tests flip on them. So float32 is checked one step at a time: each of torch's steps is
# replayed by ember from torch's parameters, optimizer state and gradients, and must agree
# with torch to F32_ULPS times what float32 rounding explains for that element of that step:
# one rounding of the parameter and of its change, plus the step's sensitivity to rounding,
# measured as how far torch's float64 step moves when each input (parameters, gradients,
# every state tensor) is perturbed by one float32 rounding (relative 2**-24, random signs).
# Where a step cancels (Adam's weight-decayed gradient near zero, centered RMSprop's
# variance near zero) that sensitivity is large, and elsewhere tiny. Measured: ember stays
# within 2.4 such units on every case, with this CPU's kernels and with torch's
# unvectorised ones beside another OpenBLAS kernel (ATEN_CPU_CAPABILITY=default
# OPENBLAS_CORETYPE=Sandybridge ONEDNN_MAX_CPU_ISA=SSE41). Ember's own 20-step
# float32 run must then keep float32 and end at torch's loss to F32_LOSS_RTOL of the
# starting loss (an aggregate, which a few ill-conditioned elements do not move; the final
# loss itself is near zero, so relative to it rounding looks large).
F64_TOL = 1e-9
F32_ULPS = 16
F32_LOSS_RTOL = 1e-4
EPS32 = float(np.finfo(np.float32).eps)


def _setup(lib, problem, size, dtype):
    """Parameters and the loss closure of a problem, in ``lib`` and ``dtype``."""
    tdt = getattr(torch, dtype)
    if problem == "lsq":
        W, b, X, Y = (t.to(tdt) for t in _problem(size=size))
        if lib is torch:
            params = [W.clone().requires_grad_(), b.clone().requires_grad_()]
        else:
            params, X, Y = [to_ember(W, True), to_ember(b, True)], to_ember(X), to_ember(Y)
        return params, lambda: _least_squares(lib, params[0], params[1], X, Y)
    start = torch.tensor([-1.2, 1.0], dtype=tdt)
    params = [start.clone().requires_grad_() if lib is torch else to_ember(start, True)]
    return params, lambda: _rosenbrock(lib, params[0])


def _to_ember_state(sd):
    return {"state": {i: {k: to_ember(v) if isinstance(v, torch.Tensor) else copy.deepcopy(v) for k, v in s.items()}
                      for i, s in sd["state"].items()},
            "param_groups": copy.deepcopy(sd["param_groups"])}


def _float64_step(tcls, kwargs, params, grads, state, perturb=None, gen=None):
    """torch's step in float64 from float32 ``params``/``grads``/``state``, with the input
    named by ``perturb`` (("param" | "grad" | state key, index)) moved by one float32 rounding."""
    def nudge(t):
        sign = torch.randint(0, 2, t.shape, generator=gen, dtype=torch.float64) * 2 - 1
        t.mul_(1 + sign * 2.0 ** -24)

    tp = [p.double().requires_grad_() for p in params]
    for i, (p, g) in enumerate(zip(tp, grads)):
        p.grad = g.double()
        if perturb in (("param", i), ("grad", i)):
            nudge(p.data if perturb[0] == "param" else p.grad)
    opt = tcls(tp, **kwargs)
    opt.load_state_dict(copy.deepcopy(state))  # floating state is cast to the parameters' float64
    if perturb is not None and perturb[0] not in ("param", "grad"):
        nudge(opt.state[tp[perturb[1]]][perturb[0]])
    opt.step()
    return [p.detach().numpy() for p in tp]


def _rounding_sensitivity(tcls, kwargs, params, grads, state):
    """How far torch's float64 step moves, element by element, when each input in turn is
    perturbed by one float32 rounding (absolute moves summed over the inputs)."""
    gen = torch.Generator().manual_seed(0)
    exact = _float64_step(tcls, kwargs, params, grads, state)
    inputs = [(kind, i) for i in range(len(params)) for kind in ("param", "grad")]
    for i, s in state["state"].items():
        inputs += [(k, i) for k, v in s.items() if isinstance(v, torch.Tensor) and v.dtype.is_floating_point
                   and k != "step" and v.numel() > 1]
    moves = [np.zeros_like(x) for x in exact]
    for perturb in inputs:
        for m, x, y in zip(moves, exact, _float64_step(tcls, kwargs, params, grads, state, perturb, gen)):
            m += np.abs(y - x)
    return moves


def _replay_float32_steps(opt_name, kwargs, problem, size):
    """Each float32 step of torch's run, replayed by ember from torch's state (see above)."""
    tcls, ecls = getattr(torch.optim, opt_name), getattr(ember.optim, opt_name)
    tp, tf = _setup(torch, problem, size, "float32")
    topt = tcls(tp, **kwargs)
    for step in range(STEPS):
        topt.zero_grad()
        tf().backward()
        before = [p.detach().clone() for p in tp]
        grads = [p.grad.clone() for p in tp]
        state = copy.deepcopy(topt.state_dict())
        ep = [to_ember(p, True) for p in before]
        for e, g in zip(ep, grads):
            e.grad = to_ember(g)
        topt.step()
        eopt = ecls(ep, **kwargs)
        eopt.load_state_dict(_to_ember_state(state))
        eopt.step()
        sensitivity = _rounding_sensitivity(tcls, kwargs, before, grads, state)
        for e, t, p, sens in zip(ep, tp, before, sensitivity):
            x, y, p = as_numpy(e), as_numpy(t), p.numpy()
            assert x.dtype == np.float32
            bound = F32_ULPS * (EPS32 * (np.abs(p) + np.abs(y - p)) + sens)
            worst = np.argmax(np.abs(x - y) - bound)
            assert np.abs(x - y).flat[worst] <= bound.flat[worst], (
                f"float32 step {step} from torch's state: {x.flat[worst]} where torch has {y.flat[worst]} "
                f"(from {p.flat[worst]}; bound {bound.flat[worst]:.3g})")


def _trajectories(opt_name, kwargs, problem, use_closure, size, dtype):
    tcls, ecls = getattr(torch.optim, opt_name), getattr(ember.optim, opt_name)
    tp, tf = _setup(torch, problem, size, dtype)
    ep, ef = _setup(ember, problem, size, dtype)
    start_loss = tf().item()
    topt, ttraj = _run(torch, tcls, kwargs, tp, tf, use_closure=use_closure)
    eopt, etraj = _run(ember, ecls, kwargs, ep, ef, use_closure=use_closure)
    return eopt, topt, etraj, ttraj, (ef().item(), tf().item(), start_loss)


def _compare(opt_name, kwargs, problem="lsq", use_closure=False, size="small"):
    """ember's optimizer against torch's (see F64_TOL above); returns the float32 optimizers."""
    args = (opt_name, kwargs, problem, use_closure, size)
    _, _, e64, t64, _ = _trajectories(*args, "float64")
    for step, (a, b) in enumerate(zip(e64, t64)):
        for x, y in zip(a, b):
            assert x.dtype == np.float64
            np.testing.assert_allclose(x, y, rtol=F64_TOL, atol=F64_TOL, err_msg=f"float64, step {step}")
    _replay_float32_steps(opt_name, kwargs, problem, size)
    eopt, topt, e32, _, (eloss, tloss, start_loss) = _trajectories(*args, "float32")
    assert all(x.dtype == np.float32 for x in e32[-1])
    assert abs(eloss - tloss) <= F32_LOSS_RTOL * start_loss, (eloss, tloss)
    assert not np.allclose(e32[-1][0], e32[0][0])  # the parameters moved
    return eopt, topt


SGD_CASES = [
    dict(lr=0.05),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.5, weight_decay=0.1),
    dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True),
]

ADAM_CASES = [
    dict(lr=0.05),
    dict(lr=0.05, amsgrad=True),
    dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.05, weight_decay=0.1),
    dict(lr=0.05, weight_decay=0.1, amsgrad=True, maximize=True),
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kwargs", SGD_CASES)
def test_sgd_trajectory(kwargs, size):
    _compare("SGD", kwargs, size=size)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kwargs", ADAM_CASES)
def test_adam_trajectory(kwargs, size):
    _compare("Adam", kwargs, size=size)


OTHER_CASES = [
    ("Adamax", dict(lr=0.05)), ("Adamax", dict(lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)), ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.05)), ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1)), ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1,
                                                weight_decay=0.1)),
    ("Adadelta", dict()), ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("ASGD", dict(lr=0.05)), ("ASGD", dict(lr=0.05, lambd=0.01, t0=5, weight_decay=0.1)),
    ("Rprop", dict(lr=0.01)), ("Rprop", dict(lr=0.02, etas=(0.4, 1.3), step_sizes=(1e-4, 0.1))),
]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name,kwargs", OTHER_CASES)
def test_other_optimizers_trajectory(name, kwargs, size):
    eopt, topt = _compare(name, kwargs, size=size)
    es, ts = eopt.state_dict(), topt.state_dict()
    assert es["param_groups"][0].keys() == ts["param_groups"][0].keys()
    assert {k: sorted(v) for k, v in es["state"].items()} == {k: sorted(v) for k, v in ts["state"].items()}


@pytest.mark.parametrize("kwargs", ADAM_CASES + [dict(lr=0.05), dict(lr=0.02, weight_decay=0.5, amsgrad=True)])
def test_adamw_trajectory(kwargs):
    _compare("AdamW", kwargs)


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=1e-3, momentum=0.9)), ("Adam", dict(lr=0.1)),
                                         ("AdamW", dict(lr=0.1, amsgrad=True))])
def test_rosenbrock_with_closure(name, kwargs):
    _compare(name, kwargs, problem="rosenbrock", use_closure=True)


def _tree_structure(x):
    """Keys, types, shapes and dtypes of a state dict; values of non-tensors."""
    if isinstance(x, dict):
        return {k: _tree_structure(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x).__name__, [_tree_structure(v) for v in x]
    if isinstance(x, (torch.Tensor, ember.Tensor)):
        return "tensor", tuple(x.shape), str(x.dtype).rsplit(".", 1)[-1], str(x.device)
    return x


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.05, momentum=0.9)), ("SGD", dict(lr=0.05)),
                                         ("Adam", dict(lr=0.05, amsgrad=True)), ("AdamW", dict(lr=0.05))])
def test_state_dict_structure_and_values(name, kwargs):
    eopt, topt = _compare(name, kwargs)
    esd, tsd = eopt.state_dict(), topt.state_dict()
    assert _tree_structure(esd) == _tree_structure(tsd)
    for i, tstate in tsd["state"].items():
        for k, v in tstate.items():
            np.testing.assert_allclose(as_numpy(esd["state"][i][k]), v.numpy(), rtol=1e-4, atol=1e-5)
    if name != "SGD":
        assert esd["state"][0]["step"].dtype is ember.float32
        assert esd["state"][0]["step"].item() == STEPS


def test_param_groups_state_dict_and_options():
    W, b, X, Y = _problem()
    for lib, conv in ((torch, lambda t: t.clone().requires_grad_()), (ember, lambda t: to_ember(t, True))):
        w_, b_ = conv(W), conv(b)
        opt = lib.optim.SGD([{"params": [w_]}, {"params": b_, "lr": 0.5, "momentum": 0.1}], lr=0.1)
        (w_.sum() + b_.sum()).backward()
        opt.step()
        if lib is torch:
            tsd = opt.state_dict()
        else:
            esd = opt.state_dict()
            assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["momentum"] == 0
    assert _tree_structure(esd) == _tree_structure(tsd)
    assert esd["param_groups"][1]["params"] == [1]


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
                                         ("Adam", dict(lr=0.05, amsgrad=True)), ("AdamW", dict(lr=0.05))])
def test_state_dict_round_trip_continues_trajectory(name, kwargs):
    """10 steps, save, load into a fresh optimizer, 10 more: equals 20 uninterrupted torch steps
    (in float64, so that only a wrong state, never rounding order, can part them)."""
    W, b, X, Y = (t.double() for t in _problem())
    eX, eY = to_ember(X), to_ember(Y)
    ep = [to_ember(W, True), to_ember(b, True)]
    ecls = getattr(ember.optim, name)
    opt, _ = _run(ember, ecls, kwargs, ep, lambda: _least_squares(ember, ep[0], ep[1], eX, eY), steps=10)
    sd = copy.deepcopy(opt.state_dict())
    opt2 = ecls(ep, lr=1.0)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    assert opt2.param_groups[0]["params"][0] is ep[0]
    assert set(opt2.state[ep[0]]) == set(opt.state[ep[0]])
    for _ in range(10):
        opt2.zero_grad()
        _least_squares(ember, ep[0], ep[1], eX, eY).backward()
        opt2.step()
    tp = [W.clone().requires_grad_(), b.clone().requires_grad_()]
    _, ttraj = _run(torch, getattr(torch.optim, name), kwargs, tp, lambda: _least_squares(torch, tp[0], tp[1], X, Y))
    np.testing.assert_allclose(as_numpy(ep[0]), ttraj[-1][0], rtol=F64_TOL, atol=F64_TOL)
    np.testing.assert_allclose(as_numpy(ep[1]), ttraj[-1][1], rtol=F64_TOL, atol=F64_TOL)


def test_load_torch_state_dict_into_ember():
    """A torch optimizer's state_dict (tensors converted) loads into ember and continues identically
    (float64, as above)."""
    W, b, X, Y = (t.double() for t in _problem())
    tp = [W.clone().requires_grad_(), b.clone().requires_grad_()]
    topt, _ = _run(torch, torch.optim.Adam, dict(lr=0.05, amsgrad=True), tp,
                   lambda: _least_squares(torch, tp[0], tp[1], X, Y), steps=5)
    tsd = topt.state_dict()
    esd = {"state": {i: {k: to_ember(v) for k, v in s.items()} for i, s in tsd["state"].items()},
           "param_groups": copy.deepcopy(tsd["param_groups"])}
    ep = [to_ember(tp[0]), to_ember(tp[1])]
    for p in ep:
        p.requires_grad_()
    eopt = ember.optim.Adam(ep)
    eopt.load_state_dict(esd)
    eX, eY = to_ember(X), to_ember(Y)
    for _ in range(5):
        for opt, loss in ((topt, lambda: _least_squares(torch, tp[0], tp[1], X, Y)),
                          (eopt, lambda: _least_squares(ember, ep[0], ep[1], eX, eY))):
            opt.zero_grad()
            loss().backward()
            opt.step()
    np.testing.assert_allclose(as_numpy(ep[0]), tp[0].detach().numpy(), rtol=F64_TOL, atol=F64_TOL)
    assert eopt.state[ep[0]]["step"].item() == topt.state[tp[0]]["step"].item() == 10


def test_zero_grad_and_skips_params_without_grad():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    c = ember.tensor([3.0], requires_grad=True)
    opt = ember.optim.SGD([a, c], lr=0.1)
    (a * a).sum().backward()
    v = a._version
    opt.step()
    assert a._version > v
    assert c.tolist() == [3.0] and len(opt.state) == 0
    np.testing.assert_allclose(a.tolist(), [0.8, 1.6], rtol=1e-6)
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and a.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert a.grad is None


def test_errors_match_torch():
    for lib in (torch, ember):
        p = lib.zeros(2, requires_grad=True)
        with pytest.raises(ValueError, match="Invalid learning rate"):
            lib.optim.SGD([p], lr=-1.0)
        with pytest.raises(ValueError, match="Nesterov momentum requires"):
            lib.optim.SGD([p], lr=0.1, nesterov=True)
        with pytest.raises(ValueError, match="Invalid beta parameter at index 0"):
            lib.optim.Adam([p], betas=(1.0, 0.9))
        with pytest.raises(ValueError, match="empty parameter list"):
            lib.optim.Adam([])
        with pytest.raises(TypeError):
            lib.optim.SGD(p, lr=0.1)
        opt = lib.optim.SGD([p], lr=0.1)
        with pytest.raises(ValueError, match="more than one parameter group"):
            opt.add_param_group({"params": [p]})
        with pytest.raises(ValueError, match="different number of parameter groups"):
            opt.load_state_dict({"state": {}, "param_groups": []})
        q = lib.zeros(3, requires_grad=True)
        with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
            lib.optim.SGD([q * 2], lr=0.1)


def test_add_param_group_fills_defaults():
    for lib in (torch, ember):
        p, q = lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)
        opt = lib.optim.Adam([p], lr=0.3, betas=(0.5, 0.6))
        opt.add_param_group({"params": q, "eps": 1e-3})
        g = opt.param_groups[1]
        assert (g["lr"], g["betas"], g["eps"], g["params"][0] is q) == (0.3, (0.5, 0.6), 1e-3, True)


@pytest.mark.parametrize("make", [lambda lib, ps: lib.optim.Adam(ps, lr=0.1, amsgrad=True),
                                  lambda lib, ps: lib.optim.AdamW(ps, lr=0.1, weight_decay=0.1),
                                  lambda lib, ps: lib.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True)])
def test_zero_dim_parameter_matches_torch(make):
    """A 0-d parameter: the updates stay arrays (numpy ufuncs return scalars for 0-d inputs)."""
    values = []
    for lib in (torch, ember):
        p = lib.tensor(1.5, requires_grad=True)
        opt = make(lib, [p])
        for _ in range(3):
            opt.zero_grad()
            (p * p * p).backward()
            opt.step()
        values.append(p.item())
    assert values[1] == pytest.approx(values[0], rel=1e-6)


LBFGS_CASES = [dict(lr=0.5, max_iter=3), dict(lr=0.3, max_iter=4, history_size=3),
               dict(max_iter=5, line_search_fn="strong_wolfe"),
               dict(lr=0.8, max_iter=3, history_size=2, line_search_fn="strong_wolfe")]


def _lbfgs_run(lib, kwargs, problem, dtype, steps):
    if problem == "lsq":
        tensors = _problem()
    else:
        tensors = (torch.tensor([-1.2, 1.0]),)
    tensors = [t.to(getattr(torch, dtype)) for t in tensors]
    tensors = [t.clone() if lib is torch else to_ember(t) for t in tensors]
    params = [t.requires_grad_() for t in tensors[:2 if problem == "lsq" else 1]]
    opt = lib.optim.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = _least_squares(lib, *tensors) if problem == "lsq" else _rosenbrock(lib, tensors[0])
        loss.backward()
        return loss
    traj = []
    for _ in range(steps):
        opt.step(closure)
        traj.append(np.concatenate([as_numpy(p).ravel() for p in params]))
    return opt, np.array(traj)


@pytest.mark.parametrize("problem", ["lsq", "rosenbrock"])
@pytest.mark.parametrize("kwargs", LBFGS_CASES)
def test_lbfgs_trajectory(kwargs, problem):
    """Several inner iterations per step; the line search's bracketing and zoom phases
    both run on Rosenbrock's valley. The inverse-Hessian estimate is built from
    differences of gradients, which amplifies rounding: over 20 steps (up to 100
    iterations) float64 trajectories agree to 1e-6 (an error in the algorithm shows as
    O(1)); float32 ones are compared over the first 5 steps, before the optimum, where
    the stopping tests (a loss change under 1e-9) read rounding noise in either library."""
    eopt, e_traj = _lbfgs_run(ember, kwargs, problem, "float64", STEPS)
    topt, t_traj = _lbfgs_run(torch, kwargs, problem, "float64", STEPS)
    np.testing.assert_allclose(e_traj, t_traj, rtol=1e-6, atol=1e-6)
    assert not np.allclose(e_traj[-1], e_traj[0])
    es, ts = eopt.state_dict(), topt.state_dict()
    assert _tree_structure(es["param_groups"]) == _tree_structure(ts["param_groups"])
    e_state, t_state = es["state"][0], ts["state"][0]
    assert sorted(e_state) == sorted(t_state)
    assert e_state["func_evals"] == t_state["func_evals"] and e_state["n_iter"] == t_state["n_iter"]
    assert len(e_state["old_dirs"]) == len(t_state["old_dirs"])
    if problem == "lsq":
        _, e32 = _lbfgs_run(ember, kwargs, problem, "float32", 5)
        _, t32 = _lbfgs_run(torch, kwargs, problem, "float32", 5)
        assert e32.dtype == np.float32
        np.testing.assert_allclose(e32, t32, rtol=1e-4, atol=1e-4)


def test_lbfgs_errors_match_torch():
    for lib in (ember, torch):
        w = lib.zeros(2, requires_grad=True)
        with pytest.raises(ValueError, match="Invalid learning rate: -1"):
            lib.optim.LBFGS([w], lr=-1)
        with pytest.raises(ValueError, match="doesn't support per-parameter options"):
            lib.optim.LBFGS([{"params": [w]}, {"params": [lib.zeros(1, requires_grad=True)]}])
        opt = lib.optim.LBFGS([w], line_search_fn="backtracking")

        def closure(opt=opt, w=w):
            opt.zero_grad()
            loss = ((w - 1) ** 2).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(closure)


def test_lbfgs_stops_at_an_optimum():
    """A zero gradient returns at once, after one evaluation."""
    w = ember.ones(3, requires_grad=True)
    opt = ember.optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 0
    assert opt.state[w]["func_evals"] == 1 and opt.state[w]["n_iter"] == 0
