"""A compiled callable: guards, the recordings per signature, replay, recompiles.

A call's *signature* is what every recording depends on and can be read before running
anything: each flattened argument (a tensor's shape, dtype, device and requires_grad; a
Python scalar's type and value; any other object's identity), the global modes (grad,
inference, autocast, default dtype), the compiled module's tree (its submodules, their
``training`` flags and plain attributes) and the metadata of the parameters and buffers it
reads. Each signature holds the recordings made under it, each with its guards on the
globals the code read; a recording is a tree of segments split by its graph breaks.
"""

from __future__ import annotations

import functools
import time
import warnings

import numpy

from .. import _dtype
from .._tensor import Tensor
from ..func._pytree import tree_flatten, tree_unflatten
from ..nn.modules.module import STATE_VERSION, Module
from . import _capture
from ._capture import Capture
from ._segments import build_segments, resolve

__all__ = ["CompiledFunction"]

_SCALARS = (bool, int, float, complex, str, type(None))
_TOTAL_RECORDINGS = [0]


class _Recording:
    """What one signature recorded: the first segment (the tree's root), the globals guards,
    the externals read before anything runs, and what a miss must restore."""

    def __init__(self, root, guards, early, capture, compile_time):
        self.root = root
        self.guards = guards  # [(globals dict, name, "eq"/"is", value)]
        self.early = early  # [(value index, External, (shape, dtype, requires_grad))]
        self.mutated = sorted(capture.mutated_before_break)
        self.has_breaks = root.brk is not None
        self.compile_time = compile_time

    def guards_hold(self) -> bool:
        for globs, name, kind, value in self.guards:
            current = globs.get(name, _MISSING)
            if (current is not value) if kind == "is" else not _same_scalar(current, value):
                return False
        return True

    def fetch_externals(self):
        """{value index: tensor} of the externals read before anything runs, or None when
        one of them is no longer a tensor of the recorded shape, dtype and requires_grad."""
        out = {}
        for index, ext, meta in self.early:
            t = ext.fetch()
            if not isinstance(t, Tensor) or (tuple(t._data.shape), t.dtype, t._requires_grad) != meta:
                return None
            out[index] = t
        return out


def _same_scalar(a, b) -> bool:
    """Equal, of one type; a NaN equals a NaN."""
    return type(a) is type(b) and (a == b or (a != a and b != b))


class _Eager:
    """A signature that runs eagerly, and why."""

    def __init__(self, reason: str):
        self.reason = reason


_MISSING = object()


def _tensor_key(t: Tensor):
    arr = t._data
    # a numpy array is on the CPU: its type says so without asking the backend
    return (arr.shape, t.dtype, None if type(arr) is numpy.ndarray else t.device, t._requires_grad)


def _describe(leaf_key) -> str:
    if isinstance(leaf_key, tuple) and len(leaf_key) == 4 and isinstance(leaf_key[0], tuple):
        shape, dtype, device, requires_grad = leaf_key
        return f"tensor {list(shape)} {dtype}" + (f" on {device}" if device else "") + (
            " requiring grad" if requires_grad else "")
    if isinstance(leaf_key, tuple) and len(leaf_key) == 2 and leaf_key[0] != "id":
        return repr(leaf_key[1])
    return "another object"


def _leaf_key(x):
    if isinstance(x, Tensor):
        return _tensor_key(x)
    if isinstance(x, _SCALARS):
        return (type(x), x)
    if isinstance(x, (_dtype.dtype,)):
        return x
    return ("id", id(x))


def _global_state():
    from ..amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
    from ..autograd.grad_mode import is_grad_enabled, is_inference_mode_enabled
    return (is_grad_enabled(), is_inference_mode_enabled(), is_autocast_enabled("cpu"),
            get_autocast_dtype("cpu"), _dtype.get_default_dtype())


def _module_state(root: Module):
    """The compiled module's tree: each submodule's plain attributes (``training`` among
    them) and children."""
    out = []
    for m in root.modules():
        d = m.__dict__
        out.append((id(m), tuple((k, v) for k, v in d.items() if _plain(v)), tuple(d.get("_modules", {}))))
    return tuple(out)


def _plain(v) -> bool:
    """A Python scalar, or a tuple of them (hashable, compared by value)."""
    return type(v) in _SCALARS or (type(v) is tuple and all(_plain(x) for x in v))


class CompiledFunction:
    """``fn`` compiled: call it as ``fn``. ``module`` is the module whose tree is guarded
    (the compiled module, or the owner of a compiled bound method)."""

    def __init__(self, fn, backend, backend_name: str, *, module=None, fullgraph=False, recompile_limit=None):
        self.fn = fn
        self.backend, self.backend_name = backend, backend_name
        self.module = module
        self.fullgraph = fullgraph
        self._recompile_limit = recompile_limit
        self._signatures: dict = {}
        self._recordings = 0
        self._warned = False
        self._state_cache = (-1, None)
        self.log: list = []  # what happened, for explain: ("graph"/"break"/"recompile"/"eager", ...)
        functools.update_wrapper(self, fn)

    def _module_key(self):
        """``_module_state`` of the compiled module, read afresh only after a change made
        through Module's methods (``STATE_VERSION``); a write straight into a module's
        ``__dict__`` is not seen."""
        version = STATE_VERSION[0]
        if self._state_cache[0] != version:
            self._state_cache = (version, _module_state(self.module))
        return self._state_cache[1]

    @property
    def recompile_limit(self):
        from .._dynamo import config
        return config.recompile_limit if self._recompile_limit is None else self._recompile_limit

    # -- the call ----------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        from .._dynamo import config
        from . import _state
        if config.disable or _state.disabled() or _capture.is_capturing():
            return self.fn(*args, **kwargs)  # inside another capture: its ops join that recording
        leaves, _ = tree_flatten((args, kwargs))
        key = (tuple(_leaf_key(x) for x in leaves), _global_state(),
               self._module_key() if self.module is not None else None)
        entries = self._signatures.get(key)
        if entries is not None:
            for entry in entries:
                if isinstance(entry, _Eager):
                    return self.fn(*args, **kwargs)
                if entry.guards_hold():
                    externals = entry.fetch_externals()
                    if externals is not None:
                        return self._replay(entry, leaves, externals, args, kwargs, key)
        return self._record(key, leaves, args, kwargs, reason="first call" if not self._signatures else
                            "a guard failed: " + self._why_new(key))

    def _why_new(self, key) -> str:
        """Which guard of the nearest recorded signature the new call fails, in words."""
        old = next(reversed(self._signatures))
        if len(old[0]) != len(key[0]):
            return f"the number of tensor and scalar arguments changed ({len(old[0])} -> {len(key[0])})"
        for i, (a, b) in enumerate(zip(old[0], key[0])):
            if a != b:
                return f"argument {i} changed: {_describe(a)} -> {_describe(b)}"
        names = ("grad mode", "inference mode", "autocast", "autocast dtype", "default dtype")
        for name, a, b in zip(names, old[1], key[1]):
            if a != b:
                return f"{name} changed: {a} -> {b}"
        if old[2] != key[2]:
            return "the module's attributes, training flags or submodules changed"
        return "a global the code read changed"

    def _replay(self, entry: _Recording, leaves, externals, args, kwargs, key):
        env = {i: x for i, x in enumerate(leaves) if isinstance(x, Tensor)}
        env.update(externals)
        saved = self._save(entry, env) if entry.has_breaks else None
        segment = entry.root
        while True:
            outs = segment.run(*[env[i] for i in segment.inputs])
            for i, v in zip(segment.outputs, outs):
                env[i] = v
            if segment.brk is None:
                break
            brk = segment.brk
            value = brk.fn(*resolve(brk.args, env), **resolve(brk.kwargs, env))
            nxt = segment.child(value)
            if nxt is None:
                self._restore(saved)
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
    def _record(self, key, leaves, args, kwargs, reason, attach=None):
        from .._dynamo import config
        entries = self._signatures.setdefault(key, [])
        if attach is None and (self._recordings >= self.recompile_limit
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
        capture.add_inputs(leaves)
        start = time.perf_counter()
        result = _capture.run(self.fn, args, kwargs, capture)
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
        try:
            segments = build_segments(capture, result, _placeholder_names(self.fn, capture, args, kwargs))
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
        early = [(i, ext, (tuple(capture._values[i]._data.shape), capture._values[i].dtype,
                           capture._values[i]._requires_grad)) for i, ext in capture.externals.items() if not ext.late]
        entries.append(_Recording(segments[0], _globals_guards(capture), early, capture, elapsed))
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


def _globals_guards(capture: Capture):
    guards, seen = [], set()
    for code, globs, _ in capture.frames:
        for name in code.co_names:
            if (id(globs), name) in seen or name not in globs:
                continue
            seen.add((id(globs), name))
            value = globs[name]
            if isinstance(value, Tensor):
                continue  # read through its path at every call
            guards.append((globs, name, "eq" if type(value) in _SCALARS else "is", value))
    return guards


def _placeholder_names(fn, capture, args, kwargs):
    """Names for the inputs (the function's parameter names where it has them) and the
    externals."""
    import inspect
    names: dict[int, str] = {}
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
        arg_names = []
        for name, value in bound.arguments.items():
            n = len(tree_flatten(value)[0])
            arg_names += [name] if n == 1 else [f"{name}_{k}" for k in range(n)]
    except (TypeError, ValueError):
        arg_names = []
    for i in range(capture.num_inputs):
        names[i] = _sanitize(arg_names[i] if i < len(arg_names) else f"arg{i}")
    for i, ext in capture.externals.items():
        names[i] = _sanitize(ext.name)
    return names


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "_" + out

