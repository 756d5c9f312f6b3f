"""ember.compile against eager ember and torch.compile's semantics: results, gradients and
training steps equal to eager; graph breaks, recompiles and guards as torch's explain and
guards report them; torch's errors for bad arguments."""

import copy
import threading
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.GELU(), nn.Dropout(0.25), nn.Linear(16, 3))


def test_module_forward_and_gradients_equal_eager():
    ember.manual_seed(0)
    model = mlp()
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    for step in range(4):  # the first call records, the rest replay
        x = ember.randn(5, 8)
        ember.manual_seed(100 + step)
        out = compiled(x)
        out.square().sum().backward()
        ember.manual_seed(100 + step)
        ref = twin(x)
        ref.square().sum().backward()
        np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
        np.testing.assert_array_equal(model[1].running_mean.numpy(), twin[1].running_mean.numpy())
    assert len(compiled._compiled._signatures) == 1  # one recording served every call


def test_training_step_with_backward_and_optimizer_equals_eager_for_ten_steps():
    ember.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 32), nn.SiLU(), nn.LayerNorm(32), nn.Linear(32, 4))
    twin = copy.deepcopy(model)
    opt, opt_twin = ember.optim.AdamW(model.parameters(), lr=1e-2), ember.optim.AdamW(twin.parameters(), lr=1e-2)

    def step(net, optimizer, x, y):
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    compiled = ember.compile(step, backend="aot_eager")  # the recorded ops themselves: bit-identical
    rng = np.random.default_rng(0)
    for _ in range(10):
        x = ember.tensor(rng.standard_normal((6, 8)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 4, 6))
        a = compiled(model, opt, x, y)
        b = step(twin, opt_twin, x, y)
        assert a.item() == b.item()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    (recording,) = compiled._ember_compiled._signatures.values()
    code = recording[0].root.gm.code
    assert "backward" in code and "step" in code and "zero_grad" in code


def branchy(x):
    y = x.sin() * 2
    if y.sum() > 0:
        return y.cos()
    return y.exp() + 1


def test_graph_break_replays_both_branches_and_explain_matches_torch():
    compiled = ember.compile(branchy, backend="aot_eager")  # bit-identical to eager
    rng = np.random.default_rng(2)
    seen = set()
    for _ in range(8):
        data = rng.standard_normal(5).astype(np.float32)
        x = ember.tensor(data)
        out = compiled(x)
        np.testing.assert_allclose(out.numpy(), branchy(x).numpy(), rtol=0, atol=0)
        seen.add(bool(np.sin(data).sum() > 0))
    assert seen == {True, False}
    x = ember.tensor(np.ones(5, np.float32))
    ours = ember._dynamo.explain(branchy)(x)
    theirs = torch._dynamo.explain(branchy)(torch.ones(5))
    assert (ours.graph_count, ours.graph_break_count) == (theirs.graph_count, theirs.graph_break_count) == (2, 1)
    (reason,) = ours.break_reasons
    assert reason.user_stack[0].endswith(f"{branchy.__code__.co_firstlineno + 2} in branchy")  # the `if` line
    assert [n.op for n in ours.graphs[1].graph.nodes] == ["placeholder", "call_function", "output"]


def test_item_break_guards_its_value():
    def scale(x):
        k = int(x[0].item())
        return x * k

    compiled = ember.compile(scale)
    for first in (1.0, 2.0, 1.0, 3.0):
        x = ember.tensor([first, 5.0])
        np.testing.assert_array_equal(compiled(x).numpy(), scale(x).numpy())


def test_new_shapes_recompile_up_to_the_limit_then_run_eagerly_with_one_warning():
    calls = []

    def double(x):
        calls.append(1)  # Python side effects run only while recording
        return x * 2

    compiled = ember.compile(double, dynamic=False)  # every size records (no dynamic shapes)
    limit = ember._dynamo.config.recompile_limit
    assert limit == torch._dynamo.config.recompile_limit == 8
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, limit + 4):
            x = ember.ones(n)
            np.testing.assert_array_equal(compiled(x).numpy(), np.full(n, 2.0, np.float32))
            compiled(x)  # a replay: no Python run
    messages = [str(w.message) for w in caught if "recompile_limit" in str(w.message)]
    assert len(messages) == 1 and "(8)" in messages[0]
    assert len(calls) == limit + 2 * 3  # 8 recordings, then 3 shapes run eagerly twice each


def test_guards_on_training_mode_grad_mode_globals_and_module_attributes():
    ember.manual_seed(3)
    model = mlp()
    compiled = ember.compile(model)
    x = ember.randn(4, 8)
    compiled(x)
    model.eval()
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())  # eval: no dropout
    with ember.no_grad():
        assert not compiled(x).requires_grad
    assert compiled(x).requires_grad

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2.0

        def forward(self, x):
            return x * self.scale * GLOBAL_FACTOR[0] + OFFSET

    global OFFSET
    OFFSET = 1.0
    m = Scaled()
    cm = ember.compile(m)
    np.testing.assert_array_equal(cm(x).numpy(), (x * 2 * 3 + 1).numpy())
    m.scale = 5.0
    np.testing.assert_array_equal(cm(x).numpy(), (x * 5 * 3 + 1).numpy())
    OFFSET = -1.0
    np.testing.assert_array_equal(cm(x).numpy(), (x * 5 * 3 - 1).numpy())


GLOBAL_FACTOR = [3.0]
OFFSET = 1.0


def test_parameters_are_read_at_every_call():
    lin = nn.Linear(3, 2)
    compiled = ember.compile(lin)
    x = ember.randn(4, 3)
    compiled(x)
    with ember.no_grad():
        lin.weight.mul_(2)
    np.testing.assert_array_equal(compiled(x).detach().numpy(), lin(x).detach().numpy())
    lin.weight = nn.Parameter(ember.randn(2, 3))  # a new parameter object
    np.testing.assert_array_equal(compiled(x).detach().numpy(), lin(x).detach().numpy())


def test_nested_parameters_and_buffers_are_read_at_every_call():
    # a replay reads a submodule's parameter straight from its owner's dict: every way of
    # changing one must still reach the compiled call
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)).eval()
    compiled = ember.compile(net)
    x = ember.randn(5, 3)

    def check():
        np.testing.assert_array_equal(compiled(x).detach().numpy(), net(x).detach().numpy())

    check()
    net[0].weight = nn.Parameter(ember.randn(4, 3))  # through Module.__setattr__
    check()
    net[2]._parameters["bias"] = nn.Parameter(ember.randn(2))  # straight into the owner's dict
    check()
    net[1]._buffers["running_mean"] = ember.randn(4)
    check()
    net[1].register_buffer("running_var", ember.rand(4) + 0.5)
    check()
    net[2] = nn.Linear(4, 2)  # a new submodule: a new signature
    check()
    assert len(compiled._compiled._signatures) == 2


def test_switching_train_and_eval_reuses_the_recordings():
    net = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.ReLU())
    compiled = ember.compile(net)
    x = ember.randn(5, 3)
    for _ in range(3):
        net.train()
        ember.manual_seed(1)
        train_out = compiled(x)
        ember.manual_seed(1)
        np.testing.assert_array_equal(train_out.detach().numpy(), net(x).detach().numpy())
        net.eval()
        np.testing.assert_array_equal(compiled(x).detach().numpy(), net(x).detach().numpy())
    assert compiled._compiled._recordings == 2


def test_bad_arguments_raise_torchs_errors():
    for kwargs in ({"mode": "fast"}, {"mode": "default", "options": {}}):
        with pytest.raises(RuntimeError) as theirs:
            torch.compile(lambda x: x, **kwargs)
        with pytest.raises(RuntimeError) as ours:
            ember.compile(lambda x: x, **kwargs)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ember._dynamo.exc.InvalidBackend) as e:
        ember.compile(lambda x: x, backend="nope")
    assert "Invalid backend: 'nope'" in str(e.value) and "eager" in str(e.value) and "inductor" in str(e.value)
    assert isinstance(e.value, RuntimeError)


def test_list_backends_and_custom_backend_receives_the_graph():
    assert "inductor" in ember.compiler.list_backends() and "eager" not in ember.compiler.list_backends()
    assert {"eager", "aot_eager", "inductor"} <= set(ember.compiler.list_backends(exclude_tags=None))
    seen = []

    def my_backend(gm, example_inputs):
        seen.append(([n.op for n in gm.graph.nodes], [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    f = ember.compile(lambda x: ember.relu(x) + 1, backend=my_backend)
    x = ember.randn(2, 3)
    np.testing.assert_array_equal(f(x).numpy(), (ember.relu(x) + 1).numpy())
    f(x)
    assert seen == [(["placeholder", "call_function", "call_function", "output"], [(2, 3)])]


def test_fullgraph_raises_at_a_graph_break():
    with pytest.raises(ember._dynamo.exc.Unsupported, match="truth value"):
        ember.compile(branchy, fullgraph=True)(ember.ones(3))
    f = ember.compile(lambda x: x * 2, fullgraph=True)
    np.testing.assert_array_equal(f(ember.ones(2)).numpy(), [2.0, 2.0])


def test_disable_runs_its_python_at_every_call_and_allow_in_graph_keeps_a_call_whole():
    counter = []

    @ember.compiler.disable
    def logged(x):
        counter.append(1)
        return x + 1

    def inner(x):
        counter.append("inner")
        return x * 3

    kept = ember.compiler.allow_in_graph(inner)
    f = ember.compile(lambda x: kept(logged(x)).sum())
    x = ember.ones(3)
    for _ in range(3):
        assert f(x).item() == 18.0
    assert counter == [1, "inner"] * 3


def test_module_compile_in_place_and_optimized_module_state_dict_keys_match_torch():
    ember.manual_seed(4)
    model = mlp().eval()
    x = ember.randn(3, 8)
    expected = model(x).detach().numpy()
    model.compile()
    np.testing.assert_array_equal(model(x).detach().numpy(), expected)
    np.testing.assert_array_equal(model(x).detach().numpy(), expected)
    assert list(model.state_dict()) == list(mlp().state_dict())
    tmodel = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.GELU(),
                                 torch.nn.Dropout(0.25), torch.nn.Linear(16, 3))
    ours, theirs = ember.compile(mlp()), torch.compile(tmodel)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert all(p is q for p, q in zip(ours.parameters(), ours._orig_mod.parameters()))
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]
    assert ember.compile(model, disable=True) is model


def test_is_compiling_only_while_recording():
    states = []

    def f(x):
        states.append(ember.compiler.is_compiling())
        return x + 1

    assert not ember.compiler.is_compiling() and not torch.compiler.is_compiling()
    cf = ember.compile(f)
    cf(ember.ones(1))
    assert states == [True]


def test_a_tensor_made_outside_ops_makes_the_signature_run_eagerly():
    def g(x):
        arr = (x * 2).detach().numpy().copy()  # a break, then a tensor made by code that is no op
        from ember._tensor import _make
        return _make(arr + 1, x.dtype) * 1

    cg = ember.compile(g)
    for v in (1.0, 2.0, 3.0):
        np.testing.assert_array_equal(cg(ember.tensor([v])).numpy(), [2 * v + 1])
    out = ember._dynamo.explain(g)(ember.tensor([1.0]))
    assert out.eager_reasons and "outside ember's ops" in out.eager_reasons[0]


def test_concurrent_calls_from_threads():
    ember.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4)).eval()
    compiled = ember.compile(model)
    inputs = [ember.randn(8, 16) for _ in range(8)]
    for x in inputs:  # eager and compiled agree (the fused tanh is a few ulp from numpy's)
        np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    expected = [compiled(x).detach().numpy() for x in inputs]  # threads must give the serial answers exactly
    errors = []

    def worker(k):
        try:
            for _ in range(20):
                np.testing.assert_array_equal(compiled(inputs[k]).detach().numpy(), expected[k])
        except Exception as e:  # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_an_optimizer_step_then_more_ops_in_one_compiled_function():
    ember.manual_seed(6)
    model = nn.Linear(4, 2)
    twin = copy.deepcopy(model)

    def make(net):
        opt = ember.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            net(x).square().sum().backward()
            opt.step()
            opt.zero_grad()
            return net(x)  # reads the parameters the step just changed
        return step

    compiled, eager = ember.compile(make(model), backend="aot_eager"), make(twin)
    x = ember.randn(3, 4)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x).detach().numpy(), eager(x).detach().numpy())
    assert not compiled._ember_compiled.log or all(e[0] != "eager" for e in compiled._ember_compiled.log)


def test_explain_names_the_guard_that_failed_for_each_recompile():
    def scale(x, k):
        return x * k

    compiled = ember.compile(scale)
    compiled(ember.ones(3), 2)
    compiled(ember.ones(4), 2)
    compiled(ember.ones(4), 3)
    report = ember._dynamo.explain(compiled)(ember.ones(4), 3)
    assert report.recompile_reasons == [
        "a guard failed: tensor 'x' size mismatch at index 0. expected 3, actual 4",
        "a guard failed: argument 1 changed: 2 -> 3"]
    assert "Recompile Reasons" in str(report)
