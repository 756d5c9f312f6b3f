"""torch.jit's names for eager programs: ``trace`` captures an ``ember.fx`` graph; the
TorchScript parts (``script``, ``save``/``load``) are not carried over, and the decorators
are pass-throughs, as they are in eager PyTorch.

Source: torch.jit documentation (PyTorch 2.13).
"""

from __future__ import annotations

import threading
import typing
import warnings

__all__ = ["trace", "trace_module", "script", "is_scripting", "is_tracing", "ignore", "unused", "export",
           "annotate", "Final", "save", "load", "fork", "wait", "isinstance", "TracerWarning", "Future"]

Final = typing.Final


class TracerWarning(UserWarning):
    """A traced value Python used as a constant (torch.jit.TracerWarning)."""


class _Local(threading.local):
    tracing = 0


_LOCAL = _Local()


def is_tracing() -> bool:
    """True inside ``jit.trace``'s run of the traced function."""
    return _LOCAL.tracing > 0


def is_scripting() -> bool:
    """Always False: ember runs no TorchScript."""
    return False


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True, _dynamic=None):
    """Run ``func`` (a Module or a function) once on ``example_inputs`` (a tensor or a tuple)
    and return the ops it performed as an ``ember.fx.GraphModule``: re-executable on new
    inputs of the same kind, printable (``.code``), with a module's parameters and buffers
    as its own attributes. As in torch, the trace is one straight-line graph: a value
    Python read from a tensor (``bool()``, ``item()``) is kept as the constant it was,
    with a ``TracerWarning``. Deprecated, as torch 2.13 deprecates it (a DeprecationWarning).

    ``_dynamic`` (ember's, for ONNX export): per flattened input, the dims recorded as
    symbolic sizes; the decisions the program took on them are the graph module's
    ``_ember_guards``.

    Raises RuntimeError without example inputs, or when the run cannot be recorded.

    ``example_kwarg_inputs`` (a dict) passes keyword example inputs instead of, or besides,
    ``example_inputs``. ``optimize``, ``check_trace``, ``check_inputs``, ``check_tolerance``
    and ``strict`` are accepted for torch's signature and unused (the trace is not re-run to
    check it)."""
    _deprecated("trace")
    from ..compiler import _capture
    from ..compiler._compiled import _placeholder_names
    from ..compiler._segments import build_segments
    from ..func._pytree import tree_flatten
    from ..nn.modules.module import Module
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("jit.trace needs example_inputs (a tensor or a tuple of them)")
    args = example_inputs if isinstance(example_inputs, tuple) else (() if example_inputs is None
                                                                     else (example_inputs,))
    kwargs = dict(example_kwarg_inputs or {})
    module = func if isinstance(func, Module) else getattr(func, "__self__", None)
    module = module if isinstance(module, Module) else None
    fn = func._call_impl if isinstance(func, Module) else func
    capture = _capture.Capture(module)
    capture.add_inputs(tree_flatten((args, kwargs))[0], _dynamic)
    _LOCAL.tracing += 1
    try:
        result = _capture.run(fn, args, kwargs, capture)
    finally:
        _LOCAL.tracing -= 1
    if capture.unreplayable is not None:
        raise RuntimeError(f"jit.trace could not record {getattr(func, '__qualname__', type(func).__name__)}: "
                           f"{capture.unreplayable}")
    for brk in capture.breaks():
        warnings.warn_explicit(f"{brk.reason}: the trace keeps the value it had ({brk.expected!r}) as a constant; "
                               f"it will not change with other inputs", TracerWarning,
                               *_file_line(brk.user_line))
    capture.items = [item for item in capture.items if not isinstance(item, _capture.Break)]
    names = _placeholder_names(func.forward if isinstance(func, Module) else fn, capture, args, kwargs)
    (segment,) = build_segments(capture, result, names, traced=True)
    if _dynamic is not None:
        object.__setattr__(segment.gm, "_ember_guards", list(capture.guards))
    return segment.gm


def _file_line(user_line):
    if not user_line:
        return ("<unknown>", 0)
    where = user_line.split(" in ")[0]
    file, _, line = where.rpartition(":")
    return (file, int(line) if line.isdigit() else 0)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """``inputs`` maps method names to example inputs; only ``forward`` is traced (the
    graph module has one method), other names raise ValueError.

    ``mod`` is the module traced; ``example_inputs_is_kwarg`` makes ``inputs["forward"]`` a
    dict of keyword inputs. ``optimize``, ``check_trace``, ``check_inputs``,
    ``check_tolerance`` and ``strict`` are accepted and unused, as in ``trace``
    (torch.jit.trace_module)."""
    unknown = set(inputs) - {"forward"}
    if unknown:
        raise ValueError(f"jit.trace_module traces forward only; got methods {sorted(unknown)}")
    example = inputs["forward"]
    if example_inputs_is_kwarg:
        return trace(mod, example_kwarg_inputs=example)
    return trace(mod, example)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` itself, with one warning: TorchScript is not carried over to ember,
    so a scripted module is the eager module (which is what it computes).

    ``optimize`` and ``example_inputs`` are accepted and unused (torch.jit.script)."""
    warnings.warn("ember.jit.script returns the object unchanged: TorchScript is not carried over to ember "
                  "(use ember.compile to speed it up, ember.onnx.export to deploy it)", UserWarning, stacklevel=2)
    return obj


def ignore(drop=False, **kwargs):
    """A pass-through decorator (torch.jit.ignore): ``@jit.ignore`` and
    ``@jit.ignore(drop=True)`` both return the function unchanged; ``drop`` is the function
    itself when used bare."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """The function ``fn`` unchanged (torch.jit.unused: a TorchScript marker with no effect in
    eager code)."""
    return fn


def export(fn):
    """The function ``fn`` unchanged (torch.jit.export: a TorchScript marker with no effect in
    eager code)."""
    return fn


def annotate(the_type, the_value):
    """``the_value`` itself (torch.jit.annotate); ``the_type`` matters to TorchScript only."""
    return the_value


def isinstance(obj, target_type) -> bool:  # noqa: A001
    """Whether ``obj`` is an instance of ``target_type`` (Python's isinstance), with typing's
    List/Dict/Tuple/Optional/Union forms of ``target_type`` checked on the outer type
    (torch.jit.isinstance)."""
    import builtins
    origin = typing.get_origin(target_type)
    if origin is typing.Union:
        return any(isinstance(obj, t) for t in typing.get_args(target_type))
    return builtins.isinstance(obj, origin or target_type)


class Future:
    """A finished computation's result (torch.jit.Future): ``fork`` runs the function at once
    in eager mode and wraps its ``value``, which ``wait()`` returns."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def done(self) -> bool:
        return True


def fork(func, *args, **kwargs) -> Future:
    """Runs ``func`` now and returns its finished ``Future`` (deprecated, as in torch 2.13)."""
    _deprecated("fork")
    return Future(func(*args, **kwargs))


def wait(future: Future):
    """The result of the ``Future`` ``future`` (torch.jit.wait; deprecated, as in torch 2.13: a
    DeprecationWarning)."""
    _deprecated("wait")
    return future.wait()


def _deprecated(name: str) -> None:
    warnings.warn(f"`ember.jit.{name}` is deprecated. Please switch to `ember.compile`.", DeprecationWarning,
                  stacklevel=3)


def save(m, f, _extra_files=None) -> None:
    """Raises RuntimeError: ember writes no TorchScript archives (torch.jit.save). ``m`` and ``f``
    (the module and the file) are accepted for torch's signature; save the weights with
    ``ember.save(model.state_dict(), path)`` or export with ``ember.onnx.export``."""
    raise RuntimeError("ember.jit.save writes TorchScript, which ember does not carry over: save the weights with "
                       "ember.save(model.state_dict(), path), or export the model with ember.onnx.export")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Raises RuntimeError: ember reads no TorchScript archives (torch.jit.load). ``f`` and
    ``map_location`` are accepted for torch's signature; load weights with ``ember.load``, or
    an ONNX file with ``ember.onnx``."""
    raise RuntimeError("ember.jit.load reads TorchScript, which ember does not carry over: load weights with "
                       "ember.load (into the model's class), or an ONNX file with ember.onnx")
