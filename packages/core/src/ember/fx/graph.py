"""``Graph``: the node list of a program and the Python code generated from it
(torch.fx.graph).

Node names are unique within a graph and chosen as torch.fx chooses them (``add``,
``add_1``, ...; never a keyword or a builtin). ``python_code`` prints call_function
targets by their public name (``ember.relu(x)``, ``ember.nn.functional.relu(x, inplace =
False)``), operator-module targets as Python operators (``x + 1``), call_method nodes as
``x.relu()`` and call_module / get_attr nodes as ``self.conv(x)`` / ``self.weight``.
"""

from __future__ import annotations

import builtins
import copy
import enum
import inspect
import keyword
import logging
import math
import re
import typing
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable

from ._compatibility import compatibility
from .immutable_collections import immutable_dict
from .node import Argument, Node, Target, _get_qualified_name, _type_repr, _typename, map_arg

__all__ = ["PythonCode", "CodeGen", "Graph"]

log = logging.getLogger(__name__)

_legal_ops = dict.fromkeys(["call_function", "call_method", "get_attr", "call_module", "placeholder", "output"])


class _CustomBuiltin(typing.NamedTuple):
    """A global every generated program gets, with the import that makes it."""
    import_str: str
    obj: object


_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)  # generated names never shadow a builtin
_custom_builtins: dict[str, _CustomBuiltin] = {}


def _register_custom_builtin(name: str, import_str: str, obj: object) -> None:
    _custom_builtins[name] = _CustomBuiltin(import_str, obj)
    _illegal_names[name] = obj


def _register_ember_builtins() -> None:
    import ember
    _register_custom_builtin("inf", "from math import inf", math.inf)
    _register_custom_builtin("nan", "from math import nan", math.nan)
    _register_custom_builtin("NoneType", "NoneType = type(None)", type(None))
    _register_custom_builtin("ember", "import ember", ember)
    _register_custom_builtin("device", "from ember import device", ember.device)


_register_ember_builtins()
# names torch.fx reserves for its own globals: reserving them too keeps node names torch's
_illegal_names.update({name: object() for name in ("torch", "fx_pytree", "pytree")})


def _is_magic(x: str) -> bool:
    return x.startswith("__") and x.endswith("__")


_snake_case_sub = re.compile(r"(?<=[a-z])([A-Z])").sub


def _snake_case(s: str) -> str:
    """``pascalCase`` -> ``pascal_case``, ``ALL_CAPS`` -> ``all_caps``."""
    return _snake_case_sub(r"_\1", s).lower()


_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ember_module = re.compile(r"^ember(?:\.[^.]+)*$").fullmatch


def _is_from_ember(obj) -> bool:
    """Objects of ember's own modules are spelled by qualified name through the ``ember``
    global, as torch's generated code spells torch's."""
    module = getattr(obj, "__module__", None)
    if module is not None:
        return _ember_module(module) is not None
    return False


def _resolves(qualified_name: str, obj) -> bool:
    """Whether ``qualified_name`` (``ember.x.y``) names ``obj`` by attribute access."""
    import importlib
    head, *rest = qualified_name.split(".")
    try:
        found = importlib.import_module(head)
        for part in rest:
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return False
    return found is obj


_DTYPE_ABBRS = {"uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16",
                "float32": "f32", "float64": "f64", "complex32": "c32", "complex64": "c64", "complex128": "c128",
                "bool": "b8", "bfloat16": "bf16", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


def _dtype_abbr(dtype) -> str:
    """torch's short dtype names in annotations: ``f32``, ``i64``, ``b8`` ..."""
    name = str(dtype).split(".")[-1]
    return _DTYPE_ABBRS.get(name, name)


_frame_line = re.compile(r"^File \"(.+)\", line (\d+), in (.+)$")


def _parse_stack_trace(stack_trace: str | None) -> tuple[str, str, str, str] | None:
    """(file, line, function, code) of the innermost frame of a formatted stack."""
    if stack_trace is None:
        return None
    lines = stack_trace.strip().split("\n")
    for idx in range(len(lines) - 2, -1, -1):
        m = _frame_line.match(lines[idx].strip())
        if m:
            return m.group(1), m.group(2), m.group(3), lines[idx + 1].strip()
    return None


def _call_with_accepted(method, *args, **kwargs):
    """Call ``method`` with the keyword arguments its signature names: a CodeGen
    subclass written for an older signature still works, as torch lets it."""
    params = inspect.signature(method).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return method(*args, **kwargs)


def _identity(s: str) -> str:
    return s


def _color(code: str) -> Callable[[str], str]:
    return lambda s: f"\033[{code}m{s}\033[0m"


def _shape_str(shape) -> str:
    return f"[{', '.join(str(x) for x in shape)}]"


class _Namespace:
    """Unique names within one scope: each object gets one name, each name is used once,
    and a name never shadows a builtin or keyword unless it is that builtin."""

    def __init__(self) -> None:
        self._obj_to_name: dict[Any, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any | None) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate)
            if not candidate:
                candidate = "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
            if match is None:
                raise AssertionError(f"Name regex failed to match candidate: {candidate}")
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        existing = self._obj_to_name.setdefault(obj, name)
        if existing is not name:
            raise AssertionError("obj is already associated")

    def _rename_object(self, obj: Any, name: str) -> None:
        if obj not in self._obj_to_name:
            raise AssertionError(f"Object {obj} is not in _obj_to_name")
        self._obj_to_name[obj] = name
        self._used_names.add(name)


@compatibility(is_backward_compatible=True)
@dataclass
class PythonCode:
    """A graph as Python: ``src`` defines ``forward(self, ...)``; ``globals`` maps the
    global names ``src`` uses to their objects."""
    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int | None] | None = None
    _prologue_start: int = 0


def _format_target(base: str, target: str) -> str:
    """``self.a.b``, with ``getattr(self, "0")`` for path atoms that are not identifiers."""
    r = base
    for e in target.split("."):
        r = f'getattr({r}, "{e}")' if not e.isidentifier() else f"{r}.{e}"
    return r


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        self.graph._insert = self.orig_insert


class _node_list:
    """The graph's nodes in order; safe to mutate the graph while iterating."""

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        if direction not in ("_next", "_prev"):
            raise AssertionError(f"direction must be '_next' or '_prev', got {direction}")
        self.graph = graph
        self.direction = direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        step = self.direction
        cur = getattr(root, step)
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = getattr(cur, step)

    def __reversed__(self):
        return iter(_node_list(self.graph, "_next" if self.direction == "_prev" else "_prev"))


class _FindNodesLookupTable:
    """(op, target for call_function) -> nodes, for ``Graph.find_nodes``."""

    def __init__(self) -> None:
        self.table: dict[tuple, dict[Node, None]] = defaultdict(dict)

    def _key(self, node: Node) -> tuple:
        return (node.op, node.target if node.op == "call_function" else None)

    def __contains__(self, node: Node) -> bool:
        return node in self.table[self._key(node)]

    def insert(self, node: Node) -> None:
        self.table[self._key(node)][node] = None

    def remove(self, node: Node) -> None:
        self.table[self._key(node)].pop(node)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        if op == "call_function":
            if target is None:
                raise AssertionError("target must not be None for call_function op")
            return [*self.table[(op, target)].keys()]
        if target is None:
            return [*self.table[(op, None)].keys()]
        return [node for node in self.table[(op, None)] if node.target == target]


reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "and_": "{} & {}", "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}", **reflectable_magic_methods,
}
inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}", "imod": "{} %= {}",
    "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}", "irshift": "{} >>= {}",
    "isub": "{} -= {}", "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


@compatibility(is_backward_compatible=True)
class CodeGen:
    """Turns a node list into the source of ``forward``; subclasses may change the
    signature (``gen_fn_def``), the return (``generate_output``) and how inputs and
    outputs are processed (torch.fx.CodeGen)."""

    def __init__(self) -> None:
        self._body_transformer: Callable[[list[str]], list[str]] | None = None
        self._func_name: str = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str, *, expanded_def: bool = False) -> str:
        """``def forward(self, a, b):`` for free variables ``['a', 'b']`` (one per line
        with ``expanded_def``)."""
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        if expanded_def:
            args = "".join(f"    {a},\n" for a in free_vars)
            return f"def {self._func_name}(\n{args}){maybe_return_annotation}:"
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Argument, *, repr_fn: Callable[[Any], str] | None = None) -> str:
        """The return statement (not indented)."""
        return f"return {(repr_fn or repr)(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        return args

    def process_outputs(self, outputs: Any) -> Any:
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        """Extra (name, object) globals the generated code needs."""
        return []

    def _gen_python_code(self, nodes: _node_list, root_module: str, namespace: _Namespace, *,
                         verbose: bool = False, include_stride: bool = False, include_device: bool = False,
                         colored: bool = False, expanded_def: bool = False,
                         additional_meta: list[str] | None = None) -> PythonCode:
        import os

        from .._tensor import Tensor
        include_stride = include_stride or os.environ.get("FX_GRAPH_SHOW_STRIDE", "0") == "1"
        include_device = include_device or os.environ.get("FX_GRAPH_SHOW_DEVICE", "0") == "1"
        red, blue, dim, dim_blue, dim_green = ((_color(c) for c in ("31", "34", "2", "2m\033[34", "2m\033[32"))
                                               if colored else (_identity,) * 5)

        free_vars: list[str] = []
        body: list[str] = []
        globals_: dict[str, Any] = {}
        wrapped_fns: dict[str, None] = {}
        maybe_return_annotation = [""]

        def add_global(name_hint: str, obj: Any) -> str:
            if _is_from_ember(obj) and obj is not _custom_builtins["device"].obj:
                qualified = _get_qualified_name(obj)
                if _resolves(qualified, obj):  # else (a method of a private class) the object itself
                    return qualified
            global_name = namespace.create_name(name_hint, obj)
            if global_name in globals_:
                if globals_[global_name] is not obj:
                    raise AssertionError(f"Global name {global_name} already assigned to different object")
                return global_name
            globals_[global_name] = obj
            return global_name

        for name, (_, obj) in _custom_builtins.items():
            add_global(name, obj)

        def type_repr(o) -> str:
            if o == ():
                return "()"
            typename = _type_repr(o)
            origin = getattr(o, "__origin__", None)
            if origin is not None:
                origin_name = add_global(_type_repr(origin), origin)
                args = typing.get_args(o)
                if args:
                    return f"{origin_name}[{','.join(type_repr(a) for a in args)}]"
                return origin_name
            return add_global(typename, o)

        def _get_repr(arg) -> str:
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                global_name = add_global(_get_qualified_name(type(arg)), type(arg))
                return f"{global_name}{repr(tuple(arg))}"
            if isinstance(arg, enum.Enum):
                cls = arg.__class__
                return f"{add_global(cls.__name__, cls)}.{arg.name}"
            if isinstance(arg, Tensor):
                dtype = str(arg.dtype).split(".")[-1]
                return f"ember.Tensor(size={list(arg.size())}, dtype={dtype})"
            if isinstance(arg, tuple):
                if len(arg) == 1:
                    return f"({_get_repr(arg[0])},)"
                return "(" + ", ".join(_get_repr(a) for a in arg) + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(_get_repr(a) for a in arg) + "]"
            if isinstance(arg, slice):
                return f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, {_get_repr(arg.step)})"
            return blue(repr(arg))

        def _format_args(args: tuple, kwargs: dict) -> str:
            res = [_get_repr(a) for a in args]
            res.extend(f"{k} = {_get_repr(v)}" for k, v in kwargs.items())
            return ", ".join(res)

        # the first use met walking backwards is a value's last use: free it there
        node_to_last_use: dict[Node, Node] = {}
        user_to_last_uses: dict[Node, list[Node]] = {}
        for node in reversed(nodes):
            for input_node in node._input_nodes:
                if input_node not in node_to_last_use:
                    node_to_last_use[input_node] = node
                    user_to_last_uses.setdefault(node, []).append(input_node)

        def delete_unused_values(user: Node) -> None:
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users) == 0:  # kept for its side effect; free its value at once
                to_delete.append(user)
            if to_delete:
                body.append(";  " + dim(" = ".join([repr(n) for n in to_delete] + ["None"])) + "\n")
            else:
                body.append("\n")

        def emit_node(node: Node) -> None:
            annotation = "" if node.type is None else f" : {type_repr(node.type)}"
            if verbose:
                meta_val = node.meta.get("val", node.meta.get("tensor_meta", node.meta.get("example_value")))
                if isinstance(meta_val, Tensor):
                    stride = _shape_str(meta_val.stride()) if include_stride else ""
                    device = f"{meta_val.device}" if include_device else ""
                    annotation = (f': "{red(_dtype_abbr(meta_val.dtype))}{blue(_shape_str(meta_val.shape))}'
                                  f'{dim_blue(stride)}{dim_green(device)}"')
                elif isinstance(meta_val, tuple) and hasattr(meta_val, "dtype") and hasattr(meta_val, "shape"):
                    annotation = f': "{_dtype_abbr(meta_val.dtype)}{_shape_str(meta_val.shape)}"'  # TensorMetadata
            if node.op == "placeholder":
                default = "" if not node.args else f" = {_get_repr(node.args[0])}"
                free_vars.append(f"{node.target}{annotation}{default}")
                raw_name = node.target.replace("*", "")
                if raw_name != repr(node):
                    body.append(f"{repr(node)} = {raw_name}\n")
                return
            if node.op == "call_method":
                body.append(f"{repr(node)}{annotation} = {_format_target(_get_repr(node.args[0]), node.target)}"
                            f"({_format_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                target = node.target
                if getattr(target, "__module__", "") == "_operator" and target.__name__ in magic_methods:
                    body.append(f"{repr(node)}{annotation} = "
                                f"{magic_methods[target.__name__].format(*(_get_repr(a) for a in node.args))}")
                    return
                if getattr(target, "__module__", "") == "_operator" and target.__name__ in inplace_methods:
                    body.append(f"{inplace_methods[target.__name__].format(*(_get_repr(a) for a in node.args))};  "
                                f"{repr(node)}{annotation} = {_get_repr(node.args[0])}")
                    return
                global_name = add_global(_get_qualified_name(target), target)
                if (global_name == "getattr" and isinstance(node.args, tuple) and len(node.args) == 2
                        and isinstance(node.args[1], str) and node.args[1].isidentifier()):
                    body.append(f"{repr(node)}{annotation} = {_format_target(_get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{repr(node)}{annotation} = {global_name}({_format_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(global_name)
                return
            if node.op == "call_module":
                body.append(f"{repr(node)}{annotation} = "
                            f"{_format_target(root_module, node.target)}({_format_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                body.append(f"{repr(node)}{annotation} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    maybe_return_annotation[0] = f" -> {type_repr(node.type)}"
                body.append(_call_with_accepted(self.generate_output, node.args[0], repr_fn=_get_repr))
                return
            raise NotImplementedError(f"node: {node.op} {node.target}")

        prev_summary = [None]

        def append_stacktrace_summary(node: Node) -> None:
            # verbose code says, once per run of nodes, where in the source they came from
            if node.op in ("placeholder", "output"):
                return
            extra = ""
            parts = [f"{key}: {node.meta[key]}" for key in additional_meta or () if key in node.meta]
            if parts:
                extra = f"# {', '.join(parts)} "
            summary = "No stacktrace found for following nodes"
            parsed = _parse_stack_trace(node.stack_trace)
            if parsed is not None:
                summary = "File: {}:{} in {}, code: {}".format(*parsed)
            line = f"\n{dim(f'{extra}# {summary}')}\n"
            if line != prev_summary[0]:
                prev_summary[0] = line
                body.append(line)

        for node in nodes:
            if verbose:
                append_stacktrace_summary(node)
            emit_node(node)
            delete_unused_values(node)

        if len(nodes) == 0:
            body.append("pass\n")  # torch adds it only for a graph without any node
        wrap_stmts = ""
        if wrapped_fns:
            from . import _symbolic_trace
            wrap_name = add_global("wrap", _symbolic_trace.wrap)
            wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped_fns)
        if self._body_transformer:
            body = self._body_transformer(body)
        for name, value in self.additional_globals():
            add_global(name, value)
        prologue = _call_with_accepted(self.gen_fn_def, free_vars, maybe_return_annotation[0],
                                       expanded_def=expanded_def)
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        fn_code = f"""
{wrap_stmts}

{prologue}
{code}"""
        return PythonCode(fn_code, globals_, _lineno_map=None, _prologue_start=wrap_stmts.count("\n") + 4)


@compatibility(is_backward_compatible=True)
class Graph:
    """A program as a list of ``Node`` objects: placeholders (inputs), operations, and one
    output node (torch.fx.Graph). Build one through ``placeholder``, ``get_attr``,
    ``call_function``, ``call_method``, ``call_module`` and ``output`` (or
    ``create_node``); they insert at the current insert point, the end unless
    ``inserting_before``/``inserting_after`` moved it.

    ``owning_module`` is the GraphModule it belongs to (None for a free graph);
    ``tracer_cls`` and ``tracer_extras`` record the tracer that built it, for code that
    reads them back."""

    @compatibility(is_backward_compatible=True)
    def __init__(self, owning_module=None, tracer_cls: type | None = None,
                 tracer_extras: dict[str, Any] | None = None) -> None:
        self._root: Node = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields: dict[str, Any] = {}
        self._find_nodes_lookup_table = _FindNodesLookupTable()

    @property
    def owning_module(self):
        """The GraphModule this graph belongs to, if any (set by ``GraphModule.graph``)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _node_list:
        """The nodes in order, a view of the linked list; ``reversed()`` walks it backwards."""
        return _node_list(self)

    @compatibility(is_backward_compatible=False)
    def output_node(self) -> Node:
        out = next(iter(reversed(self.nodes)))
        if out.op != "output":
            raise AssertionError(f"Expected output node, got op={out.op}")
        return out

    @compatibility(is_backward_compatible=False)
    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True) -> list[Node]:
        """The nodes with opcode ``op`` (and ``target``; required for call_function), in
        graph order unless ``sort=False``."""
        found = self._find_nodes_lookup_table.find_nodes(op=op, target=target)
        return sorted(found) if sort else found

    # ---- copying -------------------------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False):
        """Copy ``g``'s nodes (but its output) into this graph, filling ``val_map`` (old ->
        new; entries already there are used instead of copies). Returns the value ``g``
        outputs, remapped (with ``g``'s output node when ``return_output_node``)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            output_val, old_output = output_vals
            new_output = g.output(output_val, type_expr=getattr(old_output, "type", None))
            new_output.meta = copy.copy(old_output.meta)
        return g

    @compatibility(is_backward_compatible=True)
    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Insert a copy of ``node`` (from any graph); ``arg_transform`` maps the nodes in
        its arguments to nodes of this graph. ``meta`` is copied shallowly."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    # ---- making nodes --------------------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def create_node(self, op: str, target: Target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Make a node and insert it at the insert point. ``op`` is one of
        'call_function', 'call_method', 'get_attr', 'call_module', 'placeholder',
        'output'; ``name`` (default: from the target) is made unique. ``args`` must be a
        tuple and ``kwargs`` a dict (``AssertionError`` otherwise)."""
        if not args:
            args = ()
        elif not isinstance(args, tuple):
            raise AssertionError(f"args must be a tuple, got {type(args)}")
        if not kwargs:
            kwargs = immutable_dict()
        elif not isinstance(kwargs, dict):
            raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        for hook in getattr(self.owning_module, "_create_node_hooks", None) or ():
            hook(n)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._find_nodes_lookup_table.insert(n)
        self._len += 1
        return n

    @compatibility(is_backward_compatible=False)
    def process_inputs(self, *args):
        return self._codegen.process_inputs(*args)

    @compatibility(is_backward_compatible=False)
    def process_outputs(self, out):
        return self._codegen.process_outputs(out)

    @compatibility(is_backward_compatible=True)
    def erase_node(self, to_erase: Node) -> None:
        """Remove ``to_erase``. ``RuntimeError`` when it still has users or belongs to
        another graph; erasing twice warns."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            import warnings
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        for hook in getattr(self.owning_module, "_erase_node_hooks", None) or ():
            hook(to_erase)
        self._find_nodes_lookup_table.remove(to_erase)
        to_erase._remove_from_list()
        object.__setattr__(to_erase, "_erased", True)  # iterators may still hold it
        self._len -= 1
        # drop its arguments so its inputs no longer count it as a user
        to_erase._update_args_kwargs(map_arg(to_erase._args, lambda n: None),
                                     map_arg(to_erase._kwargs, lambda n: None))

    @compatibility(is_backward_compatible=True)
    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Insert new nodes before ``n`` (the start of the graph when None); as a context
        manager, restores the previous insert point on exit."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    @compatibility(is_backward_compatible=True)
    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Insert new nodes after ``n`` (the end of the graph when None); as a context
        manager, restores the previous insert point on exit."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    @compatibility(is_backward_compatible=True)
    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input named ``name``; ``default_value`` becomes its default (pass
        ``inspect.Signature.empty`` for none, so that None can be a default)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    @compatibility(is_backward_compatible=True)
    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Fetch the attribute at ``qualified_name`` (``"sub.weight"``) of the root module;
        warns when the owning module has no such parameter, buffer or submodule."""
        owner = self.owning_module
        if owner is not None and not _get_attr_reference_exists(owner, qualified_name):
            import warnings
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference in the owning "
                          "GraphModule! Call GraphModule.add_submodule to add the necessary submodule, "
                          "GraphModule.add_parameter to add the necessary Parameter, or "
                          "nn.Module.register_buffer to add the necessary buffer", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    @compatibility(is_backward_compatible=True)
    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        """Call the submodule at ``module_name``; ``args`` exclude ``self``."""
        owner = self.owning_module
        if owner is not None:
            try:
                owner.get_submodule(module_name)
            except AttributeError:
                import warnings
                warnings.warn("Attempted to insert a call_module Node with no underlying reference in the owning "
                              "GraphModule! Call GraphModule.add_submodule to add the necessary submodule",
                              stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    @compatibility(is_backward_compatible=True)
    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        """Call method ``method_name`` of ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    @compatibility(is_backward_compatible=True)
    def call_function(self, the_function: Callable[..., Any], args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any | None = None, name: str | None = None) -> Node:
        """Call ``the_function`` (an ember op, an ``operator`` function, any callable)."""
        return self.create_node("call_function", the_function, args, kwargs, name=name, type_expr=type_expr)

    @compatibility(is_backward_compatible=True)
    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The returned value ``result`` (a node, or a structure of them)."""
        return self.create_node(op="output", target="output", args=(result,), type_expr=type_expr)

    def _target_to_str(self, target: Target) -> str:
        if callable(target):
            op = target.__name__
        else:
            if not isinstance(target, str):
                raise AssertionError(f"Expected target to be str, got {type(target)}")
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    # ---- code ----------------------------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def python_code(self, root_module: str, *, verbose: bool = False, include_stride: bool = False,
                    include_device: bool = False, colored: bool = False, expanded_def: bool = False,
                    record_func: bool = False, additional_meta: list[str] | None = None) -> PythonCode:
        """This graph as the source of ``forward`` (``root_module`` names the module that
        get_attr/call_module targets are looked up on, usually ``'self'``). Locals and
        globals share one fresh namespace, so node names stay unique against globals.

        ``verbose`` annotates values with dtype and shape from ``meta`` (``val``,
        ``tensor_meta``) and notes where nodes came from; ``include_stride`` /
        ``include_device`` add strides / devices to those annotations, ``colored`` ANSI
        colours, ``additional_meta`` the named ``meta`` keys; ``expanded_def`` puts one
        parameter per line. ``record_func`` (torch's profiler markers) is accepted and
        has no effect."""
        namespace = _Namespace()

        def node_repr(n: Node) -> str:
            return namespace.create_name(n.name, n)

        saved = {}
        for node in self.nodes:
            saved[node] = node._repr_fn
            object.__setattr__(node, "_repr_fn", node_repr)
        try:
            return self._codegen._gen_python_code(self.nodes, root_module, namespace, verbose=verbose,
                                                  include_stride=include_stride, include_device=include_device,
                                                  colored=colored, expanded_def=expanded_def,
                                                  additional_meta=additional_meta)
        finally:
            for node, fn in saved.items():
                object.__setattr__(node, "_repr_fn", fn)

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        maybe_return_typename = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        s = f"graph({', '.join(placeholder_names)}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    @compatibility(is_backward_compatible=True)
    def print_tabular(self) -> None:
        """Print opcode, name, target, args and kwargs of each node as a table; needs the
        ``tabulate`` package (prints torch's hint and re-raises ``ImportError`` without)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on this machine. "
                  "Run `pip install tabulate` to install the library.")
            raise
        specs = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(specs, headers=["opcode", "name", "target", "args", "kwargs"]))

    @compatibility(is_backward_compatible=True)
    def lint(self) -> None:
        """Check the graph is well formed: nodes owned by it, legal opcodes, arguments
        defined before use, unique names; with an owning module, that call_function
        targets are callable and the others str, and that get_attr/call_module paths
        exist. ``RuntimeError``/``ValueError`` with torch's messages otherwise."""
        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.op not in _legal_ops:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node not in self._find_nodes_lookup_table:
                raise RuntimeError(f"Node '{node}' is not added to the side table")
            for arg in node._input_nodes:
                context = f" of Node '{node}' "
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}'{context}does not belong to this Graph, "
                                       "but was used as an argument! If you are copying nodes from another graph, "
                                       f"make sure to use ``arg_transform`` on node_copy() to remap values\n{self}")
                if arg not in seen_values:
                    raise RuntimeError(f"Argument '{arg}'{context}was used before it has been defined! Please check "
                                       f"that Nodes in the graph are topologically ordered\n{self}")
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        if not self.owning_module:
            return
        from ..nn.modules.module import Module
        for node in self.nodes:
            if node.op == "call_function":
                if not callable(node.target):
                    raise ValueError(f"Node {node} target {node.target} has type {_typename(node.target)} but "
                                     "a Callable is expected")
            elif not isinstance(node.target, str):
                raise ValueError(f"Node {node} target {node.target} has type {_typename(node.target)} but "
                                 "a str is expected")
            if node.op in ("get_attr", "call_module"):
                atoms = node.target.split(".")
                m_itr = self.owning_module
                for i, atom in enumerate(atoms):
                    new_m_itr = getattr(m_itr, atom, None)
                    seen_qualname = ".".join(atoms[:i])
                    if new_m_itr is None:
                        raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                           f"{atom} of {seen_qualname}")
                    if node.op == "call_module" and not isinstance(new_m_itr, Module):
                        raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen_qualname} does "
                                           "not reference an nn.Module")
                    m_itr = new_m_itr

    @compatibility(is_backward_compatible=True)
    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase nodes without users that are not impure (``Node.is_impure``, or
        ``is_impure_node`` when given), walking backwards so chains of dead nodes go in
        one pass; lints first. Returns whether anything was erased."""
        self.lint()

        def has_side_effect(node: Node) -> bool:
            return is_impure_node(node) if is_impure_node is not None else node.is_impure()

        removed = []
        for node in reversed(self.nodes):
            if not has_side_effect(node) and len(node.users) == 0:
                self.erase_node(node)
                removed.append(node.name)
        changed = bool(removed)
        if changed:
            log.info("The following nodes were dead code eliminated: %s", set(removed))
        if self.owning_module is not None:  # graphs of GraphModule children used through get_attr
            from .graph_module import GraphModule
            names = {n.target for n in self.find_nodes(op="get_attr")}
            for child_name, child in self.owning_module.named_children():
                if child_name in names and isinstance(child, GraphModule):
                    changed |= child.graph.eliminate_dead_code()
                    child.recompile()
        return changed

    @compatibility(is_backward_compatible=False)
    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    @compatibility(is_backward_compatible=False)
    @contextmanager
    def on_generate_code(self, make_transformer: Callable):
        """Within the block, generated code's body lines pass through
        ``make_transformer(previous_transformer)``."""
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)
        try:
            yield
        finally:
            self._codegen._body_transformer = previous

    def _clear_nodes(self) -> None:
        for node in reversed(self.nodes):
            node.meta.clear()
            self.erase_node(node)


def _get_attr_reference_exists(mod, qualified_name: str) -> bool:
    from ..nn.modules.module import Module
    from ..nn.parameter import Parameter
    module_path, _, name = qualified_name.rpartition(".")
    try:
        submod = mod.get_submodule(module_path)
    except AttributeError:
        import warnings
        warnings.warn(f"Failed to fetch module {module_path}!", stacklevel=2)
        return False
    if not hasattr(submod, name):
        return False
    res = getattr(submod, name)
    return isinstance(res, (Module, Parameter)) or name in submod._buffers
