"""Python float arguments left symbolic while a program is recorded (torch's SymFloat,
``torch._dynamo.config.specialize_float = False``).

A compiled program gets each finite float argument as a ``SymFloat``: a ``float`` subclass
holding the value of the recorded call (so the Python program runs as on plain floats),
an expression (``("float", k)`` for argument ``k``; ``(function, operand, ...)`` over
expressions and numbers, as ``fx._symbolic_shapes`` writes sizes) and the recording that
owns it. It is one of two kinds, as torch's floats are:

- **symbolic** (``dynamic=True``, or with automatic dynamic once the value changed):
  arithmetic with numbers gives a SymFloat, ``math.floor``/``ceil``/``trunc`` and
  ``round`` a SymInt, and the recorder writes the expression into the graph where an op
  receives it; a comparison or ``bool`` answers the concrete outcome and keeps it as a
  guard (``s <= 1.0``). ``int()`` and ``float()`` must hand Python a plain number (it
  copies what they return), so they guard their result's value.
- **static** (the first call, ``dynamic=False``, ``specialize_float``, a NaN or an
  infinity, which torch specializes): a lazy constant.
  Its first use of any kind guards its value (``s == 0.5``) and gives the plain float, so
  the graph holds it as a constant; a float the program never uses (or returns as it came)
  is not guarded and the recording serves every value, as torch guards only the floats it
  reads.

Outside its recording's own code (inside an op, or after the recording) a SymFloat is the
plain float. Code that reads the value below Python's number protocol (``numpy``, a C
function given a float subclass) sees it unguarded: the compiled function records such a
program once more at a new value and specializes it when the two recordings differ.
"""

from __future__ import annotations

import math
import operator

from ._symbolic_shapes import Guard, SymInt

__all__ = ["SymFloat", "is_live", "specialize", "value_guard"]


class SymFloat(float):
    """A float argument of a recorded call (or a value computed from one): the float it is
    now, ``expr`` (how to compute it), ``owner`` (the recording) and ``static`` (a lazy
    constant: any use guards the value)."""

    def __new__(cls, value: float, expr, owner, static: bool = False):
        obj = float.__new__(cls, value)
        obj.expr, obj.owner, obj.static = expr, owner, static
        return obj

    def __hash__(self):  # a dict or set finds the key by the exact value
        return hash(self.specialize())

    def _live(self) -> bool:
        return self.owner.active()

    def specialize(self) -> float:
        """The plain float, its value guarded while the recording's code runs."""
        raw = float.__float__(self)
        if self._live():
            self.owner.note_guard(value_guard(self.expr, raw))
        return raw

    # -- arithmetic: a new SymFloat ----------------------------------------------------
    def _operand(self, other):
        """``(value, expression)`` of a number this one can combine with, or None."""
        if isinstance(other, SymFloat):
            if other.static or other.owner is not self.owner:
                return (other.specialize(),) * 2
            return float.__float__(other), other.expr
        if isinstance(other, SymInt):
            raw = int.__int__(other)
            return (raw, other.expr) if other.owner is self.owner else (raw, raw)
        if isinstance(other, (int, float)):
            return other, other
        return None

    def _arith(self, fn, other, reflected=False):
        if self.static or not self._live():
            a = self.specialize()
            if isinstance(other, SymInt):  # float's own method would read the size as a plain int
                return other._float_arith(fn, a, not reflected)
            return fn(other, a) if reflected else fn(a, other)
        o = self._operand(other)
        if o is None:
            return NotImplemented
        (x, ex), (y, ey) = (o, (float.__float__(self), self.expr)) if reflected else (
            (float.__float__(self), self.expr), o)
        value = fn(x, y)
        if not isinstance(value, float):  # a complex power: leaves the floats
            self.specialize()
            return value
        return SymFloat(value, (fn, ex, ey), self.owner)

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

    def __truediv__(self, o):
        return self._arith(operator.truediv, o)

    def __rtruediv__(self, o):
        return self._arith(operator.truediv, o, True)

    def __floordiv__(self, o):
        return self._arith(operator.floordiv, o)

    def __rfloordiv__(self, o):
        return self._arith(operator.floordiv, o, True)

    def __mod__(self, o):
        return self._arith(operator.mod, o)

    def __rmod__(self, o):
        return self._arith(operator.mod, o, True)

    def __pow__(self, o, mod=None):
        return self._arith(operator.pow, o) if mod is None else pow(self.specialize(), o, mod)

    def __rpow__(self, o):
        return self._arith(operator.pow, o, True)

    def _unary(self, fn, cls=None):
        if self.static or not self._live():
            return fn(self.specialize())
        return (cls or SymFloat)(fn(float.__float__(self)), (fn, self.expr), self.owner)

    def __neg__(self):
        return self._unary(operator.neg)

    def __pos__(self):
        return self if not self.static else self.specialize()

    def __abs__(self):
        return self._unary(operator.abs)

    def __floor__(self):
        return self._unary(math.floor, SymInt)

    def __ceil__(self):
        return self._unary(math.ceil, SymInt)

    def __trunc__(self):
        return self._unary(math.trunc, SymInt)

    def __round__(self, ndigits=None):
        if ndigits is None:
            return self._unary(round, SymInt)
        return self._arith(round, ndigits)

    # -- decisions: the concrete outcome, guarded --------------------------------------
    def _compare(self, op: str, other):
        if self.static or not self._live():
            if isinstance(other, SymInt):  # the size decides, guarded, as the right-hand side
                return other._compare(_SWAPPED[op], self.specialize())
            return _OPS[op](self.specialize(), other)
        o = self._operand(other)
        if o is None:
            return NotImplemented
        value, expr = o
        outcome = _OPS[op](float.__float__(self), value)
        if type(expr) in (int, bool):
            expr = float(expr)  # compared as floats: worded as torch words them (s <= 1.0)
        self.owner.note_guard(Guard(self.expr, op, expr, outcome))
        return outcome

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
        return self._compare("ne", 0.0)

    # -- the concrete value, guarded ---------------------------------------------------
    def __int__(self):
        if self.static or not self._live():
            return int(self.specialize())
        value = math.trunc(float.__float__(self))
        self.owner.note_guard(Guard((math.trunc, self.expr), "eq", value, True))
        return value

    def __float__(self):
        return self.specialize()

    def __divmod__(self, o):
        return divmod(self.specialize(), o)

    def __rdivmod__(self, o):
        return divmod(o, self.specialize())

    def is_integer(self):
        return self.specialize().is_integer()

    def as_integer_ratio(self):
        return self.specialize().as_integer_ratio()

    def hex(self):
        return self.specialize().hex()

    def __repr__(self):
        return float.__repr__(self.specialize())

    __str__ = __repr__

    def __format__(self, spec):
        return format(self.specialize(), spec)

    def __reduce__(self):  # a copied or pickled float is the plain float
        return (float, (float.__float__(self),))


_OPS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
        "ge": operator.ge}
_SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def value_guard(expr, value: float) -> Guard:
    """The guard that ``expr`` is ``value`` (``isnan(s)`` for a NaN, which equals nothing)."""
    if value != value:
        return Guard((math.isnan, expr), "eq", True, True)
    return Guard(expr, "eq", value, True)


def is_live(x) -> bool:
    """A symbolic number (SymInt or SymFloat) of the recording whose code runs now."""
    return isinstance(x, (SymInt, SymFloat)) and x.owner.active()


def specialize(x):
    """The plain number of ``x`` (a SymInt or SymFloat), its value guarded while its
    recording's code runs; any other value as it is."""
    if isinstance(x, SymFloat):
        return x.specialize()
    if isinstance(x, SymInt):
        return int(x)
    return x
