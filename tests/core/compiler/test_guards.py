"""What a compiled function's replays depend on: each case changes something between calls
(or inside the program) and the compiled result must stay the eager one, computed by the
same code without compiling."""

import collections
import dataclasses
import types

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def same(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


# ---- modes the program itself changes ----------------------------------------------------

def _no_grad_inside(x):
    with ember.no_grad():
        s = x * 2
    return (s + x * x).sum()


def _set_grad_enabled_inside(x):
    ember.set_grad_enabled(False)
    s = x.exp()
    ember.set_grad_enabled(True)
    return (s * x).sum()


def _enable_grad_inside(x):
    with ember.no_grad():
        s = x * 3
        with ember.enable_grad():
            t = x * x
    return (s + t).sum()


@pytest.mark.parametrize("program", [_no_grad_inside, _set_grad_enabled_inside, _enable_grad_inside])
def test_grad_mode_changed_inside_the_program_is_replayed(program):
    compiled = ember.compile(program)
    for _ in range(3):  # the first call records, the others replay
        x, y = ember.randn(5, requires_grad=True), None
        y = x.detach().clone().requires_grad_()
        compiled(x).backward()
        program(y).backward()
        same(x.grad, y.grad)
        assert ember.is_grad_enabled()


def test_inference_mode_inside_the_program_is_replayed():
    def program(x):
        with ember.inference_mode():
            return x * 2

    compiled = ember.compile(program)
    x = ember.ones(3, requires_grad=True)
    for _ in range(3):
        out = compiled(x)
        assert not out.requires_grad and out.is_inference()
        assert ember.is_grad_enabled() and not ember.is_inference_mode_enabled()


def test_a_replay_that_fails_inside_no_grad_restores_grad_mode():
    def program(x, index):
        with ember.no_grad():
            return x[index] * 2

    compiled = ember.compile(program, dynamic=False)
    x = ember.arange(4.0)
    compiled(x, ember.tensor([1]))
    with pytest.raises(IndexError):
        compiled(x, ember.tensor([7]))
    assert ember.is_grad_enabled()


def test_default_dtype_changed_inside_the_program_is_replayed():
    def program(x):
        ember.set_default_dtype(ember.float64)
        y = x + ember.ones(3)
        ember.set_default_dtype(ember.float32)
        return y

    compiled = ember.compile(program)
    x = ember.ones(3)
    assert [compiled(x).dtype for _ in range(3)] == [ember.float64] * 3
    assert ember.get_default_dtype() == ember.float32


# ---- modules the program calls -----------------------------------------------------------

def test_a_module_outside_the_compiled_tree_is_guarded():
    model = nn.Dropout(0.5)
    compiled = ember.compile(lambda x: model(x))
    x = ember.ones(64)
    compiled(x)
    model.eval()
    same(compiled(x), x)
    model.train()
    ember.manual_seed(3)
    train = compiled(x)
    ember.manual_seed(3)
    same(train, model(x))

    by_argument = ember.compile(lambda m, x: m(x))
    other = nn.Dropout(0.5)
    by_argument(other, x)
    other.eval()
    same(by_argument(other, x), x)


def test_a_compiled_training_step_follows_eval_and_train():
    def make():
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.3), nn.ReLU(), nn.Linear(16, 1))
        return model, ember.optim.AdamW(model.parameters(), lr=1e-2)

    def step_of(model, opt):
        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    (m1, o1), (m2, o2) = make(), make()
    compiled, eager = ember.compile(step_of(m1, o1)), step_of(m2, o2)
    ember.manual_seed(1)
    batches = [(ember.randn(8, 6), ember.randn(8, 1)) for _ in range(6)]
    for k, (x, y) in enumerate(batches):
        for m in (m1, m2):
            m.train(k % 3 != 2)  # every third step without dropout
        ember.manual_seed(10 + k)
        a = compiled(x, y)
        ember.manual_seed(10 + k)
        b = eager(x, y)
        np.testing.assert_allclose(a.item(), b.item(), rtol=1e-6)
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_hooks_added_or_removed_after_compiling_are_seen():
    net = nn.Sequential(nn.Linear(3, 3))
    compiled = ember.compile(net)
    x = ember.randn(2, 3)
    compiled(x)
    handle = net[0].register_forward_hook(lambda mod, args, out: out * 100)
    same(compiled(x), net(x))
    handle.remove()
    same(compiled(x), net(x))
    pre = net.register_forward_pre_hook(lambda mod, args: (args[0] * 10,))
    same(compiled(x), net(x))
    pre.remove()
    same(compiled(x), net(x))


class _Registry(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.ParameterDict({"a": nn.Parameter(ember.ones(3))})
        self.register_buffer("shift", None)
        self.act = F.relu

    def forward(self, x):
        for p in self.table.values():
            x = x + p
        x = self.act(x - 2.5)
        return x if self.shift is None else x + self.shift


@pytest.mark.parametrize("change", ["parameter added", "buffer set", "function attribute"])
def test_registrations_and_function_attributes_changed_after_compiling_are_seen(change):
    m = _Registry()
    compiled = ember.compile(m)
    x = ember.arange(3.0)
    compiled(x)
    if change == "parameter added":
        m.table["b"] = nn.Parameter(ember.full((3,), 2.0))
    elif change == "buffer set":
        m.shift = ember.full((3,), 10.0)
    else:
        m.act = ember.neg
    same(compiled(x), m(x))


def test_batch_norm_counts_its_batches_on_replay():
    for momentum in (None, 0.1):
        ember.manual_seed(0)
        compiled_bn, eager_bn = nn.BatchNorm1d(4, momentum=momentum), nn.BatchNorm1d(4, momentum=momentum)
        compiled = ember.compile(compiled_bn)
        for _ in range(5):
            x = ember.randn(6, 4)
            np.testing.assert_allclose(compiled(x).detach().numpy(), eager_bn(x).detach().numpy(), rtol=1e-6)
        assert compiled_bn.num_batches_tracked.item() == eager_bn.num_batches_tracked.item() == 5
        np.testing.assert_allclose(compiled_bn.running_mean.numpy(), eager_bn.running_mean.numpy(), rtol=1e-6)


# ---- the arguments -----------------------------------------------------------------------

def test_the_structure_of_the_arguments_is_part_of_the_signature():
    t = ember.full((3,), 3.0)
    x = ember.ones(3)

    def f(x, y=None, z=None):
        return x + y if y is not None else x * z

    compiled = ember.compile(f)
    compiled(x, y=t)
    same(compiled(x, z=t), f(x, z=t))

    def g(d):
        return d["a"] * 2 if "a" in d else d["b"] * 10

    compiled = ember.compile(g)
    compiled({"a": t})
    same(compiled({"b": t}), g({"b": t}))

    def h(a, b):
        return sum(a) + len(b)

    compiled = ember.compile(h)
    compiled([t, t], [])
    same(compiled([t], [t]), h([t], [t]))


def test_a_non_contiguous_argument_is_a_new_signature():
    def f(x):
        return x.flatten() * (2.0 if x.is_contiguous() else 3.0) + x.stride(0)

    compiled = ember.compile(f)
    compiled(ember.arange(6.0).reshape(2, 3))
    transposed = ember.arange(6.0).reshape(3, 2).t()
    same(compiled(transposed), f(transposed))
    view = ember.compile(lambda x: x.view(-1) if x.is_contiguous() else x.reshape(-1))
    view(ember.arange(6.0).reshape(2, 3))
    same(view(transposed), transposed.reshape(-1))


class _Config:
    def __init__(self, scale):
        self.scale = scale


def test_an_object_argument_keeps_its_identity_for_the_recording():
    compiled = ember.compile(lambda x, cfg: x * cfg.scale)
    x = ember.ones(3)
    for scale in (2.0, 3.0, 4.0):  # a new object each call: none may take an old one's id
        cfg = _Config(scale)
        same(compiled(x, cfg), x * scale)
        del cfg


# ---- closures ----------------------------------------------------------------------------

def test_closure_variables_are_read_at_every_call():
    def outer():
        scale, offset = 2.0, ember.ones(3)

        def program(x):
            return x * scale + offset

        def rebind(new_scale, new_offset):
            nonlocal scale, offset
            scale, offset = new_scale, new_offset
        return program, rebind

    program, rebind = outer()
    compiled = ember.compile(program)
    x = ember.ones(3)
    same(compiled(x), program(x))
    rebind(9.0, ember.full((3,), 10.0))
    same(compiled(x), program(x))
    rebind(9.0, ember.full((3,), -1.0))
    same(compiled(x), program(x))


# ---- Python state a training step changes --------------------------------------------------

@pytest.mark.parametrize("grads_before", ["none", "set"])
def test_grads_set_to_none_by_the_program_are_replayed(grads_before):
    def make():
        ember.manual_seed(0)
        return nn.Linear(3, 2)

    def step_of(model):
        def step(x):
            for p in model.parameters():
                p.grad = None
            model(x).sum().backward()
        return step

    compiled_model, eager_model = make(), make()
    if grads_before == "set":
        for m in (compiled_model, eager_model):
            m(ember.ones(1, 3)).sum().backward()
    compiled, eager = ember.compile(step_of(compiled_model)), step_of(eager_model)
    for k in range(3):
        x = ember.full((1, 3), float(k + 1))
        compiled(x)
        eager(x)
        for p, q in zip(compiled_model.parameters(), eager_model.parameters()):
            same(p.grad, q.grad)


def test_parameters_unfrozen_between_calls_get_gradients():
    def make():
        ember.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.SiLU(), nn.Linear(4, 2))
        return model, ember.optim.SGD(model.parameters(), lr=0.1)

    def step_of(model, opt):
        def step(x):
            opt.zero_grad()  # the parameters are first read after this call
            model(x).sum().backward()
            opt.step()
        return step

    (m1, o1), (m2, o2) = make(), make()
    compiled, eager = ember.compile(step_of(m1, o1)), step_of(m2, o2)
    x = ember.ones(2, 3)
    for k in range(4):
        for m in (m1, m2):
            m[0].requires_grad_(k >= 2)
        compiled(x)
        eager(x)
        for p, q in zip(m1.parameters(), m2.parameters()):
            same(p, q)


def test_manual_seed_inside_the_program_is_replayed():
    def program(x):
        ember.manual_seed(7)
        return x + ember.randn_like(x)

    compiled = ember.compile(program)
    x = ember.zeros(3)
    for _ in range(3):
        same(compiled(x), program(x))
    ember.manual_seed(0)
    compiled(x)
    after_compiled = ember.randn(2)
    ember.manual_seed(0)
    program(x)
    same(after_compiled, ember.randn(2))


def test_a_scheduler_stepped_inside_the_program_steps_on_every_call():
    def make():
        ember.manual_seed(0)
        model = nn.Linear(2, 2)
        opt = ember.optim.SGD(model.parameters(), lr=1.0)
        return model, opt, ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def step_of(model, opt, schedule):
        def step(x):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            schedule.step()
        return step

    (m1, o1, s1), (m2, o2, s2) = make(), make()
    compiled, eager = ember.compile(step_of(m1, o1, s1)), step_of(m2, o2, s2)
    for k in range(4):
        x = ember.full((3, 2), float(k))
        compiled(x)
        eager(x)
        assert o1.param_groups[0]["lr"] == o2.param_groups[0]["lr"] == 0.5 ** (k + 1)
        assert s1.last_epoch == s2.last_epoch == k + 1
        for p, q in zip(m1.parameters(), m2.parameters()):
            same(p, q)


# ---- what the program returns and takes ---------------------------------------------------

class _Output(dict):
    """A model output as Hugging Face's: a dict whose keys read as attributes."""

    def __getattr__(self, name):
        return self[name]


@dataclasses.dataclass
class _Logits:
    logits: ember.Tensor
    label: str = "scores"


def test_returned_dict_subclasses_and_dataclasses_are_rebuilt_on_every_replay():
    lin = nn.Linear(3, 2)
    as_dict = ember.compile(lambda x: _Output(logits=lin(x)))
    as_ordered = ember.compile(lambda x: collections.OrderedDict(logits=lin(x)))
    as_defaultdict = ember.compile(lambda x: collections.defaultdict(list, logits=lin(x)))
    as_dataclass = ember.compile(lambda x: _Logits(lin(x)))
    for k in range(3):
        x = ember.full((2, 3), float(k))
        for compiled, cls in ((as_dict, _Output), (as_ordered, collections.OrderedDict),
                              (as_defaultdict, collections.defaultdict), (as_dataclass, _Logits)):
            out = compiled(x)
            assert type(out) is cls
            same(out.logits if cls in (_Output, _Logits) else out["logits"], lin(x))
        assert as_defaultdict(x)["missing"] == []
        assert as_dataclass(x) is not as_dataclass(x)


def test_a_dict_subclass_argument_keeps_its_type():
    lin = nn.Linear(3, 2)

    class Batch(dict):
        __getattr__ = dict.__getitem__

    def program(batch):
        return lin(batch.x) * batch.scale

    compiled = ember.compile(program)
    for scale in (0.5, 2.0, 3.0):  # the float becomes symbolic: the arguments are rebuilt around it
        batch = Batch(x=ember.ones(2, 3), scale=scale)
        same(compiled(batch), program(batch))


def test_a_program_whose_forward_hooks_run_python_code_runs_eagerly():
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    seen, calls = {}, []
    net[1].register_forward_hook(lambda mod, args, out: seen.__setitem__("relu", out.detach()))
    net[0].register_forward_pre_hook(lambda mod, args: calls.append(1))
    compiled = ember.compile(net)
    for k in range(3):
        x = ember.full((1, 4), k + 1.0)
        out = compiled(x)
        assert len(calls) == k + 1
        same(seen["relu"], out)
    report = ember._dynamo.explain(net)(x)
    assert report.graph_count == 0 and "forward hook" in report.eager_reasons[0]


# ---- autograd the program drives itself --------------------------------------------------

def _checkpointed_program(use_reentrant):
    from ember.utils.checkpoint import checkpoint
    ember.manual_seed(0)
    layer = nn.Linear(4, 4)

    def program(x):
        h = checkpoint(lambda t: layer(t).tanh(), x, use_reentrant=use_reentrant)
        return (h * x).sum()
    return layer, program


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_inside_the_program_is_recorded_as_its_function(use_reentrant):
    # the checkpoint's recomputation was a node the replay lost: the weight got no gradient
    layer, program = _checkpointed_program(use_reentrant)
    compiled = ember.compile(program)
    for _ in range(3):  # the first call records, the others replay
        x = ember.randn(3, 4, requires_grad=True)
        y = x.detach().clone().requires_grad_()
        compiled(x).backward()
        got = layer.weight.grad.clone()
        layer.weight.grad = None
        program(y).backward()
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got.numpy(), layer.weight.grad.numpy(), rtol=1e-6, atol=1e-7)
        layer.weight.grad = None
    assert ember._dynamo.explain(program)(x).graph_count == 1


class _TripleGradient(ember.autograd.Function):
    """clamp forward; the gradient times 3, whatever the clamp did (straight through)."""

    @staticmethod
    def forward(ctx, x):
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, grad):
        return grad * 3.0


def test_a_custom_function_runs_the_signature_eagerly():
    # its backward is the user's code: replaying its forward's ops lost it
    w = ember.tensor([2.0, -0.5], requires_grad=True)

    def program(x):
        return _TripleGradient.apply(x * w).sum()

    compiled = ember.compile(program)
    for k in range(3):
        x = ember.tensor([1.0, k + 1.0])
        compiled(x).backward()
        np.testing.assert_array_equal(w.grad.numpy(), [3.0, 3.0 * (k + 1)])  # d/dw of 3 * (x * w)
        w.grad = None
    report = ember._dynamo.explain(program)(x)
    assert report.graph_count == 0 and "custom autograd.Function" in report.eager_reasons[0]


def test_a_gradient_with_create_graph_runs_the_signature_eagerly():
    # a gradient penalty: the replay's backward is not differentiable
    w = ember.tensor([[0.5, -1.0], [2.0, 0.3]], requires_grad=True)

    def program(x):
        xi = x.detach().requires_grad_(True)
        out = (xi @ w).tanh().sum()
        g, = ember.autograd.grad(out, xi, create_graph=True)
        return out + (g ** 2).sum()

    compiled = ember.compile(program)
    for k in range(3):
        x = ember.tensor([[1.0, k + 2.0]])
        compiled(x).backward()
        got = w.grad.clone()
        w.grad = None
        program(x).backward()
        same(got, w.grad)
        w.grad = None
    report = ember._dynamo.explain(program)(x)
    assert report.graph_count == 0 and "create_graph=True" in report.eager_reasons[0]


# ---- values read through a global or a closure variable ------------------------------------

class _Width:
    scale = 1.0


_CFG = types.SimpleNamespace(temperature=1.0, inner=types.SimpleNamespace(shift=0.0))
_OPTS = {"scale": 1.0, "act": ember.tanh}


def _reads_config(x):
    y = _OPTS["act"](x / _CFG.temperature) * _OPTS["scale"] + _CFG.inner.shift
    return y * _Width.scale


@pytest.mark.parametrize("change", [
    lambda: setattr(_CFG, "temperature", 2.0),
    lambda: setattr(_CFG.inner, "shift", 0.5),
    lambda: _OPTS.__setitem__("scale", 3.0),
    lambda: _OPTS.__setitem__("act", ember.sigmoid),
    lambda: setattr(_Width, "scale", -1.0),
], ids=["attribute", "nested attribute", "dict item", "function in a dict", "class attribute"])
def test_a_config_read_through_a_global_is_guarded(change):
    saved = (_CFG.temperature, _CFG.inner.shift, dict(_OPTS), _Width.scale)
    try:
        compiled = ember.compile(_reads_config)
        x = ember.tensor([1.0, -2.0])
        for _ in range(2):  # recorded, then replayed
            same(compiled(x), _reads_config(x))
        change()
        same(compiled(x), _reads_config(x))
    finally:
        _CFG.temperature, _CFG.inner.shift, _Width.scale = saved[0], saved[1], saved[3]
        _OPTS.clear()
        _OPTS.update(saved[2])


def test_a_config_read_through_a_closure_is_guarded():
    cfg = {"eps": 1e-3}

    def program(x):
        return x / (x.abs() + cfg["eps"])

    compiled = ember.compile(program)
    x = ember.tensor([0.5, -0.01])
    for eps in (1e-3, 1e-3, 0.1, 0.1):
        cfg["eps"] = eps
        same(compiled(x), program(x))


def test_a_custom_function_without_gradients_is_replayed():
    # under no_grad its forward's ops are all there is: they are recorded and replayed
    def program(x):
        return _TripleGradient.apply(x * 2) + 1

    compiled = ember.compile(program)
    with ember.no_grad():
        for v in (0.25, 3.0, -0.1):
            same(compiled(ember.tensor([v, -v])), program(ember.tensor([v, -v])))
        report = ember._dynamo.explain(program)(ember.tensor([1.0]))
    assert report.graph_count == 1 and not report.eager_reasons


class _Slotted:
    """No instance ``__dict__``; ``__getattr__`` counts the lookups that miss."""

    __slots__ = ("scale", "misses")

    def __init__(self):
        self.scale, self.misses = 2.0, 0

    def __getattr__(self, name):
        object.__setattr__(self, "misses", self.misses + 1)
        raise AttributeError(name)


_SLOTTED = _Slotted()


def test_a_guard_never_runs_the_programs_attribute_hooks():
    # the guards read namespaces directly: no __getattr__, no property of the user's classes
    _SLOTTED.misses = 0  # (pytest's collection probed the module's globals)

    def program(x):
        return x * _SLOTTED.scale

    compiled = ember.compile(program)
    for _ in range(3):
        same(compiled(ember.tensor([1.0, 2.0])), program(ember.tensor([1.0, 2.0])))
    assert _SLOTTED.misses == 0
