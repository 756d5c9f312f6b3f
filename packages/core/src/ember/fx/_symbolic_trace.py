"""Symbolic tracing: run a module's ``forward`` (or a function) on Proxies and record what
it does as a Graph (torch.fx._symbolic_trace).

While ``Tracer.trace`` runs, three things are patched and restored after:
``Module.__call__`` (a leaf module becomes one ``call_module`` node, any other is traced
through), ``Module.__getattr__`` (a parameter read in ``forward`` becomes a ``get_attr``
node), and the globals named by ``wrap`` / ``autowrap_*`` (a call with a Proxy becomes one
``call_function`` node of the function). ember's ops and ``nn.functional`` see Proxies
through the dispatch seam (``_op_capture``).
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import copy
import functools
import inspect
import math
import warnings
from itertools import chain
from types import FunctionType, ModuleType
from typing import Any, Callable, NamedTuple

from .._tensor import Tensor
from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ._op_capture import ops_see_proxies
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument
from .proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TracerBase, _find_proxy, base_types

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "PHWithMeta", "ProxyableClassMeta", "is_fx_tracing",
           "is_fx_symbolic_tracing"]

_HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
_orig_module_call = Module.__call__
_orig_module_getattr = Module.__getattr__
_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running (torch.fx._symbolic_trace.is_fx_tracing)."""
    return _is_fx_tracing_flag


def is_fx_symbolic_tracing() -> bool:
    """Whether ``symbolic_trace``/``Tracer.trace`` is running (ember has no other tracer that
    sets the flag, so the same as ``is_fx_tracing``)."""
    return _is_fx_tracing_flag


_proxyable_classes: dict[type, None] = {}


class ProxyableClassMeta(type):
    """A metaclass making the construction of its classes traceable: built from Proxies
    while tracing, an instance is a ``call_function`` node of the class; an instance built
    from plain values and used as an argument is stored on the root as a constant.

    As a metaclass it is called with the new class's ``name``, ``bases`` and ``attrs`` (the
    ``class`` statement's), and registers the class (torch.fx.ProxyableClassMeta)."""

    def __init__(cls, name, bases, attrs):
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args, **kwargs):
        instance = cls.__new__(cls)
        if is_fx_tracing():
            proxy = _find_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", cls, args, kwargs)
        cls.__init__(instance, *args, **kwargs)
        return instance


def _patch_function(fn: FunctionType, nargs: int) -> FunctionType:
    """``fn`` taking its ``*args``/``**kwargs`` as ``nargs`` plain positional parameters, so
    the tracer can hand it one Proxy for each."""
    co = fn.__code__
    code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0,
                      co_flags=co.co_flags & ~_HAS_VARSTUFF)
    return FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class PHBase:
    """A placeholder inside ``concrete_args``: this input stays a graph input."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    """A placeholder whose attributes (``ph_key`` and any set on it) are copied onto the
    placeholder node it makes."""

    def __init__(self, ph_key: str | None = None):
        super().__init__()
        self.ph_key = ph_key


def _transfer_attrs(fr, to) -> None:
    for name in dir(fr):
        value = getattr(fr, name)
        if not callable(value) and not name.startswith("__") and not hasattr(to, name):
            setattr(to, name, value)


class Tracer(TracerBase):
    """Tracer(autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False)

    Turns a Module or function into a Graph (``symbolic_trace(m)`` is ``Tracer().trace(m)``
    wrapped in a GraphModule). Subclass it to change what is a leaf module
    (``is_leaf_module``), how module calls (``call_module``), attribute reads (``getattr``)
    and argument values (``create_arg``) are recorded.

    ``autowrap_modules``' public functions and ``autowrap_functions``, where the traced
    code names them as globals, are recorded as one call_function node each instead of
    being run on Proxies; ``param_shapes_constant`` makes ``shape``/``size()``/``dim()``...
    of a parameter answer with its real value (ParameterProxy)."""

    def __init__(self, autowrap_modules: tuple[ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (), param_shapes_constant: bool = False):
        super().__init__()
        # ids of the functions to wrap where found: functions of math are builtins, so they
        # are found by identity, not by patching the function objects
        self._autowrap_function_ids = {id(value) for name, value in
                                       chain.from_iterable(m.__dict__.items() for m in autowrap_modules)
                                       if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}

    _qualname_counter: dict[str, int] = collections.defaultdict(int)

    def get_fresh_qualname(self, prefix: str) -> str:
        """``prefix`` + the first number that names no attribute of the root yet."""
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter[prefix]
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

    def create_arg(self, a: Any) -> Argument:
        """As TracerBase's, plus: a Parameter, buffer or submodule of the root becomes a
        ``get_attr`` node of its path (NameError for a parameter the root does not hold),
        another tensor is stored on the root as ``_tensor_constant<N>`` and read with
        ``get_attr``, and a namedtuple becomes a call of its class."""
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", n, (), {})
        elif isinstance(a, Module):
            for n, m in self.root.named_modules():
                if a is m:
                    return self.create_node("get_attr", n, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return self.create_node("call_function", a.__class__, tuple(self.create_arg(e) for e in a), {})
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if type(a) in _proxyable_classes:
            qualname = self.get_fresh_qualname(f"_{a.__class__.__name__}_constant_")
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Whether ``m`` is recorded as one ``call_module`` node rather than traced through:
        by default ember.nn's own modules (torch's rule for torch.nn's), except Sequential.

        ``module_qualified_name`` is its path from the root (``"layer1.0.conv1"``)."""
        module = type(m).__module__
        return (module.startswith("ember.nn") or module.startswith("ember.ao.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The dotted path of ``mod`` inside the root; NameError when it is not a submodule."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A call of submodule ``m``: a ``call_module`` node when ``is_leaf_module`` says so,
        else ``forward(*args, **kwargs)`` traced through. The module's path and type are
        the scope (and ``nn_module_stack`` meta) of the nodes made meanwhile."""
        path = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(path, type(m))) as scope:
            num_calls = self.num_calls.get(path, 0)
            key = f"{scope.module_path}@{num_calls}" if num_calls > 0 else scope.module_path
            self.module_stack[key] = (path, scope.module_type)
            self.num_calls[path] = num_calls + 1
            if not self.is_leaf_module(m, path):
                out = forward(*args, **kwargs)
            else:
                out = self.create_proxy("call_module", path, args, kwargs)
            popped, _ = self.module_stack.popitem(last=True)
            if popped != key:
                raise AssertionError(f"Unexpected key {popped}, expected {key}")
        return out

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]) -> Any:
        """A module attribute read while tracing: a parameter of the root becomes a
        ``get_attr`` Proxy (one per parameter, cached in ``parameter_proxy_cache``), as does a
        buffer when ``proxy_buffer_attributes``; anything else is returned as it is."""
        def proxy_for(collection):
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        kwargs = {}
                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            kwargs["proxy_factory_fn"] = (
                                None if not self.param_shapes_constant
                                else lambda node, n=n: ParameterProxy(self, node, n, attr_val))
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {}, **kwargs)
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, Parameter):
            found = proxy_for(self.root.named_parameters())
            if found is not None:
                return found
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            found = proxy_for(self.root.named_buffers())
            if found is not None:
                return found
        return attr_val

    def create_args_for_root(self, root_fn: Callable, is_module: bool, concrete_args=None):
        """The placeholder Proxies for ``root_fn``'s parameters (``self`` is the root when
        ``is_module``); ``*args``/``**kwargs`` become one placeholder each and ``root_fn`` is
        rewritten to take them positionally. Returns ``(fn, args)``."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)

        if isinstance(concrete_args, tuple) and concrete_args and co.co_flags & _HAS_VARSTUFF and total_args == 1:
            for i, concrete in enumerate(concrete_args):  # f(*args) given a tuple: one input each
                out = self.create_proxy("placeholder", f"input_{i}", (), {})
                if isinstance(concrete, PHBase) and concrete is not PH:
                    _transfer_attrs(fr=concrete, to=out.node)
                args.append(out)
            return root_fn, args

        arg_names = [next(names_iter) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got {len(concrete_args)} "
                                   "concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._proxy_placeholder("*" + next(names_iter), concrete_args, sig, fn_for_analysis))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._proxy_placeholder("**" + next(names_iter), concrete_args, sig, fn_for_analysis))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name: str, concrete_args, sig: inspect.Signature, fn_for_analysis):
        if concrete_args is not None and name in concrete_args:
            value = concrete_args[name]
            if _holds_placeholder(value) and not isinstance(value, PHBase):
                raise NotImplementedError(f"concrete_args[{name!r}]: PH inside a container (pytree inputs) is not "
                                          "supported; pass PH for the whole argument")
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            if isinstance(value, PHBase):
                if value is not PH:
                    _transfer_attrs(fr=value, to=out.node)
                return out
            # the input is specialized away: the graph checks that the caller passes the same value
            if type(value) is bool or type(value) in base_types and type(value) is not Tensor:
                import ember
                ember._assert(out == value, f"{name} has been specialized to have value {value} but got another value")
            elif value is None:
                msg = f"{name} has been specialized to have value None but got another value"
                self.create_proxy("call_function", _assert_is_none, (out, msg), {})
            else:
                warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                              "function. It is up to the user to make sure that your inputs match the inputs you "
                              "specialized the function with.", stacklevel=2)
            return value
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=fn_for_analysis.__annotations__.get(name, None))

    def trace(self, root: Module | Callable, concrete_args: dict[str, Any] | None = None) -> Graph:
        """Trace ``root`` (a Module's ``forward``, or a function) and return the Graph.

        ``concrete_args`` fixes inputs to values (the graph then checks them with
        ``_assert`` nodes) or marks them ``PH``. Afterwards ``self.root`` is the module that
        owns the graph's attributes: ``root`` itself, or a new Module for a function.
        Control flow on a traced value raises TraceError."""
        global _is_fx_tracing_flag
        old_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            if isinstance(root, Module):
                self.root = root
                if not hasattr(type(root), self.traced_func_name):
                    raise AssertionError(f"traced_func_name={self.traced_func_name} doesn't exist in "
                                         f"{type(root).__name__}")
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = Module()
                fn = root
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            if hasattr(fn, "__code__"):  # where the traced code came from, as torch records it
                code = fn.__code__
                self.graph._co_fields = {"co_name": code.co_name, "co_filename": code.co_filename,
                                         "co_firstlineno": code.co_firstlineno}
            self.tensor_attrs: dict = {}

            def collect_tensor_attrs(m: Module, prefix: list[str]) -> None:
                # tensors held as plain attributes keep their own path when used
                for k, v in m.__dict__.items():
                    if isinstance(v, Tensor):
                        self.tensor_attrs[v] = ".".join(prefix + [k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix + [k])
            collect_tensor_attrs(self.root, [])

            if not isinstance(fn, FunctionType):
                raise AssertionError(f"Expected FunctionType, got {type(fn)}")
            fn_globals = fn.__globals__  # before _patch_function makes a copy
            with contextlib.ExitStack() as stack:
                stack.enter_context(ops_see_proxies())  # from here: concrete_args' checks are nodes already
                fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
                parameter_proxy_cache: dict[str, Proxy] = {}  # one get_attr node per parameter

                @functools.wraps(_orig_module_getattr)
                def module_getattr_wrapper(mod, attr):
                    return self.getattr(attr, _orig_module_getattr(mod, attr), parameter_proxy_cache)

                @functools.wraps(_orig_module_call)
                def module_call_wrapper(mod, *args, **kwargs):
                    def forward(*args, **kwargs):
                        return _orig_module_call(mod, *args, **kwargs)
                    _autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}),
                                    self._autowrap_function_ids)
                    return self.call_module(mod, forward, args, kwargs)

                patcher = stack.enter_context(_new_patcher())
                patcher.patch_method(Module, "__getattr__", module_getattr_wrapper, deduplicate=False)
                patcher.patch_method(Module, "__call__", module_call_wrapper, deduplicate=False)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                ann = inspect.get_annotations(inspect.unwrap(fn))
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {},
                                 type_expr=ann.get("return", None))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_flag
        return self.graph

    def __deepcopy__(self, memo: dict) -> Tracer:
        new = Tracer.__new__(Tracer)
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.copy(v) if k == "_autowrap_search" else copy.deepcopy(v, memo)
        return new


def _holds_placeholder(value) -> bool:
    if isinstance(value, PHBase):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_placeholder(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_placeholder(v) for v in value.values())
    return False


# ---- patching globals and methods for the duration of a trace ----------------------

_wrapped_fns_to_patch: dict[tuple[int, str], dict] = {}  # (id(globals), name) -> the globals
_wrapped_methods_to_patch: list[tuple[type, str]] = []


def _create_wrapped_func(orig_fn):
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        # a call with a Proxy is kept as one node; any other runs as usual
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            out = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            out.node.meta["is_wrapped"] = True
            return out
        return orig_fn(*args, **kwargs)
    return wrapped


def _create_wrapped_method(cls: type, name: str):
    orig_fn = getattr(cls, name)

    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_method", name, args, kwargs)
        return orig_fn(*args, **kwargs)
    return wrapped


class _PatchedFn(NamedTuple):
    frame_dict: Any
    fn_name: str
    orig_fn: Any
    new_fn: Any

    def revert(self) -> None:
        raise NotImplementedError

    def patch(self) -> None:
        raise NotImplementedError


class _PatchedFnSetItem(_PatchedFn):
    def revert(self) -> None:
        self.frame_dict[self.fn_name] = self.orig_fn

    def patch(self) -> None:
        self.frame_dict[self.fn_name] = self.new_fn


class _PatchedFnDel(_PatchedFn):  # a builtin shadowed by a global for the trace
    def revert(self) -> None:
        del self.frame_dict[self.fn_name]

    def patch(self) -> None:
        self.frame_dict[self.fn_name] = self.new_fn


class _PatchedFnSetAttr(_PatchedFn):
    def revert(self) -> None:
        setattr(self.frame_dict, self.fn_name, self.orig_fn)

    def patch(self) -> None:
        setattr(self.frame_dict, self.fn_name, self.new_fn)


class _Patcher:
    """The patches of one trace, undone in reverse order on exit."""

    def __init__(self):
        self.patches_made: list[_PatchedFn] = []
        self.visited: set[int] = set()

    def patch(self, frame_dict: dict, name: str, new_fn, deduplicate: bool = True) -> None:
        """Make ``frame_dict[name]`` be ``new_fn`` until exit (a builtin's name gets a global)."""
        new_fn.__fx_already_patched = deduplicate
        if name not in frame_dict and hasattr(builtins, name):
            self.patches_made.append(_PatchedFnDel(frame_dict, name, None, new_fn))
        elif getattr(frame_dict[name], "__fx_already_patched", False):
            return
        else:
            self.patches_made.append(_PatchedFnSetItem(frame_dict, name, frame_dict[name], new_fn))
        self.patches_made[-1].patch()

    def patch_method(self, cls: type, name: str, new_fn, deduplicate: bool = True) -> None:
        """Make ``cls.name`` be ``new_fn`` until exit."""
        new_fn.__fx_already_patched = deduplicate
        orig_fn = getattr(cls, name)
        if getattr(orig_fn, "__fx_already_patched", False):
            return
        self.patches_made.append(_PatchedFnSetAttr(cls, name, orig_fn, new_fn))
        self.patches_made[-1].patch()

    def visit_once(self, thing) -> bool:
        key = id(thing)
        if key in self.visited:
            return False
        self.visited.add(key)
        return True

    def revert_all_patches(self) -> list[_PatchedFn]:
        for p in self.patches_made:
            p.revert()
        return self.patches_made

    def reapply_all_patches(self) -> list[_PatchedFn]:
        for p in self.patches_made:
            p.patch()
        return self.patches_made

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, *exc) -> None:
        while self.patches_made:
            self.patches_made.pop().revert()
        self.visited.clear()


CURRENT_PATCHER: _Patcher | None = None


class _new_patcher:
    def __enter__(self) -> _Patcher:
        global CURRENT_PATCHER
        self.prior = CURRENT_PATCHER
        CURRENT_PATCHER = self.patcher = _Patcher()
        return self.patcher

    def __exit__(self, *exc) -> None:
        global CURRENT_PATCHER
        self.patcher.__exit__(*exc)
        CURRENT_PATCHER = self.prior


def _patch_wrapped_functions(patcher: _Patcher) -> None:
    for (_, name), frame_dict in _wrapped_fns_to_patch.copy().items():
        orig_fn = getattr(builtins, name) if name not in frame_dict and hasattr(builtins, name) else frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))
    for cls, name in _wrapped_methods_to_patch:
        patcher.patch_method(cls, name, _create_wrapped_method(cls, name))


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: set[int]) -> None:
    """Wrap the globals of ``frame_dict`` that are autowrapped functions (``math.sqrt``...)."""
    if patcher.visit_once(frame_dict):
        for name, value in frame_dict.items():
            if not name.startswith("_") and callable(value) and id(value) in function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))


def wrap(fn_or_name):
    """Make a global function of the calling module a "leaf function": traced code that
    calls it by that global name records one ``call_function`` node instead of tracing
    into it. Call it at module level with the function or its name (``wrap("len")``
    works for builtins), or use it as a decorator. Returns its argument.

    RuntimeError for something neither callable nor a string; NotImplementedError when
    not called at the top level of a module (torch.fx.wrap).

    ``fn_or_name`` is the function or its global name."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    fn_name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    f = inspect.currentframe().f_back
    if f.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    # the globals dict itself, patched at trace time: the module may define the name later
    _wrapped_fns_to_patch[(id(f.f_globals), fn_name)] = f.f_globals
    return fn_or_name


def symbolic_trace(root: Module | Callable, concrete_args: dict[str, Any] | None = None) -> GraphModule:
    """Trace ``root`` (a Module or a function) and return a GraphModule whose ``forward``
    runs the recorded graph, named after ``root``'s class or function.

    ``concrete_args`` specializes inputs: ``{"flag": False}`` traces the branch taken for
    that value (the graph asserts it), ``PH`` keeps an input a graph input. Control flow
    on a traced value raises TraceError (torch.fx.symbolic_trace)."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


@wrap
def _assert_is_none(value, msg: str) -> None:
    if value is not None:
        raise AssertionError(msg)
