"""The nested containers torch.func's transforms accept: tensors in dicts, lists and tuples."""

from __future__ import annotations

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]


def tree_flatten(tree):
    """(leaves, spec): the leaves of nested dicts/lists/tuples in order, and how to rebuild them."""
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [tree_flatten(tree[k]) for k in keys]
        return [leaf for p in parts for leaf in p[0]], ("dict", keys, [p[1] for p in parts])
    if isinstance(tree, (list, tuple)):
        parts = [tree_flatten(v) for v in tree]
        return [leaf for p in parts for leaf in p[0]], (type(tree), None, [p[1] for p in parts])
    return [tree], None


def tree_unflatten(leaves, spec):
    return _build(iter(leaves), spec)


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, keys, children = spec
    values = [_build(it, c) for c in children]
    if kind == "dict":
        return dict(zip(keys, values))
    if kind is tuple or kind is list:
        return kind(values)
    return kind(*values)  # a namedtuple


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)
