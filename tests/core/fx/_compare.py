"""Compare a torch.fx graph with an ember.fx graph node by node: names, opcodes, targets
(by public dotted name, leading ``torch`` read as ``ember``), args/kwargs (nodes by name,
dtypes/devices/tensors by their ember spelling) and users."""

import operator  # noqa: F401  (targets in callers' graphs)

import torch
from torch.fx.node import _get_qualified_name as torch_qualified_name

from ember.fx.node import _get_qualified_name as ember_qualified_name

_TORCH_NAMESPACES = (("torch", torch), ("torch.nn.functional", torch.nn.functional), ("torch.linalg", torch.linalg),
                     ("torch.fft", torch.fft), ("torch.special", torch.special))


def torch_public_name(fn) -> str:
    """torch's public dotted name of ``fn`` (torch.nn.functional.linear rather than
    torch._C._nn.linear), found by identity in torch's namespaces; else torch.fx's."""
    for prefix, ns in _TORCH_NAMESPACES:
        name = getattr(fn, "__name__", None)
        if name is not None and getattr(ns, name, None) is fn:
            return f"{prefix}.{name}"
    for prefix, ns in _TORCH_NAMESPACES:
        for name, obj in vars(ns).items():
            if obj is fn and not name.startswith("_"):
                return f"{prefix}.{name}"
    return torch_qualified_name(fn)


def as_ember_name(name: str) -> str:
    return "ember" + name[len("torch"):] if name == "torch" or name.startswith("torch.") else name


def target_name(target, lib) -> str:
    """A comparable name for a node target: the str itself, or the function's public name
    with ``torch`` read as ``ember``."""
    if isinstance(target, str):
        return target
    if lib == "torch":
        return as_ember_name(torch_public_name(target))
    return ember_qualified_name(target)


def norm_arg(a, lib):
    """A library-neutral form of an argument: nodes by name, dtypes/devices by str,
    tensors by (shape, dtype), containers walked."""
    if a is None or isinstance(a, (bool, int, float, complex, str)):
        return a
    if type(a).__name__ == "Node":
        return ("node", a.name)
    if isinstance(a, tuple):
        return tuple(norm_arg(x, lib) for x in a)
    if isinstance(a, list):
        return [norm_arg(x, lib) for x in a]
    if isinstance(a, dict):
        return {k: norm_arg(v, lib) for k, v in a.items()}
    if isinstance(a, slice):
        return ("slice", norm_arg(a.start, lib), norm_arg(a.stop, lib), norm_arg(a.step, lib))
    if hasattr(a, "shape") and hasattr(a, "dtype"):
        return ("tensor", tuple(a.shape), as_ember_name(str(a.dtype)))
    if callable(a):
        return ("fn", target_name(a, lib))
    return as_ember_name(str(a))


def node_summary(node, lib) -> dict:
    return {"name": node.name, "op": node.op, "target": target_name(node.target, lib),
            "args": norm_arg(tuple(node.args), lib), "kwargs": norm_arg(dict(node.kwargs), lib),
            "users": [u.name for u in node.users]}


def assert_same_graph(torch_graph, ember_graph) -> None:
    """Assert the two graphs have the same nodes in the same order, with the same names,
    ops, targets, args, kwargs and users; the message shows the first difference."""
    tnodes = [node_summary(n, "torch") for n in torch_graph.nodes]
    enodes = [node_summary(n, "ember") for n in ember_graph.nodes]
    for i, (t, e) in enumerate(zip(tnodes, enodes)):
        assert t == e, f"node {i} differs:\n torch: {t}\n ember: {e}\n\n{torch_graph}\n\n{ember_graph}"
    assert len(tnodes) == len(enodes), f"{len(tnodes)} torch nodes, {len(enodes)} ember nodes"


def as_ember_code(code: str) -> str:
    """torch's generated code read with ember's names (``torch.relu`` -> ``ember.relu``)."""
    import re
    return re.sub(r"\btorch\b", "ember", code)
