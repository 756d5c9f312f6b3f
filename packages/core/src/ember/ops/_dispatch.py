"""The dispatch seam: the one place where autocast, the profiler, vmap and the meta device
see op calls.

Every op is registered here (``ops/__init__`` registers the public namespace; a family
registers the ops it marks, such as autocast's, itself). A *mode* is a context manager
that intercepts the ops it is interested in, on the thread that entered it, as torch's
``TorchFunctionMode`` does::

    class Count(Mode):
        def __ember_op__(self, op, args, kwargs, proceed):
            self.calls[op.name] += 1
            return proceed(args, kwargs)     # the modes below, then the op itself

No wrapper sits on the hot path while nothing listens. When a mode is entered, the ops it
wants have their ``__code__`` replaced by a trampoline into ``_dispatch``; when the last
mode wanting an op exits, the op's own code comes back. Swapping the code object (rather
than the names in a namespace) reaches every reference to the function: ``Tensor``
methods, ``nn.functional``, modules that imported the op by name, user code that did
``from ember import add``. Ops called from inside an op (a decomposition) are dispatched
too, so a profile shows them nested; a mode that must act only on the outermost call
tracks its own depth.
"""

from __future__ import annotations

import threading
import types

__all__ = ["Mode", "OpEntry", "register", "register_namespace", "entry_of", "registered", "version"]


class OpEntry:
    """One registered op: its name, the function published under it, a copy that keeps
    the op's own code (``impl``), and what modes read from it (``meta``: autocast's
    policy, a batching rule, ...)."""

    __slots__ = ("name", "fn", "impl", "meta", "code", "trampoline", "interest")

    def __init__(self, name: str, fn: types.FunctionType):
        self.name = name
        self.fn = fn
        self.code = fn.__code__
        impl = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        impl.__kwdefaults__ = fn.__kwdefaults__
        impl.__qualname__ = fn.__qualname__
        self.impl = impl
        self.meta: dict = {}
        self.trampoline = None
        self.interest = 0  # how many entered modes want this op

    def __repr__(self):
        return f"<op {self.name}>"


_ENTRIES: dict[int, OpEntry] = {}  # id(function) -> entry; the entry holds the function
_LOCK = threading.RLock()  # reentrant: a finalizer run by the collector inside _want may exit a mode


def register(fn, name: str | None = None, **meta):
    """Register ``fn`` (a plain Python function) as an op and return it unchanged.
    Registering it again (an alias) keeps the first name and merges ``meta``."""
    if not isinstance(fn, types.FunctionType):
        return fn
    entry = _ENTRIES.get(id(fn))
    if entry is None or entry.fn is not fn:
        entry = _ENTRIES[id(fn)] = OpEntry(name or fn.__name__, fn)
    entry.meta.update(meta)
    global _VERSION
    _VERSION += 1
    for mode in list(_ENTERED):  # an op registered late (a lazily imported namespace) joins the modes that want it
        if entry not in mode._entries and mode.wants(entry):
            mode._entries = mode._entries | {entry}
            _want((entry,), +1)
    return fn


_VERSION = 0


def version() -> int:
    """Bumped by every registration: a mode caching its ``entries()`` keys the cache on it."""
    return _VERSION


def register_namespace(namespace) -> None:
    """Register the ops a public namespace (``ember``, ``ember.linalg``, ...) publishes: the
    functions of ``ember.ops`` and of the namespaces that define their own (``special``),
    not forwarders such as ``nn.functional.relu`` (the op they call is registered).
    An ``out=`` wrapper is seen through to the op it wraps, which Tensor methods call."""
    for name, obj in (namespace if isinstance(namespace, dict) else vars(namespace)).items():
        if name.startswith("_") or not isinstance(obj, types.FunctionType):
            continue
        module = obj.__module__ or ""
        private = any(part.startswith("_") for part in module.split("."))  # ops._helpers and the like
        if (module.startswith("ember.ops.") and not private) or module in _OP_MODULES:
            while hasattr(obj, "__wrapped__"):
                obj = obj.__wrapped__
            register(obj, name)


_OP_MODULES = {"ember.special"}  # namespaces that define ops of their own


def entry_of(fn) -> OpEntry | None:
    entry = _ENTRIES.get(id(fn))
    return entry if entry is not None and entry.fn is fn else None


def registered() -> list[OpEntry]:
    return list(_ENTRIES.values())


# ---- trampolines -------------------------------------------------------------------

_TEMPLATES: dict[int, types.CodeType] = {}


def _template(nfree: int) -> types.CodeType:
    """A ``(*args, **kwargs)`` code object calling ``dispatch(entry, args, kwargs)``, with
    ``nfree`` unused free variables: a function's code may only be replaced by code with
    as many free variables as the function has closure cells."""
    code = _TEMPLATES.get(nfree)
    if code is None:
        names = [f"_cell{i}" for i in range(nfree)]
        lines = ["def outer():"]
        lines += [f"    {n} = None" for n in names]
        lines += ["    def trampoline(*args, **kwargs):"]
        if names:
            lines += [f"        if False: {', '.join(names)}"]  # makes them free variables
        lines += ["        dispatch, entry = 'DISPATCH', 'ENTRY'", "        return dispatch(entry, args, kwargs)",
                  "    return trampoline"]
        scope: dict = {}
        exec("\n".join(lines), scope)
        code = _TEMPLATES[nfree] = scope["outer"]().__code__
    return code


def _trampoline(entry: OpEntry, handler=None) -> types.CodeType:
    """Code for ``entry.fn`` that calls ``handler(entry, args, kwargs)`` (the seam's
    ``_dispatch`` unless another listener, such as fx's tracer for the forwarders the
    seam does not register, brings its own)."""
    code = _template(len(entry.code.co_freevars))
    handler = _dispatch if handler is None else handler
    consts = tuple((handler, entry) if c == ("DISPATCH", "ENTRY") else c for c in code.co_consts)
    names = {"co_name": entry.code.co_name, "co_filename": entry.code.co_filename,
             "co_firstlineno": entry.code.co_firstlineno}
    if hasattr(entry.code, "co_qualname"):  # Python 3.11+
        names["co_qualname"] = entry.code.co_qualname
    return code.replace(co_consts=consts, **names)


def _want(entries, delta: int) -> None:
    """Count modes in or out of ``entries``; swap code where the count leaves or reaches 0."""
    with _LOCK:
        for entry in entries:
            entry.interest += delta
            if entry.interest == 1 and delta > 0:
                if entry.trampoline is None:
                    entry.trampoline = _trampoline(entry)
                entry.fn.__code__ = entry.trampoline
            elif entry.interest == 0:
                entry.fn.__code__ = entry.code


# ---- modes -------------------------------------------------------------------------

class _Stack(threading.local):
    def __init__(self):
        self.modes: list[Mode] = []


_STACK = _Stack()


def _dispatch(entry: OpEntry, args: tuple, kwargs: dict):
    modes = _STACK.modes
    return _run(entry, args, kwargs, modes, len(modes))


def _run(entry, args, kwargs, modes, below: int):
    """The innermost interested mode under position ``below`` of this thread's stack, or the op."""
    for i in range(below - 1, -1, -1):
        mode = modes[i]
        if mode._wants(entry):
            def proceed(args, kwargs, _i=i):
                return _run(entry, args, kwargs, modes, _i)
            return mode.__ember_op__(entry, args, kwargs, proceed)
    return entry.impl(*args, **kwargs)


class Mode:
    """Base of the seam's listeners. Subclasses define ``__ember_op__(op, args, kwargs,
    proceed)`` and may narrow ``wants(op)`` (default: every op, but not the Tensor methods
    and calls registered with ``capture=`` meta, which only graph capture wants). Entering
    a mode makes it the innermost one on this thread; modes nest and re-enter as context
    managers."""

    def wants(self, op: OpEntry) -> bool:
        return "capture" not in op.meta  # the non-op calls only graph capture watches

    def __ember_op__(self, op: OpEntry, args: tuple, kwargs: dict, proceed):
        return proceed(args, kwargs)

    def _wants(self, entry: OpEntry) -> bool:
        return entry in self._entries

    def entries(self) -> frozenset:
        """The registered ops this mode wants (a subclass whose interest is fixed may cache it)."""
        return frozenset(e for e in registered() if self.wants(e))

    def __enter__(self):
        self._entries = self.entries()
        _STACK.modes.append(self)
        _want(self._entries, +1)
        _ENTERED.append(self)
        return self

    def __exit__(self, *exc):
        modes = _STACK.modes
        for i in range(len(modes) - 1, -1, -1):  # the innermost entry of this mode
            if modes[i] is self:
                del modes[i]
                break
        _ENTERED.remove(self)
        _want(self._entries, -1)
        return False


_ENTERED: list[Mode] = []  # the modes entered on any thread, for ops registered while they listen
