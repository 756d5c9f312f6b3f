"""The conformance table's vocabulary: entries (``Op``), their sample inputs (``Sample``,
``Arg``), the sample domains, and how a sample becomes tensors of one library.

Entries live in ``test_ops_table.py`` and in the ``op_entries_*.py`` modules it collects;
all draw their sample values from this module's seeded generator.
"""

from dataclasses import dataclass, field

import numpy as np
import torch

import ember


@dataclass
class Arg:
    """An array argument; ``view`` 'T' swaps the last two dims of a transposed copy,
    'step' takes every other row of a twice-as-long base (both non-contiguous)."""
    value: np.ndarray
    view: str | None = None
    grad: bool = True


@dataclass
class Sample:
    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""


@dataclass
class Op:
    name: str
    fn: object
    samples: list
    grad: bool = True
    gradcheck: bool = True
    rtol: float = 1e-5
    atol: float = 1e-5
    errors: list = field(default_factory=list)  # (Sample, exception type)


_rng = np.random.default_rng(1234)


def f(*shape, lo=-2.0, hi=2.0):
    return _rng.uniform(lo, hi, size=shape).astype(np.float32)


def pos(*shape):
    return f(*shape, lo=0.5, hi=2.0)


def i64(*shape, hi=5):
    return _rng.integers(0, hi, size=shape).astype(np.int64)


def mask(*shape):
    return _rng.random(size=shape) < 0.5


def nc(a):
    return Arg(a, "T")


def st(a):
    return Arg(a, "step")


def make(L, a, requires_grad, dtype=None, given=None):
    """``a`` (Arg, array or other value) as an argument for library ``L``, and the leaf
    tensors that require grad; ``given`` (an iterator) supplies those leaves instead."""
    if isinstance(a, (list, tuple)) and any(isinstance(x, (Arg, np.ndarray)) for x in a):
        pairs = [make(L, x, requires_grad, dtype, given) for x in a]
        return type(a)(p[0] for p in pairs), [leaf for p in pairs for leaf in p[1]]
    if isinstance(a, np.ndarray):
        a = Arg(a)
    if not isinstance(a, Arg):
        return a, []
    v = a.value
    if dtype is not None and v.dtype.kind == "f":
        v = v.astype(dtype)
    if a.view == "T":
        base_np = np.ascontiguousarray(np.swapaxes(v, -1, -2))
    elif a.view == "step":
        base_np = np.stack([v, np.zeros_like(v)], axis=1).reshape((-1,) + v.shape[1:])
    else:
        base_np = v
    base = L.tensor(base_np.copy())
    leaves = []
    if requires_grad and a.grad and v.dtype.kind == "f":
        base = next(given) if given is not None else base.requires_grad_()
        leaves.append(base)
    if a.view == "T":
        out = base.transpose(-1, -2)
    elif a.view == "step":
        out = base[::2]
    else:
        out = base
    return out, leaves


def build(L, sample, requires_grad, dtype=None, given=None):
    args, leaves = [], []
    for a in sample.args:
        t, lv = make(L, a, requires_grad, dtype, given)
        args.append(t)
        leaves += lv
    return args, leaves


def tensors_of(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in tensors_of(o)]
    return [out] if isinstance(out, (ember.Tensor, torch.Tensor)) else []


def unary_samples(domain=f):
    return [
        Sample((domain(2, 3),), name="2d"),
        Sample((domain(),), name="0d"),
        Sample((nc(domain(3, 4)),), name="noncontig"),
        Sample((domain(0, 2),), name="empty"),
    ]


def within(lo, hi):
    """A sample domain: uniform floats in [lo, hi]."""
    return lambda *shape: f(*shape, lo=lo, hi=hi)


def _unary_op(name, domain=f, grad=True, path=None, **kw):
    """An entry for ``L.<path>(a)`` (``path`` defaults to ``name``; dots reach sub-namespaces)."""
    def fn(L, a):
        obj = L
        for part in (path or name).split("."):
            obj = getattr(obj, part)
        return obj(a)
    return Op(name, fn, unary_samples(domain), grad=grad, **kw)


def _binary_op(name, a_domain=f, b_domain=f, path=None, grad=True, **kw):
    def fn(L, a, b):
        obj = L
        for part in (path or name).split("."):
            obj = getattr(obj, part)
        return obj(a, b)
    samples = [Sample((a_domain(2, 3), b_domain(2, 3)), name="same"),
               Sample((a_domain(3, 1), b_domain(1, 4)), name="broadcast"),
               Sample((a_domain(2, 3), b_domain()), name="zero-dim"),
               Sample((nc(a_domain(3, 2)), st(b_domain(3, 2))), name="noncontig"),
               Sample((a_domain(0, 3), b_domain(3)), name="empty")]
    return Op(name, fn, samples, grad=grad, errors=[(Sample((a_domain(2, 3), b_domain(4))), RuntimeError)], **kw)


unit = within(-0.9, 0.9)
prob = within(0.05, 0.95)
nonzero = within(0.2, 2.0)


def well_conditioned(*shape):
    """Square matrices far from singular: random entries in [-2, 2] plus 3n on the
    diagonal (strictly diagonally dominant)."""
    n = shape[-1]
    return f(*shape) + 3 * n * np.eye(n, dtype=np.float32)


def spd(*shape):
    """Symmetric positive definite matrices: M M^T + n I."""
    m = f(*shape)
    return (m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1], dtype=np.float32)).astype(np.float32)
