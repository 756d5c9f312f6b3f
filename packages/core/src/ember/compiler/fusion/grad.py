"""Reverse-mode differentiation of a row program, into the same program: the backward
recomputes what it needs of the forward (nothing but the region's inputs is saved).

An adjoint may be broadcast wider than its value (a row value used in a vec expression
gets per-element contributions): that is exact as long as it is summed before it is
broadcast again, which happens where a reduction's gradient spreads a row over its
elements, and at the end, for the inputs (``rsum`` for a row, ``csum`` for a column)."""

from __future__ import annotations

import math

from .lower import NotFusable
from .program import Program, Value

__all__ = ["gradients"]


def _to_kind(p: Program, g: Value, kind: str) -> Value:
    """An adjoint broadcast over more than ``kind`` has, summed back to it."""
    if g.kind == kind or g.kind == "const" or kind == "vec":
        return g
    if kind == "row" and g.kind == "scalar":  # a loss summed over the rows: each row's adjoint is the loss's
        return g
    if kind == "row" and g.kind == "vec":
        return p.op("rsum", g)
    if kind == "col" and g.kind in ("vec", "row"):
        return g if g.kind == "col" else p.op("csum", g)
    if kind == "col" and g.kind == "scalar":
        raise NotFusable("a column input's gradient from a scalar")
    raise NotFusable(f"gradient of a {kind} from a {g.kind}")


def gradients(p: Program, outputs: list[Value], adjoints: list[Value], wrt: list[Value]) -> list[Value]:
    """The adjoints of ``wrt`` given those of ``outputs``; a ``wrt`` the outputs do not
    depend on gets the constant 0."""
    grad: dict[int, Value] = {}

    def acc(x: Value, g: Value):
        if x.op == "const" or x.kind == "irow":
            return
        grad[x.id] = p.add(grad[x.id], g) if x.id in grad else g

    for out, adj in zip(outputs, adjoints):
        acc(out, adj)
    for v in reversed(list(p.values)):
        g = grad.get(v.id)
        if g is None or v.op in ("input", "const"):
            continue
        a = v.args
        op = v.op
        if op == "add":
            acc(a[0], g)
            acc(a[1], g)
        elif op == "sub":
            acc(a[0], g)
            acc(a[1], p.neg(g))
        elif op == "mul":
            acc(a[0], p.mul(g, a[1]))
            acc(a[1], p.mul(g, a[0]))
        elif op == "div":
            acc(a[0], p.div(g, a[1]))
            acc(a[1], p.neg(p.div(p.mul(g, v), a[1])))
        elif op == "neg":
            acc(a[0], p.neg(g))
        elif op == "exp":
            acc(a[0], p.mul(g, v))
        elif op == "log":
            acc(a[0], p.div(g, a[0]))
        elif op == "tanh":
            acc(a[0], p.mul(g, p.sub(1.0, p.mul(v, v))))
        elif op == "sigmoid":
            acc(a[0], p.mul(g, p.mul(v, p.sub(1.0, v))))
        elif op == "relu":
            acc(a[0], p.mul(g, p.op("gt", a[0], 0.0)))
        elif op == "erf":
            acc(a[0], p.mul(g, p.mul(p.op("exp", p.neg(p.mul(a[0], a[0]))), 2.0 / math.sqrt(math.pi))))
        elif op == "gelu":
            acc(a[0], p.mul(g, p.op("gelu_d", a[0])))
        elif op == "sqrt":
            acc(a[0], p.div(p.mul(g, 0.5), v))
        elif op == "rsqrt":
            acc(a[0], p.mul(g, p.mul(p.mul(p.mul(v, v), v), -0.5)))
        elif op == "recip":
            acc(a[0], p.neg(p.mul(g, p.mul(v, v))))
        elif op == "abs":
            acc(a[0], p.mul(g, p.op("sign", a[0])))
        elif op == "powc":
            acc(a[0], p.mul(g, p.mul(p.op("powc", a[0], attr=v.attr - 1.0), v.attr)))
        elif op == "rsum":
            # a row's adjoint may still be per-element contributions (from a vec use): its
            # row sum is what every element of the reduced vec receives
            acc(a[0], _to_kind(p, g, "row"))
        elif op in ("rmax", "onehot", "gt", "ge", "lt", "le", "eq", "ne", "sign", "step"):
            continue  # no gradient (rmax only shifts a softmax, which does not depend on it)
        else:
            raise NotFusable(f"no gradient rule for {op}")
    return [_to_kind(p, grad[x.id], x.kind) if x.id in grad else p.const(0.0) for x in wrt]
