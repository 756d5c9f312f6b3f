"""Reverse-mode differentiation of a row program, into the same program: the backward
recomputes what it needs of the forward (nothing but the region's inputs is saved).

An adjoint stands for the positions of its span: "vec" (one contribution per element) or
"row" (one per row), which may be wider than its value's kind and than its own value's (a
row value used in a vec expression gets a contribution per element; a loss's scalar
adjoint stands for every row). The sum over the columns is lazy, where a reduction's
gradient spreads a row over its elements and at the end (``rsum``); the sum over the rows
is the kernel's, for the inputs that lack them (a column's ``csum``, a scalar's per-row
sums added up after the loop). A lazy sum is exact when the adjoint varies along the
columns: one that does not (a scalar or per-row adjoint of a row value broadcast over its
row) is that many times itself at once (``_settle``), and contributions of two spans are
summed to one row before they are added."""

from __future__ import annotations

import math

from .lower import NotFusable
from .program import Program, Value

__all__ = ["gradients"]

_ACROSS = {"vec", "col"}  # the kinds that vary along the columns


def _settle(p: Program, g: Value, span: str, kind: str, width: int) -> tuple[Value, str]:
    """A contribution ``g`` over ``span`` to a value of ``kind``, such that its lazy sum over
    the columns adds values that vary along them: ``g`` constant along a row is summed to
    the row as ``width * g``."""
    if span == "vec" and kind not in _ACROSS and g.kind not in _ACROSS:
        return p.mul(g, float(width)), "row"
    return g, span


def _row_sum(p: Program, g: Value, span: str, kind: str) -> tuple[Value, str]:
    """The adjoint ``g`` over ``span`` of a value of ``kind``, summed over the columns that
    value lacks (one per row)."""
    if span != "vec" or kind in _ACROSS:
        return g, span
    if g.kind != "vec":
        raise NotFusable(f"a row sum of a {g.kind} adjoint")
    return p.op("rsum", g), "row"


def gradients(p: Program, outputs: list[Value], adjoints: list[Value], wrt: list[Value], width: int) -> list[Value]:
    """The adjoints of ``wrt`` given those of ``outputs``, in rows of ``width``; a ``wrt``
    the outputs do not depend on gets the constant 0. A column's is a ``csum`` (the kernel
    adds it up over the rows), a scalar's one value per row (the caller adds the rows up)."""
    grad: dict[int, tuple[Value, str]] = {}  # value id -> (adjoint, its span)

    def acc(x: Value, g: Value, span: str):
        if x.op == "const" or x.kind == "irow":
            return
        g, span = _settle(p, g, span, x.kind, width)
        if x.id in grad:
            h, other = grad[x.id]
            if other != span:  # per-element and per-row contributions: each summed to its row first
                (g, span), (h, _) = _row_sum(p, g, span, x.kind), _row_sum(p, h, other, x.kind)
            g = p.add(h, g)
        grad[x.id] = (g, span)

    for out, adj in zip(outputs, adjoints):
        acc(out, adj, "vec" if out.kind == "vec" else "row")
    for v in reversed(list(p.values)):
        if v.id not in grad or v.op in ("input", "const"):
            continue
        g, s = grad[v.id]
        a = v.args
        op = v.op
        if op == "add":
            acc(a[0], g, s)
            acc(a[1], g, s)
        elif op == "sub":
            acc(a[0], g, s)
            acc(a[1], p.neg(g), s)
        elif op == "mul":
            acc(a[0], p.mul(g, a[1]), s)
            acc(a[1], p.mul(g, a[0]), s)
        elif op == "div":
            acc(a[0], p.div(g, a[1]), s)
            acc(a[1], p.neg(p.div(p.mul(g, v), a[1])), s)
        elif op == "neg":
            acc(a[0], p.neg(g), s)
        elif op == "exp":
            acc(a[0], p.mul(g, v), s)
        elif op == "log":
            acc(a[0], p.div(g, a[0]), s)
        elif op == "tanh":
            acc(a[0], p.mul(g, p.sub(1.0, p.mul(v, v))), s)
        elif op == "sigmoid":
            acc(a[0], p.mul(g, p.mul(v, p.sub(1.0, v))), s)
        elif op == "relu":
            acc(a[0], p.mul(g, p.sub(1.0, p.op("le", a[0], 0.0))), s)  # a NaN passes g, as torch's
        elif op == "erf":
            acc(a[0], p.mul(g, p.mul(p.op("exp", p.neg(p.mul(a[0], a[0]))), 2.0 / math.sqrt(math.pi))), s)
        elif op == "gelu":
            acc(a[0], p.mul(g, p.op("gelu_d", a[0])), s)
        elif op == "sqrt":
            acc(a[0], p.div(p.mul(g, 0.5), v), s)
        elif op == "rsqrt":
            acc(a[0], p.mul(g, p.mul(p.mul(p.mul(v, v), v), -0.5)), s)
        elif op == "recip":
            acc(a[0], p.neg(p.mul(g, p.mul(v, v))), s)
        elif op == "abs":
            acc(a[0], p.mul(g, p.op("sign", a[0])), s)
        elif op == "powc":
            acc(a[0], p.mul(g, p.mul(p.op("powc", a[0], attr=v.attr - 1.0), v.attr)), s)
        elif op == "rsum":
            # the row's adjoint (summed over the columns if it is still per element) is what
            # every element of the reduced vec receives
            acc(a[0], _row_sum(p, g, s, "row")[0], "vec")
        elif op in ("rmax", "onehot", "gt", "ge", "lt", "le", "eq", "ne", "sign", "step"):
            continue  # no gradient (rmax only shifts a softmax, which does not depend on it)
        else:
            raise NotFusable(f"no gradient rule for {op}")
    return [_final(p, *grad[x.id], x.kind) if x.id in grad else p.const(0.0) for x in wrt]


def _final(p: Program, g: Value, span: str, kind: str) -> Value:
    """An input's gradient as the kernel writes it: summed over the columns it lacks; a
    column's marked for the kernel's sum over the rows (``csum``)."""
    g, _ = _row_sum(p, g, span, kind)
    return p.op("csum", g) if kind == "col" and g.op != "const" else g
