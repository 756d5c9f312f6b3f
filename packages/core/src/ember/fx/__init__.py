"""ember.fx: torch.fx's graph IR for ember programs: ``Graph`` of ``Node`` objects, ``GraphModule``
running generated code, ``Interpreter``/``Transformer``, ``subgraph_rewriter`` and the
``passes`` (torch.fx)."""

from . import immutable_collections
from ._compatibility import compatibility
from ._symbolic_trace import PH, ProxyableClassMeta, Tracer, symbolic_trace, wrap
from .graph import CodeGen, Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_aggregate, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = [
    "CodeGen", "Graph", "GraphModule", "Interpreter", "Node", "PythonCode", "Transformer", "compatibility",
    "has_side_effect", "immutable_collections", "map_aggregate", "map_arg", "replace_pattern",
    "PH", "Proxy", "ProxyableClassMeta", "Tracer", "symbolic_trace", "wrap",
]
