"""ember.fx.Interpreter against torch.fx.Interpreter: the same hand-built graph run by
both, with the same overrides (recording, inverting, profiling), compared on the order
of calls, the values kept alive, the errors and the results."""

import operator
import time

import numpy as np
import pytest
import torch
import torch.fx
from _compare import as_ember_code
from _programs import X, build, close

import ember
import ember.fx


def libs():
    return [(torch, torch.fx), (ember, ember.fx)]


def test_run_matches_module_and_torch():
    tgm, egm = build(torch, torch.fx), build(ember, ember.fx)
    tout = torch.fx.Interpreter(tgm).run(torch.tensor(X))
    eout = ember.fx.Interpreter(egm).run(ember.tensor(X))
    close(eout[0], tout[0])
    close(eout[1][0], tout[1][0])
    close(eout[1][1]["w"], tout[1][1]["w"])
    close(eout[0], egm(ember.tensor(X))[0])
    tout = torch.fx.Interpreter(tgm).run(torch.tensor(X), -2.0)
    eout = ember.fx.Interpreter(egm).run(ember.tensor(X), -2.0)
    close(eout[0], tout[0])


def record(lib, fx, gc):
    class Recorder(fx.Interpreter):
        def run_node(self, n):
            self.log.append((n.op, n.name, sorted(k.name for k in self.env)))
            return super().run_node(n)

    gm = build(lib, fx)
    it = Recorder(gm, garbage_collect_values=gc)
    it.log = []
    it.run(lib.tensor(X))
    return it.log, sorted(k.name for k in it.env)


@pytest.mark.parametrize("gc", [True, False])
def test_calls_and_live_values_match(gc):
    assert record(torch, torch.fx, gc) == record(ember, ember.fx, gc)


def test_initial_env_and_boxed_run():
    results = []
    for lib, fx in libs():
        gm = build(lib, fx)
        nodes = {n.name: n for n in gm.graph.nodes}
        it = fx.Interpreter(gm)
        lin_val = lib.ones(5, 3)
        out = it.run(lib.tensor(X), initial_env={nodes["lin"]: lin_val})
        args = [lib.tensor(X), 0.5]
        boxed = fx.Interpreter(gm).boxed_run(args)
        assert args == []
        with pytest.raises(RuntimeError) as err:
            fx.Interpreter(gm).boxed_run([lib.tensor(X)])
        results.append((out[0].detach().numpy(), boxed[0].detach().numpy(), str(err.value)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)
    assert results[0][2] == results[1][2]


def test_errors_match():
    msgs = []
    for lib, fx in libs():
        gm = build(lib, fx)
        out = []
        g = fx.Graph()
        g.placeholder("a")
        g.output(None)
        with pytest.raises(RuntimeError) as e:
            fx.Interpreter(gm, graph=g).run()
        out.append(str(e.value).split("\n")[0])
        with pytest.raises(RuntimeError) as e:
            fx.Interpreter(gm).fetch_attr("lin.nothere.x")
        out.append(str(e.value))
        # a node whose input was never computed
        g2 = fx.Graph()
        a = g2.placeholder("a")
        b = g2.call_function(lib.neg, (a,))
        g2.output(b)
        it = fx.Interpreter(gm, graph=g2)
        it.env = {}
        with pytest.raises(RuntimeError) as e:
            it.fetch_args_kwargs_from_env(b)
        out.append(str(e.value))
        # an op failing inside: the message gains the node
        g3 = fx.Graph()
        a = g3.placeholder("a")
        g3.output(g3.call_function(operator.truediv, (a, 0)))
        with pytest.raises(ZeroDivisionError) as e:
            fx.Interpreter(gm, graph=g3).run(1)
        out.append(as_ember_code(str(e.value).split("\nOriginal traceback")[0]))
        g4 = fx.Graph()
        a = g4.placeholder("a")
        g4.output(g4.call_function(operator.getitem, (a, "k")))
        with pytest.raises(RuntimeError) as e:
            fx.Interpreter(gm, graph=g4).run({})
        out.append(str(e.value).split("\nOriginal traceback")[0])
        msgs.append(out)
    assert msgs[0] == msgs[1]


def test_star_args_placeholder():
    outs = []
    for lib, fx in libs():
        g = fx.Graph()
        a = g.placeholder("a")
        rest = g.placeholder("*rest")
        g.output((a, rest))
        outs.append(fx.Interpreter(fx.GraphModule(lib.nn.Module(), g)).run(1, 2, 3))
    assert outs[0] == outs[1] == (1, [2, 3])


def test_negating_interpreter_like_torch_docs():
    """The torch.fx docs' example: swap sigmoid for neg and neg for sigmoid while running."""
    def run(lib, fx):
        class NegSigmSwap(fx.Interpreter):
            def call_function(self, target, args, kwargs):
                if target is lib.sigmoid:
                    return lib.neg(*args, **kwargs)
                return super().call_function(target, args, kwargs)

            def call_method(self, target, args, kwargs):
                if target == "neg":
                    call_self, *args_tail = args
                    return call_self.sigmoid(*args_tail, **kwargs)
                return super().call_method(target, args, kwargs)

        g = fx.Graph()
        x = g.placeholder("x")
        s = g.call_function(lib.sigmoid, (x,))
        n = g.call_method("neg", (s,))
        g.output(n)
        return NegSigmSwap(fx.GraphModule(lib.nn.Module(), g)).run(lib.tensor(X))
    close(run(ember, ember.fx), run(torch, torch.fx))


def test_profiling_interpreter_counts_every_node():
    def run(lib, fx):
        class Profile(fx.Interpreter):
            def run_node(self, n):
                t0 = time.perf_counter()
                out = super().run_node(n)
                self.times[(n.op, n.name)] = time.perf_counter() - t0
                return out
        it = Profile(build(lib, fx))
        it.times = {}
        it.run(lib.tensor(X))
        return list(it.times)
    assert run(torch, torch.fx) == run(ember, ember.fx)


def test_inverting_interpreter():
    """An interpreter that runs a graph of invertible ops backwards, as in torch.fx's
    examples: exp <-> log, neg <-> neg, add c <-> sub c."""
    def invert(lib, fx):
        inverse = {lib.exp: lib.log, lib.log: lib.exp, lib.neg: lib.neg}
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.exp, (x,))
        b = g.call_function(lib.neg, (a,))
        c = g.call_function(operator.add, (b, 3.0))
        g.output(c)
        gm = fx.GraphModule(lib.nn.Module(), g)

        class Inverter(fx.Interpreter):
            def run(self, y):
                value = y
                for n in reversed(list(self.graph.nodes)):
                    if n.op == "call_function":
                        if n.target is operator.add:
                            value = value - n.args[1]
                        else:
                            value = inverse[n.target](value)
                return value
        y = gm(lib.tensor(X))
        return y, Inverter(gm).run(y)
    ty, tx = invert(torch, torch.fx)
    ey, ex = invert(ember, ember.fx)
    close(ey, ty)
    close(ex, tx)
    np.testing.assert_allclose(ex.numpy(), X, rtol=1e-4, atol=1e-5)
