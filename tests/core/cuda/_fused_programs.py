"""The fused programs the CUDA code generator is checked on: each is an ember program run
through ember.compile with a backend that keeps the captured graph, then fused for cuda
(``fusion.fuse(gm, device="cuda")``: no numba involved), so its regions are the ones the
default backend makes of the same graph on a GPU.

- ``gelu_mlp``: ``gelu(linear(x, w, b))``, the MLP epilogue (the bias joins the GELU loop; its
  gradient is a column sum), in the erf and tanh forms.
- ``layer_norm_ce``: ``layer_norm -> * w + b -> gelu -> cross_entropy`` (mean).
- ``softmax_ce``: softmax of scaled logits beside their cross-entropy with label smoothing
  and an ignore_index.
- ``masked_ce``: cross-entropy of logits with ``-inf`` columns away from the targets (a
  masked vocabulary) and an ignored row: torch's finite loss and gradient, which a row sum
  of ``logp * onehot`` would turn into NaN.
- ``symbolic_scalar``: ``softmax(gelu(x) * s, -1) + s`` with ``s`` a float that changes
  between calls, recorded as a symbolic scalar input of the region.
"""

import numpy as np

import ember
from ember.compiler import fusion

F = ember.nn.functional


def gelu_mlp(x, w, b, approximate="none"):
    return F.gelu(F.linear(x, w, b), approximate=approximate)


def layer_norm_ce(x, t, lw, lb, w, b):
    h = F.layer_norm(x, (x.shape[-1],), lw, lb)
    return F.cross_entropy(F.gelu(h * w + b), t)


def softmax_ce(x, t):
    z = x * 1.5
    return F.softmax(z, dim=-1), F.cross_entropy(z, t, label_smoothing=0.1, ignore_index=3)


def masked_ce(x, t):
    return F.cross_entropy(x * 2.0, t)


def symbolic_scalar(x, s):
    return ember.softmax(F.gelu(x) * s, -1) + s


def inputs(name, dtype="float32", n=37, c=129, seed=0):
    """The arguments of program ``name`` as numpy arrays (and numbers)."""
    rng = np.random.default_rng(seed)

    def f(*shape, scale=1.0, shift=0.0):
        return (shift + scale * rng.standard_normal(shape)).astype(dtype)
    targets = rng.integers(0, c, n)
    targets[1] = 3
    if name == "gelu_mlp":
        return [f(n, 24), f(c, 24, scale=0.2), f(c, scale=0.1)]
    if name == "layer_norm_ce":
        return [f(n, c, scale=2.0), targets, f(c, scale=0.1, shift=1.0), f(c, scale=0.1), f(c, scale=0.2, shift=1.0),
                f(c, scale=0.1)]
    if name == "softmax_ce":
        return [f(n, c, scale=2.0), targets]
    if name == "masked_ce":
        x = f(n, c, scale=2.0)
        x[:, 7] = -np.inf
        x[4, 1] = -np.inf
        masked = np.where((targets == 7) | ((np.arange(n) == 4) & (targets == 1)), 8, targets)
        masked[5] = -100  # ignored
        return [x, masked]
    if name == "symbolic_scalar":
        return [f(n, c), 0.75]
    raise KeyError(name)


PROGRAMS = {"gelu_mlp": gelu_mlp, "gelu_mlp_tanh": lambda x, w, b: gelu_mlp(x, w, b, "tanh"),
            "layer_norm_ce": layer_norm_ce, "softmax_ce": softmax_ce, "masked_ce": masked_ce,
            "symbolic_scalar": symbolic_scalar}


def _args(name, requires_grad=True, dtype=None, device="cpu"):
    """The arguments of program ``name`` as tensors on ``device``, the floating ones of
    ``dtype`` (float32 by default) requiring grad."""
    out = []
    for a in inputs(name.replace("_tanh", ""), dtype or "float32"):
        if isinstance(a, np.ndarray):
            t = ember.tensor(a, device=device)
            if a.dtype.kind == "f" and requires_grad:
                t.requires_grad_()
            out.append(t)
        else:
            out.append(a)
    return out


def regions(name):
    """The fused regions (``fusion.region.Region``) of program ``name``, made for cuda."""
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = ember.compile(PROGRAMS[name], backend=keep)
    args = _args(name)
    compiled(*args)
    if name == "symbolic_scalar":  # a second float: recorded again with the float symbolic
        compiled(args[0], 1.25)
    gm = graphs[-1]
    fusion.fuse(gm, device="cuda")
    found = [v for k, v in sorted(gm.__dict__.items()) if k.startswith("fused_")]
    assert found, f"{name}: nothing was fused"
    return found
