"""ember.compile and torch.compiler's public API.

``ember.compile(model)`` captures what a call does as ``ember.fx`` graphs by tracing with
guards: the first call with a new signature runs the Python code once, for real, while the
dispatch seam records every ember op it performs; later calls whose guards hold replay the
recorded graphs without running the Python code again. Where the program needs a concrete
value from a tensor (``bool()``, ``.item()``, ``.tolist()``, numpy conversion) the graph is
cut (a *graph break*): the value is computed on replay and chooses the recording made for
it, and a value not seen before records the program again for that outcome.

What a recording is guarded on: the arguments (tensor shapes, dtypes, devices,
requires_grad; Python scalars' values, a float's only where the program uses it; other
objects' identity), grad/inference/autocast mode and the default dtype, the compiled
module's submodules, ``training`` flags and plain attributes, the metadata of the
parameters and buffers it reads (read afresh at every call), and the globals the code
refers to (scalars by value, other objects by identity) with what the code reads through
them by attribute or constant key (``cfg.temperature``, ``opts["scale"]``); a container
read otherwise (a loop over a global list) is guarded by identity only. Shapes: a
tensor's dims are specialized unless dynamic: ``dynamic=True`` (every dim),
``ember._dynamo.mark_dynamic``, or torch's automatic dynamic shapes (``dynamic=None``, the
default: the first size change that would record anew records with that dim dynamic
instead); a dynamic dim's sizes are symbolic in the
recording (``size()`` and its arithmetic are graph nodes, decisions on them guards), so
one recording serves every size of 2 or more. ``dynamic=False`` specializes every size.
Python int and float arguments are symbolic the same way (torch's unspecialized ints and
``specialize_float=False``). New signatures record anew up to
``ember._dynamo.config.recompile_limit``, then the function runs eagerly with one warning.
Python side effects other than ember ops (``print``, appending to a list, a counter
attribute) happen only on recording calls; those a training step relies on are replayed:
the calls kept whole (``backward``, optimizers' and modules' ``zero_grad``, optimizers' and
learning-rate schedulers' ``step``, ``manual_seed``), assignments of ``.grad``, and grad
mode or default dtype changes.

The default backend fuses runs of elementwise ops into generated loops (``fusion``) and
takes gradients through the graph's joint forward/backward graph (``_joint``, as torch's
AOTAutograd): the backward derived as a second graph, the forward run without autograd
keeping only what that graph reads; a training step's ``backward()`` runs the backward graph
in its place.

Sources: torch.compile and torch.compiler documentation (PyTorch 2.13).
"""

from __future__ import annotations

import functools
import weakref

from ..nn.modules.module import Module
from . import backends
from ._capture import is_capturing
from ._compiled import CompiledFunction

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling", "is_exporting",
           "allow_in_graph", "list_backends", "OptimizedModule"]

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
_COMPILED: weakref.WeakSet = weakref.WeakSet()  # every compiled function, for reset()


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None, backend=None,
            mode: str | None = None, options: dict | None = None, name: str | None = None,
            disable: bool = False, recompile_limit: int | None = None, isolate_recompiles: bool = False,
            shapes_spec=None):
    """Compile ``model`` (a Module or a function) with torch.compile's arguments.

    Returns an ``OptimizedModule`` for a module (its parameters are the module's; its
    state-dict keys carry the ``_orig_mod.`` prefix, as torch's), a function otherwise;
    used without ``model`` it is a decorator. ``backend``: a name from ``list_backends()``
    (``None`` is the default backend) or a callable ``backend(gm, example_inputs)`` that
    receives each captured ``ember.fx.GraphModule``. ``fullgraph=True`` raises
    ``ember._dynamo.exc.Unsupported`` at a graph break. ``mode`` and ``options`` are checked
    as torch checks them. ``disable=True`` returns ``model`` itself.

    Raises ``ember._dynamo.exc.InvalidBackend`` for an unknown backend name, RuntimeError
    for an unknown ``mode`` or for ``mode`` and ``options`` together.

    ``dynamic``: True records every dim of every tensor argument, and every int and float
    argument, as symbolic; False none; None (the default) the dims and numbers whose value
    changed since the first recording and the dims ``mark_dynamic`` named (torch's automatic
    dynamic shapes). ``recompile_limit`` bounds the recordings of this function
    (``ember.compiler.config.recompile_limit`` when None).
    ``name``, ``isolate_recompiles`` and ``shapes_spec`` are accepted for torch's signature
    and unused."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    backend_fn, backend_name = backends.lookup_backend(backend)
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, name=name, disable=disable, recompile_limit=recompile_limit,
                                 isolate_recompiles=isolate_recompiles, shapes_spec=shapes_spec)
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model._call_impl, backend_fn, backend_name, module=model,
                                                       fullgraph=fullgraph, recompile_limit=recompile_limit,
                                                       dynamic=dynamic))
    if not callable(model):
        raise RuntimeError(f"ember.compile expects a Module or a callable, got {type(model).__name__}")
    owner = getattr(model, "__self__", None)
    compiled = CompiledFunction(model, backend_fn, backend_name, module=owner if isinstance(owner, Module) else None,
                                fullgraph=fullgraph, recompile_limit=recompile_limit, dynamic=dynamic)
    _COMPILED.add(compiled)

    @functools.wraps(model)
    def compiled_fn(*args, **kwargs):
        return compiled(*args, **kwargs)

    compiled_fn._ember_compiled = compiled
    return compiled_fn


class OptimizedModule(Module):
    """A compiled module (torch's ``OptimizedModule``): ``_orig_mod`` is the module ``mod``,
    calls go through ``compiled`` (the compiled function of its ``forward``), other
    attributes are the module's. Made by ``ember.compile(module)``."""

    def __init__(self, mod, compiled):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled"] = compiled
        self.__dict__["forward"] = mod.forward
        _COMPILED.add(compiled)

    def __call__(self, *args, **kwargs):
        return self.__dict__["_compiled"](*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._orig_mod, name)

    def __repr__(self):
        return f"OptimizedModule({self._orig_mod!r})"


def reset() -> None:
    """Forget every recording of every compiled function (torch.compiler.reset)."""
    from . import _compiled
    for compiled in _COMPILED:
        compiled._signatures.clear()
        compiled._recordings = 0
        compiled._warned = False
        compiled._auto.clear()
        compiled._first_shapes.clear()
        compiled.log.clear()
    _compiled._TOTAL_RECORDINGS[0] = 0


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """``fn`` run eagerly, never recorded (torch.compiler.disable): inside a compiled
    function's recording it is kept as one call, so its Python runs at every replay; a
    compiled function called inside it runs eagerly. Usable as a decorator.

    ``fn`` is the function (None when used as ``@disable(...)``); ``recursive`` and
    ``reason`` are accepted for torch's signature (the functions ``fn`` calls run eagerly
    too, as with torch's recursive=True)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    from ..ops import _dispatch
    from . import _state

    @functools.wraps(fn)
    def disabled_fn(*args, **kwargs):
        _state.set_disabled(+1)
        try:
            return fn(*args, **kwargs)
        finally:
            _state.set_disabled(-1)

    return _dispatch.register(disabled_fn, getattr(fn, "__qualname__", "disabled"), capture="call")


def allow_in_graph(fn):
    """Keep ``fn`` whole in a recording (torch.compiler.allow_in_graph): its call is one node,
    replayed as a call, and the ops inside it are not recorded. Returns ``fn``."""
    import types

    from ..ops import _dispatch
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"allow_in_graph expects a Python function, got {type(fn).__name__}")
    return _dispatch.register(fn, fn.__qualname__, capture="pure")


def is_compiling() -> bool:
    """True while a compiled function records (its Python code runs under capture)."""
    return is_capturing()


is_dynamo_compiling = is_compiling


def is_exporting() -> bool:
    """True while ONNX export captures a graph; export does not run through this yet."""
    return False


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    """The backend names ``compile`` accepts, sorted, without those tagged with any of
    ``exclude_tags`` (by default 'debug' and 'experimental') (torch.compiler.list_backends)."""
    return backends.list_backends(exclude_tags)
