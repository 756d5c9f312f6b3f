"""Benchmark workloads, written once against PyTorch's API.

Each workload takes the library module (``ember`` or ``torch``) and returns
``(step, unit, per_step)``: ``step()`` runs one measured iteration, ``unit`` names what a
reported time is per, and ``per_step`` is how many of those units one step holds.
A workload that needs something the library lacks raises ``Missing``.  Workloads named
in ``LONG`` take tens of seconds a step: they are timed once per round, without warm-up.
"""

from __future__ import annotations

import gzip
import os

import numpy as np


class Missing(Exception):
    """The library lacks a feature this workload needs."""


def _need(lib, *names):
    for name in names:
        obj = lib
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                raise Missing(name)


def add_overhead(lib, size: int, grad: bool, n: int = 10_000):
    a = lib.ones(size, requires_grad=grad)
    b = lib.ones(size, requires_grad=grad)

    def step():
        for _ in range(n):
            a + b
    return step, "op", n


def chain(lib, backward: bool, n: int = 1_000):
    """10 elementwise ops ending in sum, on 16 elements."""
    x = lib.ones(16, requires_grad=backward)

    def one():
        y = ((((x * 2 + 1).exp() - 1).tanh() * x).sigmoid() + x).relu().sqrt().sum()
        if backward:
            y.backward()

    def step():
        for _ in range(n):
            one()
    return step, "op", n * 10


def _train_step(lib, model, opt, x, y):
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def mlp(lib):
    _need(lib, "nn.Linear", "optim.SGD")
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.randn(128, 784)
    y = lib.randint(0, 10, (128,))
    return _train_step(lib, model, opt, x, y), "step", 1


def lenet(lib):
    _need(lib, "nn.Conv2d", "nn.MaxPool2d", "optim.Adam")
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.randn(64, 1, 28, 28)
    y = lib.randint(0, 10, (64,))
    return _train_step(lib, model, opt, x, y), "step", 1


def conv(lib, backward: bool):
    _need(lib, "nn.functional.conv2d")
    F = lib.nn.functional
    x = lib.randn(32, 64, 56, 56, requires_grad=backward)
    w = lib.randn(64, 64, 3, 3, requires_grad=backward)

    def step():
        y = F.conv2d(x, w, padding=1)
        if backward:
            y.sum().backward()
    return step, "step", 1


def matmul(lib):
    a = lib.randn(1024, 1024)
    b = lib.randn(1024, 1024)

    def step():
        a @ b
    return step, "matmul", 1


def lstm(lib):
    _need(lib, "nn.LSTM")
    lib.manual_seed(0)
    model = lib.nn.LSTM(128, 256)
    x = lib.randn(35, 32, 128)

    def step():
        out, _ = model(x)
        out.sum().backward()
    return step, "step", 1


def transformer(lib):
    _need(lib, "nn.TransformerEncoderLayer")
    lib.manual_seed(0)
    layer = lib.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    x = lib.randn(16, 128, 256)

    def step():
        layer(x).sum().backward()
    return step, "step", 1


def per_sample_grads(lib):
    """torch.func's per-sample-gradient recipe: vmap(grad(loss)) over 64 MNIST-sized
    samples of a small CNN, one batched call per op."""
    _need(lib, "func.vmap", "func.grad", "func.functional_call")
    F = lib.nn.functional
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Conv2d(1, 8, 3), lib.nn.ReLU(), lib.nn.MaxPool2d(2), lib.nn.Flatten(),
                              lib.nn.Linear(8 * 13 * 13, 10))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = lib.randn(64, 1, 28, 28), lib.randint(0, 10, (64,))

    def loss(p, xi, yi):
        return F.cross_entropy(lib.func.functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))
    grads = lib.func.vmap(lib.func.grad(loss), in_dims=(None, 0, 0))

    def step():
        grads(params, x, y)
    return step, "step", 1


def dataloader(lib, workers: int):
    _need(lib, "utils.data.DataLoader")
    data = np.random.default_rng(0).integers(0, 256, (2048, 32, 32, 3), dtype=np.uint8)
    mean = lib.tensor([0.5, 0.5, 0.5]).view(3, 1, 1)
    std = lib.tensor([0.25, 0.25, 0.25]).view(3, 1, 1)

    class Images(lib.utils.data.Dataset):
        def __len__(self):
            return len(data)

        def __getitem__(self, i):
            x = lib.from_numpy(np.ascontiguousarray(data[i].transpose(2, 0, 1))).float().div(255)
            return (x - mean) / std, i % 10

    loader = lib.utils.data.DataLoader(Images(), batch_size=64, num_workers=workers)

    def step():
        for _ in loader:
            pass
    return step, "sample", len(data)


FASHION_MNIST_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def _idx(path):
    """An IDX file (gzipped) as a numpy array: magic, dims as big-endian int32, then uint8 data."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = np.frombuffer(raw, ">i4", ndim, 4)
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fashion_epoch(lib):
    """One training epoch of the demo (examples/fashion_mnist.py): its CNN, Adam lr 2e-3,
    batch 64, shuffled, on the 60,000 Fashion-MNIST training images (normalised once up
    front, so that the model and optimizer are what is timed)."""
    _need(lib, "nn.Conv2d", "optim.Adam", "utils.data.DataLoader")
    images = os.path.join(FASHION_MNIST_DIR, "train-images-idx3-ubyte.gz")
    if not os.path.exists(images):
        raise Missing(f"Fashion-MNIST in {FASHION_MNIST_DIR} (set FASHION_MNIST_DIR)")
    x = ((_idx(images).astype(np.float32) / 255 - 0.2860) / 0.3530)[:, None]
    y = _idx(os.path.join(FASHION_MNIST_DIR, "train-labels-idx1-ubyte.gz")).astype(np.int64)
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = lib.optim.Adam(model.parameters(), lr=2e-3)
    data = lib.utils.data.TensorDataset(lib.from_numpy(x), lib.from_numpy(y))
    loader = lib.utils.data.DataLoader(data, batch_size=64, shuffle=True)

    def step():
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
    return step, "epoch", 1



# ---- layers on [4096, 1000] float32, forward + backward -------------------------------------

_ROWS, _COLS = 4096, 1000


def layer(lib, kind: str):
    """One activation, normalization or loss layer forward, then backward with a fixed
    random gradient (a scalar loss for cross-entropy)."""
    F = lib.nn.functional
    lib.manual_seed(0)
    x = lib.randn(_ROWS, _COLS, requires_grad=True)
    g = lib.randn(_ROWS, _COLS)
    w, b = lib.ones(_COLS, requires_grad=True), lib.zeros(_COLS, requires_grad=True)
    target = lib.randint(0, _COLS, (_ROWS,))
    forward = {
        "gelu": lambda: F.gelu(x),
        "gelu_tanh": lambda: F.gelu(x, approximate="tanh"),
        "silu": lambda: F.silu(x),
        "softmax": lambda: F.softmax(x, dim=-1),
        "layer_norm": lambda: F.layer_norm(x, (_COLS,), w, b),
    }

    def step():
        x.grad = None
        if kind == "cross_entropy":
            F.cross_entropy(x, target).backward()
        else:
            forward[kind]().backward(g)
    return step, "step", 1


def nanogpt_step(lib):
    """A nanoGPT-style training step: 4 pre-norm blocks (causal attention through
    scaled_dot_product_attention, GELU MLP), width 256, 4 heads, sequence 128, batch 16,
    a 65-token vocabulary with tied embeddings, AdamW."""
    _need(lib, "nn.functional.scaled_dot_product_attention", "optim.AdamW")
    nn, F = lib.nn, lib.nn.functional
    width, heads, seq, vocab = 256, 4, 128, 65

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(seq, width)
            self.blocks = nn.Sequential(*[Block() for _ in range(4)])
            self.ln_f = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            self.wte.weight = self.head.weight

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            return self.head(self.ln_f(self.blocks(x)))

    lib.manual_seed(0)
    model = GPT()
    opt = lib.optim.AdamW(model.parameters(), lr=3e-4)
    idx = lib.randint(0, vocab, (16, seq))
    targets = lib.randint(0, vocab, (16, seq))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(idx).view(-1, vocab), targets.view(-1)).backward()
        opt.step()
    return step, "step", 1


def batch_norm2d(lib):
    """BatchNorm2d(24) in training mode on [128, 24, 28, 28], forward + backward."""
    lib.manual_seed(0)
    bn = lib.nn.BatchNorm2d(24)
    x = lib.randn(128, 24, 28, 28, requires_grad=True)
    g = lib.randn(128, 24, 28, 28)

    def step():
        bn(x).backward(g)
    return step, "step", 1


def depthwise_conv(lib):
    """A depthwise 3x3 convolution (MobileNet's) on [32, 144, 56, 56], forward + backward."""
    F = lib.nn.functional
    lib.manual_seed(0)
    x = lib.randn(32, 144, 56, 56, requires_grad=True)
    w = lib.randn(144, 1, 3, 3, requires_grad=True)

    def step():
        F.conv2d(x, w, padding=1, groups=144).sum().backward()
    return step, "step", 1


def vision_inference(lib, net: str, batch: int):
    """Inference (eval, no_grad) of a 224x224 image network built from ``vision_nets``."""
    import vision_nets
    lib.manual_seed(0)
    model = getattr(vision_nets, net)(lib).eval()
    x = lib.randn(batch, 3, 224, 224)

    def step():
        with lib.no_grad():
            model(x)
    return step, "batch", 1


LONG = {"Fashion-MNIST demo epoch"}

WORKLOADS = {
    "add 1 no-grad": lambda lib: add_overhead(lib, 1, False),
    "add 16 no-grad": lambda lib: add_overhead(lib, 16, False),
    "add 1 grad": lambda lib: add_overhead(lib, 1, True),
    "add 16 grad": lambda lib: add_overhead(lib, 16, True),
    "10-op chain fwd": lambda lib: chain(lib, False),
    "10-op chain fwd+bwd": lambda lib: chain(lib, True),
    "MLP SGD step": mlp,
    "LeNet Adam step": lenet,
    "conv 64x64x3x3 fwd": lambda lib: conv(lib, False),
    "conv 64x64x3x3 fwd+bwd": lambda lib: conv(lib, True),
    "matmul 1024^3": matmul,
    "LSTM fwd+bwd": lstm,
    "Transformer layer fwd+bwd": transformer,
    "per-sample grads vmap": per_sample_grads,
    "DataLoader 0 workers": lambda lib: dataloader(lib, 0),
    "DataLoader 2 workers": lambda lib: dataloader(lib, 2),
    "Fashion-MNIST demo epoch": fashion_epoch,
    "GELU fwd+bwd": lambda lib: layer(lib, "gelu"),
    "GELU tanh fwd+bwd": lambda lib: layer(lib, "gelu_tanh"),
    "SiLU fwd+bwd": lambda lib: layer(lib, "silu"),
    "softmax fwd+bwd": lambda lib: layer(lib, "softmax"),
    "layer_norm fwd+bwd": lambda lib: layer(lib, "layer_norm"),
    "cross_entropy fwd+bwd": lambda lib: layer(lib, "cross_entropy"),
    "nanoGPT-style step": nanogpt_step,
    "BatchNorm2d fwd+bwd": batch_norm2d,
    "depthwise conv fwd+bwd": depthwise_conv,
    "ResNet18 inference b1": lambda lib: vision_inference(lib, "resnet18", 1),
    "ResNet18 inference b8": lambda lib: vision_inference(lib, "resnet18", 8),
    "MobileNetV3-s inference b8": lambda lib: vision_inference(lib, "mobilenet_v3_small", 8),
}

from compile_workloads import WORKLOADS as _COMPILER_WORKLOADS  # noqa: E402  (the compiler's rows)

WORKLOADS.update(_COMPILER_WORKLOADS)
