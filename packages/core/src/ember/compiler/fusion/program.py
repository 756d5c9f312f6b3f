"""The row program: what a fused region computes, per row of a ``[R, C]`` layout.

Every tensor of a region is one of four kinds relative to the region's shape ``[*L, C]``
(``R`` = prod(L)): ``vec`` (``[*L, C]``, one value per element), ``row`` (``[*L]`` or
``[*L, 1]``, one per row), ``col`` (``[C]``, one per column: a norm's weight, a bias) and
``scalar`` (a number or a one-element tensor); ``const`` is a literal. ``irow`` is an
integer per row (class targets). Elementwise ops combine kinds by broadcasting (a ``row``
with a ``col`` is a ``vec``); ``rsum``/``rmax`` reduce a ``vec`` to a ``row``; ``csum``
reduces a ``vec`` or ``row`` over rows (a parameter's gradient); ``onehot`` is 1 where the
column equals an ``irow`` value. ``rmax`` carries no gradient: it appears only where the
result does not depend on it (the max subtracted for a stable softmax). ``gelu`` (the erf
form) and its derivative ``gelu_d`` are ops of their own: each is one erfc and one exp
(``cpu/kernels/activation``), so the backward recomputes the derivative from GELU's input
where a decomposition into ``erf`` would read a saved ``1 + erf`` and take a second exp.
"""

from __future__ import annotations

__all__ = ["Value", "Program", "ELEMENTWISE", "UNARY", "COSTLY", "costly"]

UNARY = {"neg", "exp", "log", "tanh", "sigmoid", "relu", "erf", "gelu", "gelu_d", "sqrt", "rsqrt", "recip", "abs",
         "sign", "step"}
BINARY = {"add", "sub", "mul", "div", "max2", "min2", "gt", "ge", "lt", "le", "eq", "ne"}
ELEMENTWISE = UNARY | BINARY | {"where", "powc", "onehot"}
REDUCTIONS = {"rsum", "rmax", "csum"}
COSTLY = {"exp", "log", "tanh", "sigmoid", "erf", "gelu", "gelu_d", "sqrt", "rsqrt", "recip", "div", "powc"}


def costly(v: "Value") -> bool:
    """Whether computing ``v`` per element takes a transcendental function or a division
    (its own or an elementwise operand's)."""
    if v.op in COSTLY:
        return True
    return any(a.op not in ("input", "const") and a.kind == "vec" and costly(a) for a in v.args)


class Value:
    __slots__ = ("id", "op", "args", "kind", "attr")

    def __init__(self, id, op, args, kind, attr=None):  # noqa: A002
        self.id, self.op, self.args, self.kind, self.attr = id, op, tuple(args), kind, attr

    def __repr__(self):
        return f"%{self.id}={self.op}{tuple(a.id for a in self.args)}:{self.kind}" + (
            f"[{self.attr}]" if self.attr is not None else "")


def join(*kinds) -> str:
    """The kind of an elementwise result."""
    ks = {k for k in kinds if k not in ("scalar", "const")}
    if not ks:
        return "scalar"
    if "vec" in ks or ks >= {"row", "col"}:
        return "vec"
    if ks == {"irow"}:
        return "row"
    (k,) = ks - {"irow"} if ks - {"irow"} else ("row",)
    return k


class Program:
    """Values in topological order; ``inputs`` in call order; ``outputs`` the values the
    region hands back. Identical nodes are shared (a small value numbering)."""

    def __init__(self):
        self.values: list[Value] = []
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.target_checks: list = []  # (irow input, ignore_index): class targets to check as the op does
        self._memo: dict = {}

    def input(self, kind: str, name: str = "") -> Value:
        v = Value(len(self.values), "input", (), kind, attr=name)
        self.values.append(v)
        self.inputs.append(v)
        return v

    def const(self, c: float) -> Value:
        return self._node("const", (), "const", float(c))

    def _node(self, op, args, kind, attr=None) -> Value:
        key = (op, tuple(a.id for a in args), attr)
        v = self._memo.get(key)
        if v is None:
            v = self._memo[key] = Value(len(self.values), op, args, kind, attr)
            self.values.append(v)
        return v

    def op(self, name: str, *args, attr=None) -> Value:
        args = tuple(a if isinstance(a, Value) else self.const(a) for a in args)
        if name in ("rsum", "rmax"):
            (a,) = args
            if a.kind not in ("vec",):
                raise ValueError(f"{name} reduces a vec, got {a.kind}")
            return self._node(name, args, "row")
        if name == "csum":
            return self._node(name, args, "col")
        if name == "onehot":
            return self._node(name, args, "vec")
        return self._simplify(name, args, attr) or self._node(name, args, join(*(a.kind for a in args)), attr)

    def _simplify(self, name, args, attr):
        """x*1, x+0, x*0 (a gradient's zero terms) and constant folding."""
        consts = [a.attr if a.op == "const" else None for a in args]
        if name == "mul":
            if 1.0 in consts:
                return args[1 - consts.index(1.0)]
            if 0.0 in consts:
                return self.const(0.0)
        if name == "add" and 0.0 in consts:
            return args[1 - consts.index(0.0)]
        if name == "sub" and consts[1] == 0.0:
            return args[0]
        if name == "div" and consts[1] == 1.0:
            return args[0]
        if name == "neg" and consts[0] is not None:
            return self.const(-consts[0])
        if all(c is not None for c in consts) and name in ("add", "sub", "mul", "div"):
            a, b = consts
            return self.const({"add": a + b, "sub": a - b, "mul": a * b, "div": a / b}[name])
        return None

    # a few compositions the lowerings and gradients share
    def add(self, a, b):
        return self.op("add", a, b)

    def sub(self, a, b):
        return self.op("sub", a, b)

    def mul(self, a, b):
        return self.op("mul", a, b)

    def div(self, a, b):
        return self.op("div", a, b)

    def neg(self, a):
        return self.op("neg", a)

    def ancestors(self, roots) -> set[int]:
        """The ids of ``roots`` and of every value they depend on."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            v = stack.pop()
            if v.id not in seen:
                seen.add(v.id)
                stack.extend(v.args)
        return seen

    def __repr__(self):
        return "\n".join(map(repr, self.values)) + f"\nout: {[v.id for v in self.outputs]}"
