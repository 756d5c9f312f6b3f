"""ember.compile on whole models: ResNet18, MobileNetV3-small and a ViT-tiny configuration
(training mode, forward and parameter gradients) and a nanoGPT-style block trained for 10
AdamW steps, compiled with the default backend (fused numba loops where the graph has
them) against eager ember.

Tolerance rule (per workload, computed in the test): the compiled float32 result may be
as far from the float64 eager result as 4x the eager float32 result is from it, plus a
floor of 1e-6 of the values' scale. Eager ember's float32 matches torch's (the op tests),
so this is the distance torch eager's own float32 keeps from float64 on the workload."""

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember_vision import models


def _bound(compiled32, eager32, eager64, factor=4.0):
    scale = max(float(np.abs(eager64).max()), 1e-30)
    tol = factor * float(np.abs(eager32 - eager64).max()) + 1e-6 * scale
    err = float(np.abs(compiled32 - eager64).max())
    assert err <= tol, f"compiled error {err:.3g} above tolerance {tol:.3g}"


def _forward_backward(model, x):
    for p in model.parameters():
        p.grad = None
    out = model(x)
    (out.square().mean()).backward()
    return [out.detach().numpy().astype(np.float64)] + [p.grad.numpy().astype(np.float64)
                                                         for p in model.parameters()]


NETS = {
    "resnet18": (lambda: models.resnet18(num_classes=10), (2, 3, 64, 64)),
    "mobilenet_v3_small": (lambda: models.mobilenet_v3_small(num_classes=10), (2, 3, 64, 64)),
    "vit_tiny": (lambda: models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=3,
                                                  hidden_dim=48, mlp_dim=96, num_classes=10), (2, 3, 32, 32)),
}


@pytest.mark.parametrize("name", list(NETS))
def test_vision_model_forward_and_gradients(name):
    build, shape = NETS[name]
    ember.manual_seed(0)
    model = build().train()
    x = ember.tensor(np.random.default_rng(1).standard_normal(shape).astype(np.float32))
    # BatchNorm's running statistics change each call: run every variant from the same state
    state = copy.deepcopy(model.state_dict())
    eager32 = _forward_backward(model, x)
    wide = copy.deepcopy(model).double()
    wide.load_state_dict({k: v.double() if v.dtype.is_floating_point else v for k, v in state.items()})
    eager64 = _forward_backward(wide, x.double())
    compiled = ember.compile(model)
    for _ in range(2):  # the recording call, then the replay through the compiled graph
        model.load_state_dict(state)
        ours = _forward_backward(compiled, x)
    for a, b, c in zip(ours, eager32, eager64):
        _bound(a, b, c)


class Block(nn.Module):
    """A nanoGPT-style pre-norm block (causal attention, GELU MLP) with a tied-head loss."""

    def __init__(self, width=64, heads=4, vocab=50):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, width)
        self.ln_1, self.ln_2, self.ln_f = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, idx, targets):
        x = self.wte(idx)
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        x = x + self.out(F.gelu(self.fc(self.ln_2(x))))
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def _train(model, steps, idx, targets, compiled):
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)

    def step(idx, targets):
        opt.zero_grad()
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        return loss

    fn = ember.compile(step) if compiled else step
    losses = [float(fn(idx, targets).item()) for _ in range(steps)]
    return losses, [p.detach().numpy().astype(np.float64) for p in model.parameters()]


def test_nanogpt_block_trains_ten_adamw_steps_as_eager():
    ember.manual_seed(2)
    model = Block()
    rng = np.random.default_rng(3)
    idx, targets = ember.tensor(rng.integers(0, 50, (4, 16))), ember.tensor(rng.integers(0, 50, (4, 16)))
    base = copy.deepcopy(model.state_dict())
    losses32, params32 = _train(model, 10, idx, targets, compiled=False)
    model.load_state_dict(base)
    losses_c, params_c = _train(model, 10, idx, targets, compiled=True)
    wide = Block().double()
    wide.load_state_dict({k: v.double() for k, v in base.items()})
    losses64, params64 = _train(wide, 10, idx, targets, compiled=False)
    assert losses_c[-1] < losses_c[0]  # it trained
    _bound(np.array(losses_c), np.array(losses32), np.array(losses64))
    for a, b, c in zip(params_c, params32, params64):
        _bound(a, b, c)


def test_the_compile_example_runs_and_agrees_with_eager():
    import os
    import re
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "compile_step.py")
    out = subprocess.run([sys.executable, script, "--rows", "64", "--cols", "50", "--steps", "2"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "captured 1 graph(s), 0 graph break(s)" in out.stdout
    compiled, eager, diff = re.search(r"loss compiled ([0-9.]+), eager ([0-9.]+); largest gradient difference (\S+)",
                                      out.stdout).groups()
    assert abs(float(compiled) - float(eager)) < 1e-5 and float(diff) < 1e-5


def test_nanogpt_block_trains_at_varying_batch_and_length_with_one_recording():
    ember.manual_seed(4)
    model = Block()
    twin = copy.deepcopy(model)
    opt, opt_twin = ember.optim.AdamW(model.parameters(), lr=1e-2), ember.optim.AdamW(twin.parameters(), lr=1e-2)

    def step(net, optimizer, idx, targets):
        optimizer.zero_grad()
        loss = net(idx, targets)
        loss.backward()
        optimizer.step()
        return loss

    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = ember.compile(step, backend=counting, dynamic=True)
    rng = np.random.default_rng(5)
    for b, t in ((4, 16), (2, 9), (3, 12), (4, 16), (5, 7)):
        idx, targets = ember.tensor(rng.integers(0, 50, (b, t))), ember.tensor(rng.integers(0, 50, (b, t)))
        ours = compiled(model, opt, idx, targets)
        eager = step(twin, opt_twin, idx, targets)
        np.testing.assert_array_equal(ours.detach().numpy(), eager.detach().numpy())
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert len(graphs) == 1  # one recording served every batch size and length
