"""ember.fx.Transformer against torch.fx.Transformer: the same hand-built GraphModule
transformed by both (identity, and the docs' op-swapping rewrite), the new graphs
compared node by node and run against torch."""

import operator

import torch
import torch.fx
from _compare import as_ember_code, assert_same_graph
from _programs import X, build, close

import ember
import ember.fx


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
