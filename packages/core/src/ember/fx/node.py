"""``Node``: one operation of a ``Graph`` (torch.fx.node).

A node is an element of its graph's doubly linked list (``prev``/``next``, with the
graph's root node closing the ring) and keeps use-def links both ways: ``all_input_nodes``
are the nodes its ``args``/``kwargs`` mention, ``users`` the nodes that mention it.
Assigning ``args``/``kwargs`` keeps both sides up to date; the stored containers are
immutable (``immutable_list``/``immutable_dict``) so nobody edits them behind its back.
"""

from __future__ import annotations

import builtins
import inspect
import logging
import operator
import types
from typing import Any, Callable, Optional, Union

from ._compatibility import compatibility
from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

log = logging.getLogger(__name__)

Target = Union[Callable[..., Any], str]
# What may appear in args/kwargs: nested tuples, lists, dicts with str keys, slices, Nodes
# and base values (numbers, str, dtype, device, Tensor, ...).
Argument = Optional[Union[tuple, list, dict, slice, range, "Node", str, int, float, bool, complex]]

_legal_ops = dict.fromkeys(["placeholder", "call_method", "call_module", "call_function", "get_attr",
                            "output", "root"])

# call_function targets dead-code elimination must keep (torch.fx.node._side_effectful_functions)
_side_effectful_functions: set = {operator.setitem}


@compatibility(is_backward_compatible=False)
def has_side_effect(fn):
    """Mark ``fn`` so that ``Graph.eliminate_dead_code`` keeps its calls; returns ``fn``."""
    _side_effectful_functions.add(fn)
    return fn


_RANDOM_NAMES = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                 "normal", "poisson", "bernoulli", "multinomial")
_random_functions: set | None = None


def _is_random(fn) -> bool:
    """Calls that advance the generator are impure, as torch treats its random functions."""
    global _random_functions
    if _random_functions is None:
        import ember
        _random_functions = {getattr(ember, n) for n in _RANDOM_NAMES if hasattr(ember, n)}
        if hasattr(ember, "_assert"):
            _side_effectful_functions.add(ember._assert)
    try:
        return fn in _random_functions
    except TypeError:  # unhashable callables
        return False


def _is_inplace_name(name: str) -> bool:
    """torch's naming of in-place ops: a trailing underscore (``add_``), not a dunder."""
    return name.endswith("_") and not name.startswith("_")


def _mutates_by_kwargs(kwargs) -> bool:
    return kwargs.get("inplace") is True or kwargs.get("out") is not None


# ---- qualified names ---------------------------------------------------------------

# ember.nn.functional names whose function object is also ember's top-level one, but whose
# torch counterpart is a separate Python function printed as torch.nn.functional.<name>
_FUNCTIONAL_FIRST = frozenset((
    "alpha_dropout", "dropout", "feature_alpha_dropout", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "kl_div", "margin_ranking_loss", "poisson_nll_loss",
    "triplet_margin_loss", "batch_norm", "group_norm", "instance_norm", "layer_norm", "rms_norm",
    "adaptive_max_pool1d", "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d"))
_PUBLIC_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special",
                      "ember.nn.init")
_public_names: dict[int, tuple[Any, str]] = {}
_public_scanned: set[str] = set()


def _scan_public_names() -> None:
    """Map each public function of ember's namespaces (and the classes of ``ember``
    itself) to its public dotted name, once per namespace: ember defines its ops in
    private modules, so ``__module__`` does not say. The op inside an ``out=`` wrapper
    (what the dispatch seam sees) gets the wrapper's name."""
    import importlib
    import sys
    inner: dict[int, tuple[Any, str]] = {}
    for ns_name in _PUBLIC_NAMESPACES:
        if ns_name in _public_scanned:
            continue
        ns = sys.modules.get(ns_name)
        if ns is None:
            try:
                ns = importlib.import_module(ns_name)
            except ImportError:
                continue
        _public_scanned.add(ns_name)
        for name, obj in list(vars(ns).items()):
            if name.startswith("_") or isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if isinstance(obj, type) and ns_name != "ember":
                continue
            key = id(obj)
            if key not in _public_names or (ns_name == "ember.nn.functional" and name in _FUNCTIONAL_FIRST):
                _public_names[key] = (obj, f"{ns_name}.{name}")
            wrapped = getattr(obj, "__wrapped__", None)
            while wrapped is not None:
                inner.setdefault(id(wrapped), (wrapped, f"{ns_name}.{name}"))
                wrapped = getattr(wrapped, "__wrapped__", None)
    for key, entry in inner.items():
        _public_names.setdefault(key, entry)


def _find_module_of_method(orig_method) -> str:
    name = orig_method.__name__
    module = orig_method.__module__
    if module is not None:
        return module
    import ember
    import ember.nn.functional as F
    for guess in (ember, F):
        if getattr(guess, name, None) is orig_method:
            return guess.__name__
    raise RuntimeError(f"cannot find module for {orig_method}")


def _get_qualified_name(func) -> str:
    """The dotted name generated code uses for ``func``: ``getattr`` for builtins,
    ``_operator.add`` for the operator module (as torch prints it), ``ember.relu``,
    ``ember.nn.functional.relu``, ``ember.linalg.norm`` for ember's public functions,
    ``ember.Tensor.add`` for Tensor methods, else ``module.name``."""
    if getattr(builtins, func.__name__, None) is func:
        return func.__name__
    entry = _public_names.get(id(func))
    if entry is None and len(_public_scanned) < len(_PUBLIC_NAMESPACES):
        _scan_public_names()
        entry = _public_names.get(id(func))
    if entry is not None and entry[0] is func:
        return entry[1]
    from .._tensor import Tensor
    if getattr(Tensor, func.__name__, None) is func:
        return f"ember.Tensor.{func.__name__}"
    name = func.__name__
    if name == "<lambda>":
        try:
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:
            raise RuntimeError("Unable to represent lambda") from e
    return f"{_find_module_of_method(func)}.{name}"


def _type_repr(obj) -> str:
    """A short repr for types (``module.Qualname``, builtins bare), ``repr`` otherwise."""
    if isinstance(obj, type) and not isinstance(obj, types.GenericAlias):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        if obj.__module__.startswith("ember."):  # ember.Tensor rather than ember._tensor.Tensor
            _scan_public_names()
            entry = _public_names.get(id(obj))
            if entry is not None and entry[0] is obj:
                return entry[1]
        return f"{obj.__module__}.{obj.__qualname__}"
    if obj is ...:
        return "..."
    if isinstance(obj, types.FunctionType):
        return obj.__name__
    return repr(obj)


def _typename(obj) -> str:
    """torch.typename: the tensor's type string, a class's dotted name, or the instance's."""
    from .._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        qualname = type(obj).__qualname__
        module = type(obj).__module__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"


def _format_arg(arg, max_list_len: float = float("inf")) -> str:
    if hasattr(arg, "_custom_fx_repr_fn"):
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{more}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for i, a in enumerate(arg) if i < max_list_len)
        more = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        comma = "," if len(arg) == 1 else ""
        return f"({items}{comma}{more})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


# ---- mapping over arguments --------------------------------------------------------

@compatibility(is_backward_compatible=True)
def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of ``a`` (tuples, named tuples, lists, dicts and slices
    are walked); lists come back as ``immutable_list`` and dicts as ``immutable_dict``,
    as torch.fx.map_aggregate returns them."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        rv = immutable_dict()
        for k, v in a.items():
            dict.__setitem__(rv, k, map_aggregate(v, fn))
        return rv
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


@compatibility(is_backward_compatible=True)
def map_arg(a, fn):
    """Apply ``fn`` to every ``Node`` in ``a``, keeping the structure (torch.fx.map_arg)."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _between(lo, hi) -> tuple:
    """A sort key strictly between ``lo`` and ``hi`` (None: unbounded), tuples of ints."""
    if lo is None and hi is None:
        return (0,)
    if lo is None:
        return (hi[0] - 1,)
    if hi is None:
        return (lo[0] + 1,)
    if hi[:len(lo)] == lo:  # hi extends lo: go just below hi's next component
        return lo + (hi[len(lo)] - 1,)
    return lo + (0,)


# ---- Node --------------------------------------------------------------------------

@compatibility(is_backward_compatible=True)
class Node:
    """One operation of a ``Graph``. ``op`` is one of

    - ``placeholder``: a function input named ``target``; ``args`` is empty or holds the
      default value;
    - ``get_attr``: fetches the attribute at the dotted path ``target`` of the root module;
    - ``call_function``: calls the callable ``target`` on ``args``/``kwargs``;
    - ``call_module``: calls the submodule at the dotted path ``target`` (``args`` exclude
      ``self``);
    - ``call_method``: calls method ``target`` of ``args[0]``;
    - ``output``: the returned value, ``args[0]``.

    ``name`` is the node's unique value name in generated code; ``meta`` is free for
    passes (``ShapeProp`` writes ``meta["tensor_meta"]``). Make nodes through ``Graph``'s
    methods rather than by hand: ``graph`` is the Graph it belongs to; ``return_type`` an
    optional annotation of its value, written into the generated code. Raises
    ``ValueError`` when a call_function target is not callable or another op's target is
    not a str (torch.fx.Node)."""

    @compatibility(is_backward_compatible=True)
    def __init__(self, graph, name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any | None = None) -> None:
        if op == "call_function":
            if not callable(target):
                raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                                 f"{_typename(target)} but a Callable is expected")
        else:
            if op not in _legal_ops:
                raise AssertionError(f"op '{op}' is not in _legal_ops")
            if not isinstance(target, str):
                raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                                 f"{_typename(target)} but a str is expected")
        sa = object.__setattr__
        sa(self, "graph", graph)
        sa(self, "name", name)
        sa(self, "op", op)
        sa(self, "target", target)
        sa(self, "type", return_type)
        sa(self, "_prev", self)
        sa(self, "_next", self)
        sa(self, "_erased", False)
        sa(self, "_sort_key", ())
        sa(self, "_input_nodes", {})
        sa(self, "users", {})
        sa(self, "_repr_fn", None)
        sa(self, "meta", {})
        sa(self, "_args", ())
        sa(self, "_kwargs", immutable_dict())
        self._update_args_kwargs(args, kwargs)

    # -- list links -----------------------------------------------------------------
    @property
    def next(self) -> Node:
        """The next node in the graph's list (the root node after the last one)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The previous node in the graph's list (the root node before the first one)."""
        return self._prev

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        object.__setattr__(p, "_next", n)
        object.__setattr__(n, "_prev", p)

    @compatibility(is_backward_compatible=True)
    def prepend(self, x: Node) -> None:
        """Move (or insert) ``x`` just before this node; ``x`` must belong to the same
        graph (``AssertionError`` otherwise)."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            log.debug("Trying to prepend a node to itself. This behavior has no effect on the graph.")
            return
        x._remove_from_list()
        p = self._prev
        sa = object.__setattr__
        sa(p, "_next", x)
        sa(x, "_prev", p)
        sa(x, "_next", self)
        sa(self, "_prev", x)
        lo = None if p.op == "root" else p._sort_key
        hi = None if self.op == "root" else self._sort_key
        sa(x, "_sort_key", _between(lo, hi))

    @compatibility(is_backward_compatible=True)
    def append(self, x: Node) -> None:
        """Move (or insert) ``x`` just after this node (``self.next.prepend(x)``)."""
        self._next.prepend(x)

    # nodes order by their position in the graph (``sorted(nodes)``)
    def __lt__(self, other: Node) -> bool:
        return self._sort_key < other._sort_key

    def __gt__(self, other: Node) -> bool:
        return self._sort_key > other._sort_key

    def __le__(self, other: Node) -> bool:
        return self._sort_key <= other._sort_key

    def __ge__(self, other: Node) -> bool:
        return self._sort_key >= other._sort_key

    __hash__ = object.__hash__

    # -- arguments ------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """The positional arguments; assigning them updates ``users`` of old and new inputs."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; assigning them updates ``users`` of old and new inputs."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes named in ``args`` then ``kwargs``, each once, in order of appearance."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        inputs: dict = {}

        def collect(n):
            if isinstance(n, Node):
                inputs.setdefault(n)
            return n

        sa = object.__setattr__
        sa(self, "_args", map_aggregate(new_args, collect))
        sa(self, "_kwargs", map_aggregate(new_kwargs, collect))
        sa(self, "_input_nodes", inputs)
        for n in inputs:
            n.users.setdefault(self)

    @compatibility(is_backward_compatible=True)
    def update_arg(self, idx: int, arg) -> None:
        """Set ``args[idx] = arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    @compatibility(is_backward_compatible=True)
    def insert_arg(self, idx: int, arg) -> None:
        """Insert ``arg`` before position ``idx`` of ``args`` (0 <= idx <= len(args))."""
        if not 0 <= idx <= len(self.args):
            raise AssertionError(f"insert_args index must be between 0 and len(self.args), got {idx}")
        object.__setattr__(self, "_args", self.args[:idx] + (arg,) + self.args[idx:])
        new_inputs: dict = {}
        map_arg(arg, new_inputs.setdefault)
        for n in new_inputs:  # new inputs go last, as torch orders them
            if n not in self._input_nodes:
                self._input_nodes.setdefault(n)
                n.users.setdefault(self)

    @compatibility(is_backward_compatible=True)
    def update_kwarg(self, key: str, arg) -> None:
        """Set ``kwargs[key] = arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    @property
    def stack_trace(self) -> str | None:
        """The Python stack recorded while tracing (``meta["stack_trace"]``), if any."""
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # -- rewriting uses -------------------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] | None = None,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node use ``replace_with`` instead (those for which
        ``delete_user_cb`` returns True, when given) and return the users changed.
        ``propagate_meta`` copies ``meta`` over; ``replace_with`` must have none yet."""
        if propagate_meta:
            if len(replace_with.meta) != 0:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            for k, v in self.meta.items():
                replace_with.meta[k] = v
        hooks = getattr(self.graph.owning_module, "_replace_hooks", None)
        result = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            result.append(user)
            for hook in hooks or ():
                hook(old=self, new=replace_with.name, user=user)
            user._replace_input_with(self, replace_with)
        return result

    @compatibility(is_backward_compatible=True)
    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Replace every occurrence of ``old_input`` in this node's arguments."""
        for hook in getattr(self.graph.owning_module, "_replace_hooks", None) or ():
            hook(old=old_input, new=new_input.name, user=self)
        self._replace_input_with(old_input, new_input)

    def _replace_input_with(self, old_input: Node, new_input: Node) -> None:
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def _rename(self, candidate: str) -> None:
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace._rename_object(self, name)

    # -- purity ---------------------------------------------------------------------
    @compatibility(is_backward_compatible=False)
    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node: placeholders and the output,
        calls of a module whose ``_is_impure`` is true, calls of side-effectful functions
        (``operator.setitem``, ``has_side_effect``-marked ones), of the random functions,
        and calls that mutate their inputs: an in-place op (``ember.relu_``,
        ``x.add_(1)``, ``nn.init.normal_``), ``inplace=True`` or an ``out=`` tensor.

        torch.fx documents the mutating case (a mutable schema) but 2.13 sees it only on
        its aten overloads, so it drops ``torch.relu_(x)`` / ``x.add_(1)`` whose results
        go unused; ember keeps them, as dropping them would change the program."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            if self.graph.owning_module is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            target_mod = self.graph.owning_module.get_submodule(self.target)
            if target_mod is None:
                raise AssertionError(f"Did not find expected submodule target {self.target}")
            return getattr(target_mod, "_is_impure", False)
        if self.op == "call_method":
            return _is_inplace_name(self.target) or _mutates_by_kwargs(self.kwargs)
        if self.op == "call_function":
            target = self.target
            if impure_random and getattr(target, "_nondeterministic_seeded", False):
                return True
            if _is_random(target):
                return True
            try:
                if target in _side_effectful_functions:
                    return True
            except TypeError:
                pass
            module = getattr(target, "__module__", None) or ""
            if module.startswith("ember") and _is_inplace_name(getattr(target, "__name__", "")):
                return True
            return _mutates_by_kwargs(self.kwargs)
        return False

    @compatibility(is_backward_compatible=False)
    def normalized_arguments(self, root, arg_types: tuple | None = None, kwarg_types: dict | None = None,
                             normalize_to_only_use_kwargs: bool = False):
        """This call's arguments matched to the callee's signature, defaults filled in
        (``operator_schemas.ArgsKwargsPair``), for call_function and for call_module of
        ember.nn's modules (resolved on ``root``); None otherwise or when the signature
        has ``*args``/``**kwargs``/positional-only parameters."""
        from .operator_schemas import normalize_function, normalize_module
        if self.op == "call_function":
            return normalize_function(self.target, self.args, self.kwargs, arg_types, kwarg_types,
                                      normalize_to_only_use_kwargs=normalize_to_only_use_kwargs)
        if self.op == "call_module":
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs=normalize_to_only_use_kwargs)
        return None

    # -- printing -------------------------------------------------------------------
    def __repr__(self) -> str:
        if self._repr_fn:
            return self._repr_fn(self)
        return self.name

    @staticmethod
    def _pretty_print_target(target) -> str:
        """``builtins.x`` and ``operator.x`` for those modules, else the qualified name."""
        if isinstance(target, str):
            return target
        if hasattr(target, "__module__"):
            name = getattr(target, "__name__", None)
            if name is None:
                return _get_qualified_name(target)
            if target.__module__ == "builtins":
                return f"builtins.{name}"
            if target.__module__ == "_operator":
                return f"operator.{name}"
        return _get_qualified_name(target)

    @compatibility(is_backward_compatible=True)
    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None, *,
                    include_tensor_metadata: bool = False) -> str | None:
        """This node as one line of ``str(graph)``, e.g.
        ``%add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})``.
        When ``placeholder_names`` is given, a placeholder appends its name there and
        returns None (``Graph.__str__`` builds the signature from them)."""
        if self.op == "placeholder":
            arg_str = self.target
            arg_str += arg_str + f": {_type_repr(self.type)}" if self.type else ""  # torch's quirk, kept
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            typename = f"{_type_repr(self.type)} " if self.type else ""
            default = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        annotation = f"{_type_repr(self.type)} " if self.type is not None else ""
        if include_tensor_metadata:
            from .._tensor import Tensor
            val = self.meta.get("val", self.meta.get("tensor_meta", self.meta.get("example_value")))
            if isinstance(val, Tensor):
                from .graph import _dtype_abbr
                shape = f"[{', '.join(str(s) for s in val.shape)}]"
                stride = f"[{', '.join(str(s) for s in val.stride())}]"
                annotation = f'Tensor "{_dtype_abbr(val.dtype)}{shape}{stride}{val.device}"'
        return (f"%{self.name} : {annotation}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    # -- attribute updates keep the graph's lookup table right ----------------------
    def __setattr__(self, name: str, value) -> None:
        if name == "name" and "name" in self.__dict__:
            for hook in getattr(self.graph.owning_module, "_replace_hooks", None) or ():
                for user in self.users:
                    hook(old=self, new=value, user=user)
        table = getattr(self.graph, "_find_nodes_lookup_table", None)
        update = name in ("op", "target") and table is not None and self in table
        if update:
            table.remove(self)
        object.__setattr__(self, name, value)
        if update:
            table.insert(self)

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
