"""ember.fx.subgraph_rewriter against torch.fx's: the same graphs, patterns and
replacements built by hand in both libraries; matches, rewritten graphs, generated code
and results compared."""

import operator

import numpy as np
import pytest
import torch
import torch.fx
import torch.fx.subgraph_rewriter
from _compare import as_ember_code, assert_same_graph

import ember
import ember.fx
import ember.fx.subgraph_rewriter


def libs():
    return [(torch, torch.fx), (ember, ember.fx)]


def gm_of(lib, fx, body, n_inputs=1, root=None):
    """A GraphModule from ``body(g, lib, *placeholders) -> output value``."""
    g = fx.Graph()
    ins = [g.placeholder(f"in{i}" if n_inputs > 1 else "x") for i in range(n_inputs)]
    g.output(body(g, lib, *ins))
    return fx.GraphModule(root if root is not None else lib.nn.Module(), g)


def program(g, lib, x):
    """relu->neg twice (one occurrence's relu also used elsewhere), add 1 / add 2."""
    r1 = g.call_function(lib.relu, (x,))
    n1 = g.call_function(lib.neg, (r1,))
    r2 = g.call_function(lib.relu, (n1,))
    n2 = g.call_function(lib.neg, (r2,))
    r3 = g.call_function(lib.relu, (n2,))
    n3 = g.call_function(lib.neg, (r3,))
    keep = g.call_function(operator.mul, (r3, 2.0))  # r3 escapes: that occurrence is not contained
    a1 = g.call_function(operator.add, (n3, 1))
    a2 = g.call_function(operator.add, (a1, 2))
    return (a2, keep)


def neg_relu(g, lib, a):
    return g.call_function(lib.neg, (g.call_function(lib.relu, (a,)),))


def sigmoid(g, lib, a):
    return g.call_function(lib.sigmoid, (a,))


def add_one(g, lib, a):
    return g.call_function(operator.add, (a, 1))


def sub_one(g, lib, a):
    return g.call_function(operator.sub, (a, 1))


X = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")


def rewrite(lib, fx, pattern, replacement, **kw):
    gm = gm_of(lib, fx, program)
    p, r = gm_of(lib, fx, pattern), gm_of(lib, fx, replacement)
    if kw:
        matches = fx.subgraph_rewriter.replace_pattern_with_filters(gm, p, r, **kw)
    else:
        matches = fx.subgraph_rewriter.replace_pattern(gm, p, r)
    summary = [(m.anchor.name, sorted((k.name, v.name) for k, v in m.nodes_map.items())) for m in matches]
    if kw:
        summary.append([[n.name for n in m.replacements] for m in matches])
    return gm, summary


@pytest.mark.parametrize("pattern,replacement", [(neg_relu, sigmoid), (add_one, sub_one)])
def test_replace_pattern_like_torch(pattern, replacement):
    tgm, tmatches = rewrite(torch, torch.fx, pattern, replacement)
    egm, ematches = rewrite(ember, ember.fx, pattern, replacement)
    assert ematches == tmatches and len(ematches) >= 1
    assert_same_graph(tgm.graph, egm.graph)
    assert as_ember_code(tgm.code) == egm.code
    tout, eout = tgm(torch.tensor(X)), egm(ember.tensor(X))
    for t, e in zip(tout, eout):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_filters_and_ignore_literals_like_torch():
    def keep_first_add(match, original, pattern):
        return all(n.name != "add_1" for n in match.nodes_map.values())
    results = []
    for lib, fx in libs():
        results.append(rewrite(lib, fx, add_one, sub_one, ignore_literals=True)[1])
        results.append(rewrite(lib, fx, add_one, sub_one, ignore_literals=True, match_filters=[keep_first_add])[1])
        results.append(rewrite(lib, fx, neg_relu, sigmoid, node_name_match="neg")[1])
    assert results[:3] == results[3:]
    assert len(results[3]) - 1 == 2 and len(results[4]) - 1 == 1


def test_chained_occurrences_and_multiple_outputs():
    def chain(g, lib, x):
        a = g.call_function(lib.exp, (x,))
        b = g.call_function(lib.exp, (a,))
        c = g.call_function(lib.exp, (b,))
        return g.call_function(lib.exp, (c,))

    def one_exp(g, lib, a):
        return g.call_function(lib.exp, (a,))

    def two_outputs(g, lib, a):
        e = g.call_function(lib.exp, (a,))
        return (g.call_function(lib.sin, (e,)), g.call_function(lib.cos, (e,)))

    def two_outputs_repl(g, lib, a):
        return (g.call_function(lib.cos, (a,)), g.call_function(lib.sin, (a,)))

    def uses_two(g, lib, x):
        s, c = two_outputs(g, lib, x)
        return g.call_function(operator.add, (s, c))

    def tanh(g, lib, a):
        return g.call_function(lib.tanh, (a,))

    out = []
    for lib, fx in libs():
        gm = gm_of(lib, fx, chain)
        m = fx.subgraph_rewriter.replace_pattern(gm, gm_of(lib, fx, one_exp), gm_of(lib, fx, tanh))
        out.append((len(m), as_ember_code(gm.code), float(gm(lib.tensor(0.3)))))
        gm = gm_of(lib, fx, uses_two)
        m = fx.subgraph_rewriter.replace_pattern(gm, gm_of(lib, fx, two_outputs), gm_of(lib, fx, two_outputs_repl))
        out.append((len(m), as_ember_code(gm.code), float(gm(lib.tensor(0.3)))))
    assert out[0][:2] == out[2][:2] and out[1][:2] == out[3][:2]
    assert out[0][2] == pytest.approx(out[2][2], rel=1e-6) and out[1][2] == pytest.approx(out[3][2], rel=1e-6)


def test_replacement_submodules_are_copied():
    out = []
    for lib, fx in libs():
        gm = gm_of(lib, fx, program)
        rep_root = lib.nn.Module()
        rep_root.act = lib.nn.Tanh()

        def with_module(g, lib, a):
            return g.call_module("act", (a,))
        rep = gm_of(lib, fx, with_module, root=rep_root)
        fx.subgraph_rewriter.replace_pattern(gm, gm_of(lib, fx, neg_relu), rep)
        assert isinstance(gm.act, lib.nn.Tanh) and gm.act is not rep.act
        out.append((as_ember_code(gm.code), [n for n, _ in gm.named_modules()]))
    assert out[0] == out[1]


def test_matcher_errors_like_torch():
    from torch.fx.passes.utils.matcher_utils import SubgraphMatcher as TMatcher

    from ember.fx.passes.utils.matcher_utils import SubgraphMatcher
    msgs = []
    for lib, fx, M in [(torch, torch.fx, TMatcher), (ember, ember.fx, SubgraphMatcher)]:
        with pytest.raises(ValueError) as e1:
            M(fx.Graph())
        g = fx.Graph()
        x = g.placeholder("x")
        g.call_function(lib.relu, (x,))
        g.output(x)
        with pytest.raises(AssertionError) as e2:
            M(g)
        gm = gm_of(lib, fx, program)
        with pytest.raises(AssertionError) as e3:
            fx.subgraph_rewriter.replace_pattern_with_filters(gm, gm_of(lib, fx, neg_relu), None)
        msgs.append([str(e.value) for e in (e1, e2, e3)])
    assert msgs[0] == msgs[1]
