"""A model's graph for TensorBoard's graph plugin, from ``ember.jit.trace``'s fx graph.

The layout is the one torch's ``add_graph`` writes (torch/utils/tensorboard/_pytorch_graph):
a ``GraphDef`` whose inputs are ``IO Node``s named ``input/<argument>``, whose outputs are
``IO Node``s named ``output/output.<k>``, whose parameters are ``prim::GetAttr`` nodes and
whose ops are named under the model's class; each node carries an ``attr`` string and the
``_output_shapes`` of its tensor, and a ``RunMetadata`` names the device. Op types are
ember's op names (``ember::linear``) where torch writes ATen's (``aten::linear``).
"""

from __future__ import annotations

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

__all__ = ["graph"]


def _shapes(node):
    meta = node.meta.get("tensor_meta")
    if meta is None or not hasattr(meta, "shape"):
        return None
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in meta.shape])
    return AttrValue(list=AttrValue.ListValue(shape=[shape]))


def _op_name(target) -> str:
    from ...ops import _dispatch
    entry = _dispatch.entry_of(target)
    return f"ember::{entry.name if entry is not None else getattr(target, '__name__', str(target))}"


def _literal(a) -> str:
    return type(a).__name__ if callable(a) else repr(a)


def graph(model, args, verbose: bool = False):
    """``(GraphDef, RunMetadata)`` of ``model`` run on ``args`` (a tensor or a tuple), in
    eval mode as torch's traces it."""
    from ... import jit
    from ...fx.node import Node
    was_training = model.training
    model.eval()
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # jit.trace is deprecated for users, not here
            traced = jit.trace(model, args)
    finally:
        model.train(was_training)
    if verbose:
        print(traced.graph)
    root = type(model).__name__
    names: dict = {}
    nodes = []
    outputs = 0
    for node in traced.graph.nodes:
        shapes = _shapes(node)
        attr = {}
        if node.op == "placeholder":
            name, op = f"input/{node.target}", "IO Node"
            attr["attr"] = AttrValue(s=b"")
            inputs = []
        elif node.op == "get_attr":
            *path, leaf = node.target.split(".")
            name = f"{root}/{'/'.join(path) + '/' if path else ''}{leaf}"
            op = "prim::GetAttr"
            attr["attr"] = AttrValue(s=f"{{ name :  {leaf} }}".encode())
            inputs = []
        elif node.op == "output":
            results = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
            for r in results:
                if isinstance(r, Node):
                    outputs += 1
                    out = NodeDef(name=f"output/output.{outputs}", op="IO Node", input=[names[r]],
                                  attr={"attr": AttrValue(s=b"")} | ({"_output_shapes": _shapes(r)} if _shapes(r)
                                                                     else {}))
                    nodes.append(out)
            continue
        else:
            name, op = f"{root}/{node.name}", _op_name(node.target)
            inputs = [names[a] for a in node.all_input_nodes]
            constants = {f"arg{k}": _literal(a) for k, a in enumerate(node.args) if not isinstance(a, Node)}
            constants |= {k: _literal(v) for k, v in node.kwargs.items() if not isinstance(v, Node)}
            attr["attr"] = AttrValue(s=("{" + ", ".join(f"{k} : {v}" for k, v in constants.items()) + "}").encode())
        if shapes is not None:
            attr["_output_shapes"] = shapes
        names[node] = name
        nodes.append(NodeDef(name=name, op=op, input=inputs, attr=attr))
    stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stats
