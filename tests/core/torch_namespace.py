"""torch's public callables, counted the way the conformance table reports its coverage.

A name counts once across the top-level namespace, Tensor methods, ``nn.functional``,
``linalg``, ``fft`` and ``special``: ``torch.add``, ``Tensor.add`` and ``Tensor.add_``
are one name, and so are the operators that call it (``a + b``, ``a += b``).  An alias
(``absolute`` for ``abs``, ``sigmoid`` for ``special.expit``) counts with its original,
as torch's docstrings name it.  Classes, modules and private names
are not callables of the namespace.
"""

from __future__ import annotations

import functools
import inspect
import re

import torch
from torch.overrides import TorchFunctionMode, resolve_name

NAMESPACES = (torch, torch.Tensor, torch.nn.functional, torch.linalg, torch.fft, torch.special)

# operator dunders and the function each one calls
_OPERATORS = {
    "add": "add", "sub": "sub", "rsub": "sub", "mul": "mul", "truediv": "div", "div": "div",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "pow", "matmul": "matmul", "neg": "neg",
    "abs": "abs", "pos": "positive", "invert": "bitwise_not", "and": "bitwise_and", "or": "bitwise_or",
    "xor": "bitwise_xor", "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift", "eq": "eq",
    "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
}


_ALIAS_DOC = re.compile(r"Alias (?:for|of) :(?:func|meth):`~?(?:torch\.)?([\w.]+)`")


@functools.cache
def _aliases() -> dict:
    """{alias: original}, read from torch's docstrings ("Alias for :func:`torch.abs`")."""
    table = {}
    for ns in NAMESPACES:
        for attr in dir(ns):
            doc = getattr(getattr(ns, attr, None), "__doc__", None)
            match = _ALIAS_DOC.search(doc) if isinstance(doc, str) and not attr.startswith("_") else None
            if match:
                original = match.group(1).rsplit(".", 1)[-1].rstrip("_")
                if original != attr.rstrip("_") and any(hasattr(n, original) for n in NAMESPACES):
                    table[attr.rstrip("_")] = original
    return table


def canonical(name: str) -> str | None:
    """The counted name of a callable's bare name, or None when it is not counted."""
    if name.startswith("__") and name.endswith("__"):
        op = name[2:-2]
        if op[:1] in "ri" and op[1:] in _OPERATORS and op not in _OPERATORS:
            op = op[1:]  # __radd__, __iadd__
        name = _OPERATORS.get(op)
        if name is None:
            return None
    elif name.startswith("_"):
        return None
    elif name.endswith("_"):
        name = name[:-1]  # in-place form
    return _aliases().get(name, name)


@functools.cache
def public_callables() -> frozenset:
    """Every counted name of torch's public callables."""
    names = set()
    for ns in NAMESPACES:
        for attr in dir(ns):
            if attr.startswith("_"):
                continue
            obj = getattr(ns, attr, None)
            if obj is None or inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
                continue
            name = canonical(attr)
            if name is not None:
                names.add(name)
    return frozenset(names)


# the __torch_function__ protocol's own helpers, which nn.functional's functions call on
# entry through their module's globals: never wrapped
_PROTOCOL = {"has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
             "handle_torch_function"}


@functools.cache
def _unseen_by_modes() -> tuple:
    """(namespace, attribute, function, counted name) for the public functions of the
    module namespaces that never reach a TorchFunctionMode: those torch lists as not
    overridable (settings, seeding, dtype queries) and plain Python helpers."""
    overridable = {id(f) for fs in torch.overrides.get_overridable_functions().values() for f in fs}
    found = []
    for ns in NAMESPACES:
        if ns is torch.Tensor:  # every method reaches the mode
            continue
        for attr in dir(ns):
            obj = getattr(ns, attr, None)
            if attr.startswith("_") or obj is None or inspect.isclass(obj) or inspect.ismodule(obj) or \
                    not callable(obj) or id(obj) in overridable:
                continue
            name = canonical(attr)
            if name is not None and name not in _PROTOCOL:
                found.append((ns, attr, obj, name))
    return tuple(found)


def _recording(fn, name):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        rec = Recorder.active
        if rec is None or rec.depth:
            return fn(*args, **kwargs)
        rec.names.add(name)
        rec.depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            rec.depth -= 1
    return wrapper


@functools.cache
def _wrappers() -> tuple:
    return tuple((ns, attr, fn, _recording(fn, name)) for ns, attr, fn, name in _unseen_by_modes())


class Recorder(TorchFunctionMode):
    """Collects the counted names of the torch callables run under it (top-level calls
    only: torch's own inner calls happen with the mode switched off).  The functions no
    mode sees are swapped for recording wrappers while it is active; a call made inside
    another recorded call is not counted."""

    active = None

    def __init__(self):
        super().__init__()
        self.names: set = set()
        self.depth = 0

    def __enter__(self):
        for ns, attr, _, wrapper in _wrappers():
            setattr(ns, attr, wrapper)
        Recorder.active = self
        return super().__enter__()

    def __exit__(self, *exc):
        Recorder.active = None
        for ns, attr, fn, _ in _wrappers():
            setattr(ns, attr, fn)
        return super().__exit__(*exc)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        full = resolve_name(func) if not self.depth else None
        if full is not None:
            name = canonical(full.rsplit(".", 1)[-1])
            if name is not None:
                self.names.add(name)
            # resolve_name may give another public or private name of the same function
            # (torch.spmm for torch.mm, F._sym_int for torch.sym_int): its own name counts too
            own = getattr(func, "__name__", "")
            if own and any(getattr(ns, own, None) is func for ns in NAMESPACES):
                name = canonical(own)
                if name is not None:
                    self.names.add(name)
        self.depth += 1
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.depth -= 1


# names the conformance table has checked against ember in this run (filled by its tests)
COVERED: set = set()


def coverage_line() -> str:
    public = public_callables()
    covered = COVERED & public
    return (f"conformance table: {len(covered)} of torch {torch.__version__.split('+')[0]}'s "
            f"{len(public)} public callables covered (top-level, Tensor methods, nn.functional, linalg, fft, "
            f"special; a function, its method, in-place form and aliases count once)")
