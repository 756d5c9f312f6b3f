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
}
