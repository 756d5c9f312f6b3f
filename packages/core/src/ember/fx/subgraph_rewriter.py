"""``replace_pattern``: replace every occurrence of a pattern subgraph in a GraphModule by
a replacement subgraph (torch.fx.subgraph_rewriter).

Patterns and replacements are functions (traced with ``symbolic_trace``), Graphs or
GraphModules taking the same number of inputs. Occurrences are found by
``passes.utils.matcher_utils.SubgraphMatcher``; each is replaced in graph order, the
replacement's nodes inserted before the first user of the occurrence's outputs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from ._compatibility import compatibility
from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern", "replace_pattern_with_filters", "ReplacedPatterns"]


@compatibility(is_backward_compatible=True)
class Match(NamedTuple):
    """A replaced occurrence: ``anchor`` is the pattern node it was found from;
    ``nodes_map`` maps pattern nodes to the (former) graph nodes."""
    anchor: Node
    nodes_map: dict[Node, Node]


@compatibility(is_backward_compatible=False)
@dataclass
class ReplacedPatterns:
    """A replaced occurrence, with the graph nodes that replaced it (``replacements``)."""
    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


def _as_graph(obj) -> Graph:
    if isinstance(obj, GraphModule):
        return obj.graph
    if isinstance(obj, Graph):
        return obj
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(obj).graph


def _replace_attributes(gm: GraphModule, replacement) -> None:
    """Copy over the submodules and attributes the replacement's nodes name and ``gm``
    lacks (deep copies), after dropping those ``gm`` no longer uses."""
    gm.delete_all_unused_submodules()
    if isinstance(replacement, GraphModule):
        replacement.graph.lint()
    from ..nn.modules.module import Module

    def try_get(mod, target: str):
        path, _, name = target.rpartition(".")
        try:
            sub = mod.get_submodule(path)
        except AttributeError:
            return None
        return getattr(sub, name, None)

    for node in gm.graph.nodes:
        if node.op in ("call_module", "get_attr"):
            if try_get(gm, node.target) is not None:
                continue
            attr = try_get(replacement, node.target)
            if attr is None:
                raise RuntimeError('Attempted to create a "', node.op, '" node during subgraph rewriting '
                                   f"with target {node.target}, but the referenced attribute does not "
                                   "exist in the replacement GraphModule")
            new_attr = copy.deepcopy(attr)
            if isinstance(attr, Module):
                gm.add_submodule(node.target, new_attr)
            else:
                setattr(gm, node.target, new_attr)
    gm.graph.lint()


@compatibility(is_backward_compatible=True)
def replace_pattern(gm: GraphModule, pattern: Callable[..., Any] | GraphModule,
                    replacement: Callable[..., Any] | GraphModule) -> list[Match]:
    """Replace each non-overlapping occurrence of ``pattern`` in ``gm.graph`` by
    ``replacement`` and recompile ``gm``; returns one Match per occurrence, in graph order.

    An occurrence must match the pattern's ops, targets, argument structure and literals,
    and its inner values must not be used outside it. The pattern's inputs bind to any
    value; the replacement receives them in the same order."""
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map) for m in _replace_pattern(gm, pattern, replacement)]


@compatibility(is_backward_compatible=False)
def replace_pattern_with_filters(gm: GraphModule, pattern, replacement=None, match_filters: list | None = None,
                                 ignore_literals: bool = False, replacement_callback: Callable | None = None,
                                 node_name_match: str = "") -> list[ReplacedPatterns]:
    """``replace_pattern`` keeping only matches for which every ``match_filters``
    callable ``(match, original_graph, pattern_graph)`` returns True; with
    ``ignore_literals`` any literal matches any other; ``replacement_callback(match,
    original_graph, pattern_graph)`` builds the replacement per match instead of
    ``replacement``; ``node_name_match`` makes graph nodes whose name contains it match
    any pattern node."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals, replacement_callback,
                            node_name_match)


def _replace_pattern(gm, pattern, replacement=None, match_filters=None, ignore_literals=False,
                     replacement_callback=None, node_name_match="") -> list[ReplacedPatterns]:
    from .passes.utils.matcher_utils import SubgraphMatcher
    match_filters = match_filters or []
    original_graph: Graph = gm.graph
    pattern_graph = _as_graph(pattern)
    matcher = SubgraphMatcher(pattern_graph, match_output=False, match_placeholder=False,
                              remove_overlapping_matches=True, ignore_literals=ignore_literals)
    matches = matcher.match(original_graph, node_name_match=node_name_match)
    matches = [m for m in matches if all(f(m, original_graph, pattern_graph) for f in match_filters)]

    if replacement is not None and (isinstance(replacement, (GraphModule, Graph)) or callable(replacement)):
        common_replacement = _as_graph(replacement)
    elif replacement_callback is None:
        raise AssertionError("Must provide either a replacement GraphModule or a replacement callback")
    else:
        common_replacement = None

    # a returned node of one match may be an input of a later one: follow the rewrite
    changed: dict[Node, Node] = {}
    results: list[ReplacedPatterns] = []
    for match in matches:
        replacement_graph = (replacement_callback(match, original_graph, pattern_graph)
                             if replacement_callback is not None else common_replacement)
        placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(match.placeholder_nodes) != len(placeholders):
            raise AssertionError(f"Placeholder count mismatch: {len(match.placeholder_nodes)} vs "
                                 f"{len(placeholders)}")
        val_map: dict[Node, Any] = {}
        for rn, gn in zip(placeholders, match.placeholder_nodes):
            if isinstance(gn, Node):
                val_map[rn] = changed.get(gn, gn)
                if gn != val_map[rn]:
                    match.placeholder_nodes[match.placeholder_nodes.index(gn)] = changed[gn]
                    key = list(match.nodes_map.keys())[list(match.nodes_map.values()).index(gn)]
                    match.nodes_map[key] = changed[gn]
            else:
                val_map[rn] = gn

        # insert before the first user of the outputs, else after the last output
        users: set[Node] = set()
        for n in match.returning_nodes:
            users.update(n.users)
        insert_point = None
        if len(users) == 1:
            insert_point = next(iter(users))
        elif users:
            insert_point = next(n for n in original_graph.nodes if n in users)
        else:
            following = None
            for n in reversed(original_graph.nodes):
                if n in match.returning_nodes:
                    insert_point = following
                    break
                following = n
        if insert_point is None:
            raise AssertionError("The insert point can't be None")
        with original_graph.inserting_before(insert_point):
            copied = original_graph.graph_copy(replacement_graph, val_map)
        if isinstance(copied, Node):
            copied = (copied,)
        replacement_nodes = [v for v in val_map.values() if v not in match.placeholder_nodes]
        if len(match.returning_nodes) != len(copied):
            raise AssertionError(f"Returning nodes count mismatch: {len(match.returning_nodes)} vs {len(copied)}")
        for gn, new in zip(match.returning_nodes, copied):
            gn.replace_all_uses_with(new)
            changed[gn] = new
        for node in reversed(pattern_graph.nodes):
            if node.op not in ("placeholder", "output"):
                gm.graph.erase_node(match.nodes_map[node])
        results.append(ReplacedPatterns(anchor=match.anchors[0], nodes_map=match.nodes_map,
                                        replacements=replacement_nodes))
    gm.recompile()
    from ..nn.modules.module import Module
    if isinstance(replacement, Module):
        _replace_attributes(gm, replacement)
    return results
