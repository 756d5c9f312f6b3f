"""symbolic_trace / Tracer against torch.fx: the same module written once for each library
(``build(lib)``), traced by both, graphs compared node by node (names, ops, targets by
public name with torch read as ember, args, kwargs, users); the traced module computes
what the eager one does, and what torch computes from the same weights."""

import math
import operator

import numpy as np
import pytest
import torch
import torch.fx
from _compare import assert_same_graph

import ember
import ember.fx
from ember.fx import Proxy, Tracer, symbolic_trace
from ember.fx.proxy import TraceError
from ember.ops import _dispatch


def _lib(name):
    return torch if name == "torch" else ember


def _fx(lib):
    return torch.fx if lib is torch else ember.fx


def _pair(build, *args, **kwargs):
    """The module of ``build`` for torch and for ember, ember's holding torch's weights."""
    torch.manual_seed(0)
    tm = build(torch, *args, **kwargs)
    em = build(ember, *args, **kwargs)
    state = {k: ember.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    em.load_state_dict(state)
    tm.eval()
    em.eval()
    return tm, em


def _check(build, *inputs, tracer=None, concrete_args=None, **kwargs):
    """Trace both, compare the graphs, run the traced ember module on ``inputs`` (numpy
    arrays) and compare it with the eager ember module and with torch."""
    tm, em = _pair(build, **kwargs)
    if tracer is None:
        tg = torch.fx.symbolic_trace(tm, concrete_args=concrete_args)
        eg = symbolic_trace(em, concrete_args=concrete_args)
        tgraph, egraph = tg.graph, eg.graph
    else:
        tgraph = tracer(torch).trace(tm, concrete_args)
        egraph = tracer(ember).trace(em, concrete_args)
        tg = torch.fx.GraphModule(tm, tgraph)
        eg = ember.fx.GraphModule(em, egraph)
    assert_same_graph(tgraph, egraph)
    tin = [torch.from_numpy(a) for a in inputs]
    ein = [ember.tensor(a) for a in inputs]
    expected = tm(*tin).detach().numpy()
    eager = em(*ein).detach().numpy()
    traced = eg(*ein).detach().numpy()
    np.testing.assert_allclose(traced, eager, rtol=0, atol=0)
    np.testing.assert_allclose(traced, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(tg(*tin).detach().numpy(), expected, rtol=0, atol=0)
    return tg, eg


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---- models --------------------------------------------------------------------------

def mlp(lib):
    nn, F = lib.nn, lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            x = lib.flatten(x, 1)
            return F.log_softmax(self.fc2(self.act(self.fc1(x))), dim=1)
    return MLP()


def convnet(lib):
    nn, F = lib.nn, lib.nn.functional

    class ConvNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
            self.conv2 = nn.Conv2d(6, 8, 3)
            self.fc = nn.Linear(8 * 2 * 2, 5)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.relu(self.conv2(x)).tanh() * x.shape[0]
            x = x.view(x.size(0), -1)
            y = F.dropout(x, p=0.5, training=self.training)
            y = lib.cat([y, x.sigmoid()], dim=1)[:, : x.shape[1]]
            return F.softmax(self.fc(y), dim=-1) + x.mean(dim=1, keepdim=True).abs()
    return ConvNet()


def residual(lib):
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.downsample(x)
            return F.relu(out)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1)
            self.layer = Block(4, 8, 2)
            self.pool = nn.AdaptiveAvgPool2d(1)

        def forward(self, x):
            return lib.flatten(self.pool(self.layer(self.stem(x))), 1)
    return Net()


def containers(lib):
    nn = lib.nn

    class Containers(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})

        def forward(self, x):
            x = self.seq(x)
            for i, block in enumerate(self.blocks):
                x = block(x) + i
            return self.heads["a"](x) - self.heads["b"](x)
    return Containers()


def parameters_and_buffers(lib):
    nn = lib.nn

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.scale = nn.Parameter(lib.ones(3) * 2)
            self.register_buffer("shift", lib.arange(3, dtype=lib.float32))

        def forward(self, x):
            y = lib.matmul(x, self.fc.weight.t()) + self.fc.bias
            y = y * self.scale + self.shift
            y = self.shift * y - self.shift[y.argmax(dim=1)].unsqueeze(1)  # Tensor operators given Proxies
            return y - self.scale.sum() + lib.add(self.shift, self.shift).sum()
    return Scaled()


def _pair_sum(x, y):
    if x.dim() > 5:  # branches on the value: only runs untraced, wrapped
        return x
    return x * x + y * y


torch.fx.wrap("_pair_sum")
ember.fx.wrap("_pair_sum")


def wrapped(lib):
    class Wrapped(lib.nn.Module):
        def forward(self, x, y):
            return _pair_sum(x, y) + math.sqrt(x.shape[0]) * x + len(x)
    return Wrapped()


torch.fx.wrap("len")
ember.fx.wrap("len")


@pytest.mark.parametrize("build, shapes", [(mlp, [(2, 2, 4)]), (convnet, [(2, 3, 8, 8)]),
                                           (residual, [(2, 3, 8, 8)]), (containers, [(3, 4)]),
                                           (parameters_and_buffers, [(2, 3)]), (wrapped, [(3, 2), (3, 2)])],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_same_graph_as_torch_fx_and_same_results(build, shapes):
    _check(build, *[_x(*s, seed=i) for i, s in enumerate(shapes)])


def test_generated_code_reads_as_torchs():
    tg, eg = _check(convnet, _x(2, 3, 8, 8))
    import re
    assert eg.code == re.sub(r"\btorch\b", "ember", tg.code)
    assert "ember.nn.functional.relu(conv1, inplace = False)" in eg.code
    assert "view = getattr_2.view(size, -1)" not in eg.code  # size() is a call_method, as in torch


def test_wrapped_functions_are_leaf_calls():
    _, eg = _check(wrapped, _x(3, 2), _x(3, 2, seed=1))
    calls = {n.name: n for n in eg.graph.nodes if n.op == "call_function"}
    assert calls["_pair_sum"].target is _pair_sum and calls["_pair_sum"].meta["is_wrapped"]
    assert calls["sqrt"].target is math.sqrt and calls["len_1"].target is len
    assert _pair_sum.__code__.co_name == "_pair_sum" and len([1]) == 1  # patches undone


def flagged(lib):
    class Flagged(lib.nn.Module):
        def forward(self, x, flag, scale=None):
            if flag:
                return x * 2
            return x - 1 if scale is None else x * scale
    return Flagged()


def test_concrete_args_specialize_and_assert():
    tm, em = _pair(flagged)
    tg = torch.fx.symbolic_trace(tm, concrete_args={"flag": False, "scale": None})
    eg = symbolic_trace(em, concrete_args={"flag": False, "scale": None})
    assert_same_graph(tg.graph, eg.graph)
    x = _x(2, 2)
    np.testing.assert_array_equal(eg(ember.tensor(x), False, None).numpy(), x - 1)
    with pytest.raises(AssertionError, match="flag has been specialized to have value False but got another value"):
        eg(ember.tensor(x), True, None)
    with pytest.raises(AssertionError) as expected:
        tg(torch.from_numpy(x), False, 3.0)
    with pytest.raises(AssertionError) as got:
        eg(ember.tensor(x), False, 3.0)
    assert str(got.value) == str(expected.value)


def test_concrete_args_placeholder_keeps_an_input():
    def f(x, y):
        return x + y
    tg = torch.fx.symbolic_trace(f, concrete_args={"y": torch.fx.PH})
    eg = symbolic_trace(f, concrete_args={"y": ember.fx.PH})
    assert_same_graph(tg.graph, eg.graph)
    assert eg(ember.tensor(2.0), ember.tensor(3.0)).item() == 5.0


def _varargs(lib):
    def f(x, *args, scale=2, **kwargs):
        return lib.relu(x) * scale + args[0] + kwargs["b"]
    return f


def test_functions_and_varargs():
    tg, eg = torch.fx.symbolic_trace(_varargs(torch)), symbolic_trace(_varargs(ember))
    assert_same_graph(tg.graph, eg.graph)
    assert type(eg).__name__ == type(tg).__name__ == "f"
    x = _x(3)
    out = eg(ember.tensor(x), 2, ember.tensor(x), b=ember.tensor(x))  # forward(self, x, scale = 2, *args, **kwargs)
    np.testing.assert_allclose(out.numpy(), np.maximum(x, 0) * 2 + 2 * x, rtol=1e-6)


def custom_leaf(lib):
    nn, F = lib.nn, lib.nn.functional

    class Gate(nn.Module):
        def forward(self, x):
            return x * F.sigmoid(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Gate()
            self.inner = Gate()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.inner(self.fc(self.gate(x)))
    return Net()


def test_custom_tracer_with_is_leaf_module():
    def make(lib):
        class LeafGate(_fx(lib).Tracer):
            def is_leaf_module(self, m, qualname):
                return qualname == "gate" or (super().is_leaf_module(m, qualname) and qualname != "fc")
        return LeafGate()
    _check(custom_leaf, _x(2, 4), tracer=make)


def test_param_shapes_constant():
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.ones(3, 2))

            def forward(self, x):
                if self.w.shape[0] == 3:  # answered from the parameter
                    return x @ self.w
                return x
        return Net()
    _check(build, _x(2, 3), tracer=lambda lib: _fx(lib).Tracer(param_shapes_constant=True))
    with pytest.raises(TraceError):
        symbolic_trace(build(ember))


def _errors(fn, lib):
    try:
        _fx(lib).symbolic_trace(fn(lib))
    except Exception as e:  # noqa: BLE001 - the type and message are what is compared
        return type(e).__name__, str(e)
    raise AssertionError("tracing did not fail")


def branches(lib):
    class Branch(lib.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x
    return Branch()


def iterates(lib):
    class Loop(lib.nn.Module):
        def forward(self, x):
            return [v * 2 for v in x]
    return Loop()


def measures(lib):
    class Length(lib.nn.Module):
        def forward(self, x):
            return x.__len__()
    return Length()


@pytest.mark.parametrize("fn", [branches, iterates, measures], ids=lambda f: f.__name__)
def test_untraceable_values_raise_torchs_errors(fn):
    assert _errors(fn, ember) == _errors(fn, torch)
    assert _errors(branches, ember) == ("TraceError", "symbolically traced variables cannot be used as inputs to "
                                                      "control flow")


def test_unpacking_a_known_count_traces():
    def f(x):
        a, b = x
        return a + b

    def g(x):
        a, b = x
        return a + b
    assert_same_graph(torch.fx.symbolic_trace(g).graph, symbolic_trace(f).graph)


def _appended(lib):
    """A graph built by calling ``lib``'s functions on Proxies of its nodes, outside any trace."""
    graph = _fx(lib).Graph()
    x = Proxy(graph.placeholder("x")) if lib is ember else torch.fx.Proxy(graph.placeholder("x"))
    y = lib.relu(x) + lib.nn.functional.gelu(x) + lib.sigmoid(x).sum(1, keepdim=True)
    graph.output(y.node)
    return graph


@pytest.fixture
def quiet_seam():
    """No seam mode entered when the test starts. The meta device's mode leaves at the
    first op after the last meta array is gone, so earlier tests' meta tensors are
    collected and one op is run first."""
    import gc
    gc.collect()
    ember.zeros(1)
    assert _dispatch._ENTERED == []


def test_proxy_around_a_graph_node_appends_to_it(quiet_seam):
    import gc
    assert_same_graph(_appended(torch), _appended(ember))
    gc.collect()  # the Proxies' tracer is gone: the ops run their own code again
    assert all(e.fn.__code__ is e.code for e in _dispatch.registered())
    assert all(e.fn.__code__ is e.code for e in ember.fx._op_capture._forwarders)


def test_tracing_leaves_the_seam_as_it_was(quiet_seam):
    """Outside a trace the functional forwarders and the ops run their own code (no
    trampoline); inside, other seam modes do not see a traced call."""
    import ember.nn.functional as F
    relu_code, linear_code = F.relu.__code__, F.linear.__code__
    seen = []
    model = convnet(ember)

    class Count(_dispatch.Mode):
        def __ember_op__(self, op, args, kwargs, proceed):
            seen.append(op.name)
            return proceed(args, kwargs)
    with Count():
        symbolic_trace(model)
    assert seen == []  # every call had a Proxy: recorded, never run
    module_call, module_getattr = ember.nn.Module.__call__, ember.nn.Module.__getattr__
    with pytest.raises(TraceError):
        symbolic_trace(branches(ember))
    assert F.relu.__code__ is relu_code and F.linear.__code__ is linear_code
    assert ember.nn.Module.__call__ is module_call and ember.nn.Module.__getattr__ is module_getattr
    assert all(e.fn.__code__ is e.code for e in _dispatch.registered())
    assert F.relu(ember.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_record_stack_traces_point_at_the_program(lib):
    tracer = _fx(lib).Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(convnet(lib))
    relu = next(n for n in graph.nodes if n.name == "relu")
    first, code = relu.stack_trace.splitlines()[:2]  # torch's own frames may follow
    assert first.endswith("in forward") and code.strip() == "x = F.max_pool2d(F.relu(self.conv1(x)), 2)"


def test_is_fx_tracing_inside_a_trace_only():
    from ember.fx._symbolic_trace import is_fx_symbolic_tracing, is_fx_tracing
    seen = []

    def f(x):
        seen.append((is_fx_tracing(), is_fx_symbolic_tracing()))
        return x + 1
    symbolic_trace(f)
    assert seen == [(True, True)] and not is_fx_tracing()


def _iadd(t, x):
    t += x
    return t


def _imul(t, x):
    t *= x
    return t


def _setitem(t, x):
    t[0] = x
    return t


_TENSOR_OPERATORS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                     operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor, operator.lshift,
                     operator.rshift, operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
                     operator.getitem, _iadd, _imul, _setitem]


@pytest.mark.parametrize("op", _TENSOR_OPERATORS, ids=lambda f: f.__name__)
def test_tensor_operators_given_a_proxy_record_torchs_method(op):
    integer = op in (operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift)

    def build(lib):
        def fn(x):
            t = lib.ones(2, 2, dtype=lib.int64 if integer else lib.float32)
            return op(t, x)
        return fn
    assert_same_graph(torch.fx.symbolic_trace(build(torch)).graph, symbolic_trace(build(ember)).graph)


@pytest.mark.parametrize("build", [convnet, residual, containers], ids=lambda f: f.__name__)
def test_retracing_a_graph_module(build):
    tm, em = _pair(build)
    tg = torch.fx.symbolic_trace(torch.fx.symbolic_trace(tm))
    eg = symbolic_trace(symbolic_trace(em))
    assert_same_graph(tg.graph, eg.graph)


def halve(x):
    return x / 2


def test_autowrap_functions_are_leaf_calls():
    def build(lib):
        class Net(lib.nn.Module):
            def forward(self, x):
                return halve(x) + math.floor(2.5)
        return Net()
    tg = torch.fx.GraphModule(build(torch), torch.fx.Tracer(autowrap_functions=(halve,)).trace(build(torch)))
    eg = ember.fx.GraphModule(build(ember), Tracer(autowrap_functions=(halve,)).trace(build(ember)))
    assert_same_graph(tg.graph, eg.graph)
    assert [n.target for n in eg.graph.nodes if n.op == "call_function"][0] is halve
    assert eg(ember.tensor([4.0])).tolist() == [4.0]


def hidden_module(lib):
    class Hidden(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = [lib.nn.ReLU()]  # a plain list: not a submodule

        def forward(self, x):
            return self.hidden[0](x)
    return Hidden()


def test_calling_a_module_that_is_not_a_submodule():
    assert _errors(hidden_module, ember) == _errors(hidden_module, torch) == (
        "NameError", "module is not installed as a submodule")


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_nodes_made_while_preserving_meta_inherit_it(lib):
    fx = _fx(lib)
    source = fx.Graph()
    old = source.placeholder("x")
    old.meta["nn_module_stack"] = {"block": ("block", object)}
    old.meta["stack_trace"] = 'File "model.py", line 3, in forward'
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    with fx.traceback.preserve_node_meta(), fx.traceback.set_current_meta(old):
        node = tracer.create_proxy("placeholder", "y", (), {}).node
    assert node.meta["nn_module_stack"] == old.meta["nn_module_stack"]
    assert node.stack_trace == old.meta["stack_trace"]
    outside = tracer.create_proxy("placeholder", "z", (), {}).node
    assert "nn_module_stack" not in outside.meta and outside.stack_trace is None


def test_proxy_buffer_attributes():
    def make(lib):
        tracer = _fx(lib).Tracer()
        tracer.proxy_buffer_attributes = True  # buffers become get_attr nodes where they are read
        return tracer
    _check(parameters_and_buffers, _x(2, 3), tracer=make)
