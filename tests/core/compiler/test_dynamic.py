"""Dynamic shapes in ember.compile against torch.compile: how many recordings a program
makes over varying sizes (torch's count from ``torch._dynamo.testing.CompileCounter``),
the symbolic sizes in the captured graph, guards on decisions about sizes, and results
and gradients equal to eager at every size."""

import copy

import numpy as np
import pytest
import torch
from torch._dynamo.testing import CompileCounter

import ember
import ember.nn as nn
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


def run_both(fn_ember, fn_torch, sizes, make, mark=False, **compile_kwargs):
    """Compile both, call each on inputs of ``sizes`` (``make(n, lib)``), return the counts;
    the results are compared with eager torch at every size."""
    ours, theirs = Counter(), CompileCounter()
    ce = ember.compile(fn_ember, backend=ours, **compile_kwargs)
    ct = torch.compile(fn_torch, backend=theirs, **compile_kwargs)
    rng = np.random.default_rng(0)
    for n in sizes:
        data = make(n, rng)
        xe, xt = ember.tensor(data), torch.tensor(data)
        if mark:
            ember._dynamo.mark_dynamic(xe, 0)
            torch._dynamo.mark_dynamic(xt, 0)
        got, want = ce(xe), ct(xt)
        np.testing.assert_allclose(got.numpy(), fn_torch(torch.tensor(data)).numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(want.numpy(), got.numpy(), rtol=1e-6, atol=1e-6)
    return ours, theirs


def batch(n, rng):
    return rng.standard_normal((n, 3, 4)).astype(np.float32)


def flat_sum(x):
    return (x.view(x.size(0), -1) * 2).sum(1)


def test_mark_dynamic_batch_over_four_sizes_records_once_as_torch():
    ours, theirs = run_both(flat_sum, flat_sum, (2, 3, 5, 8), batch, mark=True)
    assert theirs.frame_count == 1
    assert ours.frame_count == theirs.frame_count


def test_automatic_dynamic_records_static_then_dynamic_as_torch():
    ours, theirs = run_both(flat_sum, flat_sum, (2, 3, 5, 8, 3), batch)
    assert theirs.frame_count == 2
    assert ours.frame_count == theirs.frame_count


def test_dynamic_false_records_every_size_as_torch():
    ours, theirs = run_both(flat_sum, flat_sum, (2, 3, 5, 8), batch, dynamic=False)
    assert theirs.frame_count == 4
    assert ours.frame_count == theirs.frame_count


def test_dynamic_true_records_once_as_torch():
    ours, theirs = run_both(flat_sum, flat_sum, (2, 3, 5, 8), batch, dynamic=True)
    assert theirs.frame_count == 1
    assert ours.frame_count == theirs.frame_count


def test_dynamic_false_ignores_mark_dynamic():
    ours = Counter()
    f = ember.compile(flat_sum, backend=ours, dynamic=False)
    for n in (2, 3, 4):
        x = ember.randn(n, 3, 4)
        ember._dynamo.mark_dynamic(x, 0)
        f(x)
    assert ours.frame_count == 3


def test_size_and_its_arithmetic_are_graph_nodes_not_constants():
    def f(x):
        n = x.size(0)
        return x.reshape(n * 3, -1) + x.shape[1]

    ours = Counter()
    compiled = ember.compile(f, backend=ours)
    x = ember.randn(4, 3, 2)
    ember._dynamo.mark_dynamic(x, 0)
    compiled(x)
    (gm,) = ours.graphs
    sizes = [n for n in gm.graph.nodes if n.op == "call_method" and n.target == "size"]
    assert [s.args[1] for s in sizes] == [0]  # dim 1 of x is a static 3: a constant
    (mul,) = [n for n in gm.graph.nodes if n.op == "call_function" and n.target.__name__ == "mul"]
    assert mul.args == (sizes[0], 3)
    (reshape,) = [n for n in gm.graph.nodes if n.op == "call_function" and "reshape" in str(n.target)]
    assert reshape.args[1:] == (mul, -1) or reshape.args[1] == (mul, -1)
    for n in (2, 5, 7):  # the recording serves every size
        x = ember.randn(n, 3, 2)
        np.testing.assert_array_equal(compiled(x).numpy(), (x.reshape(n * 3, -1) + 3).numpy())
    assert ours.frame_count == 1


def branch(x):
    if x.size(0) > 4:
        return x * 2
    return x + 1


def test_a_branch_on_a_symbolic_size_records_again_when_it_flips_as_torch():
    ours, theirs = run_both(branch, branch, (2, 3, 5, 6, 3, 7), batch, mark=True)
    assert theirs.frame_count == 2
    assert ours.frame_count == theirs.frame_count


def test_explain_gives_the_recompile_reasons_of_sizes_and_size_guards():
    compiled = ember.compile(branch)
    compiled(ember.ones(2, 3))
    compiled(ember.ones(3, 3))  # automatic dynamic: dim 0 becomes symbolic
    compiled(ember.ones(6, 3))  # the branch flips
    report = ember._dynamo.explain(compiled)(ember.ones(2, 3))
    assert report.recompile_reasons[:2] == [
        "a guard failed: tensor 'x' size mismatch at index 0. expected 2, actual 3",
        "a guard failed: x.size()[0] <= 4"]


def test_a_guard_on_the_size_of_a_tensor_the_program_made_is_checked_after_the_replay():
    def f(x):
        h = ember.cat([x, x]) if isinstance(x, ember.Tensor) else torch.cat([x, x])
        if h.size(0) > 8:
            return h.sum(0)
        return h.mean(0)

    ours, theirs = run_both(f, f, (2, 3, 5, 6, 3), batch, mark=True)
    assert ours.frame_count == theirs.frame_count == 2


def test_symbolic_slice_bounds_and_factories_follow_the_size():
    def f(x):
        n = x.shape[0]
        lib = ember if isinstance(x, ember.Tensor) else torch
        return x[: n - 1] * lib.arange(n - 1, dtype=x.dtype).view(-1, 1, 1) + x.new_zeros(n - 1, 3, 4)

    ours, theirs = run_both(f, f, (3, 4, 6, 7), batch, mark=True)
    assert ours.frame_count == theirs.frame_count == 1


def test_training_steps_with_gradients_equal_eager_at_every_size_with_one_recording():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.LayerNorm(16), nn.Linear(16, 3))
    twin = copy.deepcopy(model)
    opt, opt_twin = ember.optim.SGD(model.parameters(), lr=0.1), ember.optim.SGD(twin.parameters(), lr=0.1)

    def step(net, optimizer, x, y):
        loss = F.cross_entropy(net(x).view(x.size(0), -1), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    ours = Counter()
    compiled = ember.compile(step, backend=ours, dynamic=True)
    rng = np.random.default_rng(1)
    for n in (4, 7, 2, 9, 4):
        x = ember.tensor(rng.standard_normal((n, 6)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 3, n))
        a = compiled(model, opt, x, y)
        b = step(twin, opt_twin, x, y)
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert ours.frame_count == 1


def test_fused_kernels_follow_a_symbolic_batch_forward_and_backward():
    ember.manual_seed(2)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 5))
    twin = copy.deepcopy(model)

    def loss_of(net, x, y):
        return F.cross_entropy(F.softmax(net(x), -1) * 3.0, y)

    compiled = ember.compile(loss_of, dynamic=True)
    rng = np.random.default_rng(2)
    for n in (3, 6, 11):
        x = ember.tensor(rng.standard_normal((n, 8)).astype(np.float32))
        y = ember.tensor(rng.integers(0, 5, n))
        got = compiled(model, x, y)
        got.backward()
        want = loss_of(twin, x, y)
        want.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
            p.grad, q.grad = None, None
    (recording,) = [e for entries in compiled._ember_compiled._signatures.values() for e in entries]
    gm = recording.root.gm
    assert any(k.startswith("fused_") for k in gm.__dict__)  # a fused region, run at every size
    assert len(compiled._ember_compiled._signatures) == 1


def test_sizes_0_and_1_stay_specialized_as_torch():
    ours, theirs = run_both(flat_sum, flat_sum, (1, 3, 4, 1), batch, mark=True)
    assert ours.frame_count == theirs.frame_count


def loop_over_rows(x):
    total = x[0] * 0
    for i in range(x.size(0)):  # range() needs the int: the size is specialized
        total = total + x[i]
    return total


def test_a_size_used_as_a_python_int_is_specialized_with_a_guard_as_torch():
    ours, theirs = run_both(loop_over_rows, loop_over_rows, (2, 3, 4, 3), batch)
    assert ours.frame_count == theirs.frame_count


def test_sizes_stay_ints_for_the_program():
    seen = []

    def f(x):
        n = x.size(0)
        seen.append((type(n + 1).__mro__[1] is int, n + 1, n * 2, n // 2, n % 3, -n, repr(n), float(n) / 2))
        return x * 2

    ember.compile(f, dynamic=True)(ember.ones(5, 2))
    assert seen == [(True, 6, 10, 2, 2, -5, "5", 2.5)]


# ---- Python int arguments (torch's unspecialized ints) -----------------------------------

def scale(x, n):
    return x * n


def decide(x, n):
    if n > 4:
        return x + 1
    return x - 1


def repeat(x, n):
    for _ in range(n):  # range() needs the int: it is specialized with a guard
        x = x * 2
    return x


def make_and_return(x, n):
    lib = ember if isinstance(x, ember.Tensor) else torch
    return lib.zeros(n * 2, 3) + x.sum(), n + 1


def slice_by(x, n):
    return x[:, n:].exp(), x.new_ones(n).sum()


INT_PROGRAMS = {"scale": (scale, (3,)), "decide": (decide, (3,)), "repeat": (repeat, (3,)),
                "make_and_return": (make_and_return, (3,)), "slice_by": (slice_by, (2, 8))}


def _same(got, want):
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, torch.Tensor):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
        else:
            assert type(g) is type(w) is int and g == w


ALL_VALUES = [(2, 3, 4, 6, 7, 3), (0, 1, 2, 3), (5, 1, 0, 5)]
# torch also guards on a size of 0 or 1 that its shape rules meet (x[:, 7:] of 8 columns), and
# skips a call that ran no op (range(0)); ember's guards are coarser there, its results the same
COUNTED_VALUES = {"scale": ALL_VALUES, "decide": ALL_VALUES, "repeat": [(2, 3, 4, 6, 7, 3), (5, 1, 3, 5)],
                  "make_and_return": [(2, 3, 4, 6, 7, 3), (5, 2, 3)], "slice_by": [(2, 3, 4, 6, 3), (5, 2, 3, 5)]}


def _run_ints(program, values, dynamic):
    fn, shape = INT_PROGRAMS[program]
    ours, theirs = Counter(), CompileCounter()
    ce = ember.compile(fn, backend=ours, dynamic=dynamic)
    ct = torch.compile(fn, backend=theirs, dynamic=dynamic)
    data = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    for n in values:
        want = fn(torch.tensor(data), n)
        _same(ce(ember.tensor(data), n), want)
        _same(ct(torch.tensor(data), n), want)
    return ours, theirs


@pytest.mark.parametrize("dynamic", [None, True, False])
@pytest.mark.parametrize("program, values", [(p, v) for p in sorted(INT_PROGRAMS) for v in COUNTED_VALUES[p]])
def test_int_arguments_record_as_often_as_torch(program, values, dynamic):
    ours, theirs = _run_ints(program, values, dynamic)
    assert ours.frame_count == theirs.frame_count


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("values", ALL_VALUES)
@pytest.mark.parametrize("program", sorted(INT_PROGRAMS))
def test_int_arguments_give_eagers_results_at_every_value(program, values, dynamic):
    _run_ints(program, values, dynamic)  # compares each call with eager torch


def test_a_bool_argument_stays_specialized_beside_symbolic_ints_as_torch():
    ours, theirs = Counter(), CompileCounter()
    ce, ct = ember.compile(scale, backend=ours), torch.compile(scale, backend=theirs)
    for n in (2, 3, True, 4, False):
        _same(ce(ember.ones(3), n), ct(torch.ones(3), n))
    assert ours.frame_count == theirs.frame_count == 4


def test_a_symbolic_int_is_a_placeholder_of_the_graph_as_torch():
    ours, theirs = Counter(), []

    def torch_backend(gm, example_inputs):
        theirs.append(gm)
        return gm.forward

    ember_compiled = ember.compile(scale, backend=ours)
    torch_compiled = torch.compile(scale, backend=torch_backend)
    for n in (2, 3):  # 2: a constant; 3: the int changed, so it is symbolic from now on
        ember_compiled(ember.ones(3), n)
        torch_compiled(torch.ones(3), n)
    for static, symbolic in (ours.graphs, theirs):
        assert [n.op for n in static.graph.nodes] == ["placeholder", "call_function", "output"]
        assert [n.op for n in symbolic.graph.nodes] == ["placeholder", "placeholder", "call_function", "output"]
    x, n, mul, _ = ours.graphs[1].graph.nodes
    assert (x.name, n.name) == ("x", "n") and mul.args == (x, n)
    for k in (5, 0, -2):  # one graph serves every int
        np.testing.assert_array_equal(ember_compiled(ember.ones(3), k).numpy(), [k] * 3)
    assert len(ours.graphs) == 2


def test_explain_words_the_guard_on_an_int_argument():
    compiled = ember.compile(decide)
    for n in (2, 3, 6):  # 3: the int becomes symbolic; 6: the decision n > 4 flips
        compiled(ember.ones(2), n)
    report = ember._dynamo.explain(compiled)(ember.ones(2), 3)
    assert report.recompile_reasons[:2] == ["a guard failed: argument 1 changed: 2 -> 3", "a guard failed: n <= 4"]


def test_the_default_backend_fuses_with_a_symbolic_int_scale():
    def f(x, n):
        lib = ember if isinstance(x, ember.Tensor) else torch
        return lib.softmax(lib.nn.functional.gelu(x) * n, -1) + n

    compiled = ember.compile(f, dynamic=True)
    rng = np.random.default_rng(4)
    for n in (2, 3, 5):
        data = rng.standard_normal((16, 100)).astype(np.float32)
        want = f(torch.tensor(data, dtype=torch.float64), n).numpy()
        np.testing.assert_allclose(compiled(ember.tensor(data), n).numpy(), want, rtol=1e-5, atol=1e-6)
    assert len(compiled._ember_compiled._signatures) == 1
