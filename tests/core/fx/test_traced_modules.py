"""The IR on programs that go through the tracer (symbolic_trace, Proxy): Transformer
against torch.fx.Transformer, function patterns in replace_pattern, and a traced model's
GraphModule pickled, deep-copied, exported with to_folder, shape-propagated and printed,
each compared with torch.fx."""

import copy
import operator
import pickle

import numpy as np
import pytest
import torch
import torch.fx
from _compare import as_ember_code, assert_same_graph
from _programs import X, build, close
from test_rewriter import gm_of, libs, program

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp


def test_identity_transform_copies_the_graph():
    tnew = torch.fx.Transformer(build(torch, torch.fx)).transform()
    enew = ember.fx.Transformer(build(ember, ember.fx)).transform()
    assert_same_graph(tnew.graph, enew.graph)
    assert as_ember_code(tnew.code) == enew.code
    close(enew(ember.tensor(X))[0], tnew(torch.tensor(X))[0])


def swap(lib, fx):
    """relu -> sigmoid, operator.mul -> operator.add (through a Proxy expression), the
    sum method -> mean, and the output wrapped."""
    class Swap(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is lib.relu:
                return super().call_function(lib.sigmoid, args, kwargs)
            if target is operator.mul:
                a, b = args
                return a + b  # Proxy arithmetic records an operator.add node
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "sum":
                return super().call_method("mean", args, kwargs)
            return super().call_method(target, args, kwargs)

    return Swap(build(lib, fx)).transform()


def test_rewriting_transform_matches_torch():
    tnew, enew = swap(torch, torch.fx), swap(ember, ember.fx)
    assert_same_graph(tnew.graph, enew.graph)
    assert as_ember_code(tnew.code) == enew.code
    tout, eout = tnew(torch.tensor(X)), enew(ember.tensor(X))
    close(eout[0], tout[0])
    close(eout[1][0], tout[1][0])
    assert [n.op for n in enew.graph.nodes].count("call_module") == 1  # submodules stay leaves


def test_function_patterns_are_traced():
    """Patterns written as functions, as torch.fx programs write them (needs the tracer)."""
    def functions(lib):
        def pattern(a):
            return lib.neg(lib.relu(a))

        def replacement(a):
            return lib.sigmoid(a)
        return pattern, replacement
    out = []
    for lib, fx in libs():
        gm = gm_of(lib, fx, program)
        matches = fx.replace_pattern(gm, *functions(lib))
        out.append((len(matches), as_ember_code(gm.code)))
    assert out[0] == out[1]


def block(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 3, 3, padding=1)
            self.bn = nn.BatchNorm2d(3)
            self.layers = nn.Sequential(nn.ReLU(), nn.Conv2d(3, 3, 1))
            self.register_buffer("scale", lib.full((1,), 0.5))

        def forward(self, x):
            y = F.relu(self.bn(self.conv1(x)))
            y = self.layers(y) * self.scale
            y = lib.flatten(y + x, 1)
            return F.dropout(y, 0.1, training=False).sum(dim=-1)

    return Block().eval()


def traced_pair():
    tm, em = block(torch), block(ember)
    em.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return torch.fx.symbolic_trace(tm), ember.fx.symbolic_trace(em)


XB = np.random.default_rng(2).standard_normal((2, 3, 5, 5)).astype("float32")


def test_traced_module_round_trips(tmp_path, monkeypatch):
    tgm, egm = traced_pair()
    assert as_ember_code(tgm.code) == egm.code
    ref = tgm(torch.tensor(XB))
    for clone in (pickle.loads(pickle.dumps(egm)), copy.deepcopy(egm)):
        assert_same_graph(tgm.graph, clone.graph)
        close(clone(ember.tensor(XB)), ref)
    with pytest.warns(UserWarning, match=r"saved as pickled files instead: \['layers'\]"):
        egm.to_folder(tmp_path / "traced_block")
    monkeypatch.syspath_prepend(str(tmp_path))
    from traced_block import FxModule
    close(FxModule().eval()(ember.tensor(XB)), ref)  # a fresh module trains, as torch's does


def test_traced_module_shape_prop_and_print_readable():
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    tgm, egm = traced_pair()
    TShapeProp(tgm).propagate(torch.tensor(XB))
    ShapeProp(egm).propagate(ember.tensor(XB))
    assert as_ember_code(tgm.print_readable(print_output=False)) == egm.print_readable(print_output=False)


def test_transformer_carries_node_meta_like_torch():
    """New nodes take the stack trace, module stack and custom meta of the node they come
    from (torch also adds its own provenance keys, from_node and seq_nr)."""
    out = []
    for lib, fx in libs():
        gm = build(lib, fx)
        for n in gm.graph.nodes:
            n.meta.update(custom={"k": n.name}, other=1, nn_module_stack={"lin": ("lin", "Linear")})
            n.stack_trace = f'File "prog.py", line 3, in forward\n    {n.name}()'
        new = fx.Transformer(gm).transform()
        out.append([(n.name, sorted(set(n.meta) - {"from_node", "seq_nr"}), n.meta.get("custom"), n.stack_trace)
                    for n in new.graph.nodes])
    assert out[0] == out[1]
    from ember.fx import traceback as fx_traceback
    assert not fx_traceback.has_preserved_node_meta() and fx_traceback.get_current_meta() == {}
