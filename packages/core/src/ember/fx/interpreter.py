"""``Interpreter``: runs a graph node by node, one overridable method per opcode; and
``Transformer``: an Interpreter that records the calls it makes into a new graph
(torch.fx.interpreter).

Subclass either and override ``call_function``, ``call_method``, ``call_module``,
``get_attr``, ``placeholder``, ``output`` or ``run_node`` to profile, check, or rewrite
a program, as with torch.fx.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Iterator

from . import traceback as fx_traceback
from ._compatibility import compatibility
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg

__all__ = ["Interpreter", "Transformer"]

log = logging.getLogger(__name__)


@compatibility(is_backward_compatible=True)
class Interpreter:
    """Run ``module``'s graph (or ``graph``) on concrete values.

    Args:
        module: the Module whose attributes and submodules get_attr / call_module nodes
            name (usually a GraphModule; its ``graph`` is run when ``graph`` is None).
        garbage_collect_values: drop each value from ``env`` after its last use.
        graph: a graph to run instead of ``module.graph``.

    ``run(*args)`` feeds ``args`` to the placeholders in order and returns the output
    node's value; ``env`` maps each node run so far to its value."""

    @compatibility(is_backward_compatible=True)
    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if self.garbage_collect_values:
            # the first user met walking backwards is a value's last use
            seen: set[Node] = set()
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    @compatibility(is_backward_compatible=True)
    def run(self, *args, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; nodes already in ``initial_env`` are not run. An
        exception raised by a node gets ``While executing <node>`` appended to its message
        (a KeyError becomes a RuntimeError)."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                value = self.env[node]
                return self.graph.process_outputs(value) if enable_io_processing else value
        return None

    @compatibility(is_backward_compatible=True)
    def boxed_run(self, args_list: list) -> Any:
        """Run with the inputs in ``args_list``, which is cleared (so the caller's list does
        not keep them alive). ``RuntimeError`` when its length is not the number of
        placeholders."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra arguments" if len(args_list) > len(placeholders) else "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders "
                               f"but received {len(args_list)} ({detail})")
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    @compatibility(is_backward_compatible=True)
    def run_node(self, n: Node) -> Any:
        """Fetch ``n``'s arguments from ``env`` and dispatch to the method named by ``n.op``
        (with ``n.meta`` current, inside ``fx.traceback.preserve_node_meta()``)."""
        if not fx_traceback.should_preserve_node_meta:
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return getattr(self, n.op)(n.target, args, kwargs)
        with fx_traceback.set_current_meta(n, f"Interpreter_{type(self).__name__}"):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per opcode ---------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The next input (all remaining ones for ``*args``), else the default in
        ``args``; ``RuntimeError`` when neither is there."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!"
                               ) from si

    @compatibility(is_backward_compatible=True)
    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    @compatibility(is_backward_compatible=True)
    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        if isinstance(target, str):
            raise AssertionError("target should not be a string for call_function")
        return target(*args, **kwargs)

    @compatibility(is_backward_compatible=True)
    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    @compatibility(is_backward_compatible=True)
    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    @compatibility(is_backward_compatible=True)
    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # ---- helpers -----------------------------------------------------------------
    @compatibility(is_backward_compatible=True)
    def fetch_attr(self, target: str) -> Any:
        """The attribute of ``module`` at dotted ``target``; ``RuntimeError`` naming the
        first missing prefix."""
        atoms = target.split(".")
        obj = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    @compatibility(is_backward_compatible=True)
    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """``n``'s args and kwargs with each node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    @compatibility(is_backward_compatible=True)
    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """``args`` with each node replaced by its value in ``env``; ``RuntimeError``
        when a node has none (the graph is not topologically ordered, or it was freed)."""
        def load(a: Node):
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() "
                                   "to diagnose such issues")
            return self.env[a]
        return map_arg(args, load)


@compatibility(is_backward_compatible=True)
class Transformer(Interpreter):
    """Interpret ``module``'s graph on Proxies, so that every call made (by the default
    methods or by overrides, which may call other functions) becomes a node of
    ``new_graph``; ``transform()`` returns the new GraphModule. Submodules stay
    call_module nodes."""

    @compatibility(is_backward_compatible=True)
    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        from ._symbolic_trace import Tracer
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)

        class TransformerTracer(Tracer):
            def __init__(self, graph: Graph) -> None:
                super().__init__()
                self.graph = graph
                self.tensor_attrs: dict = {}

            def is_leaf_module(self, _, __) -> bool:
                return True

            def create_proxy(self, *args, **kwargs):
                proxy = super().create_proxy(*args, **kwargs)
                if fx_traceback.should_preserve_node_meta:  # the node being transformed lends its meta
                    fx_traceback._copy_current_meta(proxy.node)
                return proxy

        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def run_node(self, n: Node):
        # new nodes inherit the stack trace and module stack of the node they come from
        with fx_traceback.preserve_node_meta():
            return super().run_node(n)

    @compatibility(is_backward_compatible=True)
    def placeholder(self, target: Target, args: tuple, kwargs: dict):
        from .proxy import Proxy
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    @compatibility(is_backward_compatible=True)
    def get_attr(self, target: Target, args: tuple, kwargs: dict):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    @compatibility(is_backward_compatible=True)
    def call_module(self, target: Target, args: tuple, kwargs: dict):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    @compatibility(is_backward_compatible=True)
    def call_function(self, target: Target, args: tuple, kwargs: dict):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    @compatibility(is_backward_compatible=True)
    def transform(self) -> GraphModule:
        """Run the transformation and return the new GraphModule (sharing ``module``'s
        submodules and attributes); the output node keeps the old one's ``meta``."""
        from ._op_capture import ops_see_proxies
        from .proxy import Proxy
        with ops_see_proxies():  # overrides may call ember's functions on the Proxies
            result = super().run(enable_io_processing=False)
        if result is not None:
            new_output = self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
            old_output = list(self.graph.nodes)[-1]
            if old_output.op != "output":
                raise AssertionError(f"Expected output node, got op={old_output.op}")
            for k, v in old_output.meta.items():
                new_output.meta[k] = v
        return GraphModule(self.module, self.new_graph)
