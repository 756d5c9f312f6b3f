"""``SubgraphMatcher``: find the places where a pattern graph occurs in a graph
(torch.fx.passes.utils.matcher_utils), the search behind ``replace_pattern``.

Matching starts from the pattern's anchors (the nodes its output returns that have one
user) and walks arguments backwards, node against node: same opcode and target, the
same number of args and the same kwarg names, literals equal (or ignored). A
placeholder of the pattern matches anything. Matches whose inner nodes are used
outside the match, that would form a cycle if fused, or (by default) that overlap an
earlier match are dropped.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..._compatibility import compatibility
from ...graph import Graph
from ...node import Node

__all__ = ["SubgraphMatcher", "InternalMatch"]


@compatibility(is_backward_compatible=False)
@dataclass
class InternalMatch:
    """One occurrence: ``nodes_map`` maps pattern nodes to graph nodes;
    ``placeholder_nodes`` / ``returning_nodes`` are the graph's values for the pattern's
    inputs and outputs."""
    anchors: list[Node]
    nodes_map: dict[Node, Node] = field(default_factory=dict)
    placeholder_nodes: list[Node] = field(default_factory=list)
    returning_nodes: list[Node] = field(default_factory=list)
    name_node_map: dict[str, Node] = field(default_factory=dict)

    def __copy__(self) -> InternalMatch:
        return InternalMatch(anchors=self.anchors, nodes_map=self.nodes_map.copy(),
                             placeholder_nodes=self.placeholder_nodes.copy(),
                             returning_nodes=self.returning_nodes.copy())


def _fetch(module, target: str):
    obj = module
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def _would_form_cycle(partition: list[Node]) -> bool:
    """Whether a path leaves the node set and comes back into it (fusing would then
    need a value computed from its own output)."""
    members = set(partition)
    queue = [user for node in members for user in node.users if user not in members]
    visited: set[Node] = set()
    while queue:
        current = queue.pop()
        visited.add(current)
        if current in members:
            return True
        queue.extend(user for user in current.users if user not in visited)
    return False


@compatibility(is_backward_compatible=False)
class SubgraphMatcher:
    """Matches ``pattern`` against graphs. ``match_output`` / ``match_placeholder`` make
    the pattern's output / placeholders match only nodes of the same opcode;
    ``ignore_literals`` lets any literal match any other. The pattern must not be empty
    (``ValueError``) nor hold dead code (``AssertionError``)."""

    def __init__(self, pattern: Graph, match_output: bool = False, match_placeholder: bool = False,
                 remove_overlapping_matches: bool = True, ignore_literals: bool = False) -> None:
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals
        if len(pattern.nodes) == 0:
            raise ValueError("SubgraphMatcher cannot be initialized with an empty pattern")
        for node in pattern.nodes:
            if node.op != "output" and not node.is_impure() and len(node.users) == 0:
                raise AssertionError("SubgraphMatcher cannot be initialized with an pattern with dead code")
        self.pattern_placeholder_nodes = [n for n in pattern.nodes if n.op == "placeholder"]
        output_node = next(iter(reversed(pattern.nodes)))
        self.pattern_returning_nodes: list[Node] = output_node.all_input_nodes
        if match_output:
            self.pattern_anchors = [output_node]
        else:
            self.pattern_anchors = [n for n in output_node.all_input_nodes if len(n.users) == 1]

    def _match_attributes(self, pn: Node, gn: Node) -> bool:
        from ...._tensor import Tensor
        pn_value = _fetch(pn.graph.owning_module, pn.target)
        gn_value = _fetch(gn.graph.owning_module, gn.target)
        if type(pn_value) is not type(gn_value):
            return False
        if isinstance(pn_value, Tensor):
            return isinstance(gn_value, Tensor)
        raise RuntimeError(f"Unsupported type {pn_value} when matching attributes")

    def _nodes_are_equal(self, pn: Node, gn: Node, node_name_match: str = "") -> bool:
        if not self.match_placeholder and pn.op == "placeholder":
            return True
        if node_name_match and node_name_match in gn.name:
            return True
        if pn.op != gn.op:
            return False
        if pn.op in ("placeholder", "output"):
            return True
        if pn.op == "get_attr":
            return self._match_attributes(pn, gn)
        return pn.target == gn.target

    def _is_contained(self, nodes_map: dict[Node, Node]) -> bool:
        """No inner node of the match (not a returned one) is used outside it."""
        lookup = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in lookup.items():
            if pn in self.pattern_returning_nodes:
                continue
            if any(user not in lookup for user in gn.users):
                return False
        return True

    def _remove_overlapping_matches(self, matches: list[InternalMatch]) -> list[InternalMatch]:
        kept: list[InternalMatch] = []
        taken: set[Node] = set()
        for match in matches:
            inner = [gn for pn, gn in match.nodes_map.items() if pn.op not in ("placeholder", "output")]
            if not any(gn in taken for gn in inner):
                kept.append(match)
                taken.update(inner)
        return kept

    def _match_literals(self, pn: Any, gn: Any, match: InternalMatch) -> bool:
        if isinstance(pn, Node):  # a pattern input bound to a literal of the graph
            if pn.op != "placeholder":
                return False
            if pn in match.nodes_map:
                return match.nodes_map[pn] == gn
            match.nodes_map[pn] = gn
            return True
        if isinstance(gn, Node):
            return False
        return type(gn) is type(pn) and gn == pn

    def _match_nodes(self, pn: Node, gn: Node, match: InternalMatch, node_name_match: str = "") -> bool:
        if pn in match.nodes_map:
            return match.nodes_map[pn] == gn
        if gn in match.nodes_map.values():  # one graph node per pattern node
            return False
        if not self._nodes_are_equal(pn, gn, node_name_match):
            return False
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":
            return True

        def match_args(args1, args2) -> bool:
            if len(args1) != len(args2):
                return False
            for a1, a2 in zip(args1, args2):
                if isinstance(a1, Node) and isinstance(a2, Node):
                    ok = self._match_nodes(a1, a2, match)
                elif isinstance(a1, (list, tuple)) and isinstance(a2, (list, tuple)):
                    ok = match_args(a1, a2)
                else:
                    ok = self._match_literals(a1, a2, match) or self.ignore_literals
                if not ok:
                    return False
            return True

        if len(pn.args) != len(gn.args) or list(pn.kwargs) != list(gn.kwargs):
            return False
        return match_args(list(pn.args) + list(pn.kwargs.values()), list(gn.args) + list(gn.kwargs.values()))

    def match(self, graph: Graph, node_name_match: str = "") -> list[InternalMatch]:
        """All matches of the pattern in ``graph``, in the order of the graph's nodes
        (each anchor's candidates are tried in graph order, with backtracking)."""
        candidates: dict[Node, list[Node]] = defaultdict(list)
        for anchor in self.pattern_anchors:
            for node in graph.nodes:
                if self._nodes_are_equal(anchor, node, node_name_match):
                    candidates[anchor].append(node)
        candidate_list = list(candidates.items())
        matches: list[InternalMatch] = []

        def backtrack(index: int, match: InternalMatch) -> None:
            if index == len(candidate_list):
                match.placeholder_nodes = [match.nodes_map[pn] for pn in self.pattern_placeholder_nodes]
                match.returning_nodes = [match.nodes_map[pn] for pn in self.pattern_returning_nodes]
                matches.append(match)
                return
            anchor, nodes = candidate_list[index]
            saved = copy.copy(match)
            for node in nodes:
                if self._match_nodes(anchor, node, match, node_name_match):
                    backtrack(index + 1, match)
                match = copy.copy(saved)

        if candidate_list:
            backtrack(0, InternalMatch(anchors=self.pattern_anchors))
        matches = [m for m in matches if self._is_contained(m.nodes_map)]
        matches = [m for m in matches if not _would_form_cycle(
            [gn for pn, gn in m.nodes_map.items() if pn.op not in ("placeholder", "output")])]
        if self.remove_overlapping_matches:
            matches = self._remove_overlapping_matches(matches)
        return matches
