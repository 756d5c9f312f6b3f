"""``GraphModule``: a Module whose ``forward`` is generated from a ``Graph``
(torch.fx.graph_module).

Each instance gets a class of its own (``__new__``), so that ``recompile`` can install the
generated ``forward`` on it without touching other GraphModules. The generated source is
registered with ``linecache`` so tracebacks and ``inspect`` show it.
"""

from __future__ import annotations

import copy
import itertools
import linecache
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ._compatibility import compatibility
from .graph import Graph, PythonCode, _custom_builtins
from .node import Node, map_arg

__all__ = ["GraphModule", "reduce_graph_module"]


def _addindent(s: str, n: int) -> str:
    """Indent all lines but the first by ``n`` spaces; blank lines stay empty (torch's)."""
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line if line.strip() else "" for line in lines[1:])


class _EvalCacheLoader:
    """Keeps generated sources under ``<eval_with_key>.N`` names for ``linecache``."""

    def __init__(self) -> None:
        self.eval_cache: dict[str, str] = {}
        self.next_id = 0

    def cache(self, src: str, globals: dict[str, Any]) -> str:
        # a key of our own: torch.fx's "<eval_with_key>.N" may share this process's linecache
        key = f"<eval_with_key>.ember.{self.next_id}"
        self.next_id += 1
        self.eval_cache[key] = src
        globals_copy = dict(globals)
        globals_copy["__file__"] = key
        globals_copy["__name__"] = key
        globals_copy["__loader__"] = self
        linecache.lazycache(key, globals_copy)
        return key

    def get_source(self, module_name: str) -> str | None:
        return self.eval_cache.get(module_name)


_loader = _EvalCacheLoader()


def _forward_from_src(src: str, globals: dict[str, Any], method_name: str = "forward") -> Callable:
    scope = dict(globals)
    key = _loader.cache(src, globals)
    exec(compile(src, key, "exec", dont_inherit=True), scope)
    return scope[method_name]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copy the attribute at dotted ``target`` of ``from_module`` to the same place in
    ``to_module``, making empty Modules for missing intermediate levels; a plain tensor
    becomes a buffer."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # already copied as a whole
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _get_attr(model: Module, attr_name: str) -> Any:
    """The attribute at dotted ``attr_name`` (``AssertionError`` for a missing prefix)."""
    *prefix, field = attr_name.split(".")
    t = model
    for item in prefix:
        t = getattr(t, item, None)
        if t is None:
            raise AssertionError(f"Attribute '{item}' not found in model")
    return getattr(t, field)


def _has_attr(model: Module, attr_name: str) -> bool:
    """Whether dotted ``attr_name`` resolves (torch's version of this private helper
    answers False for any dotted path; this one walks the path)."""
    *prefix, field = attr_name.split(".")
    t = model
    for item in prefix:
        if not hasattr(t, item):
            return False
        t = getattr(t, item)
    return hasattr(t, field)


def _del_attr(model: Module, attr_name: str) -> None:
    *prefix, field = attr_name.split(".")
    delattr(_get_attr(model, ".".join(prefix)) if prefix else model, field)


# meta key whose {name: value} entries deepcopy sets again as attributes of the copy
_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


class _WrappedCall:
    """A GraphModule's ``__call__``: an exception raised in the generated code is
    reported on stderr with the generated lines around it, and re-raised without the
    generated frames (as torch.fx reports it)."""

    def __init__(self, cls, cls_call) -> None:
        self.cls = cls
        self.cls_call = cls_call

    @staticmethod
    def _generate_error_message(frame: traceback.FrameSummary) -> str:
        lineno, line = frame.lineno, frame.line
        lines = linecache.getlines(frame.filename)
        return "\n".join([traceback.format_exc(),
                          f"Call using an FX-traced Module, line {lineno} of the traced Module's generated forward "
                          "function:",
                          "".join(lines[lineno - 2:lineno]), "~" * len(line) + "~~~ <--- HERE",
                          "\n".join(lines[lineno:lineno + 2])])

    def __call__(self, obj, *args, **kwargs):
        try:
            if self.cls_call is not None:
                return self.cls_call(obj, *args, **kwargs)
            return super(self.cls, obj).__call__(*args, **kwargs)
        except Exception as e:
            frame = traceback.StackSummary.extract(traceback.walk_tb(e.__traceback__))[-1]
            if "eval_with_key" in frame.filename:
                print(_WrappedCall._generate_error_message(frame), file=sys.stderr)
                raise e.with_traceback(None)  # noqa: B904 (torch drops the generated frames)
            raise


def _call_wrapped(self, *args, **kwargs):
    return self._wrapped_call(self, *args, **kwargs)


class _CodeOnlyModule(Module):
    """A Module made from a GraphModule's ``__dict__`` (deepcopy, unpickling)."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        object.__setattr__(self, "__dict__", body)


class _NodeRef:
    """Stands for a node, by name, in a pickled graph."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        return (_NodeRef, (self.name,))


def _graph_to_records(graph: Graph) -> list[tuple]:
    def ref(n: Node) -> _NodeRef:
        return _NodeRef(n.name)
    records = []
    for n in graph.nodes:
        meta = {"stack_trace": n.meta["stack_trace"]} if "stack_trace" in n.meta else {}
        records.append((n.name, n.op, n.target, map_arg(n.args, ref), map_arg(n.kwargs, ref), n.type, meta))
    return records


def _graph_from_records(records: list[tuple]) -> Graph:
    graph = Graph()
    made: dict[str, Node] = {}

    def resolve(a):
        if isinstance(a, _NodeRef):
            return made[a.name]
        if isinstance(a, tuple):
            t = tuple(resolve(x) for x in a)
            return t if not hasattr(a, "_fields") else type(a)(*t)
        if isinstance(a, list):
            return [resolve(x) for x in a]
        if isinstance(a, dict):
            return {k: resolve(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(resolve(a.start), resolve(a.stop), resolve(a.step))
        return a

    for name, op, target, args, kwargs, type_expr, meta in records:
        node = graph.create_node(op, target, resolve(args), resolve(kwargs), name, type_expr)
        node.meta.update(meta)
        made[name] = node
    return graph


@compatibility(is_backward_compatible=True)
def reduce_graph_module(body: dict[str, Any], import_block: str) -> Module:
    """Rebuild a pickled GraphModule from its ``__dict__`` (holding the graph's node
    records under ``_graph_records``); ``import_block`` is kept as torch keeps it, for
    readers of the pickle."""
    body = dict(body)
    records = body.pop("_graph_records")
    class_name = body.pop("_graphmodule_cls_name", "GraphModule")  # torch's pickles lose the name too
    graph = _graph_from_records(records)
    com = _CodeOnlyModule(body)
    gm = GraphModule(com, graph, class_name=class_name)
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm


def _format_import_block(globals: dict[str, Any]) -> str:
    lines = set()
    for name, obj in globals.items():
        if name in _custom_builtins:
            lines.add(_custom_builtins[name].import_str)
        else:
            module = getattr(obj, "__module__", None)
            qualname = getattr(obj, "__qualname__", None)
            if module and qualname:
                lines.add(f"from {module} import {qualname} as {name}")
    return "\n".join(sorted(lines))


@compatibility(is_backward_compatible=True)
class GraphModule(Module):
    """A Module generated from a ``Graph``: it holds ``graph``, and ``code``/``forward``
    generated from it (torch.fx.GraphModule).

    Args:
        root: a Module whose submodules, parameters and buffers named by the graph's
            get_attr / call_module targets are copied over to the same dotted paths, or a
            dict from those targets to the objects (``RuntimeError`` when one is missing).
        graph: the Graph to generate code from.
        class_name: the name the instance's class gets (shows in repr and errors).

    Assigning ``graph`` regenerates the code; after editing the graph in place call
    ``recompile()``."""

    def __new__(cls, *args, **kwargs):
        # one class per instance, so recompile() installs forward on this instance only
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass

        return super().__new__(GraphModuleImpl)

    @compatibility(is_backward_compatible=True)
    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            if isinstance(root, _CodeOnlyModule):
                for k, _ in root.named_children():
                    _copy_attr(root, self, k)
                for k, _ in root.named_buffers():
                    _copy_attr(root, self, k)
                for k, _ in root.named_parameters():
                    _copy_attr(root, self, k)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError("Node " + str(node) + " referenced target " + node.target
                                           + " but that target was not provided in ``root``!")
                    targets.append(node.target)
            targets.sort(key=lambda t: t.count("."))  # parents before children
            for target in targets:
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = None
        tracer_cls = graph._tracer_cls
        if tracer_cls and "<locals>" not in tracer_cls.__qualname__:
            self._tracer_cls = tracer_cls
        self._tracer_extras = graph._tracer_extras or {}
        self.meta: dict[str, Any] = {}
        self._replace_hooks: list[Callable] = []
        self._create_node_hooks: list[Callable] = []
        self._erase_node_hooks: list[Callable] = []
        self._deepcopy_hooks: list[Callable] = []

    @property
    def graph(self) -> Graph:
        """The underlying Graph; assigning one makes it owned by this module and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    @compatibility(is_backward_compatible=True)
    def recompile(self) -> PythonCode:
        """Regenerate ``code`` and ``forward`` from ``graph`` (and those of GraphModule
        children); returns the PythonCode."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        cls = type(self)
        cls.forward = _forward_from_src(self._code, python_code.globals)
        if "_wrapped_call" not in vars(cls):
            cls._wrapped_call = _WrappedCall(cls, cls.__call__ if "__call__" in vars(cls) else None)
        cls.__call__ = _call_wrapped
        for _, mod in self.named_children():
            if isinstance(mod, GraphModule):
                mod.recompile()
        return python_code

    # ---- submodules ----------------------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at dotted ``target``, making empty Modules on the way; False when
        a step of the path exists and is not a Module."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    @compatibility(is_backward_compatible=True)
    def delete_submodule(self, target: str) -> bool:
        """Delete the submodule at dotted ``target``; False when there is none."""
        *path, name = target.split(".")
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, name) or not isinstance(getattr(mod, name), Module):
            return False
        delattr(mod, name)
        return True

    @compatibility(is_backward_compatible=True)
    def delete_all_unused_submodules(self) -> None:
        """Delete the submodules no call_module / get_attr node reaches (a module is used
        when it is called, holds a fetched attribute, or has a used child)."""
        used: list[str] = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr") and isinstance(node.target, str):
                used.extend(itertools.accumulate(node.target.split("."), lambda x, y: f"{x}.{y}"))
                if node.op == "call_module":
                    try:
                        sub = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.extend(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name in [n for n, _ in self.named_modules() if n not in used]:
            self.delete_submodule(name)

    # ---- export --------------------------------------------------------------------
    @compatibility(is_backward_compatible=False)
    def to_folder(self, folder, module_name: str = "FxModule") -> None:
        """Write ``folder`` as a package importable with ``from <folder> import
        <module_name>``: ``module.py`` (the class, with the generated forward),
        ``state_dict.pt``, and a pickle per child whose repr is not constructor code
        (those warn)."""
        import ember

        from .. import nn
        folder = Path(folder)
        folder.mkdir(exist_ok=True)
        ember.save(self.state_dict(), folder / "state_dict.pt")
        tab = " " * 4
        builtins_src = "\n".join(v.import_str for v in _custom_builtins.values())
        model_str = f"""
import ember
{builtins_src}

from ember.nn import *
class {module_name}(ember.nn.Module):
    def __init__(self):
        super().__init__()
"""
        safe = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
        pickled: list[str] = []
        for name, module in self.named_children():
            if type(module) in safe:
                model_str += f"{tab * 2}setattr(self, '{name}', {module!r})\n"
            else:
                module_file = folder / f"{name}.pt"
                ember.save(module, module_file)
                pickled.append(name)
                flat = repr(module).replace("\r", " ").replace("\n", " ")
                model_str += (f"{tab * 2}setattr(self, '{name}', ember.load(r'{module_file}', weights_only=False))"
                              f" # {flat}\n")
        for name, buffer in self._buffers.items():
            if buffer is not None:
                model_str += (f"{tab * 2}self.register_buffer('{name}', ember.empty({list(buffer.shape)}, "
                              f"dtype={buffer.dtype}))\n")
        for name, param in self._parameters.items():
            if param is not None:
                model_str += (f"{tab * 2}setattr(self, '{name}', ember.nn.Parameter(ember.empty("
                              f"{list(param.shape)}, dtype={param.dtype})))\n")
        model_str += f"{tab * 2}self.load_state_dict(ember.load(r'{folder}/state_dict.pt'))\n"
        model_str += f"{_addindent(self.code, 4)}\n"
        (folder / "module.py").write_text(model_str)
        (folder / "__init__.py").write_text("from .module import *")
        if pickled:
            warnings.warn("Was not able to save the following children modules as reprs -"
                          f"saved as pickled files instead: {pickled}", stacklevel=2)

    # ---- copying and pickling ------------------------------------------------------
    def __reduce__(self):
        """Pickle as the module's ``__dict__`` plus the graph's node records (targets by
        reference), rebuilt by ``reduce_graph_module``."""
        body = dict(self.__dict__)
        python_code = self.recompile()
        import_block = _format_import_block(python_code.globals)
        del body["_graph"]
        body["_graph_records"] = _graph_to_records(self._graph)
        return (reduce_graph_module, (body, import_block))

    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake, fake.__dict__["_graph"])  # the class name resets, as in torch
        for attr in ("_state_dict_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks",
                     "_replace_hooks", "_create_node_hooks", "_erase_node_hooks", "_deepcopy_hooks"):
            if attr in self.__dict__:
                object.__setattr__(res, attr, copy.deepcopy(self.__dict__[attr], memo))
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        for name, value in res.meta.get(_USER_PRESERVED_ATTRIBUTES_KEY, {}).items():
            setattr(res, name, value)
        for hook in getattr(self, "_deepcopy_hooks", ()):
            hook(res)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph)
        res.meta = getattr(self, "meta", {})
        return res

    # ---- printing ------------------------------------------------------------------
    @compatibility(is_backward_compatible=False)
    def print_readable(self, print_output: bool = True, include_stride: bool = False, include_device: bool = False,
                       colored: bool = False, *, fast_sympy_print: bool = False, expanded_def: bool = False,
                       additional_meta: list[str] | None = None) -> str:
        """The generated code as a class (``class GraphModule(ember.nn.Module):``) with
        dtype/shape annotations where ``meta`` has them, GraphModule children nested;
        printed unless ``print_output=False``, and returned. The options are
        ``Graph.python_code``'s; ``fast_sympy_print`` is accepted (ember has no symbolic
        shapes)."""
        options = dict(include_stride=include_stride, include_device=include_device, colored=colored,
                       expanded_def=expanded_def, additional_meta=additional_meta)
        out = _print_readable(self, self._get_name(), options)
        if print_output:
            print(out)
        return out

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])


def _print_readable(module: GraphModule, module_name: str, options: dict) -> str:
    src = module.graph.python_code(root_module="self", verbose=True, **options).src.lstrip("\n")
    code = _addindent(f"class {module_name}(ember.nn.Module):\n" + src, 4)
    children = [""]
    child_options = {k: v for k, v in options.items() if k != "expanded_def"}  # as torch passes them on
    for name, sub in module.named_children():
        if isinstance(sub, GraphModule):
            children.append(_print_readable(sub, name, child_options))
    return code + _addindent("\n".join(children), 4)
