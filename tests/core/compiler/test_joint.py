"""The joint forward/backward graph of a compiled forward (torch's AOTAutograd): one
``CompiledFunctionBackward`` node per call, the forward saving only what the backward
graph reads, and gradients equal to eager's."""

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler._joint import _JointForward, _JointStep


def _joint_of(compiled, kind=_JointForward):
    inner = compiled._compiled if isinstance(compiled, nn.Module) else compiled._ember_compiled
    (entries,) = inner._signatures.values()
    run = entries[0].root.run
    return run if isinstance(run, kind) else None


def _twin_grads(model, x, loss=lambda out: out.square().sum(), calls=3, seed=None):
    """Run the compiled model and an eager copy ``calls`` times; return both parameter
    gradient lists and outputs of the last call."""
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    for step in range(calls):
        model.zero_grad()
        twin.zero_grad()
        if seed is not None:
            ember.manual_seed(seed + step)
        out = compiled(x)
        loss(out).backward()
        if seed is not None:
            ember.manual_seed(seed + step)
        ref = twin(x)
        loss(ref).backward()
    return compiled, out, ref, [p.grad for p in model.parameters()], [q.grad for q in twin.parameters()]


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(), nn.LayerNorm(32),
                           nn.Linear(32, 4)), (8, 16)),
    (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True), (2, 6, 32)),
    (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True), (2, 6, 32)),
    (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                           nn.Dropout(0.3), nn.Linear(4 * 3 * 3, 5)), (2, 3, 8, 8)),
], ids=["mlp", "encoder layer", "pre-norm encoder layer", "cnn with dropout"])
def test_replays_record_one_node_and_give_eager_gradients(make, shape):
    ember.manual_seed(0)
    model, x = make(), ember.randn(*shape)
    compiled, out, ref, grads, expected = _twin_grads(model, x, seed=7)
    assert _joint_of(compiled) is not None
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    # the fused loops sum in another order than eager's ops: eager float32 is itself up to 2e-6
    # from float64 on these gradients (of order 1), so the two may differ by a few times that
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-5)


def test_the_forward_saves_only_what_the_backward_reads():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = ember.compile(model)
    for _ in range(2):
        compiled(ember.randn(3, 4)).sum().backward()
    joint = _joint_of(compiled)
    saved = [n.name for n in joint.backward.graph.nodes if n.op == "placeholder" and n.name.startswith("saved_")]
    # the input needs no gradient, so the first weight is read by no gradient: not kept
    assert not any("0_weight" in name for name in saved)
    assert any("2_weight" in name for name in saved)  # dL/dh = g @ W2
    assert any(name.endswith("_args") or name == "saved_args" for name in saved)  # dL/dW1 = g^T x
    outputs = joint.forward_module.graph.output_node().args[0]
    assert len(outputs) == 1 + len(saved)


def test_backward_twice_needs_retain_graph_as_in_eager():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    x = ember.randn(3, 4)
    compiled(x)
    out, ref = compiled(x).sum(), twin(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    ref.backward(retain_graph=True)
    ref.backward()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_double_backward_raises_torchs_error():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    compiled = ember.compile(model)
    x = ember.randn(2, 3)
    compiled(x)
    out = compiled(x).sum()
    (g,) = ember.autograd.grad(out, [model[0].weight], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), ember.autograd.grad(model(x).sum(), [model[0].weight])[0].numpy(),
                               rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="does not currently support double backward"):
        g.sum().backward()


def test_a_result_no_gradient_reaches_stays_without_history():
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            logits = self.fc(x)
            return logits, logits.argmax(-1), x * 2

    compiled = ember.compile(Head())
    x = ember.randn(5, 4)
    for _ in range(2):
        logits, labels, doubled = compiled(x)
    assert logits.requires_grad and not labels.requires_grad and not doubled.requires_grad
    F.cross_entropy(logits, labels).backward()
    assert compiled.fc.weight.grad is not None


def test_an_input_that_needs_a_gradient_gets_it():
    w = ember.randn(4, 4, requires_grad=True)

    def f(x):
        return (x @ w).relu() * 3

    compiled = ember.compile(f)
    xs = [ember.randn(2, 4, requires_grad=True) for _ in range(2)]
    for x in xs:  # the recording call, then a replay
        compiled(x).sum().backward()
    got = [x.grad for x in xs] + [w.grad]
    w.grad = None
    twins = [x.detach().requires_grad_() for x in xs]
    for x in twins:
        f(x).sum().backward()
    assert _joint_of(compiled) is not None
    for g, e in zip(got, [x.grad for x in twins] + [w.grad]):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6)


def test_a_result_that_is_its_own_input_keeps_the_input_a_leaf():
    w = ember.randn(3, 3, requires_grad=True)

    def f(x):
        return (x @ w).contiguous(), w.contiguous()

    compiled = ember.compile(f)
    x = ember.randn(2, 3)
    for _ in range(2):
        product, same = compiled(x)
    assert _joint_of(compiled) is not None
    assert w.is_leaf and w.grad_fn is None and same.grad_fn is not None
    (product.sum() + same.sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), (x.sum(0, keepdim=True).t() + 1).expand(3, 3).numpy(), rtol=1e-6)


def _training_step(model, opt, clip=None):
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("make_opt,clip", [
    (lambda p: ember.optim.AdamW(p, lr=1e-2), None),
    (lambda p: ember.optim.SGD(p, lr=0.05, momentum=0.9), 0.5),
], ids=["adamw", "sgd momentum, clipped"])
def test_a_training_step_runs_its_backward_graph_where_backward_was_called(make_opt, clip):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Dropout(0.2), nn.Linear(32, 5))
    twin = copy.deepcopy(model)
    compiled = ember.compile(_training_step(model, make_opt(model.parameters()), clip))
    eager = _training_step(twin, make_opt(twin.parameters()), clip)
    x, y = ember.randn(16, 12), ember.randint(0, 5, (16,))
    for step in range(5):
        ember.manual_seed(step)
        loss = compiled(x, y)
        ember.manual_seed(step)
        expected = eager(x, y)
        np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-5)
    assert _joint_of(compiled, _JointStep) is not None
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    # the returned loss's graph was used up by backward(), as in eager
    assert loss.requires_grad
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_gradient_hooks_and_their_callbacks_run_in_a_compiled_step():
    from ember.autograd.engine import queue_callback
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    twin = copy.deepcopy(model)
    seen = {"compiled": [], "eager": []}
    for m, key in ((model, "compiled"), (twin, "eager")):
        m[0].weight.register_hook(lambda g: g * 2)  # a tensor hook changes the gradient
        m[2].bias.register_post_accumulate_grad_hook(
            lambda p, key=key: queue_callback(lambda: seen[key].append(float(p.grad.sum()))))

    def step(m):
        def run(x):
            m.zero_grad()
            m(x).square().mean().backward()
        return run

    compiled = ember.compile(step(model))
    x = ember.randn(5, 4)
    for _ in range(3):
        compiled(x)
        step(twin)(x)
    assert _joint_of(compiled, _JointStep) is not None
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(seen["compiled"], seen["eager"], rtol=1e-6)
    assert len(seen["compiled"]) == 3


def test_a_step_sends_the_gradient_of_an_input_with_history_on_into_its_graph():
    w = ember.randn(3, 3, requires_grad=True)

    def step(h):
        (h @ h).tanh().sum().backward()

    compiled = ember.compile(step)
    for _ in range(2):
        compiled(w * 2)  # an input made by an op: its gradient goes on to w
    got, w.grad = w.grad, None
    for _ in range(2):
        step(w * 2)
    assert _joint_of(compiled, _JointStep) is not None
    # the two products' gradients are summed in another order than the engine's
    np.testing.assert_allclose(got.numpy(), w.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_a_step_whose_backward_keeps_its_graph_runs_the_engine():
    model = nn.Linear(3, 2)

    def step(x):
        loss = model(x).sum()
        loss.backward(retain_graph=True)
        return loss

    compiled = ember.compile(step)
    for _ in range(2):
        loss = compiled(ember.randn(4, 3))
    assert _joint_of(compiled, _JointStep) is None
    loss.backward()  # the graph was kept, as asked


def test_in_place_activations_on_intermediate_results_run_out_of_place():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.ReLU(inplace=True), nn.Conv2d(4, 4, 3),
                          nn.Hardswish(inplace=True), nn.Flatten(), nn.Dropout(0.5, inplace=True), nn.Linear(16, 3))
    compiled, out, ref, grads, expected = _twin_grads(model, ember.randn(2, 2, 6, 6), seed=3)
    assert _joint_of(compiled) is not None
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    for g, e in zip(grads, expected):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-6)


def test_an_in_place_op_on_an_argument_still_changes_it():
    w = ember.randn(3, requires_grad=True)

    def f(x):
        x.relu_()  # the caller's tensor: written in place, as in eager
        return (x * w).sum()

    compiled = ember.compile(f)
    xs = [ember.randn(4, 3) for _ in range(2)]
    before = [x.clone() for x in xs]
    for x in xs:  # the recording call, then a replay
        compiled(x).backward()
    assert _joint_of(compiled) is not None
    for x, b in zip(xs, before):
        np.testing.assert_array_equal(x.numpy(), b.relu().numpy())
    np.testing.assert_allclose(w.grad.numpy(), (xs[0].sum(0) + xs[1].sum(0)).numpy(), rtol=1e-6)


class _Tail(nn.Module):
    """A linear layer, then ``tail(h, p)`` with a parameter ``p`` of the layer's width."""

    def __init__(self, tail):
        super().__init__()
        self.fc, self.p, self.tail = nn.Linear(4, 3), nn.Parameter(ember.randn(3)), tail

    def forward(self, x):
        return self.tail(self.fc(x), self.p)


TAILS = {
    "where on a comparison": lambda h, p: ember.where(h > 0, h, p),
    "masked_fill": lambda h, p: h.masked_fill(h > 0.3, 0.0) * p,
    "max(dim).values": lambda h, p: (h * p).max(-1).values,
    "float() of float32": lambda h, p: h.float() * p,
    "expand_as": lambda h, p: p.expand_as(h) * h,
    "type_as a parameter": lambda h, p: h.type_as(p).tanh(),  # p takes no gradient, as in eager
    "a float64 factor": lambda h, p: (h * p.double()).float(),
}


@pytest.mark.parametrize("whole_step", [False, True], ids=["forward", "training step"])
@pytest.mark.parametrize("tail", list(TAILS.values()), ids=list(TAILS))
def test_op_tails_give_eager_gradients_and_updates(tail, whole_step):
    ember.manual_seed(0)
    model = _Tail(tail)
    twin = copy.deepcopy(model)

    def step_of(m, forward):
        opt = ember.optim.SGD(m.parameters(), lr=0.1, weight_decay=0.01)

        def step(x):
            opt.zero_grad()
            loss = forward(x).square().sum()
            loss.backward()
            opt.step()
            return loss
        return step

    compiled_model = None if whole_step else ember.compile(model)
    compiled = ember.compile(step_of(model, model)) if whole_step else step_of(model, compiled_model)
    eager = step_of(twin, twin)
    for _ in range(3):  # the recording call, then replays
        x = ember.randn(3, 4)
        compiled(x)
        eager(x)
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            assert (p.grad is None) == (q.grad is None), name
            if q.grad is not None:
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert (_joint_of(compiled, _JointStep) if whole_step else _joint_of(compiled_model)) is not None


@pytest.mark.parametrize("whole_step", [False, True], ids=["forward", "training step"])
def test_a_result_left_out_of_the_loss_gives_its_layer_no_gradient(whole_step):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 3)

        def forward(self, x):
            return (self.a(x).tanh() * 2), (self.b(x).tanh() * 2)

    ember.manual_seed(0)
    model = TwoHeads()
    opt = ember.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.1)
    before = model.b.weight.detach().clone()

    def step(forward):
        def run(x):
            opt.zero_grad()
            loss = forward(x)[0].sum()
            loss.backward()
            opt.step()
            return loss
        return run

    compiled_model = None if whole_step else ember.compile(model)
    compiled = ember.compile(step(model)) if whole_step else step(compiled_model)
    for _ in range(3):
        compiled(ember.randn(5, 4))
    assert model.b.weight.grad is None  # eager's: no gradient reached it, so weight decay skipped it too
    np.testing.assert_array_equal(model.b.weight.detach().numpy(), before.numpy())
    assert (_joint_of(compiled, _JointStep) if whole_step else _joint_of(compiled_model)) is not None
