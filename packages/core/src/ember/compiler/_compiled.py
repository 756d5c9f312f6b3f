"""A compiled callable: guards, the recordings per signature, replay, recompiles.

A call's *signature* is what every recording depends on and can be read before running
anything: each flattened argument (a tensor's shape, dtype, device and requires_grad; a
Python scalar's type and value; any other object's identity), the global modes (grad,
inference, autocast, default dtype), the compiled module's tree (its submodules, their
``training`` flags and plain attributes) and the metadata of the parameters and buffers it
reads. Each signature holds the recordings made under it, each with its guards on the
globals the code read; a recording is a tree of segments split by its graph breaks.

Dynamic dims (``dynamic=True``: every dim of every tensor argument; ``mark_dynamic``; and,
with ``dynamic=None`` and ``config.automatic_dynamic_shapes``, the dims whose size changed
since the first recording, as torch's automatic dynamic shapes) are left out of the
signature when their size is 2 or more (0 and 1 stay specialized, as torch's): the
recording reads them as symbolic sizes, and keeps the guards the program's decisions on
them make, checked before a replay (sizes of the arguments) or after it (sizes of tensors
the program made: a failed one undoes the replay's in-place writes and random draws).
Python ``int`` arguments are symbolic the same way (``dynamic=True``, or with automatic
dynamic shapes once an int argument's value changed; ``bool`` stays specialized, and ints
are symbolic at 0 and 1 too, as torch's unspecialized ints are).

Python ``float`` arguments follow torch's ``specialize_float=False``: their values are not
part of the signature. The program gets each finite one as a ``SymFloat``: static on the
first call (and always with ``dynamic=False`` or ``config.specialize_float``), so that its
first use guards its value and the graph holds it as a constant, and a float the program
never uses leaves no guard; symbolic with ``dynamic=True``, or once a float argument's
value changed, so that it is a placeholder of the graph, its arithmetic is recorded and
the program's decisions on it are guards. A recording made at a NaN or an infinity holds
it static, as torch's.
"""

from __future__ import annotations

import functools
import time
import types
import warnings

import numpy

from .. import _autocast, _dtype
from .._tensor import Tensor
from ..autograd.grad_mode import STATE as _GRAD
from ..func._pytree import tree_flatten, tree_unflatten
from ..fx._symbolic_floats import SymFloat, value_guard
from ..fx._symbolic_shapes import Guard, SymInt
from ..nn.modules.module import STATE_VERSION, Module
from . import _capture, _reads, _state
from ._capture import STATIC_FLOAT, SYMBOLIC_FLOAT, SYMBOLIC_INT, Capture
from ._segments import build_segments, resolve

__all__ = ["CompiledFunction"]

_SCALARS = (bool, int, float, complex, str, type(None))
_FLAT = (Tensor, *_SCALARS)  # arguments that are their own leaves (no container to flatten)
_TOTAL_RECORDINGS = [0]


@functools.cache
def _dynamo():
    """``ember._dynamo`` (imported at the first call: it imports this package)."""
    from .. import _dynamo as module
    return module


class _Recording:
    """What one signature recorded: the first segment (the tree's root), the globals guards,
    the externals read before anything runs, and what a miss must restore."""

    def __init__(self, root, guards, early, capture, compile_time, names=None):
        self.root = root
        self.guards = guards  # [(globals dict, name, "eq"/"is", value)]
        self.early = early  # [(value index, External, (shape, dtype, requires_grad))]
        self.late = []  # the same, of the externals the graph reads itself (see ``_record_call``)
        n = capture.num_inputs
        self.sym_args = frozenset(capture.symbolic_args())  # argument positions of the symbolic numbers
        self.pre_guards = [g for g in capture.guards if all(v < n for v in g.values())]
        self.post_guards = [g for g in capture.guards if not all(v < n for v in g.values())]
        mutated = capture.mutated_before_break | (capture._mutated if self.post_guards else set())
        self.mutated = sorted(mutated)
        self.has_breaks = root.brk is not None
        self.compile_time = compile_time
        self.names = names or {}
        # a dynamic recording is recorded once more at other sizes before it replays them: a
        # size the program used as a plain int (range(n), a list index) leaves no guard, nor
        # does a float read below Python's number protocol (a C function, numpy)
        self.verified = True
        self.fingerprint = _fingerprint(capture)
        self.sizes = _input_sizes(capture)
        # the modules the program called outside the compiled module's tree (a training
        # step's model, a module argument): their state is guarded here, read again only
        # after a change made through Module's methods
        tree = set(map(id, capture.root_module.modules())) if capture.root_module is not None else set()
        self.modules = [(m, _one_module_state(m)) for i, m in capture.modules_called.items() if i not in tree]
        self._modules_version = STATE_VERSION[0]

    def pin(self) -> None:
        """Serve the recorded sizes only (equality guards on the dynamic input dims)."""
        _pin_guards(self.sizes, self.pre_guards)

    def new_sizes(self, leaves) -> bool:
        return any(not _same_scalar(leaves[k] if d is None else leaves[k]._data.shape[d], n)
                   for (k, d), n in self.sizes.items())

    def name_of(self, index: int) -> str:
        return self.names.get(index, f"v{index}")

    def failed_pre_guard(self, leaves):
        """The first guard on the arguments' sizes that this call fails, or None."""
        for g in self.pre_guards:
            if not g.holds(leaves.__getitem__):
                return g
        return None

    def guards_hold(self) -> bool:
        for globs, name, kind, value in self.guards:
            current = globs.get(name, _MISSING)
            if (current is not value) if kind == "is" else not _same_scalar(current, value):
                return False
        if self.modules and self._modules_version != STATE_VERSION[0]:
            if any(_one_module_state(m) != state for m, state in self.modules):
                return False
            self._modules_version = STATE_VERSION[0]
        return True

    def fetch_externals(self):
        """{value index: tensor} of the externals read before anything runs, or None when
        one of them is no longer a tensor of the recorded shape, dtype and requires_grad."""
        out = {}
        version = STATE_VERSION[0]
        for index, ext, (shape, dtype, requires_grad) in self.early:
            slot = ext._slot  # ``External.fetch``'s own first step, inlined: a model reads hundreds
            t = slot[1].get(slot[2]) if slot is not None and slot[0] == version else None
            if t is None:
                t = ext.fetch()
                if not isinstance(t, Tensor):
                    return None
            if t._data.shape != shape or t.dtype != dtype or t._requires_grad != requires_grad:
                return None
            out[index] = t
        for _, ext, meta in self.late:
            try:
                t = ext.fetch()
            except (AttributeError, LookupError):  # gone from where the program found it
                return None
            if isinstance(t, Tensor) and (t._data.shape, t.dtype, t._requires_grad) != meta:
                return None
        return out


def _structure(spec):
    """A ``tree_flatten`` spec as a hashable value."""
    if spec is None:
        return None
    kind, keys, children = spec
    return kind, None if keys is None else tuple(keys), tuple(_structure(c) for c in children)


def _same_scalar(a, b) -> bool:
    """Equal, of one type; a NaN equals a NaN."""
    return type(a) is type(b) and (a == b or (a != a and b != b))


class _Eager:
    """A signature that runs eagerly, and why."""

    def __init__(self, reason: str):
        self.reason = reason


_MISSING = object()
_MISS = object()  # a replay whose guards on sizes failed after it ran


def _tensor_key(t: Tensor, dims=None):
    arr = t._data
    shape = arr.shape if not dims else tuple(None if i in dims else n for i, n in enumerate(arr.shape))
    # a numpy array is on the CPU: its type says so without asking the backend
    return (shape, t.dtype, None if type(arr) is numpy.ndarray else t.device, t._requires_grad, _layout(arr, dims))


def _layout(arr, dims):
    """"C" for a contiguous array; else its strides (those of dims of size 1 do not count),
    or "strided" when dims are dynamic: the program may branch on ``is_contiguous()`` or
    read ``stride()``, which the recording takes as fixed."""
    if arr.flags.c_contiguous:
        return "C"
    if dims:
        return "strided"
    return tuple(s if n > 1 else 0 for n, s in zip(arr.shape, arr.strides))


def _is_tensor_key(leaf_key) -> bool:
    return type(leaf_key) is tuple and len(leaf_key) == 5 and type(leaf_key[0]) is tuple


def _dims_of_key(key):
    """Per flattened argument, the dims the signature leaves dynamic (None for non-tensors),
    or how a number reaches the program (``SYMBOLIC_INT``, ``SYMBOLIC_FLOAT``, ``STATIC_FLOAT``)."""
    out = []
    for leaf_key in key[0]:
        if _is_tensor_key(leaf_key):
            out.append(frozenset(i for i, n in enumerate(leaf_key[0]) if n is None))
        else:
            out.append(_NUMBER_KINDS.get(leaf_key) if type(leaf_key) is tuple else None)
    return out


def _describe(leaf_key) -> str:
    if _is_tensor_key(leaf_key):
        shape, dtype, device, requires_grad, layout = leaf_key
        return f"tensor {list(shape)} {dtype}" + (f" on {device}" if device else "") + (
            " requiring grad" if requires_grad else "") + ("" if layout == "C" else " (not contiguous)")
    if leaf_key == _SYMBOLIC_INT_KEY:
        return "an int (symbolic)"
    if leaf_key == _SYMBOLIC_FLOAT_KEY:
        return "a float (symbolic)"
    if leaf_key == _STATIC_FLOAT_KEY:
        return "a float"
    if isinstance(leaf_key, tuple) and len(leaf_key) == 2 and leaf_key[0] != "id":
        return repr(leaf_key[1])
    return "another object"


# the signature's entries for numbers whose value it leaves out
_SYMBOLIC_INT_KEY = (int, None)  # an int argument left symbolic
_SYMBOLIC_FLOAT_KEY = (float, "symbolic")  # a float argument left symbolic
_STATIC_FLOAT_KEY = (float, "static")  # a float argument guarded where the program uses it
_NUMBER_KINDS = {_SYMBOLIC_INT_KEY: SYMBOLIC_INT, _SYMBOLIC_FLOAT_KEY: SYMBOLIC_FLOAT, _STATIC_FLOAT_KEY: STATIC_FLOAT}


def _leaf_key(x, dims=None):
    if isinstance(x, Tensor):
        return _tensor_key(x, dims)
    if dims == SYMBOLIC_INT:
        return _SYMBOLIC_INT_KEY
    if type(x) is float:
        return _SYMBOLIC_FLOAT_KEY if dims == SYMBOLIC_FLOAT else _STATIC_FLOAT_KEY
    if isinstance(x, _SCALARS):
        return (type(x), x)
    if isinstance(x, (_dtype.dtype,)):
        return x
    return ("id", id(x))


def _global_state():
    """Grad mode, inference mode, CPU autocast and its dtype, the default dtype: read from
    their thread-local states directly, as this runs on every call."""
    autocast = _autocast.state
    return (_GRAD.enabled, _GRAD.inference, autocast.enabled.get("cpu", False), autocast.dtype["cpu"],
            _dtype.get_default_dtype())


def _module_state(root: Module):
    """The compiled module's tree: ``_one_module_state`` of each submodule."""
    return tuple(_one_module_state(m) for m in root.modules())


_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")


def _one_module_state(m: Module):
    """What a recording of ``m``'s call took as fixed: its plain attributes (``training``
    among them), the names of its children, parameters and buffers, and its hooks (the
    recording ran them: one added or removed since must be run anew). A parameter or
    buffer that is None counts as such (the program may test it); a tensor's own guards
    are the recording's externals."""
    d = m.__dict__
    return (id(m), tuple((k, v) for k, v in d.items() if _plain(v) or _function(v)), tuple(d.get("_modules", ())),
            tuple((k, v is None) for k, v in d.get("_parameters", {}).items()),
            tuple((k, v is None) for k, v in d.get("_buffers", {}).items()),
            tuple(tuple(d.get(name, ())) for name in _HOOKS))


def _function(v) -> bool:
    """A function held as an attribute (``self.act = F.relu``): the recording ran it."""
    return isinstance(v, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial))


def _plain(v) -> bool:
    """A Python scalar, or a tuple of them (hashable, compared by value)."""
    return type(v) in _SCALARS or (type(v) is tuple and all(_plain(x) for x in v))


class CompiledFunction:
    """``fn`` compiled: call it as ``fn``. ``module`` is the module whose tree is guarded
    (the compiled module, or the owner of a compiled bound method)."""

    def __init__(self, fn, backend, backend_name: str, *, module=None, fullgraph=False, recompile_limit=None,
                 dynamic=None):
        self.fn = fn
        self.dynamic = dynamic
        self._auto: dict[int, frozenset] = {}  # argument position -> dims made dynamic (automatic or marked)
        self._first_shapes: dict[int, tuple] = {}  # argument position -> the shape its first recording saw
        self._auto_ints: set[int] = set()  # argument positions of ints made symbolic (their value changed)
        self._first_ints: dict[int, int] = {}  # argument position -> the int its first recording saw
        self._auto_floats: set[int] = set()  # argument positions of floats made symbolic (their value changed)
        self._first_floats: dict[int, float] = {}  # argument position -> the float its first recording saw
        self._arg_names: list = []
        self._failed = None  # why the last recording tried did not serve the call
        self._rerecorded = False  # a replay that recorded a new branch (its result is a real run's)
        self.backend, self.backend_name = backend, backend_name
        self.module = module
        self.fullgraph = fullgraph
        self._recompile_limit = recompile_limit
        self._signatures: dict = {}
        self._recordings = 0
        self._warned = False
        self._state_cache = (-1, None)
        self._state_tokens: dict = {}  # module tree states seen lately -> the int the signatures hold for each
        self._next_token = 0  # never reused: a forgotten state's number names no other state
        self.log: list = []  # what happened, for explain: ("graph"/"break"/"recompile"/"eager", ...)
        functools.update_wrapper(self, fn)

    def _module_key(self):
        """A number for ``_module_state`` of the compiled module (equal states, equal
        numbers: the signature holds the number, so that looking it up does not hash and
        compare a large model's whole tree), read afresh only after a change made through
        Module's methods (``STATE_VERSION``); a write straight into a module's ``__dict__``
        is not seen."""
        version = STATE_VERSION[0]
        if self._state_cache[0] != version:
            state, tokens = _module_state(self.module), self._state_tokens
            if state not in tokens:
                if len(tokens) >= 256:  # a module attribute that changes every call: keep few
                    tokens.clear()
                tokens[state] = self._next_token
                self._next_token += 1
            self._state_cache = (version, tokens[state])
        return self._state_cache[1]

    @property
    def recompile_limit(self):
        from .._dynamo import config
        return config.recompile_limit if self._recompile_limit is None else self._recompile_limit

    # -- the call ----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if _dynamo().config.disable or _state.disabled() or _capture.is_capturing():
            return self.fn(*args, **kwargs)  # inside another capture: its ops join that recording
        if kwargs or not all(isinstance(a, _FLAT) for a in args):
            leaves, spec = tree_flatten((args, kwargs))
            structure = _structure(spec)  # keyword names, dict keys, list lengths: part of the signature
        else:  # the common call: tensors and numbers, nothing to flatten
            leaves, structure = list(args), len(args)
        key = self._key(leaves, structure)
        self._failed = None
        out = self._lookup(key, leaves, args, kwargs)
        if out is _MISS and self._signatures:  # as torch's cache, an older static recording may serve
            static = self._key(leaves, structure, static=True)
            if static != key:
                failed = self._failed
                out = self._lookup(static, leaves, args, kwargs)
                self._failed = failed or self._failed  # the newest recording's failed guard names the recompile
        if out is not _MISS:
            return out
        self._arg_names = _arg_names(self.fn, args, kwargs)
        reason = "first call" if not self._signatures else "a guard failed: " + (self._failed or self._why_new(key))
        if self._signatures and self._learn(leaves):  # automatic dynamic: a size changed
            wider = self._key(leaves, structure)
            if wider != key:
                key = wider
                out = self._lookup(key, leaves, args, kwargs)
                if out is not _MISS:
                    return out
        return self._record(key, leaves, args, kwargs, reason=reason)

    def _key(self, leaves, structure, static=False):
        dims = None if static else self._dynamic_dims(leaves)
        leaf_keys = tuple(_leaf_key(x) for x in leaves) if dims is None else tuple(
            _leaf_key(x, d) for x, d in zip(leaves, dims))
        return (leaf_keys, _global_state(), self._module_key() if self.module is not None else None, structure)

    def _dynamic_dims(self, leaves):
        """Per flattened argument, the dims of a tensor left dynamic or ``SYMBOLIC_INT`` for
        an int left symbolic; None when there are none."""
        dynamo = _dynamo()
        marks, config = dynamo._MARKS, dynamo.config
        if self.dynamic is False or (not self.dynamic and not self._auto and not self._auto_ints
                                     and not self._auto_floats and not marks):
            return None
        out = []
        for k, x in enumerate(leaves):
            if type(x) is int and (self.dynamic or k in self._auto_ints):
                out.append(SYMBOLIC_INT)
                continue
            if type(x) is float:
                symbolic = (self.dynamic or k in self._auto_floats) and not config.specialize_float
                out.append(SYMBOLIC_FLOAT if symbolic else None)
                continue
            if not isinstance(x, Tensor):
                out.append(None)
                continue
            shape = x._data.shape
            wanted = range(len(shape)) if self.dynamic else self._auto.get(k, frozenset()) | marks.get(id(x), set())
            out.append(frozenset(i for i in wanted if i < len(shape) and shape[i] >= 2))
        return out

    def _learn(self, leaves) -> bool:
        """torch's automatic dynamic shapes: the dims whose size differs from the first
        recording's become dynamic. True when one did."""
        from .._dynamo import config
        if self.dynamic is not None or not config.automatic_dynamic_shapes:
            return False
        changed = False
        for k, x in enumerate(leaves):
            if type(x) is int and k in self._first_ints and k not in self._auto_ints and x != self._first_ints[k]:
                self._auto_ints.add(k)
                changed = True
                continue
            if (type(x) is float and k in self._first_floats and k not in self._auto_floats
                    and not _same_scalar(x, self._first_floats[k]) and not config.specialize_float):
                self._auto_floats.add(k)
                changed = True
                continue
            first = self._first_shapes.get(k)
            if not isinstance(x, Tensor) or first is None or len(first) != x._data.ndim:
                continue
            moved = {i for i, (a, b) in enumerate(zip(first, x._data.shape)) if a != b}
            known = self._auto.get(k, frozenset())
            if moved - known:
                self._auto[k] = known | moved
                changed = True
        return changed

    def _lookup(self, key, leaves, args, kwargs):
        """The result of a recording of ``key`` whose guards hold, the eager result when the
        signature runs eagerly, or ``_MISS``."""
        entries = self._signatures.get(key)
        if entries is None:
            return _MISS
        for entry in entries:
            if isinstance(entry, _Eager):
                return self.fn(*args, **kwargs)
            if not entry.guards_hold():
                continue
            failed = entry.failed_pre_guard(leaves)
            if failed is not None:
                self._failed = failed.describe(entry.name_of)
                continue
            externals = entry.fetch_externals()
            if externals is not None and not entry.verified and entry.new_sizes(leaves):
                return self._record(key, leaves, args, kwargs, reason="", verify=entry)
            if externals is not None:
                out = self._replay(entry, leaves, externals, args, kwargs, key)
                if out is not _MISS:
                    return out
        return _MISS

    def _why_new(self, key) -> str:
        """Which guard of the nearest recorded signature the new call fails, in words
        (torch's words for a tensor's rank and sizes)."""
        old = next(reversed(self._signatures))
        if len(old[0]) != len(key[0]):
            return f"the number of tensor and scalar arguments changed ({len(old[0])} -> {len(key[0])})"
        for i, (a, b) in enumerate(zip(old[0], key[0])):
            if a != b:
                tensors = all(_is_tensor_key(k) for k in (a, b))
                if tensors and a[1:] == b[1:]:
                    name = self._arg_names[i] if i < len(self._arg_names) else f"arg{i}"
                    if len(a[0]) != len(b[0]):
                        return f"tensor '{name}' rank mismatch. expected {len(a[0])}, actual {len(b[0])}"
                    d = next(d for d, (x, y) in enumerate(zip(a[0], b[0])) if x != y)
                    expected = "a size of 2 or more" if a[0][d] is None else a[0][d]
                    return f"tensor '{name}' size mismatch at index {d}. expected {expected}, actual {b[0][d]}"
                return f"argument {i} changed: {_describe(a)} -> {_describe(b)}"
        names = ("grad mode", "inference mode", "autocast", "autocast dtype", "default dtype")
        for name, a, b in zip(names, old[1], key[1]):
            if a != b:
                return f"{name} changed: {a} -> {b}"
        if old[2] != key[2]:
            return "the module's attributes, training flags or submodules changed"
        if old[3] != key[3]:
            return "the structure of the arguments changed (keyword names, dict keys or list lengths)"
        return "a global the code read changed"

    def _replay(self, entry: _Recording, leaves, externals, args, kwargs, key):
        env = {i: x for i, x in enumerate(leaves) if isinstance(x, Tensor) or i in entry.sym_args}
        env.update(externals)
        saved = self._save(entry, env) if entry.has_breaks or entry.post_guards else None
        if entry.post_guards:
            self._rerecorded = False
            try:
                out = self._run_segments(entry, leaves, env, saved, args, kwargs, key)
            except Exception:  # noqa: BLE001 - sizes the guards did not allow can make an op fail
                self._restore(saved)
                self._failed = "an op failed on sizes other than the recorded ones"
                return _MISS
            if self._rerecorded:  # the program ran for real: its result stands
                return out
            failed = next((g for g in entry.post_guards if not g.holds(env.__getitem__)), None)
            if failed is not None:
                self._restore(saved)
                self._failed = failed.describe(entry.name_of)
                return _MISS
            return out
        return self._run_segments(entry, leaves, env, saved, args, kwargs, key)

    def _run_segments(self, entry, leaves, env, saved, args, kwargs, key):
        segment = entry.root
        while True:
            try:
                outs = segment.run(*[env[i] for i in segment.inputs])
            except BaseException:  # a graph that failed inside a no_grad block of the program leaves it
                _capture.set_modes(key[1][0], key[1][1], key[1][4])
                raise
            for i, v in zip(segment.outputs, outs):
                env[i] = v
            if segment.brk is None:
                break
            brk = segment.brk
            value = brk.fn(*resolve(brk.args, env), **resolve(brk.kwargs, env))
            nxt = segment.child(value)
            if nxt is None:
                self._restore(saved)
                self._rerecorded = True
                return self._record(key, leaves, args, kwargs, reason=f"break value changed at {brk.user_line}",
                                    attach=(entry, env))
            segment = nxt
        spec, refs = segment.result
        return tree_unflatten([resolve(r, env) for r in refs], spec)

    def _save(self, entry, env):
        from .. import random
        return random.get_rng_state(), [(env[i], env[i]._data.copy()) for i in entry.mutated if i in env]

    def _restore(self, saved):
        from .. import random
        state, arrays = saved
        random.set_rng_state(state)
        for t, arr in arrays:
            numpy.copyto(t._data, arr)

    # -- recording ---------------------------------------------------------------------
    def _record(self, key, leaves, args, kwargs, reason, attach=None, verify=None):
        """Run the program while recording it and keep the recording under ``key``.
        ``verify``: a dynamic recording met at new sizes; this run records the program again
        and, when it recorded the same, only marks ``verify`` as serving every size.
        Returns the program's result, its symbolic sizes as plain ints (as a replay's are)."""
        result = self._record_call(key, leaves, args, kwargs, reason, attach, verify)
        leaves, spec = tree_flatten(result, dataclasses=True)
        if any(isinstance(x, (SymInt, SymFloat)) for x in leaves):
            result = tree_unflatten([int.__int__(x) if isinstance(x, SymInt) else float.__float__(x)
                                     if isinstance(x, SymFloat) else x for x in leaves], spec)
        return result

    def _record_call(self, key, leaves, args, kwargs, reason, attach, verify):
        from .._dynamo import config
        entries = self._signatures.setdefault(key, [])
        if attach is None and verify is None and (self._recordings >= self.recompile_limit
                               or _TOTAL_RECORDINGS[0] >= config.accumulated_recompile_limit):
            if not self._warned:
                self._warned = True
                warnings.warn(f"ember._dynamo hit config.recompile_limit ({self.recompile_limit})\n"
                              f"   function: {getattr(self.fn, '__qualname__', self.fn)!r}\n"
                              f"   last reason: {reason}\n"
                              f"To log all recompilation reasons, use ember._dynamo.explain.", stacklevel=3)
            entries.append(_Eager("the recompile limit was reached"))
            return self.fn(*args, **kwargs)
        capture = Capture(self.module)
        dims = _dims_of_key(key)
        for k, x in enumerate(leaves):
            if dims[k] == SYMBOLIC_FLOAT and x - x != 0:  # a NaN or an infinity: guarded by value, as torch's
                dims[k] = STATIC_FLOAT
        capture.add_inputs(leaves, dims)
        for k, x in enumerate(leaves):
            if isinstance(x, Tensor):
                self._first_shapes.setdefault(k, tuple(x._data.shape))
                if dims[k] and self.dynamic is None:  # a marked dim stays dynamic for later arguments
                    self._auto[k] = self._auto.get(k, frozenset()) | dims[k]
            elif type(x) is int:
                self._first_ints.setdefault(k, x)
            elif type(x) is float:
                self._first_floats.setdefault(k, x)
        symbolic = capture.symbolic_args()
        if symbolic:  # the program gets the symbolic numbers in place of the plain ones
            flat, spec = tree_flatten((args, kwargs))
            args, kwargs = tree_unflatten([symbolic.get(k, x) for k, x in enumerate(flat)], spec)
        start = time.perf_counter()
        result = _capture.run(self.fn, args, kwargs, capture)
        _record_result_sizes(capture, result)
        if verify is not None:
            verify.verified = True
            if capture.unreplayable is None and _fingerprint(capture) == verify.fingerprint:
                return result  # size-generic: the recording serves every size from now on
            verify.pin()
            _pin(capture, capture.guards)  # this one holds for its own sizes only, too
            reason = ("the recording at other sizes differed (the program used a size or a number argument as a "
                      "plain Python value, which the guards cannot see): sizes and numbers are specialized")
        if capture.unreplayable is not None:
            if self.fullgraph:
                from .._dynamo.exc import Unsupported
                raise Unsupported(capture.unreplayable)
            self._run_eagerly(entries, attach, capture.unreplayable)
            return result
        if self.fullgraph and capture.breaks():
            from .._dynamo.exc import Unsupported
            brk = capture.breaks()[0]
            raise Unsupported(f"graph break: {brk.reason}", brk.user_line)
        names = _placeholder_names(self.fn, capture, args, kwargs)
        n = capture.num_inputs
        keep = set().union(*(g.values() for g in capture.guards)) - set(range(n))
        if keep and capture._opaque_seen:
            self._run_eagerly(entries, attach, "a guard on the size of a tensor the program made, in a program with a "
                              "call whose effects cannot be undone (backward, an optimizer step)")
            return result
        try:
            segments = build_segments(capture, result, names, keep=keep)
        except _capture.Unreplayable as e:
            self._run_eagerly(entries, attach, str(e))
            return result
        for segment in segments:
            segment.run = self._compile_graph(segment, capture)
        elapsed = time.perf_counter() - start
        for brk in capture.breaks():
            self.log.append(("break", brk.reason, brk.user_line))
        if attach is not None:
            added = self._attach(attach[0], segments)
            if added is None:
                self._run_eagerly(entries, attach, "the program recorded a different path for the same inputs and "
                                  "break values: its control flow depends on something the guards do not cover")
            else:
                self.log.append(("graphs", added, elapsed))
            return result
        meta = {i: (tuple(t._data.shape), t.dtype, t._requires_grad)
                for i, t in ((i, capture._values[i]) for i in capture.externals)}
        early = [(i, ext, meta[i]) for i, ext in capture.externals.items() if not ext.late]
        # a tensor first read after a call (a parameter after zero_grad) is read in the graph,
        # but it exists before: its metadata is checked with the others' (a .grad is made by
        # the call and cannot be)
        late = [(i, ext, meta[i]) for i, ext in capture.externals.items()
                if ext.late and ext.path[-1] != ("attr", "grad")]
        recording = _Recording(segments[0], _globals_guards(capture), early, capture, elapsed, names)
        recording.late = late
        recording.verified = verify is not None or not (capture.symbolic or capture.sym_floats)
        # the arguments the signature knows by identity live while the recording does: their
        # ids cannot pass to new objects that would match it
        recording.held = [x for x, k in zip(leaves, key[0]) if type(k) is tuple and len(k) == 2 and k[0] == "id"]
        entries.append(recording)
        self._recordings += 1
        _TOTAL_RECORDINGS[0] += 1
        if self._recordings > 1:
            self.log.append(("recompile", reason))
        self.log.append(("graphs", segments, elapsed))
        return result

    def _compile_graph(self, segment, capture):
        example = [capture._values[i] for i in segment.inputs]
        try:
            compiled = self.backend(segment.gm, example)
        except Exception as e:
            from .._dynamo.exc import BackendCompilerFailed
            raise BackendCompilerFailed(self.backend_name, e) from e
        return compiled

    def _run_eagerly(self, entries, attach, reason: str) -> None:
        """This signature (or, re-recording a branch, the recording it belongs to) runs
        eagerly from now on."""
        self.log.append(("eager", reason))
        if attach is not None:
            entries[entries.index(attach[0])] = _Eager(reason)
        else:
            entries.append(_Eager(reason))

    def _attach(self, entry: _Recording, segments):
        """Hang a recording that left ``entry``'s tree at some break under that break;
        returns its new segments, or None when its path does not follow the tree's."""
        node = entry.root
        for k, segment in enumerate(segments):
            if node.steps != segment.steps or node.brk is None:
                return None
            nxt = node.child(segment.brk.expected)
            if nxt is None:
                node.children.append((segment.brk.expected, segments[k + 1]))
                return segments[k + 1:]
            node = nxt
        return []


def _record_result_sizes(capture: Capture, result) -> None:
    """Record the nodes of the symbolic sizes the program returns (``n + 1``) now, so that
    two recordings of one program compare equal (``_fingerprint``) before they are built."""
    if capture.unreplayable is None:
        for leaf in tree_flatten(result, dataclasses=True)[0]:
            if isinstance(leaf, (SymInt, SymFloat)) and leaf.owner is capture:
                capture.expr_value(leaf.expr)


def _input_sizes(capture: Capture) -> dict:
    """``{(argument position, dim): size}`` of the dynamic input dims while recording, and
    ``{(argument position, None): value}`` of the symbolic ints and of the floats."""
    sizes = {(k, d): capture._values[k]._data.shape[d] for k, dims in capture.dynamic.items()
             if k < capture.num_inputs for d in dims}
    sizes.update({(k, None): int.__int__(sym) for k, sym in capture.sym_ints.items()})
    sizes.update({(k, None): float.__float__(sym) for k, sym in capture.sym_floats.items()})
    return sizes


def _pin_guards(sizes: dict, guards: list) -> None:
    for (k, d), n in sizes.items():
        if d is None and isinstance(n, float):
            guard = value_guard(("float", k), n)
        else:
            guard = Guard(("size", k, d) if d is not None else ("int", k), "eq", n, True)
        guard.where = "a size used as a plain int"
        guards.append(guard)


def _pin(capture: Capture, guards: list) -> None:
    _pin_guards(_input_sizes(capture), guards)


def _fingerprint(capture: Capture):
    """What a recording did, comparable between two runs: its calls and their constant
    arguments, its breaks, its external reads and its guards."""
    out = []
    for item in capture.items:
        if isinstance(item, _capture.Step):
            out.append((item.kind, item.name, _frozen(item.args), _frozen(item.kwargs), tuple(item.outputs)))
        elif isinstance(item, _capture.Break):
            out.append(("break", item.reason, _frozen(item.args)))
        else:
            out.append(item)
    out.append(tuple((g.expr, g.op, g.other, g.outcome) for g in capture.guards))
    return out


def _frozen(a):
    if isinstance(a, _capture._Ref):
        return ("ref", a.index)
    if isinstance(a, (list, tuple)):
        return (type(a).__name__, tuple(_frozen(x) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _frozen(v)) for k, v in a.items()))
    if isinstance(a, slice):
        return ("slice", _frozen(a.start), _frozen(a.stop), _frozen(a.step))
    if isinstance(a, numpy.ndarray):
        return ("array", a.dtype.str, a.shape, a.tobytes())
    if isinstance(a, float):
        return ("float", repr(a))  # NaN equals NaN here; 0.0 and -0.0 differ
    if isinstance(a, (int, complex, str, bool, type(None))):
        return (type(a).__name__, a)
    return ("object", id(a))


def _globals_guards(capture: Capture):
    """Guards on the globals and closure variables the program's functions can read, and on
    the attributes and constant items the code reads through them (``_reads``): a Python
    scalar by value, anything else by identity (a tensor is read at every call)."""
    guards, seen = [], set()

    def guard(where, name, value):
        if not isinstance(value, Tensor) and value is not _reads.MISSING:
            guards.append((where, name, "eq" if type(value) in _SCALARS else "is", value))

    for code, globs, cells in capture.frames:
        for name in code.co_names:
            if (id(globs), name) in seen or name not in globs:
                continue
            seen.add((id(globs), name))
            guard(globs, name, globs[name])
        for name, cell in cells.items():
            if type(cell) is _capture.Cell and id(cell.cell) not in seen:
                seen.add(id(cell.cell))
                guard(cell, name, cell.get(name, _MISSING))
        for root, name, path in _reads.chains(code):
            where = globs if root == "global" else cells.get(name)
            if where is None or (id(where), name, path) in seen:
                continue
            seen.add((id(where), name, path))
            reader = _reads.PathRoot(where, path)
            guard(reader, name, reader.get(name, _reads.MISSING))
    return guards


def _arg_names(fn, args, kwargs) -> list:
    """A name per flattened argument: the function's parameter names where it has them."""
    import inspect
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        arg_names = []
        for name, value in bound.arguments.items():
            n = len(tree_flatten(value)[0])
            arg_names += [name] if n == 1 else [f"{name}_{k}" for k in range(n)]
    except (TypeError, ValueError):
        arg_names = []
    return arg_names


def _placeholder_names(fn, capture, args, kwargs):
    """Names for the inputs (the function's parameter names where it has them) and the
    externals."""
    names: dict[int, str] = {}
    arg_names = _arg_names(fn, args, kwargs)
    for i in range(capture.num_inputs):
        names[i] = _sanitize(arg_names[i] if i < len(arg_names) else f"arg{i}")
    for i, ext in capture.externals.items():
        names[i] = _sanitize(ext.name)
    return names


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "_" + out

