"""Workloads of the compiler, each as ``eager`` and ``compiled``: ember runs the compiled
form through ``ember.compile`` (its default backend, the fused numba loops); torch runs
eager in both (``torch.compile`` needs a C++ toolchain and minutes per model, so it is
measured by hand, outside ``nox -s bench``). The step function is compiled whole, with its
backward and optimizer step; the first call (the recording and code generation) is the
warm-up round and is not timed.
"""

from __future__ import annotations

_ROWS, _COLS = 4096, 1000


# torch.compile (inductor) for torch's compiled rows: off in the table, on in the by-hand run
# of ``torch_compile_by_hand.py`` (it needs a C++ compiler and minutes per workload)
TORCH_COMPILE = False


def _maybe_compile(lib, fn, compiled: bool):
    if compiled and (lib.__name__ == "ember" or TORCH_COMPILE):
        return lib.compile(fn)
    return fn


def elementwise_step(lib, compiled: bool):
    """layer_norm -> affine -> GELU -> cross-entropy on [4096, 1000], forward and backward."""
    F = lib.nn.functional
    lib.manual_seed(0)
    x = lib.randn(_ROWS, _COLS, requires_grad=True)
    ln_w, ln_b = lib.ones(_COLS, requires_grad=True), lib.zeros(_COLS, requires_grad=True)
    w, b = lib.ones(_COLS, requires_grad=True), lib.zeros(_COLS, requires_grad=True)
    target = lib.randint(0, _COLS, (_ROWS,))

    def loss_and_grad(x, target):
        h = F.layer_norm(x, (_COLS,), ln_w, ln_b)
        loss = F.cross_entropy(F.gelu(h * w + b), target)
        loss.backward()
        return loss

    fn = _maybe_compile(lib, loss_and_grad, compiled)

    def step():
        x.grad = None
        for p in (ln_w, ln_b, w, b):
            p.grad = None
        fn(x, target)
    return step, "step", 1


def softmax_cross_entropy(lib, compiled: bool):
    """softmax (scaled logits) then cross-entropy of its log on [4096, 1000], forward and backward."""
    F = lib.nn.functional
    lib.manual_seed(0)
    x = lib.randn(_ROWS, _COLS, requires_grad=True)
    target = lib.randint(0, _COLS, (_ROWS,))

    def loss_and_grad(x, target):
        loss = F.cross_entropy(x * 0.5, target, label_smoothing=0.1)
        loss.backward()
        return loss

    fn = _maybe_compile(lib, loss_and_grad, compiled)

    def step():
        x.grad = None
        fn(x, target)
    return step, "step", 1


def gelu_mlp_step(lib, compiled: bool):
    """A GELU MLP (1024 -> 4096 -> 1024, tanh GELU, residual, layer norm) on 512 rows, SGD."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    up, down, norm = nn.Linear(1024, 4096), nn.Linear(4096, 1024), nn.LayerNorm(1024)
    params = list(up.parameters()) + list(down.parameters()) + list(norm.parameters())
    opt = lib.optim.SGD(params, lr=1e-3)
    x = lib.randn(512, 1024)

    def train(x):
        h = down(F.gelu(up(x), approximate="tanh")) + x
        loss = norm(h).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    fn = _maybe_compile(lib, train, compiled)
    return (lambda: fn(x)), "step", 1


def transformer_block(lib, compiled: bool):
    """A pre-norm Transformer block (LayerNorm, 4-head causal attention, GELU MLP) on
    [16, 128, 256], forward and backward."""
    nn, F = lib.nn, lib.nn.functional
    width, heads = 256, 4
    lib.manual_seed(0)
    ln_1, ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
    qkv, proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
    fc, out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
    x = lib.randn(16, 128, width, requires_grad=True)

    def block(x):
        B, T, C = x.shape
        q, k, v = qkv(ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + proj(y.transpose(1, 2).contiguous().view(B, T, C))
        x = x + out(F.gelu(fc(ln_2(x))))
        x.square().mean().backward()
        return x

    fn = _maybe_compile(lib, block, compiled)

    def step():
        x.grad = None
        fn(x)
    return step, "step", 1


def lenet_adam(lib, compiled: bool):
    """The LeNet Adam step of the main table (batch 64 of 1x28x28), as one compiled function."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84),
                          nn.ReLU(), nn.Linear(84, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x, y = lib.randn(64, 1, 28, 28), lib.randint(0, 10, (64,))

    def train(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = _maybe_compile(lib, train, compiled)
    return (lambda: fn(x, y)), "step", 1


WORKLOADS = {}
for _name, _fn in (("LN-affine-GELU-CE", elementwise_step), ("softmax+CE", softmax_cross_entropy),
                   ("GELU MLP step", gelu_mlp_step), ("Transformer block", transformer_block),
                   ("LeNet Adam", lenet_adam)):
    for _compiled in (False, True):
        WORKLOADS[f"compile: {_name} {'compiled' if _compiled else 'eager'}"] = (
            lambda lib, fn=_fn, c=_compiled: fn(lib, c))
