"""Capture: run a function once, for real, while recording the ember ops it performs.

A tracing JIT's recorder, on the dispatch seam: every outermost op call on the capturing
thread becomes a ``call_function`` node of an ``ember.fx`` graph whose target is the op's
public function. Ops called from inside an op are not recorded (they are part of it).

What the recording depends on besides its inputs is noted as it happens:

- **graph breaks**: the program asks a tensor for a concrete value (``bool()``, ``item()``,
  ``tolist()``, ``numpy()``, ``int()``/``float()``/``index``, an op that returns a Python
  value). The graph so far becomes one segment, the value is recorded with the line of
  user code that asked, and a later call replays the next segment only if its value is the
  same; otherwise it records the program again for that outcome.
- **external tensors**: a tensor that reaches an op without being an input or a recorded
  op's result (a parameter, a buffer, a module's tensor attribute, a global) is found by
  its path from the module or from the globals of the code that ran, and read through
  that path at every call.
- **calls kept whole**: ``Tensor.backward``, ``ember.autograd.backward``/``grad``,
  optimizers' ``step`` and ``zero_grad``, modules' ``zero_grad``, learning-rate
  schedulers' ``step``, ``manual_seed``, ``detach`` and the other
  Tensor methods of ``_CALLS``, and functions given to ``ember.compiler.disable`` or
  ``allow_in_graph``: registered on the seam with ``capture=`` meta (which only this
  recorder wants), each is recorded as one node and replayed as a call.
- **autograd the program drives itself**: a custom ``autograd.Function``'s ``apply`` with
  gradients on (``capture="stop"``) and a gradient call with ``create_graph=True`` end the
  recording (the call runs eagerly); ``utils.checkpoint.checkpoint`` is recorded as the ops
  of its function (``capture="inline"``), without checkpointing.
- **assignments of ``.grad``** by the program (``p.grad = None``): while a capture runs,
  ``Tensor.grad`` is a descriptor that records them as steps of the graph.
- **globals**: the global names referred to by the program's functions that called ops
  (found on the stack at each op), so that a changed value records anew.
- **symbolic sizes** (when some input dims are dynamic): the sizes the program reads
  from tensors (``size()``, ``shape``, ``numel()``, ``len``) along dims that follow a
  dynamic input dim are ``ember.fx._symbolic_shapes.SymInt``s; an op given one gets its
  graph node (``call_method size``, ``operator.*``) as argument, and a Python decision on
  one is a guard the recording keeps (``guards``). ``ember.fx._dynamic_dims`` says which
  dims of each op's results follow a dynamic dim. A Python ``int`` argument left symbolic
  (torch's unspecialized ints: ``dynamic=True``, or an int whose value changed) reaches
  the program as a ``SymInt`` too, and is a placeholder of the graph.
- **float arguments** reach the program as ``ember.fx._symbolic_floats.SymFloat``s:
  symbolic ones (torch's ``specialize_float=False``) are placeholders whose arithmetic is
  recorded as for sizes; static ones guard their value where the program first uses them.
  An op's float parameter that torch specializes (``_specialized``) gets the plain value,
  guarded; ops run on plain floats; ``math.sqrt`` and its kin are recorded (``_math``).

A tensor that reaches an op and can be named by none of these (made by code that is not an
ember op) makes the recording unreplayable: the call has run correctly (it ran for real),
and later calls with the same signature run eagerly, with the reason in ``explain``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import math
import operator
import sys
import threading
import traceback

import numpy

from .._dtype import _state as _dtype_state
from .._tensor import Tensor
from ..autograd.grad_mode import STATE as _GRAD
from ..autograd.grad_mode import _set_grad_mode
from ..func._pytree import tree_flatten
from ..fx._dynamic_dims import result_dims
from ..fx._symbolic_floats import SymFloat
from ..fx._symbolic_shapes import Guard, SymInt, evaluate, evaluate_sizes
from ..nn.modules.module import CALL_OBSERVER, STATE_VERSION, Module
from ..ops import _dispatch
from . import _math
from ._specialized import plain, specialize_params

__all__ = ["Capture", "Unreplayable", "is_capturing", "run", "SYMBOLIC_INT", "SYMBOLIC_FLOAT", "STATIC_FLOAT"]

# in the per-argument dims of ``add_inputs``: a number argument and how the program gets it
SYMBOLIC_INT = "int"  # an int left symbolic
SYMBOLIC_FLOAT = "float"  # a float left symbolic
STATIC_FLOAT = "static float"  # a float guarded where first used


_NO_DIMS: dict = {}


def _mul(a, b):
    """The product of two size expressions, folding ints."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    return (operator.mul, a, b)


class Unreplayable(Exception):
    """The recording cannot be replayed; ``args[0]`` says why."""


class _Local(threading.local):
    capture = None


_LOCAL = _Local()
_LOCK = threading.RLock()  # one capture at a time: entering the recorder swaps code process-wide


def _modes() -> tuple:
    """What an op's result depends on besides its arguments and the signature: the grad and
    inference modes and the default dtype, which a program may change between its ops."""
    return _GRAD.enabled, _GRAD.inference, _dtype_state.default


def set_modes(enabled: bool, inference: bool, default_dtype) -> None:
    """Make ``_modes()`` these: the step a graph takes where the recorded program changed
    them (torch's graphs hold ``_set_grad_enabled`` calls for the same purpose)."""
    _set_grad_mode(enabled, inference)
    _dtype_state.default = default_dtype


def is_capturing() -> bool:
    return _LOCAL.capture is not None


# ---- the values a recording names ---------------------------------------------------

class Break:
    """A concrete value the program asked for: ``fn(*args)`` over recorded values (``args``
    holds value indices as ``_Ref``), and the value it gave."""

    __slots__ = ("fn", "args", "kwargs", "expected", "reason", "user_line")

    def __init__(self, fn, args, kwargs, expected, reason, user_line):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.expected, self.reason, self.user_line = expected, reason, user_line


class _Ref:
    """An argument that is recorded value number ``index``."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"v{self.index}"


class External:
    """A tensor read through ``path`` from ``root`` (``("attr", name)`` / ``("item", key)``
    steps). ``late``: first needed after an opaque call (a gradient), so read where used."""

    __slots__ = ("root", "path", "name", "late", "_slot")

    def __init__(self, root, path, name, late):
        self.root, self.path, self.name, self.late = root, path, name, late
        self._slot = None  # (STATE_VERSION, the dict that holds the tensor, its key): see ``fetch``

    @property
    def attr_path(self) -> bool:
        """Whether this is a module attribute path (``layer1.0.weight``)."""
        from ..nn.modules.module import Module
        return isinstance(self.root, Module) and all(kind == "attr" for kind, _ in self.path)

    def fetch(self):
        """The tensor at ``path`` now. A parameter or buffer reached through submodules is
        read from its owner's dict directly while no module changed its attributes or
        children through Module's methods (``STATE_VERSION``, as the compiled module's tree
        is guarded): walking the path costs a ``Module.__getattr__`` per step on every call."""
        slot = self._slot
        if slot is not None and slot[0] == STATE_VERSION[0]:
            t = slot[1].get(slot[2])
            if t is not None:
                return t
        obj, modules = self.root, isinstance(self.root, Module)
        for kind, key in self.path[:-1]:
            modules = modules and kind == "attr" and key in obj.__dict__.get("_modules", ())
            obj = getattr(obj, key) if kind == "attr" else obj[key]
        kind, key = self.path[-1]
        self._slot = None
        if modules and kind == "attr" and isinstance(obj, Module):
            held = obj._parameters if key in obj._parameters else obj._buffers if key in obj._buffers else None
            if held is not None:
                self._slot = (STATE_VERSION[0], held, key)
        return getattr(obj, key) if kind == "attr" else obj[key]


class Cell:
    """A closure variable read as ``cell[name]``/``cell.get(name)``, as a global is read from
    its module's dict: the guards and externals see what the cell holds at each call."""

    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def get(self, name, default=None):
        try:
            return self.cell.cell_contents
        except ValueError:  # an empty cell: the variable is not bound yet
            return default

    def __getitem__(self, name):
        return self.cell.cell_contents


class _Snapshot(Cell):
    """The value a closure variable had while recording, where its cell was not found."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def get(self, name, default=None):
        return self.value

    def __getitem__(self, name):
        return self.value


def _cells(code, frame) -> dict:
    """{name: Cell} of the closure variables of the function running ``frame``. Python
    3.11 frames do not name their function: it is the one of this code whose cells hold
    the frame's values (several closures may share one code)."""
    if not code.co_freevars:
        return {}
    values = {n: frame.f_locals.get(n, _UNBOUND) for n in code.co_freevars}
    for fn in gc.get_referrers(code):
        if getattr(fn, "__code__", None) is code and fn.__closure__ is not None:
            cells = {n: Cell(c) for n, c in zip(code.co_freevars, fn.__closure__)}
            if all(cells[n].get(n, _UNBOUND) is v for n, v in values.items()):
                return cells
    return {n: _Snapshot(v) for n, v in values.items() if v is not _UNBOUND}


_UNBOUND = object()


class Step:
    """One recorded call: ``fn(*args, **kwargs)`` with ``_Ref``s for values; its tensor
    results got the value indices ``outputs`` (``out_spec`` rebuilds its structure).
    ``kind`` is the graph node's: ``"call_function"``, or ``"call_method"`` with ``fn``
    the method's name (a size read from a tensor). ``mode``: the modes the op ran under,
    ``_modes()`` (None for size arithmetic, which no mode changes)."""

    __slots__ = ("fn", "name", "args", "kwargs", "outputs", "out_spec", "mutates", "opaque", "kind", "mode")

    def __init__(self, fn, name, args, kwargs, outputs, out_spec, mutates, opaque, kind="call_function",
                 mode=None):
        self.fn, self.name, self.args, self.kwargs = fn, name, args, kwargs
        self.outputs, self.out_spec, self.mutates, self.opaque = outputs, out_spec, mutates, opaque
        self.kind, self.mode = kind, mode


class Capture:
    """The recording of one call. ``items`` is the program in order: ``Step``s, ``Break``s
    and ``("external", index)`` reads; value indices number inputs first, then externals
    and results as they appear."""

    def __init__(self, root_module=None):
        self.root_module = root_module
        self.dynamic: dict[int, dict] = {}  # value index -> {dim: expression} of its symbolic sizes
        self.sym_ints: dict[int, SymInt] = {}  # argument position -> the SymInt the program gets for it
        self.sym_floats: dict[int, SymFloat] = {}  # argument position -> the SymFloat the program gets for it
        self.guards: list[Guard] = []  # decisions the program took on symbolic sizes
        self._guard_keys: set = set()
        self._sizes: dict = {}  # (value index, dim) -> the SymInt handed out for it
        self._expr_values: dict = {}  # expression (``_memo_key``) -> value index of its recorded node
        self._value_exprs: dict = {}  # value index -> expression, of the nodes ``expr_value`` recorded
        self.items: list = []
        self.num_inputs = 0
        self.externals: dict[int, External] = {}
        self.mutated_before_break: set[int] = set()  # values changed in place before a later break
        self.unreplayable: str | None = None
        self.frames: list = []  # (code, globals, {name: Cell}) of the program's functions that called ops
        self._codes: set = set()
        self.base_frame = None  # the frame that called the program: the stack walks stop there
        self._values: list = []  # value index -> tensor (kept alive: ids stay unique)
        self._index: dict[int, int] = {}  # id(tensor) -> value index
        self._depth = 0
        self._opaque_seen = False
        self._last_opaque = None
        self._seen_version: dict[int, int] = {}  # value index -> version after the last recorded call
        self._mutated: set[int] = set()
        self._paths = None
        self.numbers = False  # whether symbolic numbers may reach the program's code (set by ``run``)
        self.start_mode = _modes()  # the modes the call began in (set by ``run``)
        self.modules_called: dict[int, Module] = {}  # id -> each module called while recording

    # -- values ------------------------------------------------------------------
    def _new_value(self, t: Tensor) -> int:
        i = len(self._values)
        self._values.append(t)
        self._index[id(t)] = i
        return i

    def add_inputs(self, leaves, dynamic=None) -> None:
        """``dynamic``: per leaf, the dims of a tensor whose size is symbolic, or how a
        number argument reaches the program (``SYMBOLIC_INT``, ``SYMBOLIC_FLOAT``,
        ``STATIC_FLOAT``), or None."""
        self.input_objects = list(leaves)
        for k, leaf in enumerate(leaves):
            kind = None if dynamic is None else dynamic[k]
            if isinstance(leaf, Tensor):
                self._new_value(leaf)
                if kind:
                    self.dynamic[k] = {d: ("size", k, d) for d in sorted(kind)}
            elif kind in (SYMBOLIC_INT, SYMBOLIC_FLOAT, STATIC_FLOAT):
                self._values.append(leaf)
                if kind == SYMBOLIC_INT:
                    self.sym_ints[k] = SymInt(leaf, ("int", k), self)
                else:
                    self.sym_floats[k] = SymFloat(leaf, ("float", k), self, static=kind == STATIC_FLOAT)
                expr = ("int" if kind == SYMBOLIC_INT else "float", k)
                self._expr_values[_memo_key(expr)] = k  # its node is the placeholder itself
                self._value_exprs[k] = expr
            else:
                self._values.append(None)  # keeps input positions aligned with the flattened arguments
        self.num_inputs = len(self._values)

    def symbolic_args(self) -> dict:
        """{argument position: the SymInt or SymFloat the program gets in its place}."""
        return {**self.sym_ints, **self.sym_floats}

    # -- symbolic sizes ------------------------------------------------------------
    @property
    def symbolic(self) -> bool:
        """Whether the recording has symbolic sizes or numbers: dynamic input dims,
        symbolic ints or symbolic floats."""
        return bool(self.dynamic or self.sym_ints or any(not f.static for f in self.sym_floats.values()))

    def data_of(self, v: int):
        """The array of recorded value ``v`` (the int of a symbolic int argument)."""
        x = self._values[v]
        return x._data if isinstance(x, Tensor) else x

    def is_current(self) -> bool:
        """Whether this recording runs on this thread (a SymInt of it is live)."""
        return _LOCAL.capture is self

    def active(self) -> bool:
        """Whether the program's own code runs now (not an op's): its size arithmetic and
        decisions are recorded."""
        return _LOCAL.capture is self and self._depth == 0 and self.unreplayable is None

    def note_guard(self, guard: Guard, where: str | None = None) -> None:
        """Keep ``guard``; ``where``: what made it (default: the line of the program)."""
        key = (guard.expr, guard.op, guard.other)
        if guard.expr == guard.other:  # a size compared with itself decides nothing
            return
        if key not in self._guard_keys:
            self._guard_keys.add(key)
            if where is None:
                line = user_line()
                where = f"a decision on the size at {line}" if line else "a decision on the size"
            guard.where = where
            self.guards.append(guard)

    def dims_of(self, t) -> dict:
        """``{dim: expression}`` of the symbolic sizes of ``t`` (empty for static ones)."""
        i = self._index.get(id(t))
        return self.dynamic.get(i, _NO_DIMS) if i is not None and self._values[i] is t else _NO_DIMS

    def symbolic_size(self, kind: str, args, kwargs, result):
        """What a size query on a tensor answers while recording: SymInts for its dynamic dims."""
        t = args[0]
        dims = self.dims_of(t)
        if not dims:
            return result
        i = self._index[id(t)]
        shape = t._data.shape
        if kind == "numel":
            expr = 1
            for d, n in enumerate(shape):
                expr = _mul(expr, dims.get(d, n))
            return SymInt(result, expr, self)
        if kind == "len":
            return self._size(i, 0, result) if 0 in dims else result
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        if kind == "size" and dim is not None:
            d = dim % len(shape)
            return self._size(i, d, result) if d in dims else result
        from .._tensor import Size
        return Size(self._size(i, d, n) if d in dims else n for d, n in enumerate(shape))

    def _size(self, i: int, d: int, value: int) -> SymInt:
        sym = self._sizes.get((i, d))
        if sym is None:
            sym = self._sizes[(i, d)] = SymInt(value, self.dynamic[i][d], self)
        return sym

    def _source_expr(self, src, index: int, d: int):
        """The expression of a result dim from its rule's source (see fx._dynamic_dims)."""
        if src is None:
            return ("size", index, d)
        if src[0] == "dim":
            t, j = src[1], src[2]
            return self.dims_of(t).get(j, t._data.shape[j])
        if src[0] == "sym":
            return src[1]
        if src[0] == "infer":
            return self._inferred(src[1], src[2], src[3], index, d)
        expr = 1
        for part in src[1]:
            expr = _mul(expr, part if isinstance(part, int) else self._source_expr(part, index, d))
        return expr

    def _inferred(self, t, sizes, at: int, index: int, d: int):
        """A ``view``'s ``-1``: its size when the symbolic sizes cancel out (the same for
        other values of every size leaf), else the number of elements over the other sizes."""
        numel = 1
        for j, n in enumerate(t._data.shape):
            numel = _mul(numel, self.dims_of(t).get(j, n))
        rest = 1
        for k, s in enumerate(sizes):
            if k != at:
                rest = _mul(rest, s.expr if isinstance(s, SymInt) and s.owner is self else int(s))
        hint = self._values[index]._data.shape[d]
        if rest == 0:
            return ("size", index, d)
        for bump in (1, 3):
            def size_of(v, j, _b=bump):
                return (self._values[v] if j is None else self._values[v]._data.shape[j]) + _b
            total, part = evaluate_sizes(numel, size_of), evaluate_sizes(rest, size_of)
            if part == 0 or total % part or total // part != hint:
                return (operator.floordiv, numel, rest)  # the elements over the other sizes
        return hint

    def expr_value(self, expr) -> int:
        """The value index of the node computing ``expr`` (recorded where first needed)."""
        key = _memo_key(expr)
        index = self._expr_values.get(key)
        if index is not None:
            return index
        head = expr[0]
        if head == "size":
            args, fn, kind = (_Ref(expr[1]), expr[2]), head, "call_method"
        else:
            args = tuple(e if isinstance(e, (int, float)) else _Ref(self.expr_value(e)) for e in expr[1:])
            fn, kind = head, "call_function"
        index = len(self._values)
        self._values.append(evaluate(expr, self.data_of))
        self._expr_values[key] = index
        self._value_exprs[index] = expr
        self.items.append(Step(fn, head if kind == "call_method" else _function_name(head), args, {},
                               [index], None, [], False, kind))
        return index

    def value_exprs(self) -> dict:
        """{value index: expression} of the symbolic numbers the recording computes."""
        return dict(self._value_exprs)

    def value_of(self, t: Tensor) -> int:
        i = self._index.get(id(t))
        if i is not None and self._values[i] is t:
            return i
        found = self._find(t)
        if found is None:
            raise Unreplayable(
                f"a {tuple(t.shape)} {t.dtype} tensor reached an op without being an input, the result of a "
                f"recorded op, or reachable from the module or a global (code outside ember's ops made it)")
        root, path, name = found
        i = self._new_value(t)
        self.externals[i] = External(root, path, name, self._opaque_seen)
        self.items.append(("external", i))
        return i

    def _find(self, t: Tensor):
        for _ in range(2):  # the index, rebuilt once: gradients appear after backward
            if self._paths is None:
                self._paths = self._index_paths()
            found = self._paths.get(id(t))
            if found is not None and found[0] is t:
                return found[1:]
            self._paths = None
        return None

    def _index_paths(self) -> dict:
        """id(tensor) -> (tensor, root, path, name) for every tensor reachable from the
        module and from the globals of the code that ran."""
        from ..nn.modules.module import Module
        paths: dict = {}

        def visit_module(m, root, path, prefix, seen):
            if id(m) in seen:
                return
            seen.add(id(m))
            for kind in ("_parameters", "_buffers"):
                for name, v in m.__dict__.get(kind, {}).items():
                    if isinstance(v, Tensor):
                        add(v, root, path + (("attr", name),), prefix + name)
                        if v.grad is not None:
                            add(v.grad, root, path + (("attr", name), ("attr", "grad")), prefix + name + "_grad")
            for name, v in m.__dict__.items():
                if isinstance(v, Tensor):
                    add(v, root, path + (("attr", name),), prefix + name)
            for name, sub in m.__dict__.get("_modules", {}).items():
                if sub is not None:
                    visit_module(sub, root, path + (("attr", name),), prefix + name + "_", seen)

        def add(v, root, path, name):
            paths.setdefault(id(v), (v, root, path, name))

        seen: set = set()
        if self.root_module is not None:
            visit_module(self.root_module, self.root_module, (), "self_", seen)
        for k, v in enumerate(self._values[:self.num_inputs]):
            if v is None and isinstance(self.input_objects[k], Module):  # a module passed as an argument
                visit_module(self.input_objects[k], self.input_objects[k], (), f"arg{k}_", seen)
        for code, globs, free in self.frames:
            for name in code.co_names:
                v = globs.get(name)
                if isinstance(v, Tensor):
                    add(v, globs, (("item", name),), "G_" + name)
                elif isinstance(v, Module):
                    visit_module(v, globs, (("item", name),), "G_" + name + "_", seen)
            for name, cell in free.items():  # closures: read through their cells at every call
                v = cell.get(name)
                if isinstance(v, Tensor):
                    add(v, cell, (("item", name),), name)
                elif isinstance(v, Module):
                    visit_module(v, v, (), name + "_", seen)
        return paths

    def arg(self, a):
        """An op argument with tensors and symbolic sizes replaced by ``_Ref``s."""
        if isinstance(a, Tensor):
            return _Ref(self.value_of(a))
        if isinstance(a, SymInt):
            return _Ref(self.expr_value(a.expr)) if a.owner is self else int.__int__(a)
        if isinstance(a, SymFloat):
            return _Ref(self.expr_value(a.expr)) if a.owner is self and not a.static else a.specialize()
        if type(a) in (list, tuple):
            return type(a)(self.arg(x) for x in a)
        if isinstance(a, tuple) and type(a).__name__ == "Size":  # a shape read with symbolic sizes in it
            return tuple(self.arg(x) for x in a)
        if type(a) is slice and self.symbolic:
            return slice(self.arg(a.start), self.arg(a.stop), self.arg(a.step))
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.arg(x) for x in a))
        if type(a) is dict:
            return {k: self.arg(v) for k, v in a.items()}
        return a

    def note_frames(self, frame) -> None:
        """Note the program's Python functions on the stack below an op call (not ember's,
        the standard library's or installed packages'), once each: their globals are
        guarded and searched for tensors, their closures searched."""
        seen = self._codes
        while frame is not None and frame is not self.base_frame:
            code = frame.f_code
            if code not in seen:
                seen.add(code)
                if not code.co_filename.startswith(_LIBRARY_DIRS):
                    self.frames.append((code, frame.f_globals, _cells(code, frame)))
                    self._paths = None  # new places to find tensors
            frame = frame.f_back

    def record_grad_set(self, t: Tensor, grad, frame) -> None:
        """``t.grad = grad`` run by the program in ``frame`` (no op: ``_GradWatch`` sees it),
        recorded as a step of the graph; a gradient that is neither a recorded value nor
        reachable from the program (``value_of``) cannot be replayed."""
        if self.unreplayable is not None:
            return
        self.note_frames(frame)  # where the program found ``t``
        try:
            args = (self.arg(t), None if grad is None else self.arg(grad))
        except Unreplayable as e:
            self.stop(str(e))
            return
        self.items.append(Step(set_grad, "Tensor.grad = ...", args, {}, [None], None, [], True))
        self.after_opaque("an assignment of .grad")

    def note_module(self, module: Module) -> None:
        if _LOCAL.capture is not self or id(module) in self.modules_called:  # another thread's call; known
            return
        self.modules_called[id(module)] = module
        d = module.__dict__
        for hooks in (d.get("_forward_pre_hooks"), d.get("_forward_hooks")):
            for hook in (hooks or {}).values():
                if not _library_code(hook):  # ember's own hooks (weight_norm, pruning) only call ops
                    self.stop(f"a forward hook of a {type(module).__name__} runs Python code (its writes to "
                              f"lists, dicts or attributes) that a replay would skip")
                    return

    # -- recording -----------------------------------------------------------------
    def prepare(self, args, kwargs, op=None):
        """The recorded form of a call's arguments and the versions of its tensors, taken
        before the call (it may change them in place); None once recording has stopped.
        ``op``: the seam's entry of the op, whose parameters torch specializes are guarded."""
        if self.unreplayable is not None:
            return None
        if op is not None and self.numbers:
            args, kwargs = specialize_params(op, args, kwargs)
        try:
            rargs, rkwargs = self.arg(args), self.arg(kwargs)
        except Unreplayable as e:
            self.stop(str(e))
            return None
        versions = self.versions_of(args, kwargs)
        for i, t, v in versions:
            if self._seen_version.get(i, v) != v:
                self.stop(f"a {tuple(t.shape)} {t.dtype} tensor was changed in place by code outside ember's ops")
                return None
        return rargs, rkwargs, versions

    def stop(self, reason: str) -> None:
        """Recording ends here (the call itself goes on, for real)."""
        if self.unreplayable is None:
            line = user_line()
            self.unreplayable = reason + (f" (at {line})" if line else "")

    def record_op(self, fn, name, prepared, result, opaque=False, call=None):
        if prepared is None:
            return
        rargs, rkwargs, versions = prepared
        leaves, spec = tree_flatten(result)
        if any(not isinstance(x, Tensor) and _is_value(x) for x in leaves) and not opaque:
            # an op that answered with a Python value read from tensor data
            self.record_break(fn, prepared, result, f"{name} returned a Python value")
            return
        outputs = []
        for leaf in leaves:
            if isinstance(leaf, Tensor):
                known = self._index.get(id(leaf))
                if known is not None and self._values[known] is leaf and not opaque:
                    outputs.append(known)  # an in-place op's result is its input
                    continue
                outputs.append(self._new_value(leaf))
            else:
                outputs.append(None)
        mutated = [i for i, t, v in versions if t._vc[0] != v]
        for i, t, _ in versions:
            self._seen_version[i] = t._vc[0]
        for i in outputs:
            if i is not None:
                self._seen_version[i] = self._values[i]._vc[0]
        self._mutated.update(i for i in mutated if i < self.num_inputs or i in self.externals)
        self.items.append(Step(fn, name, rargs, rkwargs, outputs, spec, mutated, opaque,
                               mode=_modes()))
        if self.symbolic and call is not None:
            self._result_dims(name, call, leaves, outputs)

    def _result_dims(self, name, call, leaves, outputs) -> None:
        results = [(leaf, i) for leaf, i in zip(leaves, outputs) if isinstance(leaf, Tensor)]
        self._depth += 1  # the rules read shapes: as plain ints
        try:
            dims, specialize = result_dims(name.rpartition(".")[2], call[0], call[1], [t for t, _ in results],
                                           self.dims_of, lambda x: isinstance(x, Tensor))
        finally:
            self._depth -= 1
        for (_t, i), sources in zip(results, dims):
            if sources and i not in self.dynamic:
                exprs = {d: self._source_expr(src, i, d) for d, src in sorted(sources.items())}
                exprs = {d: e for d, e in exprs.items() if not isinstance(e, int)}
                if exprs:
                    self.dynamic[i] = exprs
        for t, d in specialize:  # the op fixed this size: guard it as it is
            self.note_guard(Guard(self.dims_of(t)[d], "eq", t._data.shape[d], True), where=f"the op {name!r}")

    def after_opaque(self, name: str) -> None:
        """A call kept whole ran: what it changed in place (an optimizer's parameters) is
        replayed with it, so the versions it left are the ones to expect."""
        self._opaque_seen, self._last_opaque = True, name
        for i, t in enumerate(self._values):
            if isinstance(t, Tensor):
                self._seen_version[i] = t._vc[0]

    def record_break(self, fn, prepared, value, reason):
        if prepared is None:
            return
        rargs, rkwargs, _ = prepared
        if self._opaque_seen:
            self.stop(f"a graph break ({reason}) after {self._last_opaque}: its effects cannot be undone, so a "
                      f"later call taking the other branch could not be recorded again")
            return
        self.mutated_before_break |= self._mutated
        self.items.append(Break(fn, rargs, rkwargs, _freeze(value), reason, user_line()))

    def versions_of(self, args, kwargs):
        """(value index, tensor, version) of the recorded tensors among an op's arguments."""
        out = []
        for leaf in tree_flatten((args, kwargs))[0]:
            if isinstance(leaf, Tensor):
                i = self._index.get(id(leaf))
                if i is not None and self._values[i] is leaf:
                    out.append((i, leaf, leaf._vc[0]))
        return out

    def breaks(self):
        return [item for item in self.items if isinstance(item, Break)]


def _memo_key(expr):
    """``expr`` as a key that tells numbers of different types apart (``n * 1`` is an int,
    ``n * 1.0`` a float, though ``1 == 1.0``)."""
    if isinstance(expr, tuple):
        return tuple(_memo_key(e) for e in expr)
    if isinstance(expr, (int, float)):
        return (type(expr), expr)
    return expr


def _function_name(fn) -> str:
    """``operator.mul``, ``math.sqrt``: a recorded expression's function, named for the step."""
    module = getattr(fn, "__module__", None) or ""
    return f"{'operator' if module in ('_operator', 'operator') else module or 'builtins'}.{fn.__name__}"


def _is_value(x) -> bool:
    return isinstance(x, (bool, int, float, complex, numpy.ndarray, numpy.generic)) or (
        isinstance(x, list) and bool(x))


def _freeze(value):
    if isinstance(value, numpy.ndarray):
        return value.copy()
    return value


def same_value(a, b) -> bool:
    """Whether a replayed break value equals the recorded one (NaN equals NaN)."""
    if isinstance(a, numpy.ndarray) or isinstance(b, numpy.ndarray):
        return (isinstance(a, numpy.ndarray) and isinstance(b, numpy.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(numpy.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


_EMBER_DIR = __file__.rsplit("/compiler/", 1)[0]


def user_line() -> str | None:
    """``file:line in function`` of the innermost frame outside ember."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_EMBER_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}"
    return None


# ---- the seam mode --------------------------------------------------------------------

class _Recorder(_dispatch.Mode):
    """Records the outermost calls on its thread: ops, the Tensor methods that hand out a
    concrete value (``capture="break"``) and the calls kept whole (``capture="call"``);
    while some input dims are dynamic, the size queries too (``capture="size"``)."""

    def __init__(self, capture: Capture):
        self.capture = capture

    def wants(self, op) -> bool:
        return op.meta.get("capture") != "size" or self.capture.symbolic

    def __ember_op__(self, op, args, kwargs, proceed):
        cap = self.capture
        if cap._depth:
            return proceed(args, kwargs)
        kind = op.meta.get("capture")
        if kind == "size":
            result = proceed(args, kwargs)
            return result if cap.unreplayable is not None else cap.symbolic_size(op.meta["size"], args, kwargs, result)
        if kind == "inline":  # a wrapper whose body is recorded as the program's own ops
            return op.meta["inline"](*args, **kwargs)
        if kind == "stop":  # not an op: what it calls is recorded, unless it ends the recording
            if op.meta["stop_if"](args, kwargs):
                cap.stop(op.meta["reason"])
            return proceed(args, kwargs)
        if kind == "call" and _create_graph(op, args, kwargs):
            cap.stop(_DOUBLE_BACKWARD)
            return proceed(args, kwargs)
        cap.note_frames(sys._getframe(1))
        prepared = cap.prepare(args, kwargs, op)
        cap._depth += 1
        try:
            if cap.numbers:  # the op computes on plain floats
                result = proceed(plain(args), plain(kwargs))
            else:
                result = proceed(args, kwargs)
        finally:
            cap._depth -= 1
        if kind == "break":
            cap.record_break(op.impl, prepared, result, op.meta["reason"])
        else:
            cap.record_op(op.fn, op.name, prepared, result, opaque=kind == "call", call=(args, kwargs))
            if kind == "call":
                cap.after_opaque(op.name)
        return result


# the Tensor methods that hand a tensor's data to Python: each is a graph break
_BREAKS = {
    "__bool__": "the truth value of a tensor (control flow on tensor data)",
    "item": "Tensor.item()",
    "tolist": "Tensor.tolist()",
    "numpy": "Tensor.numpy()",
    "__array__": "conversion to a numpy array",
    "__float__": "float() of a tensor",
    "__int__": "int() of a tensor",
    "__index__": "a tensor used as a Python index",
    "__complex__": "complex() of a tensor",
}
# calls that are not ops but that a recording keeps whole, replaying them as calls;
# "call" marks those whose effects (gradients, parameter updates) cannot be undone
_CALLS = {"backward": "call", "detach": "pure", "detach_": "pure", "requires_grad_": "pure",
          "retain_grad": "pure", "register_hook": "pure"}


_DOUBLE_BACKWARD = ("a gradient taken with create_graph=True (a replay's backward is not itself "
                    "differentiable)")


def _create_graph(op, args, kwargs) -> bool:
    """Whether a gradient call (``backward``, ``autograd.grad``) asks for a differentiable
    backward."""
    try:
        bound = inspect.signature(op.impl).bind(*args, **kwargs).arguments
    except TypeError:
        return False
    return bool(bound.get("create_graph"))


def _builds_a_graph(args, kwargs) -> bool:
    """Whether a custom Function's call records its node: grad mode on and a tensor
    argument that requires grad (otherwise its forward's ops are all there is to replay)."""
    return _GRAD.enabled and any(isinstance(a, Tensor) and a.requires_grad
                                 for a in (*args, *kwargs.values()))


def _register_watched() -> None:
    from .. import autograd
    from ..nn.modules.module import Module
    from ..optim.optimizer import Optimizer
    from ..utils import checkpoint
    for name, reason in _BREAKS.items():
        _dispatch.register(getattr(Tensor, name), f"Tensor.{name}", capture="break", reason=reason)
    for name, kind in _CALLS.items():
        _dispatch.register(getattr(Tensor, name), f"Tensor.{name}", capture=kind)
    for name, kind in (("size", "size"), ("numel", "numel"), ("__len__", "len")):
        _dispatch.register(getattr(Tensor, name), f"Tensor.{name}", capture="size", size=kind)
    _dispatch.register(Tensor.shape.fget, "Tensor.shape", capture="size", size="shape")
    for fn in (autograd.backward, autograd.grad, Optimizer.zero_grad, Module.zero_grad):
        _dispatch.register(fn, fn.__qualname__ if "." in fn.__qualname__ else "autograd." + fn.__name__,
                           capture="call")
    # a learning-rate schedule's step and a reseeding change Python state, not tensors
    # through ops: kept as calls so that every replay makes them
    from .. import random
    from ..optim import lr_scheduler
    _dispatch.register(random.manual_seed, "manual_seed", capture="call")
    # a custom Function's backward is the user's Python code, which no recorded op carries
    _dispatch.register(autograd.Function.apply.__func__, "autograd.Function.apply", capture="stop",
                       stop_if=_builds_a_graph,
                       reason="a custom autograd.Function (its backward is Python code a replay would not run)")
    # activation checkpointing's recomputation is an autograd node of its own: its function
    # is recorded as ordinary ops instead (values are kept, as without checkpointing)
    _dispatch.register(checkpoint.checkpoint, "utils.checkpoint.checkpoint", capture="inline",
                       inline=checkpoint._run_unchecked)
    schedulers, stack = set(), [lr_scheduler.LRScheduler]
    while stack:
        cls = stack.pop()
        schedulers.add(cls)
        stack.extend(cls.__subclasses__())
    for cls in schedulers:
        if "step" in cls.__dict__:
            _dispatch.register(cls.__dict__["step"], f"{cls.__name__}.step", capture="call")


_register_watched()


def run(fn, args, kwargs, capture: Capture):
    """Call ``fn(*args, **kwargs)`` for real, recording into ``capture``; returns its result."""
    with _LOCK:
        if _LOCAL.capture is not None:
            raise RuntimeError("a capture is already running on this thread")
        _LOCAL.capture = capture
        capture.base_frame = sys._getframe()
        capture.numbers = bool(capture.sym_floats) or capture.symbolic
        capture.start_mode = _modes()
        CALL_OBSERVER[0] = capture.note_module
        type.__setattr__(Tensor, "grad", _GRAD_WATCH)
        try:
            with _Recorder(capture), (_math.recording() if capture.numbers else contextlib.nullcontext()):
                return fn(*args, **kwargs)
        finally:
            type.__setattr__(Tensor, "grad", _GRAD_SLOT)
            CALL_OBSERVER[0] = None
            _LOCAL.capture = None
            capture.base_frame = None


def set_grad(t: Tensor, grad) -> None:
    """``t.grad = grad``: a program's assignment of a gradient, as a step of its graph."""
    t.grad = grad


class _GradWatch:
    """``Tensor.grad`` while a capture runs: the slot, with assignments made by the program
    (not inside an op or a kept call, which replays make themselves) told to the capture."""

    def __get__(self, t, owner=None):
        return self if t is None else _GRAD_SLOT.__get__(t, owner)

    def __set__(self, t, value):
        capture = _LOCAL.capture
        if capture is not None and not capture._depth:
            capture.record_grad_set(t, value, sys._getframe(1))
        _GRAD_SLOT.__set__(t, value)

    def __delete__(self, t):
        _GRAD_SLOT.__delete__(t)


_GRAD_SLOT = Tensor.__dict__["grad"]  # the slot's own descriptor
_GRAD_WATCH = _GradWatch()


def _library_code(fn) -> bool:
    """Whether the callable ``fn`` is ember's, the standard library's or an installed
    package's (its code's file), not the program's."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None:  # a callable object: its class's __call__
        call = next((vars(k)["__call__"] for k in type(fn).__mro__ if "__call__" in vars(k)), None)
        code = getattr(call, "__code__", None)
    return code is not None and code.co_filename.startswith(_LIBRARY_DIRS)


def _library_dirs() -> tuple:
    import sysconfig
    dirs = {_EMBER_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(path)
    return tuple(sorted(dirs))


_LIBRARY_DIRS = _library_dirs()
