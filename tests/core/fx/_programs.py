"""A small hand-built program in both libraries, shared by the interpreter and
shape-propagation tests."""

import operator

import numpy as np


def build(lib, fx):
    """conv-free MLP-ish program: lin(x) -> relu -> * w -> sum(dim) -> + y, two outputs."""
    m = lib.nn.Module()
    m.lin = lib.nn.Linear(4, 3)
    rng = np.random.default_rng(0)
    with lib.no_grad():
        m.lin.weight.copy_(lib.tensor(rng.standard_normal((3, 4)).astype("float32")))
        m.lin.bias.copy_(lib.tensor(rng.standard_normal(3).astype("float32")))
    m.register_buffer("w", lib.tensor(rng.standard_normal(3).astype("float32")))
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y", default_value=1.5)
    lin = g.call_module("lin", (x,))
    r = g.call_function(lib.relu, (lin,))
    w = g.get_attr("w")
    p = g.call_function(operator.mul, (r, w))
    s = g.call_method("sum", (p,), {"dim": 1})
    t = g.call_function(operator.add, (s, y))
    e = g.call_function(lib.exp, (lin,))
    g.output((t, [e, {"w": w}]))
    return fx.GraphModule(m, g)


X = np.random.default_rng(1).standard_normal((5, 4)).astype("float32")


def close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-6)
