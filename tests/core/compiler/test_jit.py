"""ember.jit against torch.jit in eager programs: trace gives a re-executable graph module
with the module's parameters; a value read from a tensor becomes a constant with a
TracerWarning; script, the decorators and the predicates behave as torch's do outside
TorchScript; save/load say what to use instead."""

import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def small_net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Conv2d(1, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.ReLU(), lib.nn.Flatten(),
                             lib.nn.Linear(4 * 6 * 6, 3)).eval()


def test_trace_module_reexecutes_on_new_inputs_and_keeps_parameters():
    net = small_net(ember)
    traced = ember.jit.trace(net, ember.randn(2, 1, 8, 8))
    for n in (2, 5):
        x = ember.randn(n, 1, 8, 8) if n == 2 else ember.randn(2, 1, 8, 8)
        np.testing.assert_array_equal(traced(x).detach().numpy(), net(x).detach().numpy())
    assert [name for name, _ in traced.named_parameters()] == [name for name, _ in net.named_parameters()]
    assert all(p is q for p, q in zip(traced.parameters(), net.parameters()))
    code = traced.code
    assert "ember.conv2d" in code and "ember.relu" in code and "def forward(self, input)" in code
    nodes = [n.op for n in traced.graph.nodes]
    assert nodes.count("placeholder") == 1 and nodes[-1] == "output"


def test_trace_function_returns_the_structure_of_the_result():
    def f(x, y):
        return {"sum": x + y, "pair": (x * y, y.relu())}

    g = ember.jit.trace(f, (ember.randn(3), ember.randn(3)))
    x, y = ember.randn(3), ember.randn(3)
    out, ref = g(x, y), f(x, y)
    assert set(out) == {"sum", "pair"} and isinstance(out["pair"], tuple)
    np.testing.assert_array_equal(out["pair"][1].numpy(), ref["pair"][1].numpy())


def test_data_dependent_value_is_a_constant_with_a_tracer_warning_like_torch():
    def f(x):
        return x * 2 if x.sum() > 0 else -x

    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        g = ember.jit.trace(f, ember.ones(3))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        h = torch.jit.trace(f, torch.ones(3))
    assert any(w.category is ember.jit.TracerWarning for w in ours)
    assert any(w.category is torch.jit.TracerWarning for w in theirs)
    ours_w = next(w for w in ours if w.category is ember.jit.TracerWarning)
    assert ours_w.filename == __file__ and ours_w.lineno == f.__code__.co_firstlineno + 1
    np.testing.assert_array_equal(g(-ember.ones(3)).numpy(), h(-torch.ones(3)).numpy())  # both keep the branch


def test_is_tracing_inside_trace_only():
    seen = []

    def f(x):
        seen.append((ember.jit.is_tracing(), ember.jit.is_scripting()))
        return x + 1

    ember.jit.trace(f, ember.ones(1))
    assert seen == [(True, False)]
    assert not ember.jit.is_tracing() and ember.jit.is_tracing() == torch.jit.is_tracing()
    assert ember.jit.is_scripting() == torch.jit.is_scripting() is False


def test_script_returns_the_module_with_a_warning():
    net = small_net(ember)
    with pytest.warns(UserWarning, match="TorchScript is not carried over"):
        assert ember.jit.script(net) is net


def test_pass_through_decorators_and_annotate():
    class M(nn.Module):
        @ember.jit.ignore
        def a(self):
            return 1

        @ember.jit.ignore(drop=True)
        def b(self):
            return 2

        @ember.jit.unused
        def c(self):
            return 3

        @ember.jit.export
        def d(self):
            return 4

    m = M()
    assert (m.a(), m.b(), m.c(), m.d()) == (1, 2, 3, 4)
    assert ember.jit.annotate(list, [1]) == torch.jit.annotate(list, [1]) == [1]
    assert ember.jit.Final is torch.jit.Final
    with pytest.warns(DeprecationWarning):  # as torch 2.13's
        fut = ember.jit.fork(lambda v: v * 2, 21)
    with pytest.warns(DeprecationWarning):
        assert ember.jit.wait(fut) == 42
    with pytest.warns(DeprecationWarning):
        ember.jit.trace(lambda v: v + 1, ember.ones(1))
    assert ember.jit.isinstance([1], list) and not ember.jit.isinstance(1, str)


def test_save_and_load_say_what_to_use_instead(tmp_path):
    with pytest.raises(RuntimeError, match="ember.save"):
        ember.jit.save(small_net(ember), tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match="ember.load"):
        ember.jit.load(tmp_path / "m.pt")
