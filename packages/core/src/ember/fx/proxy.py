"""Proxy: the stand-in value that flows through a program while it is traced, recording
what touches it into a Graph (torch.fx.proxy).

Python operators on a Proxy become ``call_function`` nodes of the ``operator`` module
(``x + y`` -> ``operator.add``), attribute reads become ``getattr`` nodes, and method calls
become ``call_method`` nodes (``x.relu()``). ember's ops see a Proxy through the dispatch
seam while a tracer listens (``_symbolic_trace``), and record ``call_function`` nodes of
themselves. What tracing cannot know (the truth value of a tensor, its length, an
iteration over it) raises torch's errors.
"""

from __future__ import annotations

import collections
import dis
import enum
import inspect
import operator
import os
import traceback
import weakref
from bisect import bisect_left
from typing import Any, Callable, Iterator

from . import traceback as fx_traceback
from .graph import Graph, magic_methods, reflectable_magic_methods
from .immutable_collections import immutable_dict, immutable_list
from .node import Argument, Node, Target, map_aggregate, map_arg

__all__ = ["base_types", "TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute", "ParameterProxy",
           "Scope", "ScopeContextManager", "magic_methods", "reflectable_magic_methods"]


def _base_types() -> tuple:
    from .._device import device
    from .._dtype import dtype
    from .._layout import layout
    from .._memory_format import memory_format
    from .._tensor import Tensor
    return (str, int, float, bool, complex, dtype, Tensor, device, memory_format, layout)


# the values a node argument may hold as they are (torch.fx.node.base_types)
base_types = _base_types()


class TraceError(ValueError):
    """Raised where tracing needs a value that only a real run has (torch.fx.proxy.TraceError)."""


class Scope:
    """The module path and module type of the module whose forward is being traced: each node
    records the scope it was made in (``Tracer.node_name_to_scope``)."""

    def __init__(self, module_path: str, module_type: Any):
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    """Sets a Scope's path and type for the duration of a module call, restoring them after."""

    def __init__(self, scope: Scope, current_scope: Scope):
        self._prev_scope = Scope(scope.module_path, scope.module_type)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self) -> Scope:
        return self._scope

    def __exit__(self, *args) -> None:
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


class TracerBase:
    """What a Proxy needs from the tracer that owns it: making nodes (``create_node``,
    ``create_proxy``), lowering Python values to node arguments (``create_arg``) and the
    answers to questions tracing cannot answer (``to_bool``, ``iter``, ``keys``)."""

    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    scope: Scope
    module_stack: collections.OrderedDict
    node_name_to_scope: dict

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Insert a node into ``self.graph``; a subclass may override it to check or change
        what is recorded (refuse in-place ops, say)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        self.node_name_to_scope[node.name] = (self.scope.module_path, self.scope.module_type)
        if fx_traceback.has_preserved_node_meta():  # a pass re-emitting a node: the new one inherits its meta
            fx_traceback._copy_current_meta(node)
        elif self.module_stack:
            node.meta["nn_module_stack"] = collections.OrderedDict(self.module_stack)
        if self.record_stack_traces and not node.stack_trace:
            node.stack_trace = _user_stack() or None
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any | None = None, proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Make a node of ``kind`` from ``args``/``kwargs`` (Proxies and values, lowered by
        ``create_arg``) and return it wrapped in a Proxy (``proxy_factory_fn(node)`` when given)."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple):
            raise AssertionError(f"Expected args_ to be tuple, got {type(args_)}")
        if not isinstance(kwargs_, dict):
            raise AssertionError(f"Expected kwargs_ to be dict, got {type(kwargs_)}")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Argument:
        """Lower a value seen as an argument into what a node may hold: Proxies become their
        nodes, containers are lowered element by element, plain values stay. Other types
        raise NotImplementedError; a subclass may support more."""
        handler = _ARG_BYPASS.get(type(a))
        if handler is not None:  # the common exact types, without the isinstance chain
            return handler(self, a)
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):  # a namedtuple takes its fields positionally
                return type(a)(*[self.create_arg(e) for e in a])
            return type(a)([self.create_arg(e) for e in a])
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            return _create_arg_dict(self, a)
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, (*base_types, enum.Enum)) or a is None or a is ...:
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """The truth value of a Proxy (``if x:``, ``while x``): unknown while tracing, so
        TraceError; a tracer that knows more may return one."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        """Iteration over a Proxy (``for v in x``, ``f(*x)``): its length is unknown, so TraceError."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Proxy:
        """``obj.keys()`` (what ``**obj`` calls): a call_method node."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made around a node of an existing graph: it appends to that graph.

    While it lives, ember's functions called with its Proxies record nodes (as torch's do
    through ``__torch_function__``): it listens at the dispatch seam from its creation
    until it is garbage-collected, on the thread that made it."""

    def __init__(self, graph: Graph):
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = collections.OrderedDict()
        self.node_name_to_scope = {}
        from ._op_capture import ops_see_proxies
        capture = ops_see_proxies()
        capture.__enter__()
        # the finalizer holds the context, not the tracer: the tracer's last Proxy going away ends it
        weakref.finalize(self, capture.__exit__, None, None, None)


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stack() -> str:
    """The stack from the first ``forward`` frame on, ember's own frames left out (torch
    keeps only what follows a ``forward`` too: no such frame, no stack)."""
    frames = traceback.extract_stack()
    first = next((i for i, f in enumerate(frames) if f.name == "forward"), None)
    if first is None:
        return ""
    frames = [f for f in frames[first:] if not f.filename.startswith(_EMBER_DIR)]
    return "".join(traceback.format_list(frames)).strip()


def _no_nodes_error(arg):
    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: {arg}")


def _create_arg_dict(tracer: TracerBase, a: dict) -> dict:
    out = {}
    for k, v in a.items():
        if not isinstance(k, str):  # a key may be any hashable, but never a node
            k = tracer.create_arg(k)
            map_arg(k, _no_nodes_error)
        out[k] = tracer.create_arg(v)
    return out


class Proxy:
    """A node of a graph being built, standing in for the value it will compute.

    Operators, attribute reads and method calls on it append nodes to its tracer's graph
    and return new Proxies. A Proxy cannot be iterated, tested for truth, or measured
    with ``len`` (TraceError / RuntimeError as torch raises); ``fx.wrap`` a function that
    needs to, or make the loop's trip count a constant. ``Proxy(node)`` around a node of
    an existing graph appends to that graph: ``node`` is the node it stands for, ``tracer``
    the tracer recording (a GraphAppendingTracer of the node's graph when None)."""

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        self.tracer = GraphAppendingTracer(node.graph) if tracer is None else tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        # no node yet: most attributes are methods about to be called (one call_method node)
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        # defined so that deepcopy does not ask __getattr__ for __deepcopy__ (an Attribute)
        import copy
        new = Proxy.__new__(type(self))
        for k, v in self.__dict__.items():
            try:
                new.__dict__[k] = copy.deepcopy(v, memo)
            except Exception:
                new.__dict__[k] = copy.copy(v)
        return new

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        # ``a, b = x`` unpacks a known count: the caller's next instruction says how many
        frame = inspect.currentframe().f_back
        insts = list(dis.get_instructions(frame.f_code))
        i = bisect_left(insts, frame.f_lasti, key=lambda inst: inst.offset)
        if i < len(insts) and insts[i].opname == "UNPACK_SEQUENCE":
            return (self[k] for k in range(insts[i].argval))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")


class Attribute(Proxy):
    """``proxy.attr``: a ``call_method`` node when called, else (first used as a value) a
    ``getattr`` call_function node."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:  # made lazily: a method call needs no getattr node
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """The Proxy of a module parameter under ``param_shapes_constant``: ``shape``, ``size()``,
    ``dim()``, ``ndim``, ``numel()`` and ``nelement()`` answer from the parameter itself, so
    code branching on them traces."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param):
        super().__init__(node, tracer)
        from ..nn.parameter import Parameter
        if not isinstance(param, Parameter):
            raise AssertionError(f"Expected Parameter, got {type(param)}")
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _magic(name: str):
    target = getattr(operator, name)

    def impl(*args, **kwargs):
        return args[0].tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = impl.__qualname__ = f"__{name.strip('_')}__"
    return impl


def _reflected(name: str):
    target = getattr(operator, name)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = impl.__qualname__ = f"__r{name.strip('_')}__"
    return impl


# the operators a Proxy answers (graph.py's tables, which also print them); "div" is
# Python 2's, kept there for printing only
for _name in magic_methods:
    if hasattr(operator, _name):
        setattr(Proxy, f"__{_name.strip('_')}__", _magic(_name))
for _name in reflectable_magic_methods:
    if hasattr(operator, _name):
        setattr(Proxy, f"__r{_name.strip('_')}__", _reflected(_name))


def _same(tracer, a):
    return a


_ARG_BYPASS = {t: _same for t in (*base_types, type(None), type(...))}
_ARG_BYPASS[Proxy] = lambda tracer, a: a.node
_ARG_BYPASS[tuple] = lambda tracer, a: tuple(tracer.create_arg(e) for e in a)
_ARG_BYPASS[list] = lambda tracer, a: [tracer.create_arg(e) for e in a]
_ARG_BYPASS[dict] = _create_arg_dict
_ARG_BYPASS[immutable_list] = _ARG_BYPASS[list]
_ARG_BYPASS[immutable_dict] = _ARG_BYPASS[dict]


def _find_proxy(*objects):
    """The first Proxy inside ``objects`` (nested in lists, tuples, dicts, slices), or None."""
    found = None

    def look(x):
        nonlocal found
        if found is None and isinstance(x, Proxy):
            found = x
        return x
    map_aggregate(objects, look)
    return found
