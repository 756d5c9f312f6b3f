"""Python float arguments in ember.compile against torch.compile (torch's SymFloat,
``specialize_float=False``): how many recordings a program makes over a sequence of float
values (torch's count from ``torch._dynamo.testing.CompileCounter``) for dynamic None,
True and False; results equal to eager at every value; which floats are placeholders of
the graph; explain's words for a guard on a float; the fused backend with a float that
changes."""

import logging
import math
import operator
import os
import re
import subprocess
import sys
from math import sqrt as bound_sqrt  # imported before any recording: not traced

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch._dynamo.testing import CompileCounter

import ember
import ember.nn.functional as F


class Counter:
    """An ember backend counting the graphs it receives (CompileCounter's frame_count)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    @property
    def frame_count(self):
        return len(self.graphs)


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    ember._dynamo.reset()
    yield
    torch._dynamo.reset()


def lib_of(x):
    return (ember, F) if isinstance(x, ember.Tensor) else (torch, TF)


# ---- the programs: each takes a [2, 4] tensor and a float -------------------------------

def scale(x, s):
    return x * s


def shift(x, eps):
    return x + eps


def arith(x, s):
    return x * (s * 2 + 1) - s ** 2 / 4 + abs(-s) // 1


def leaky_relu(x, slope):
    return lib_of(x)[1].leaky_relu(x, slope)


def clamp(x, s):
    return lib_of(x)[0].clamp(x, -s, s)


def full(x, s):
    return lib_of(x)[0].full((2, 4), s) + x


def dropout(x, s):
    return lib_of(x)[1].dropout(x, s / 4, training=True)


def layer_norm(x, eps):
    return lib_of(x)[1].layer_norm(x, (4,), eps=eps)


def branch(x, s):
    if s > 1:
        return x * 2
    return x + 1


def square_root(x, s):
    return x * math.sqrt(s)


def exponential(x, s):
    return x * math.exp(s)


def floor(x, s):
    return x * math.floor(s)


def returned(x, s):
    return x * 2, s * 3 + 1


def passed_through(x, s):
    return x * 2, s


def unused(x, s):
    return x * 2


def where(x, s):
    return lib_of(x)[0].where(x > 0, x, s)


def scalar_ops(x, s):
    lib = lib_of(x)[0]
    return lib.lerp(x, x * 2, s) + lib.addcmul(x, x, x, value=s) + lib.pow(s, x) + (s - x)


def tensor_of(x, s):
    return lib_of(x)[0].tensor(s) + x


def truthy(x, s):
    return x * 2 if s else x


def rounded(x, s):
    return x * round(s) + x[:, :math.ceil(s)].sum()


def trigonometry(x, s):
    return x * math.sin(s) + math.cos(s) * x


def with_sizes(x, s):
    return x * (s * x.shape[0]) + x * (s / math.sqrt(x.size(-1)))


def distances(x, s):
    fn = lib_of(x)[1]
    return fn.cosine_similarity(x, x + 1, eps=s) + fn.huber_loss(x, x * 0, delta=s)


def looked_up(x, s):
    return x * {0.5: 1.0, 0.7: 2.0}.get(s, 3.0)  # hashing reads the exact value


PROGRAMS = {f.__name__: f for f in (scale, shift, arith, leaky_relu, clamp, full, dropout, layer_norm, branch,
                                     square_root, exponential, floor, returned, passed_through, unused, where,
                                     scalar_ops, tensor_of, truthy, rounded, trigonometry, with_sizes, distances,
                                     looked_up)}
VALUES = [(0.5, 0.7, 1.5, 2.5, 0.7), (1.5, 2.5, 3.0), (0.25, 0.25, 0.75, 2.0)]
RANDOM = {"dropout"}  # compared with ember's eager run from the same seed


def _same(got, want):
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, (torch.Tensor, ember.Tensor)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-7)
        else:
            assert type(g) is type(w) is float and g == w


def _run(fn, values, dynamic, data_seed=3):
    """Compile ``fn`` with both, call each at every value, compare each result with eager;
    return the two counters."""
    ours, theirs = Counter(), CompileCounter()
    ce = ember.compile(fn, backend=ours, dynamic=dynamic)
    ct = torch.compile(fn, backend=theirs, dynamic=dynamic)
    data = np.random.default_rng(data_seed).standard_normal((2, 4)).astype(np.float32)
    for s in values:
        if fn.__name__ in RANDOM:
            ember.manual_seed(0)
            got = ce(ember.tensor(data), s)
            ember.manual_seed(0)
            _same(got, fn(ember.tensor(data), s))
            ct(torch.tensor(data), s)
            continue
        want = fn(torch.tensor(data), s)
        _same(ce(ember.tensor(data), s), want)
        _same(ct(torch.tensor(data), s), want)
    return ours, theirs


@pytest.mark.parametrize("dynamic", [None, True, False])
@pytest.mark.parametrize("values", VALUES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_float_arguments_record_as_often_as_torch(program, values, dynamic):
    ours, theirs = _run(PROGRAMS[program], values, dynamic)
    assert ours.frame_count == theirs.frame_count


def test_torch_does_not_specialize_floats_by_default():
    assert torch._dynamo.config.specialize_float is False
    assert ember._dynamo.config.specialize_float is False


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_specialize_float_bakes_every_value_in_as_torch(dynamic):
    with torch._dynamo.config.patch(specialize_float=True):
        ember._dynamo.config.specialize_float = True
        try:
            ours, theirs = _run(scale, VALUES[0], dynamic)
        finally:
            ember._dynamo.config.specialize_float = False
    assert ours.frame_count == theirs.frame_count
    assert all(len([n for n in g.graph.nodes if n.op == "placeholder"]) == 1 for g in ours.graphs)


def test_without_automatic_dynamic_shapes_a_changed_float_stays_static_as_torch():
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        ember._dynamo.config.automatic_dynamic_shapes = False
        try:
            ours, theirs = _run(scale, VALUES[0], None)
        finally:
            ember._dynamo.config.automatic_dynamic_shapes = True
    assert ours.frame_count == theirs.frame_count


def test_mark_dynamic_on_a_tensor_leaves_the_float_to_its_own_rule_as_torch():
    ours, theirs = Counter(), CompileCounter()
    ce, ct = ember.compile(with_sizes, backend=ours), torch.compile(with_sizes, backend=theirs)
    rng = np.random.default_rng(5)
    for n, s in ((3, 0.5), (4, 0.5), (5, 0.7), (6, 1.5), (3, 0.7)):
        data = rng.standard_normal((n, 4)).astype(np.float32)
        xe, xt = ember.tensor(data), torch.tensor(data)
        ember._dynamo.mark_dynamic(xe, 0)
        torch._dynamo.mark_dynamic(xt, 0)
        want = with_sizes(torch.tensor(data), s)
        _same(ce(xe, s), want)
        _same(ct(xt, s), want)
    assert ours.frame_count == theirs.frame_count


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_nan_and_infinity_stay_specialized_as_torch(dynamic):
    nan = float("nan")
    ours, theirs = _run(scale, (nan, nan, math.inf, 0.5, 0.7, nan, -math.inf), dynamic)
    assert ours.frame_count == theirs.frame_count


@pytest.mark.parametrize("dynamic", [None, True, False])
def test_a_float_used_as_a_key_is_guarded_by_value(dynamic):
    ours, theirs = _run(looked_up, (1.5, 2.5, 0.5, 0.7, 4.0), dynamic)  # a key after two misses
    assert ours.frame_count == theirs.frame_count


# ---- what the graphs hold -----------------------------------------------------------------

def _placeholders(gm, torch_names=False):
    """The names of a graph's placeholders for the program's arguments, as a set (torch
    names them ``l_x_``, beside its placeholders for symbolic sizes, ``s77``)."""
    names = {n.name for n in gm.graph.nodes if n.op == "placeholder"}
    return {n[2:-1] for n in names if n.startswith("l_")} if torch_names else names


@pytest.mark.parametrize("program", ["scale", "square_root", "branch", "returned", "passed_through", "full"])
@pytest.mark.parametrize("dynamic", [None, True, False])
def test_a_float_is_a_placeholder_where_torch_makes_it_one(program, dynamic):
    ours, theirs = Counter(), []

    def torch_backend(gm, example_inputs):
        theirs.append(gm)
        return gm.forward

    fn = PROGRAMS[program]
    ce, ct = ember.compile(fn, backend=ours, dynamic=dynamic), torch.compile(fn, backend=torch_backend,
                                                                           dynamic=dynamic)
    for s in (0.5, 0.7, 1.5):
        ce(ember.ones(2, 4), s)
        ct(torch.ones(2, 4), s)
    assert len(ours.graphs) == len(theirs)
    for mine, its in zip(ours.graphs, theirs):
        assert _placeholders(mine) == _placeholders(its, torch_names=True)


def test_a_symbolic_float_feeds_the_op_and_one_graph_serves_every_value():
    ours = Counter()
    compiled = ember.compile(scale, backend=ours)
    for s in (0.5, 0.7):  # 0.5: a constant; 0.7: the float changed, so it is symbolic from now on
        compiled(ember.ones(3), s)
    static, symbolic = ours.graphs
    (mul,) = [n for n in static.graph.nodes if n.op == "call_function"]
    assert mul.args[1] == 0.5
    x, s, mul, _ = symbolic.graph.nodes
    assert (x.op, s.op, x.name, s.name) == ("placeholder", "placeholder", "x", "s") and mul.args == (x, s)
    for k in (2.5, -1.25, 0.0, 1e-30):
        np.testing.assert_array_equal(compiled(ember.ones(3), k).numpy(), np.float32([k] * 3))
    assert len(ours.graphs) == 2


def test_float_arithmetic_and_traced_math_are_nodes_of_the_graph():
    def f(x, s):
        return x * math.sqrt(s * 2 + 1)

    ours = Counter()
    compiled = ember.compile(f, backend=ours, dynamic=True)
    compiled(ember.ones(3), 1.5)
    (gm,) = ours.graphs
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets[:3] == [operator.mul, operator.add, math.sqrt]
    for s in (0.0, 4.0, 12.0):
        np.testing.assert_allclose(compiled(ember.ones(3), s).numpy(), [math.sqrt(s * 2 + 1)] * 3, rtol=1e-6)
    assert len(ours.graphs) == 1
    assert math.sqrt is bound_sqrt  # the math module's own functions after the recordings


def test_a_specialized_op_parameter_is_a_constant_guarded_by_value():
    ours = Counter()
    compiled = ember.compile(layer_norm, backend=ours, dynamic=True)
    x = ember.randn(2, 4)
    for eps in (1e-5, 1e-3, 1e-5):
        np.testing.assert_allclose(compiled(x, eps).numpy(), layer_norm(x, eps).numpy(), rtol=1e-6)
    norms = [n for g in ours.graphs for n in g.graph.nodes if n.op == "call_function"]
    assert [n.kwargs["eps"] for n in norms] == [1e-5, 1e-3]


# ---- explain -------------------------------------------------------------------------

def _torch_recompile_guards(fn, values):
    """The guard torch names first for each recompile of ``fn`` over ``values``."""
    found = []

    class Handler(logging.Handler):
        def emit(self, record):
            found.extend(re.findall(r"- \d+/\d+: (.*?)\s+#", record.getMessage())[:1])

    handler = Handler()
    logger = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(recompiles=True)
    logger.addHandler(handler)
    try:
        compiled = torch.compile(fn, backend="eager")
        for s in values:
            compiled(torch.ones(2), s)
    finally:
        logger.removeHandler(handler)
        torch._logging.set_logs()
    return found


def test_explain_words_the_guards_on_a_float_as_torch():
    values = (0.5, 0.7, 1.5)  # 0.7: the float's value changed; 1.5: the decision s > 1 flips
    compiled = ember.compile(branch)
    for s in values:
        compiled(ember.ones(2), s)
    report = ember._dynamo.explain(compiled)(ember.ones(2), 0.5)
    theirs = _torch_recompile_guards(branch, values)
    assert theirs == ["s == 0.5", "s <= 1.0"]
    assert report.recompile_reasons[:2] == [f"a guard failed: {g}" for g in theirs]


def float_of(x, s):
    return x * float(s)


def int_of(x, s):
    return x * int(s)


def larger(x, s):
    return x * max(s, 0.6)


def arange_to(x, s):
    return lib_of(x)[0].arange(0.0, s + 4)[:4] + x


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("fn", [float_of, int_of, larger, arange_to])
def test_where_ember_guards_a_value_torch_traces_results_equal_eager(fn, dynamic):
    # float() and int() must hand Python a plain number and builtins.max compares, so each
    # guards the value torch keeps symbolic; arange's length would follow its bounds: ember
    # specializes them. More recordings than torch, never a wrong result.
    for values in VALUES:
        torch._dynamo.reset()
        ours, theirs = _run(fn, values, dynamic)
        assert ours.frame_count >= theirs.frame_count


def test_int_of_a_float_guards_its_result():
    # torch traces int(s) (sym_int); Python copies what __int__ returns to a plain int, so
    # ember guards the result: one recording per integer part, results as eager
    compiled = ember.compile(lambda x, s: x * int(s), dynamic=True)
    for s in (0.5, 0.7, 1.5, 2.5, 0.75, -0.5):
        np.testing.assert_array_equal(compiled(ember.ones(2), s).numpy(), [float(int(s))] * 2)
    report = ember._dynamo.explain(compiled)(ember.ones(2), 0.5)
    assert report.recompile_reasons[:2] == ["a guard failed: trunc(s) == 0", "a guard failed: trunc(s) == 1"]


# ---- values read below Python's number protocol --------------------------------------------

def through_numpy(x, s):
    return x * float(np.asarray(s))  # numpy reads the float's value itself


def through_bound_sqrt(x, s):
    return x * bound_sqrt(s)  # a math function bound before the recording


@pytest.mark.parametrize("dynamic", [None, True, False])
@pytest.mark.parametrize("fn", [through_numpy, through_bound_sqrt])
def test_a_float_read_without_a_guard_still_gives_eagers_results(fn, dynamic):
    compiled = ember.compile(fn, dynamic=dynamic, backend="eager")
    x = ember.randn(2, 4)
    for s in (0.5, 0.7, 1.5, 2.5, 0.7, 4.0):
        np.testing.assert_allclose(compiled(x, s).numpy(), fn(x, s).numpy(), rtol=1e-6)


_NUMBA_IN_A_RECORDING = """
import math, numba, numpy as np, ember

@numba.njit
def inside(a):  # numba's first compilation in this process, while a recording runs
    return math.sqrt(abs(a)) + math.exp(a)  # numba lowers abs() with math.fabs

@numba.njit
def after(a):
    return abs(a) * 2

def f(x, s):
    return x * math.sqrt(s) * float(inside(np.float32(-1.5)))

compiled = ember.compile(f, dynamic=True, backend="eager")
for s in (0.5, 2.0):
    assert np.allclose(compiled(ember.ones(2), s).numpy(), f(ember.ones(2), s).numpy())
assert after(np.float32(-2.0)) == 4.0  # numba's tables hold math's own functions
"""


def test_numba_compiling_during_a_recording_sees_maths_own_functions(tmp_path):
    pytest.importorskip("numba")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _NUMBA_IN_A_RECORDING], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


# ---- ints meeting floats (torch's SymInt -> SymFloat) ----------------------------------------

def halve(x, n):
    return x * (n / 2)


def times_half(x, n):
    return x * (n * 0.5)


def above(x, n):
    return x * 2 if n > 2.5 else x + 1


def int_sqrt(x, n):
    return x * math.sqrt(n)


@pytest.mark.parametrize("dynamic", [None, True, False])
@pytest.mark.parametrize("fn", [halve, times_half, above, int_sqrt])
def test_an_int_divided_or_mixed_with_floats_records_as_often_as_torch(fn, dynamic):
    ours, theirs = Counter(), CompileCounter()
    ce, ct = ember.compile(fn, backend=ours, dynamic=dynamic), torch.compile(fn, backend=theirs, dynamic=dynamic)
    for n in (2, 3, 4, 6, 3):
        want = fn(torch.ones(2), n)
        _same(ce(ember.ones(2), n), want)
        _same(ct(torch.ones(2), n), want)
    assert ours.frame_count == theirs.frame_count


# ---- the fused backend ------------------------------------------------------------------

@pytest.mark.parametrize("values", [(0.5, 1.5, 2.25, -0.75, 1.5), (2, 3, 5, -1, 3)])
def test_the_default_backend_fuses_with_a_changing_float_or_int(values):
    def f(x, s):
        lib, fn = lib_of(x)
        return lib.softmax(fn.gelu(x) * s, -1) + s

    compiled = ember.compile(f)
    rng = np.random.default_rng(4)
    for s in values:
        data = rng.standard_normal((16, 100)).astype(np.float32)
        want = f(torch.tensor(data, dtype=torch.float64), s).numpy()
        np.testing.assert_allclose(compiled(ember.tensor(data), s).numpy(), want, rtol=1e-5, atol=1e-6)
    static, symbolic = [e for entries in compiled._ember_compiled._signatures.values() for e in entries]
    gm = symbolic.root.gm
    (s,) = [n for n in gm.graph.nodes if n.op == "placeholder" and n.name == "s"]
    (region,) = [n for n in gm.graph.nodes if n.op == "call_function" and n.target.__name__ == "_call_region"]
    assert s in region.args  # the number is an input of the fused loop, read at each call
    assert any(k.startswith("fused_") for k in static.root.gm.__dict__)
