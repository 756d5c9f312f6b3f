"""Symbolic sizes for graph capture (torch.fx.experimental.symbolic_shapes' role).

While a program is recorded with some input dims declared dynamic, the sizes it reads from
tensors whose dims derive from them are ``SymInt``s: ``int`` subclasses holding the size
the recording run has (so the Python program runs as it would on plain ints) and an
expression saying how the size is computed at run time from the tensors of the
recording. Arithmetic with ints (``+ - * // % neg abs``) gives a SymInt; the recorder
writes the expression into the graph as nodes (``call_method size``, ``operator.mul`` ...)
where an op receives it. A Python decision on one (``==``, ``<``, ``bool``, ``int``,
``range(n)``, an index) is answered with the concrete outcome and recorded as a guard on
it: a later call whose sizes give another outcome records anew, as torch's guards do.

Expressions are tuples: ``("size", value, dim)`` (``value`` is the recorder's number of
the tensor), ``("int", value)`` (a Python int argument of the recorded call, left
symbolic as torch's unspecialized ints are), ``("float", value)`` (a float argument:
``fx._symbolic_floats``), or ``(function, operand, ...)`` over expressions and numbers.
Arithmetic of a SymInt with a float, and its true division, give a ``SymFloat``. Source:
torch.fx.experimental.symbolic_shapes and the "Dynamic shapes" page of the torch.compile
documentation (PyTorch 2.13).
"""

from __future__ import annotations

import operator

__all__ = ["SymInt", "Guard", "evaluate", "evaluate_sizes", "leaves", "render"]


class SymInt(int):
    """A size read from a tensor with dynamic dims (or an int argument left symbolic): the
    int it is now, plus ``expr`` (how to compute it) and ``owner`` (the recording that
    answers ``active()``, ``note_guard`` and ``index_of``). Outside an active recording it
    behaves as the plain int."""

    def __new__(cls, value: int, expr, owner):
        obj = int.__new__(cls, value)
        obj.expr, obj.owner = expr, owner
        return obj

    __hash__ = int.__hash__

    def _live(self) -> bool:
        return self.owner.active()

    # -- arithmetic: a new SymInt ---------------------------------------------------
    def _arith(self, fn, other, reflected=False):
        if isinstance(other, float):
            return self._float_arith(fn, other, reflected)
        if not isinstance(other, int):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        value = fn(_raw(a), _raw(b))
        if not self._live():
            return value
        return SymInt(value, (fn, _expr(a), _expr(b)), self.owner)

    def __add__(self, o):
        return self._arith(operator.add, o)

    def __radd__(self, o):
        return self._arith(operator.add, o, True)

    def __sub__(self, o):
        return self._arith(operator.sub, o)

    def __rsub__(self, o):
        return self._arith(operator.sub, o, True)

    def __mul__(self, o):
        return self._arith(operator.mul, o)

    def __rmul__(self, o):
        return self._arith(operator.mul, o, True)

    def __floordiv__(self, o):
        return self._arith(operator.floordiv, o)

    def __rfloordiv__(self, o):
        return self._arith(operator.floordiv, o, True)

    def __mod__(self, o):
        return self._arith(operator.mod, o)

    def __rmod__(self, o):
        return self._arith(operator.mod, o, True)

    def __neg__(self):
        return SymInt(-_raw(self), (operator.neg, self.expr), self.owner) if self._live() else -_raw(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return SymInt(abs(_raw(self)), (operator.abs, self.expr), self.owner) if self._live() else abs(_raw(self))

    def _float_arith(self, fn, other, reflected=False):
        """A float result: a SymFloat following this size (a symbolic float's own method
        answers when the other operand is one)."""
        from ._symbolic_floats import SymFloat
        if isinstance(other, SymFloat) or not isinstance(other, (int, float)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        value = fn(_raw(a), _raw(b))
        if not self._live() or not isinstance(value, float):
            return value
        return SymFloat(value, (fn, _expr(a), _expr(b)), self.owner)

    def __truediv__(self, o):
        return self._float_arith(operator.truediv, o)

    def __rtruediv__(self, o):
        return self._float_arith(operator.truediv, o, True)

    def __floor__(self):
        return self

    __ceil__ = __trunc__ = __floor__

    def __round__(self, ndigits=None):
        return self if ndigits is None else round(self._specialize(), ndigits)

    def __pow__(self, o, mod=None):
        if self._live():
            self._decide("eq", _raw(self), True)
        return pow(_raw(self), o, mod)

    # -- decisions: the concrete outcome, guarded --------------------------------------
    def _decide(self, op: str, other, outcome):
        self.owner.note_guard(Guard(self.expr, op, _expr(other), outcome))
        return outcome

    def _compare(self, op: str, other):
        from ._symbolic_floats import SymFloat
        if isinstance(other, SymFloat):
            return NotImplemented  # the symbolic float's reflected comparison decides
        if not isinstance(other, (int, float)):
            return getattr(int, f"__{op}__")(self, other)
        outcome = _OPS[op](_raw(self), _raw(other))
        return self._decide(op, other, outcome) if self._live() else outcome

    def __eq__(self, o):
        return self._compare("eq", o)

    def __ne__(self, o):
        return self._compare("ne", o)

    def __lt__(self, o):
        return self._compare("lt", o)

    def __le__(self, o):
        return self._compare("le", o)

    def __gt__(self, o):
        return self._compare("gt", o)

    def __ge__(self, o):
        return self._compare("ge", o)

    def __bool__(self):
        outcome = _raw(self) != 0
        return self._decide("ne", 0, outcome) if self._live() else outcome

    def _specialize(self) -> int:
        if self._live():
            self._decide("eq", _raw(self), True)
        return _raw(self)

    def __index__(self):
        return self._specialize()

    def __int__(self):
        return self._specialize()

    def __float__(self):
        return float(self._specialize())

    def __repr__(self):
        return int.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):  # a copied or pickled size is the plain int
        return (int, (_raw(self),))


_OPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
        "ge": operator.ge}
_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
            operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//", operator.mod: "%",
            operator.truediv: "/", operator.pow: "**"}
_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "le": "gt", "gt": "le"}


def _raw(x) -> int:
    """The plain int, without the guard ``int()`` of a SymInt records."""
    return int.__int__(x) if isinstance(x, SymInt) else x


def _expr(x):
    if isinstance(x, SymInt):
        return x.expr
    return int(x) if isinstance(x, int) else x  # a bool as its int; a float as it is


class Guard:
    """``expr op other`` gave ``outcome`` while recording; ``holds(size_of)`` re-evaluates it."""

    __slots__ = ("expr", "op", "other", "outcome", "where")

    def __init__(self, expr, op, other, outcome, where=None):
        self.expr, self.op, self.other, self.outcome = expr, op, other, outcome
        self.where = where  # what made the decision, in words (an op, a line of the program)

    def holds(self, tensor_of) -> bool:
        """``tensor_of(value number)``: the tensor (or array) of this call, or the int of
        an ``("int", value)`` leaf."""
        try:
            return _OPS[self.op](evaluate(self.expr, tensor_of), evaluate(self.other, tensor_of)) == self.outcome
        except (ArithmeticError, ValueError):  # a division by zero, a square root of a negative number
            return False

    def values(self) -> set:
        """The recorder's numbers of the tensors the guard reads."""
        return leaves(self.expr) | leaves(self.other)

    def describe(self, name_of) -> str:
        """The condition that held while recording, as torch words guards (``x.size()[0] <= 4``)."""
        op = self.op if self.outcome else _NEGATED[self.op]
        return f"{render(self.expr, name_of)} {_SYMBOLS[op]} {render(self.other, name_of)}"


def evaluate(expr, tensor_of) -> int:
    """The value of ``expr`` with ``tensor_of(value number)`` giving the tensors (and the
    ints of ``("int", value)`` leaves)."""
    return evaluate_sizes(expr, lambda v, d: tensor_of(v) if d is None else tensor_of(v).shape[d])


def evaluate_sizes(expr, size_of) -> int:
    """The value of ``expr`` with ``size_of(value number, dim)`` giving each size leaf
    (``dim`` None: the int argument of an ``("int", value)`` leaf)."""
    if isinstance(expr, (int, float)):
        return expr
    head = expr[0]
    if head == "size":
        return size_of(expr[1], expr[2])
    if head in ("int", "float"):
        return size_of(expr[1], None)
    return head(*(evaluate_sizes(e, size_of) for e in expr[1:]))


def leaves(expr) -> set:
    if isinstance(expr, (int, float)):
        return set()
    if expr[0] in ("size", "int", "float"):
        return {expr[1]}
    out: set = set()
    for e in expr[1:]:
        out |= leaves(e)
    return out


def render(expr, name_of, nested=False) -> str:
    """``expr`` in words, each size leaf named by ``name_of(value number)`` (``x.size()[0]``);
    ``name_of`` may instead take ``(value number, dim)`` when it has a ``dims`` attribute
    set (a name per dim: an ONNX file's dim_param)."""
    if isinstance(expr, (int, float)):
        return str(expr)
    head = expr[0]
    if head == "size":
        if getattr(name_of, "dims", False):
            return name_of(expr[1], expr[2])
        return f"{name_of(expr[1])}.size()[{expr[2]}]"
    if head in ("int", "float"):
        return name_of(expr[1], None) if getattr(name_of, "dims", False) else name_of(expr[1])
    if head not in _SYMBOLS:  # neg, abs, math.sqrt, math.trunc, round ...: a call
        if head is operator.neg:
            return f"-({render(expr[1], name_of)})"
        return f"{head.__name__}({', '.join(render(e, name_of) for e in expr[1:])})"
    a, b = render(expr[1], name_of, True), render(expr[2], name_of, True)
    if head is operator.mul and isinstance(expr[2], int):
        a, b = b, a  # constants first: 4*batch
    text = f"{a}*{b}" if head is operator.mul else f"{a} {_SYMBOLS[head]} {b}"
    return f"({text})" if nested and head is not operator.mul else text
