"""Node metadata carried across passes (torch.fx.traceback): inside
``preserve_node_meta()``, an Interpreter makes each node's ``meta`` the *current* meta
while it runs the node, and nodes recorded meanwhile by a Transformer take the current
meta's stack trace and the fields of ``_COPY_META_FIELDS``, as torch.fx's do."""

from __future__ import annotations

import traceback
from contextlib import contextmanager
from typing import Any, Iterator

from ._compatibility import compatibility

__all__ = ["preserve_node_meta", "has_preserved_node_meta", "set_current_meta", "get_current_meta",
           "set_stack_trace", "format_stack"]

# the meta keys a recorded node inherits from the node being run (torch's list)
_COPY_META_FIELDS = ["nn_module_stack", "torch_fn", "source_fn_stack", "original_aten", "recompute", "ac_graph_id",
                     "has_backward_hook", "from_node", "quantization_tag", "_numeric_debug_handle", "custom",
                     "partitioner_tag"]

should_preserve_node_meta = False
current_meta: dict[str, Any] = {}


@compatibility(is_backward_compatible=False)
@contextmanager
def preserve_node_meta(enable: bool = True) -> Iterator[None]:
    """Within the block, interpreted nodes' meta is made current (see the module doc)."""
    global should_preserve_node_meta, current_meta
    saved_flag, saved_meta = should_preserve_node_meta, current_meta.copy()
    try:
        should_preserve_node_meta = enable
        yield
    finally:
        should_preserve_node_meta, current_meta = saved_flag, saved_meta


@compatibility(is_backward_compatible=False)
def has_preserved_node_meta() -> bool:
    return should_preserve_node_meta


@compatibility(is_backward_compatible=False)
@contextmanager
def set_current_meta(node, pass_name: str = "") -> Iterator[None]:
    """Make a copy of ``node.meta`` the current meta for the block, when preserving and
    the node has meta (torch also records provenance under ``from_node``; ember does not)."""
    global current_meta
    if should_preserve_node_meta and node.meta:
        saved = current_meta
        try:
            current_meta = node.meta.copy()
            yield
        finally:
            current_meta = saved
    else:
        yield


@compatibility(is_backward_compatible=False)
def get_current_meta() -> dict[str, Any]:
    return current_meta


@compatibility(is_backward_compatible=False)
def set_stack_trace(stack: list[str]) -> None:
    """Set the current meta's ``stack_trace`` (when preserving) from formatted lines."""
    if should_preserve_node_meta and stack:
        current_meta["stack_trace"] = "".join(stack)


@compatibility(is_backward_compatible=False)
def format_stack() -> list[str]:
    """The current meta's stack trace when preserving, else the caller's stack, formatted."""
    if should_preserve_node_meta:
        return [current_meta.get("stack_trace", "")]
    return traceback.format_list(traceback.extract_stack()[:-1])


def _copy_current_meta(node) -> None:
    """Give a node recorded while preserving the current meta's inheritable fields."""
    import copy
    stack_trace = current_meta.get("stack_trace")
    if stack_trace:
        node.stack_trace = stack_trace
    for field in _COPY_META_FIELDS:
        if field in current_meta:
            node.meta[field] = copy.copy(current_meta[field])
