"""The values a program reads through a global or a closure variable: ``cfg.temperature``,
``opts["scale"]``, ``Config.width``, ``CFG.model.heads``.

Tracing sees the ops a program calls, not the Python values it reads, so a recording made
with ``cfg.temperature == 1.0`` holds 1.0 as a constant. These reads are found in the
bytecode of the functions that ran ops: a global or a closure variable followed by
attribute loads and subscripts by a constant. Each such chain becomes a guard on the value
it reaches (a Python scalar by value, anything else by identity), so that a changed config
records anew, as torch.compile's guards on the attributes and items it reads. The chains
are read from the code, not from the run: one in a branch the recording did not take is
guarded too (a needless re-recording at worst, never a stale value).

Only instance attributes (an object's ``__dict__``, a class's own ``__dict__``) and the
items of plain dicts, lists and tuples are followed, so a guard never runs a property or
``__getattr__``; a Python module's attributes (``F.relu``) are not guarded.
"""

from __future__ import annotations

import dis
import functools
import sys
import types

from .._tensor import Tensor

__all__ = ["MISSING", "chains", "PathRoot"]

MISSING = object()
# from 3.12 a method's load is LOAD_ATTR with the low bit of its argument set (LOAD_METHOD before)
_METHOD_FLAG = 1 if sys.version_info >= (3, 12) else 0


@functools.lru_cache(maxsize=4096)
def chains(code: types.CodeType) -> tuple:
    """``((root kind, root name, path), ...)`` for the chains in ``code``: root kind
    ``"global"`` or ``"cell"``; path a tuple of ``("attr", name)`` / ``("item", key)``."""
    found = []
    ins = list(dis.get_instructions(code))
    for i, start in enumerate(ins):
        if start.opname == "LOAD_GLOBAL":
            root = "global"
        elif start.opname == "LOAD_DEREF":
            root = "cell"
        else:
            continue
        path, j = [], i + 1
        while j < len(ins):
            op = ins[j]
            if op.opname == "LOAD_ATTR" and not (op.arg or 0) & _METHOD_FLAG:
                path.append(("attr", op.argval))
                j += 1
            elif (op.opname == "LOAD_CONST" and j + 1 < len(ins) and ins[j + 1].opname == "BINARY_SUBSCR"
                  and isinstance(op.argval, (str, int))):
                path.append(("item", op.argval))
                j += 2
            else:
                break
        if path:
            found.append((root, start.argval, tuple(path)))
    return tuple(dict.fromkeys(found))  # each chain once, in order


def _step(obj, step):
    kind, key = step
    if kind == "attr":
        if isinstance(obj, (types.ModuleType, Tensor)):
            return MISSING
        try:  # an instance's or a class's own namespace, never through __getattr__
            own = object.__getattribute__(obj, "__dict__")
        except AttributeError:
            return MISSING
        return own.get(key, MISSING) if isinstance(own, (dict, types.MappingProxyType)) else MISSING
    if type(obj) is dict:
        return obj.get(key, MISSING)
    if type(obj) in (list, tuple) and type(key) is int and -len(obj) <= key < len(obj):
        return obj[key]
    return MISSING


class PathRoot:
    """Reads ``where[name]`` and then ``path`` from it, as ``where.get(name, default)``
    (the form the globals guards read a namespace with)."""

    __slots__ = ("where", "path")

    def __init__(self, where, path: tuple):
        self.where, self.path = where, path

    def get(self, name, default=None):
        obj = self.where.get(name, MISSING)
        for step in self.path:
            if obj is MISSING:
                break
            obj = _step(obj, step)
        return default if obj is MISSING else obj
