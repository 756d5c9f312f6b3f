"""ember.fx's Graph, Node and GraphModule against torch.fx: the same graph built by hand
with both libraries, compared node by node, as text, as generated code and by running."""

import copy
import inspect
import operator
import pickle
import re
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.fx
from _compare import as_ember_code, assert_same_graph, torch_public_name
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import ember.fx


def libs():
    return [(torch, torch.fx), (ember, ember.fx)]


def build_basic(lib, fx):
    """x, y=2 -> add, relu, F.relu(inplace=False), .sum(dim=...), call_module, get_attr,
    a tuple/dict output."""
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=2)
    w = g.get_attr("lin.weight")
    a = g.call_function(operator.add, (x, y))
    r = g.call_function(lib.relu, (a,))
    f = g.call_function(lib.nn.functional.relu, (r,), {"inplace": False})
    m = g.call_method("sum", (f,), {"dim": 1, "keepdim": True})
    lin = g.call_module("lin", (f,))
    mm = g.call_function(operator.matmul, (lin, w))
    t = g.call_method("t", (mm,))
    s = g.call_function(operator.getitem, (t, (slice(None), 0)))
    g.output((s, {"m": m, "w": [w, mm]}))
    return g


def root(lib, seed=0):
    m = lib.nn.Module()
    m.lin = lib.nn.Linear(3, 3)
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        m.lin.weight.copy_(lib.tensor(rng.standard_normal((3, 3)).astype("float32")))
        m.lin.bias.copy_(lib.tensor(rng.standard_normal(3).astype("float32")))
    return m


def test_build_by_hand_same_nodes_text_and_code():
    tg, eg = build_basic(torch, torch.fx), build_basic(ember, ember.fx)
    assert_same_graph(tg, eg)
    assert as_ember_code(str(tg)) == str(eg)
    assert as_ember_code(tg.python_code("self").src) == eg.python_code("self").src
    assert as_ember_code(tg.python_code("root").src) == eg.python_code("root").src


def test_graph_module_runs_like_torch():
    tgm = torch.fx.GraphModule(root(torch), build_basic(torch, torch.fx))
    egm = ember.fx.GraphModule(root(ember), build_basic(ember, ember.fx))
    assert as_ember_code(tgm.code) == egm.code
    x = np.random.default_rng(1).standard_normal((4, 3)).astype("float32")
    ts, tout = tgm(torch.tensor(x))
    es, eout = egm(ember.tensor(x))
    np.testing.assert_allclose(es.detach().numpy(), ts.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eout["m"].detach().numpy(), tout["m"].detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eout["w"][1].detach().numpy(), tout["w"][1].detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # the default of y is used; passing it changes the result as in torch
    ts2, _ = tgm(torch.tensor(x), -1)
    es2, _ = egm(ember.tensor(x), -1)
    np.testing.assert_allclose(es2.detach().numpy(), ts2.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert type(egm).__name__ == type(tgm).__name__ == "GraphModule"
    assert [k for k, _ in egm.named_parameters()] == [k for k, _ in tgm.named_parameters()]


def test_names_made_unique_like_torch():
    def build(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x")
        nodes = [x]
        for name in ["add", "add", "add_1", "add_7", "add", "sum", "list", "if", "a.b", "1x", "", "foo_01",
                     "CamelCase", "self", "x", "torch", "pytree", "device", "inf", "NoneType", "print", "_"]:
            nodes.append(g.call_function(operator.add, (nodes[-1], 1), name=name or None))
        for target in ["__add__", "camelCase", "add_", "relu"]:
            nodes.append(g.call_method(target, (nodes[-1],)))
        nodes.append(g.call_function(lib.nn.functional.relu, (nodes[-1],)))
        nodes.append(g.call_function(getattr, (nodes[-1], "shape")))
        g.output(nodes[-1])
        return g
    tg, eg = build(torch, torch.fx), build(ember, ember.fx)
    assert_same_graph(tg, eg)
    assert as_ember_code(tg.python_code("self").src) == eg.python_code("self").src


def test_generated_code_spells_public_names():
    def build(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.linalg.norm, (x,))
        b = g.call_function(lib.nn.functional.linear, (x, x))
        c = g.call_function(lib.nn.functional.dropout, (b,), {"p": 0.5, "training": False})
        d = g.call_function(lib.cat, ([c, c],), {"dim": 0})
        e = g.call_function(lib.nn.functional.conv2d, (d, d))
        f = g.call_method("to", (e,), {"dtype": lib.float64})
        h = g.call_function(operator.neg, (f,))
        i = g.call_function(operator.setitem, (h, 0, 1.0))
        g.output((a, i))
        return g
    ecode = build(ember, ember.fx).python_code("self").src
    tcode = build(torch, torch.fx).python_code("self").src
    assert "ember.linalg.norm(x)" in ecode
    assert "ember.nn.functional.linear(x, x)" in ecode
    assert "ember.nn.functional.dropout(linear, p = 0.5, training = False)" in ecode
    assert "ember.cat([dropout, dropout], dim = 0)" in ecode
    assert "ember.conv2d(cat, cat)" in ecode  # torch's F.conv2d is torch.conv2d too
    assert "conv2d.to(dtype = ember.float64)" in ecode
    assert "neg = -to" in ecode and "neg[0] = 1.0;  setitem = neg" in ecode
    # torch spells linear and norm by their private homes; every other line is the same
    tlines = [ln for ln in as_ember_code(tcode).split("\n") if "linear" not in ln and "norm" not in ln]
    elines = [ln for ln in ecode.split("\n") if "linear" not in ln and "norm" not in ln]
    assert tlines == elines


def test_qualified_names():
    from torch.fx.node import _get_qualified_name as tq

    from ember.fx.node import _get_qualified_name as q
    assert q(ember.relu) == "ember.relu"
    assert q(ember.nn.functional.relu) == "ember.nn.functional.relu"
    assert q(ember.nn.functional.linear) == "ember.nn.functional.linear"
    assert q(ember.linalg.norm) == "ember.linalg.norm"
    assert q(ember.nn.functional.max_pool2d) == "ember.nn.functional.max_pool2d"
    for fn in [operator.add, operator.getitem, getattr, len]:
        assert q(fn) == tq(fn)
    for name in ["lerp", "addcmul", "eq", "where", "clamp"]:  # the op inside an out= wrapper: the public name
        fn = getattr(ember, name)
        while hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        assert q(fn) == f"ember.{name}", name
    for name in ["size", "view", "__add__"]:
        assert q(getattr(ember.Tensor, name)) == tq(getattr(torch.Tensor, name)).replace("torch", "ember")
    assert q(ember.Tensor.add) == "ember.add"  # one function object: the Tensor method is the op
    for name in ["relu", "add", "cat", "conv2d", "matmul", "sigmoid", "tanh", "softmax", "stack"]:
        assert q(getattr(ember, name)) == tq(getattr(torch, name)).replace("torch", "ember")
    for name in ["relu", "gelu", "softmax", "dropout", "layer_norm", "batch_norm", "max_pool2d",
                 "adaptive_avg_pool2d", "cross_entropy", "conv2d"]:
        assert q(getattr(ember.nn.functional, name)) == torch_public_name(getattr(torch.nn.functional, name)).replace(
            "torch", "ember"), name


def test_erase_node_errors_match():
    msgs = []
    for lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        r = g.call_function(lib.relu, (x,))
        g.output(r)
        with pytest.raises(RuntimeError) as err:
            g.erase_node(x)
        other = fx.Graph()
        with pytest.raises(RuntimeError) as err2:
            other.erase_node(r.next)
        msgs.append((str(err.value), str(err2.value)))
    assert msgs[0] == msgs[1]
    assert msgs[1][0] == "Tried to erase Node x but it still had 1 users in the graph: {relu: None}!"


def test_erase_node_then_lists_and_users():
    for lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.relu, (x,))
        b = g.call_function(lib.neg, (a,))
        out = g.output(x)
        g.erase_node(b)
        assert list(a.users) == [] and [n.name for n in g.nodes] == ["x", "relu", "output"]
        g.erase_node(a)
        assert list(x.users) == [out] and len(g.nodes) == 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g.erase_node(a)
        assert "already erased" in str(w[0].message)


def test_insert_points_and_moves():
    def build(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x")
        r = g.call_function(lib.relu, (x,))
        out = g.output(r)
        with g.inserting_before(r):
            n1 = g.call_function(lib.neg, (x,))
        with g.inserting_after(r):
            n2 = g.call_function(lib.exp, (r,))
            n3 = g.call_function(lib.exp, (n2,))  # after n2: inserting_after appends in order? (torch: before n2)
        g.inserting_after(None)  # permanently: the start of the graph (after root)
        g.create_node("placeholder", "first")
        with g.inserting_before(None):
            g.call_function(lib.sin, (x,))
        g.inserting_before(out)
        g.call_function(lib.cos, (n1,))
        r.append(n1)  # move n1 after relu
        out.prepend(n3)
        n3.prepend(n3)
        return g
    tg, eg = build(torch, torch.fx), build(ember, ember.fx)
    assert_same_graph(tg, eg)
    tn, en = list(tg.nodes), list(eg.nodes)
    assert [n.name for n in sorted(reversed(en))] == [n.name for n in sorted(reversed(tn))]
    assert [n.prev.name for n in en] == [n.prev.name for n in tn]
    assert [n.next.name for n in en] == [n.next.name for n in tn]
    assert [n.name for n in reversed(eg.nodes)] == [n.name for n in reversed(tg.nodes)]


def test_node_argument_edits():
    def build(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x")
        y = g.placeholder("y")
        a = g.call_function(operator.add, (x, [x, y]), {"alpha": y})
        b = g.call_function(lib.relu, (a,))
        c = g.call_function(operator.mul, (a, b))
        g.output((a, c))
        log = [list(x.users), a.all_input_nodes]
        c.replace_input_with(a, y)
        a.update_arg(0, y)
        a.update_kwarg("beta", x)
        a.insert_arg(1, b)
        log.append([list(n.users) for n in g.nodes])
        changed = a.replace_all_uses_with(x, delete_user_cb=lambda u: u.op != "output")
        log.append(changed)
        b.args = (y,)
        b.kwargs = {"k": (x, slice(x, None, 2))}
        log.append([list(n.users) for n in g.nodes])
        log.append([n.all_input_nodes for n in g.nodes])
        return g, log
    tg, tlog = build(torch, torch.fx)
    eg, elog = build(ember, ember.fx)
    assert_same_graph(tg, eg)
    assert repr(elog) == repr(tlog)


def test_args_are_immutable_with_torch_message():
    msgs = []
    for lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        c = g.call_function(lib.cat, ([x, x],), {"d": {"a": x}})
        assert type(c.args[0]).__name__ == "immutable_list" and type(c.kwargs).__name__ == "immutable_dict"
        with pytest.raises(TypeError) as e1:
            c.args[0].append(x)
        with pytest.raises(TypeError) as e2:
            c.kwargs["e"] = 1
        with pytest.raises(TypeError) as e3:
            c.kwargs["d"].pop("a")
        msgs.append([str(e.value) for e in (e1, e2, e3)])
        assert hash(c.args[0]) == hash((x, x))
        assert pickle.loads(pickle.dumps(fx.immutable_collections.immutable_list([1, 2]))) == [1, 2]
    assert msgs[0] == msgs[1]


def test_bad_targets_raise_like_torch():
    msgs = []
    for lib, fx in libs():
        g = fx.Graph()
        g.placeholder("x")
        with pytest.raises(ValueError) as e1:
            g.create_node("call_function", "relu")
        with pytest.raises(ValueError) as e2:
            g.create_node("call_method", lib.relu)
        with pytest.raises(AssertionError) as e3:
            g.create_node("bogus", "x")
        with pytest.raises(AssertionError) as e4:
            g.create_node("call_method", "relu", [1])
        msgs.append([as_ember_code(str(e.value)) for e in (e1, e3, e4)] + [str(e2.value).split(" target ")[0]])
        assert "but a str is expected" in str(e2.value)
    assert msgs[0] == msgs[1]


def build_dce(lib, fx, mutating=False):
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(lib.relu, (x,))  # dead
    a = g.call_function(lib.neg, (x,))
    g.call_function(lib.exp, (a,))  # dead, and makes neg dead after it goes
    g.call_function(lib.rand, ((2,),))  # random: kept
    g.call_function(operator.setitem, (x, 0, 1.0))  # side effect: kept
    g.call_module("drop", (x,))
    g.call_module("keep", (x,))
    g.call_function(lib.nn.functional.relu, (x,), {"inplace": False})  # dead
    if mutating:  # pure to torch.fx 2.13, which drops them (see Node.is_impure)
        g.call_function(lib.relu_, (x,))
        g.call_method("add_", (x, 1))
        g.call_function(lib.nn.init.normal_, (x,))
        g.call_function(lib.nn.functional.relu, (x,), {"inplace": True})
        g.call_function(lib.add, (x, 1), {"out": x})
        g.call_method("__add__", (x, 1))  # dead: a dunder, not an in-place op
    g.output(x)
    return g


class _Impure:
    _is_impure = True


def dce_root(lib):
    m = lib.nn.Module()
    m.drop = lib.nn.ReLU()
    m.keep = type("Keep", (lib.nn.ReLU, _Impure), {})()
    return m


def test_eliminate_dead_code_like_torch():
    results = []
    for lib, fx in libs():
        gm = fx.GraphModule(dce_root(lib), build_dce(lib, fx))
        changed = gm.graph.eliminate_dead_code()
        again = gm.graph.eliminate_dead_code()
        gm.recompile()
        results.append((changed, again, [n.name for n in gm.graph.nodes], [len(n.users) for n in gm.graph.nodes],
                        as_ember_code(gm.code)))
        g2 = build_dce(lib, fx)
        assert g2.eliminate_dead_code(is_impure_node=lambda n: n.op in ("placeholder", "output")) is True
        results.append([n.name for n in g2.nodes])
    assert results[0] == results[2] and results[1] == results[3]
    assert "rand" in results[2][2] and "keep" in results[2][2] and "drop" not in results[2][2]


def test_eliminate_dead_code_keeps_mutating_calls():
    kept = {}
    for lib, fx in libs():
        gm = fx.GraphModule(dce_root(lib), build_dce(lib, fx, mutating=True))
        gm.graph.eliminate_dead_code()
        kept[lib.__name__] = [n.name for n in gm.graph.nodes]
    assert kept["ember"] == ["x", "rand", "setitem", "keep", "relu_", "add_", "normal_", "relu_2", "add", "output"]
    assert kept["torch"] == ["x", "rand", "setitem", "keep", "output"]  # torch.fx 2.13 drops them


def test_dce_without_owner_for_call_module_raises():
    for _lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        g.call_module("m", (x,))
        g.output(x)
        with pytest.raises(AssertionError, match="owning_module not set for purity check"):
            g.eliminate_dead_code()


def test_lint_errors_match():
    def cases(lib, fx):
        out = []
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(lib.relu, (x,))
        b = g.call_function(lib.neg, (a,))
        g.output(b)
        g.lint()
        x.append(b)  # b now before its input a
        with pytest.raises(RuntimeError) as e:
            g.lint()
        out.append(as_ember_code(str(e.value)))
        other = fx.Graph()
        z = other.placeholder("z")
        g2 = fx.Graph()
        y = g2.placeholder("y")
        g2.call_function(lib.relu, (z,))
        g2.output(y)
        with pytest.raises(RuntimeError) as e:
            g2.lint()
        out.append(as_ember_code(str(e.value)))
        m = lib.nn.Module()
        m.sub = lib.nn.Module()
        m.sub.w = lib.nn.Parameter(lib.ones(2))
        g3 = fx.Graph()
        p = g3.placeholder("p")
        g3.get_attr("sub.w")
        g3.call_module("sub", (p,))
        g3.output(p)
        gm = fx.GraphModule(m, g3)
        gm.graph.lint()
        for target, op in [("sub.nothere", "get_attr"), ("sub.w", "call_module")]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                n = gm.graph.create_node(op, target, (p,) if op == "call_module" else ())
            with pytest.raises(RuntimeError) as e:
                gm.graph.lint()
            out.append(as_ember_code(str(e.value)))
            gm.graph.erase_node(n)
        return out
    assert cases(torch, torch.fx) == cases(ember, ember.fx)


def test_get_attr_and_call_module_warn_when_owner_lacks_target():
    msgs = []
    for lib, fx in libs():
        m = lib.nn.Module()
        m.lin = lib.nn.Linear(2, 2)
        g = fx.Graph()
        x = g.placeholder("x")
        g.output(x)
        gm = fx.GraphModule(m, g)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with gm.graph.inserting_before(gm.graph.output_node()):
                gm.graph.get_attr("nope")
                gm.graph.get_attr("lin.weight")
                gm.graph.get_attr("lin")
        msgs.append([str(x.message) for x in w])
    assert msgs[0] == msgs[1] and len(msgs[1]) == 4  # lin was not copied: the graph did not name it


def test_print_tabular_without_tabulate(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tabulate", None)  # makes the import fail
    outs = []
    for lib, fx in libs():
        g = build_basic(lib, fx)
        with pytest.raises(ImportError):
            g.print_tabular()
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "pip install tabulate" in outs[1]


def test_print_tabular_with_a_table_library(capsys, monkeypatch):
    import types
    fake = types.ModuleType("tabulate")
    fake.tabulate = lambda rows, headers: "\n".join(  # the target column holds each library's own function
        [" | ".join(headers)] + [" | ".join(str(c) for i, c in enumerate(r) if i != 2) for r in rows])
    monkeypatch.setitem(sys.modules, "tabulate", fake)
    outs = []
    for lib, fx in libs():
        build_basic(lib, fx).print_tabular()
        outs.append(as_ember_code(capsys.readouterr().out))
    assert outs[0] == outs[1]


def test_copies():
    def build(lib, fx):
        g = build_basic(lib, fx)
        for n in g.nodes:
            n.meta["tag"] = n.name
        g2 = fx.Graph()
        val_map = {}
        out = g2.graph_copy(g, val_map)
        g2.output(out)
        g3 = copy.deepcopy(g)
        g4 = fx.Graph()
        env = {}
        for n in g.nodes:
            env[n] = g4.node_copy(n, lambda a: env[a])
        return g2, g3, g4, [(k.name, v.name) for k, v in val_map.items()], [n.meta for n in g3.nodes]
    t, e = build(torch, torch.fx), build(ember, ember.fx)
    for tg, eg in zip(t[:3], e[:3]):
        assert_same_graph(tg, eg)
        eg.lint()
    assert t[3:] == e[3:]


def test_find_nodes_and_output_node():
    for lib, fx in libs():
        g = build_basic(lib, fx)
        assert [n.name for n in g.find_nodes(op="placeholder")] == ["x", "y"]
        assert [n.name for n in g.find_nodes(op="call_function", target=operator.add)] == ["add"]
        assert [n.name for n in g.find_nodes(op="call_method", target="t")] == ["t"]
        assert g.output_node().op == "output"
        n = g.find_nodes(op="call_function", target=lib.relu)[0]
        n.target = lib.nn.functional.relu  # the lookup table follows target changes
        assert [m.name for m in g.find_nodes(op="call_function", target=lib.nn.functional.relu)] == ["relu",
                                                                                                      "relu_1"]
        with pytest.raises(AssertionError):
            g.find_nodes(op="call_function")


def test_format_node_and_placeholder_types():
    def build(lib, fx):
        g = fx.Graph()
        x = g.placeholder("x", type_expr=lib.Tensor)
        y = g.placeholder("y", default_value=None)
        a = g.call_function(operator.add, (x, y), type_expr=int)
        w = g.get_attr("w")
        g.output([a, w], type_expr=list)
        return g
    tg, eg = build(torch, torch.fx), build(ember, ember.fx)
    for tn, en in zip(tg.nodes, eg.nodes):
        assert as_ember_code(tn.format_node()) == en.format_node()
    assert as_ember_code(tg.python_code("self").src) == eg.python_code("self").src


def test_empty_graph_and_only_placeholders():
    srcs = []
    for _lib, fx in libs():
        g = fx.Graph()
        srcs.append(g.python_code("self").src)
        assert "pass" in srcs[-1]
        g.placeholder("x")
        srcs.append(g.python_code("self").src)  # torch emits no body at all here
    assert srcs[:2] == srcs[2:]
    tg, eg = torch.fx.Graph(), ember.fx.Graph()
    for g in (tg, eg):
        x = g.placeholder("x")
        g.output(x)
    assert as_ember_code(tg.python_code("self").src) == eg.python_code("self").src


def test_graph_module_from_dict_and_missing_target():
    msgs = []
    for lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        w = g.get_attr("a.b.w")
        c = g.call_module("sub.lin", (x,))
        g.output(operator.add(0, 0) if False else (w, c))
        lin = lib.nn.Linear(2, 2)
        gm = fx.GraphModule({"a.b.w": lib.ones(2), "sub.lin": lin}, g, class_name="Made")
        assert type(gm).__name__ == "Made" and gm.sub.lin is lin and "w" in gm.a.b._buffers
        out = gm(lib.ones(1, 2))
        assert tuple(out[1].shape) == (1, 2)
        with pytest.raises(RuntimeError) as e:
            fx.GraphModule({"a.b.w": lib.ones(2)}, g)
        msgs.append(str(e.value))
        with pytest.raises(RuntimeError) as e:
            fx.GraphModule(3, g)
        assert str(e.value) == "Unsupported type 3 passed for root!"
    assert msgs[0] == msgs[1]


def test_recompile_graph_setter_and_submodule_edits():
    codes = []
    for lib, fx in libs():
        m = root(lib)
        m.other = lib.nn.ReLU()
        gm = fx.GraphModule(m, build_basic(lib, fx))
        assert not hasattr(gm, "other")  # only what the graph names is copied
        n = next(n for n in gm.graph.nodes if n.op == "call_method" and n.target == "t")
        with gm.graph.inserting_after(n):
            neg = gm.graph.call_function(operator.neg, (n,))
        n.replace_all_uses_with(neg, delete_user_cb=lambda u, neg=neg: u is not neg)
        before = gm.code
        gm.recompile()
        assert gm.code != before
        x = lib.ones(2, 3)
        r1 = gm(x)[0]
        gm2 = fx.GraphModule(gm, copy.deepcopy(gm.graph))
        g = fx.Graph()
        p = g.placeholder("p")
        g.output(g.call_module("lin", (p,)))
        gm2.graph = g  # the setter recompiles
        assert gm2(x).shape == (2, 3)
        assert gm.add_submodule("extra.deep", lib.nn.ReLU()) is True
        assert gm.add_submodule("lin.weight.bad", lib.nn.ReLU()) is False
        gm.delete_all_unused_submodules()
        assert not hasattr(gm, "extra")
        assert gm.delete_submodule("lin") is True and gm.delete_submodule("lin") is False
        codes.append((as_ember_code(before), as_ember_code(gm2.code), float(r1.detach().sum())))
    assert codes[0][:2] == codes[1][:2]
    assert codes[0][2] == pytest.approx(codes[1][2], rel=1e-5)


def test_generated_forward_is_per_instance():
    for lib, fx in libs():
        g1, g2 = fx.Graph(), fx.Graph()
        for g, fn in ((g1, lib.neg), (g2, lib.exp)):
            x = g.placeholder("x")
            g.output(g.call_function(fn, (x,)))
        m1, m2 = fx.GraphModule(lib.nn.Module(), g1), fx.GraphModule(lib.nn.Module(), g2)
        assert float(m1(lib.zeros(1))) == 0.0 and float(m2(lib.zeros(1))) == 1.0
        assert "forward" in inspect.getsource(type(m1).forward)


def test_pickle_and_deepcopy_round_trip():
    names = []
    for lib, fx in libs():
        gm = fx.GraphModule(root(lib), build_basic(lib, fx), class_name="Saved")
        x = lib.ones(2, 3)
        ref = gm(x)[0]
        for clone in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
            names.append(type(clone).__name__)
            assert clone.code == gm.code
            np.testing.assert_allclose(clone(x)[0].detach().numpy(), ref.detach().numpy())
            assert clone.lin.weight is not gm.lin.weight
        shallow = copy.copy(gm)
        assert shallow.lin is gm.lin
        gm.note = "plain attribute"
        gm.meta["_user_preserved_attributes"] = {"kept": 7}
        clone = copy.deepcopy(gm)
        names.append((hasattr(clone, "note"), getattr(clone, "kept", None)))
    assert names[:3] == names[3:]


def test_print_readable_and_str():
    tgm = torch.fx.GraphModule(root(torch), build_basic(torch, torch.fx))
    egm = ember.fx.GraphModule(root(ember), build_basic(ember, ember.fx))
    assert as_ember_code(tgm.print_readable(print_output=False)) == egm.print_readable(print_output=False)
    assert as_ember_code(str(tgm)) == str(egm)


def test_to_folder_writes_an_importable_module(tmp_path, monkeypatch):
    gm = ember.fx.GraphModule(root(ember), build_basic(ember, ember.fx))
    gm.register_buffer("buf", ember.ones(2))
    folder = tmp_path / "saved_fx"
    gm.to_folder(folder, "Exported")
    monkeypatch.syspath_prepend(str(tmp_path))
    from saved_fx import Exported
    mod = Exported()
    x = ember.ones(2, 3)
    np.testing.assert_allclose(mod(x)[0].detach().numpy(), gm(x)[0].detach().numpy())
    assert re.search(r"class Exported\(ember\.nn\.Module\)", (folder / "module.py").read_text())


def test_to_folder_pickles_other_children(tmp_path, monkeypatch):
    m = ember.nn.Module()
    m.act = ember.nn.Tanh()
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_module("act", (x,)))
    gm = ember.fx.GraphModule(m, g)
    with pytest.warns(UserWarning, match="saved as pickled files instead: \\['act'\\]"):
        gm.to_folder(tmp_path / "pickled_fx")
    monkeypatch.syspath_prepend(str(tmp_path))
    from pickled_fx import FxModule
    np.testing.assert_allclose(FxModule()(ember.ones(2)).numpy(), np.tanh(np.ones(2, dtype="float32")),
                               rtol=1e-6)


def test_compatibility_decorator_passes_through():
    from ember.fx._compatibility import compatibility

    @compatibility(is_backward_compatible=False)
    def f(a):
        return a + 1
    assert f(1) == 2 and f._fx_backward_compatible is False
    assert ember.fx.map_arg((1, [2]), lambda n: n) == (1, [2])
    with pytest.raises(AssertionError, match="fn must be a callable"):
        ember.fx.map_arg(1, 3)


@pytest.mark.parametrize("options", [{}, {"include_stride": True, "include_device": True}, {"colored": True},
                                     {"expanded_def": True}, {"additional_meta": ["tag"]}])
def test_print_readable_options_match_torch(options):
    outs = []
    for lib, fx in libs():
        gm = fx.GraphModule(root(lib), build_basic(lib, fx))
        x = lib.ones(2, 3)
        for n in gm.graph.nodes:
            n.meta["tag"] = n.op
            if n.op == "placeholder":
                n.meta["val"] = x
        sub = fx.GraphModule(root(lib), build_basic(lib, fx))
        gm.add_submodule("inner", sub)
        outs.append(as_ember_code(gm.print_readable(print_output=False, **options)))
    assert outs[0] == outs[1]


def test_attribute_path_helpers_match_torch():
    import torch.fx.graph_module as tgm

    import ember.fx.graph_module as egm
    out = []
    for lib, mod in [(torch, tgm), (ember, egm)]:
        m = root(lib)
        res = [mod._has_attr(m, "lin"), mod._has_attr(m, "nope"), mod._has_attr(m, "nope.weight"),
               tuple(mod._get_attr(m, "lin.bias").shape)]
        with pytest.raises(AssertionError) as e:
            mod._get_attr(m, "nope.weight")
        res.append(str(e.value))
        mod._del_attr(m, "lin.bias")
        res.append(hasattr(m.lin, "bias"))
        out.append(res)
    assert out[0] == out[1]
    # torch's _has_attr answers False for every dotted path (it walks on a bool); ember's walks the path
    m = root(ember)
    assert egm._has_attr(m, "lin.weight") and not egm._has_attr(m, "lin.nope")


def test_error_in_generated_code_is_reported_like_torch(capsys):
    reports = []
    for lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        a = g.call_function(operator.neg, (x,))
        b = g.call_function(operator.truediv, (a, 0))
        g.output(b)
        gm = fx.GraphModule(lib.nn.Module(), g)
        with pytest.raises(ZeroDivisionError) as e:
            gm(1)
        assert e.value.__traceback__.tb_next is None or "eval_with_key" not in str(e.traceback[-1].path)
        err = capsys.readouterr().err
        reports.append(err[err.index("Call using an FX-traced Module"):])
    assert reports[0] == reports[1]
    assert "truediv = neg / 0" in reports[1] and "<--- HERE" in reports[1]


def test_codegen_subclass_changes_signature_and_return():
    outs = []
    for lib, fx in libs():
        class ListCodeGen(fx.CodeGen):
            def gen_fn_def(self, free_vars, maybe_return_annotation):  # the older two-argument form
                names = [v.split(" = ")[0] for v in free_vars]  # drop the defaults
                return f"def forward(self, args_list):\n    {', '.join(names)}, = args_list"

            def generate_output(self, output_args):
                return f"return [{output_args!r}]"

            def process_inputs(self, *args):
                return (list(args),)

        g = build_basic(lib, fx)
        g.set_codegen(ListCodeGen())
        gm = fx.GraphModule(root(lib), g)
        out = gm([lib.ones(2, 3), 1.0])
        outs.append((as_ember_code(gm.code), tuple(out[0][0].shape), g.process_inputs(1, 2)))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("only_kwargs", [False, True])
def test_normalized_arguments_match_torch(only_kwargs):
    def build(lib, fx):
        F = lib.nn.functional
        m = lib.nn.Module()
        m.lin = lib.nn.Linear(3, 3)
        m.act = type("Custom", (lib.nn.ReLU,), {})()
        g = fx.Graph()
        x = g.placeholder("x")
        calls = [g.call_function(F.relu, (x,)),
                 g.call_function(F.dropout, (x, 0.2), {"training": False}),
                 g.call_function(F.layer_norm, (x, [3])),
                 g.call_function(F.softmax, (x,), {"dim": 1}),
                 g.call_function(F.leaky_relu, (x, 0.1)),
                 g.call_module("lin", (x,)),
                 g.call_module("act", (x,)),
                 g.call_method("relu", (x,))]
        g.output(x)
        gm = fx.GraphModule(m, g)
        return [n.normalized_arguments(gm, normalize_to_only_use_kwargs=only_kwargs) for n in calls]
    def norm(r):
        if r is None:
            return None
        return (tuple(getattr(a, "name", a) for a in r.args), {k: getattr(v, "name", v) for k, v in r.kwargs.items()})
    assert [norm(r) for r in build(ember, ember.fx)] == [norm(r) for r in build(torch, torch.fx)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab_1.x", min_size=0, max_size=6) | st.sampled_from(["add", "add_1", "sum", "if",
                                                                                      "list_2", "x"]),
                min_size=1, max_size=12))
def test_unique_names_match_torch_for_any_candidates(candidates):
    names = []
    for _lib, fx in libs():
        g = fx.Graph()
        x = g.placeholder("x")
        made = [g.call_function(operator.neg, (x,), name=c or None).name for c in candidates]
        made += [g.placeholder(c or "p").name for c in candidates]
        names.append(made)
    assert names[0] == names[1]
