"""The nested containers torch.func's transforms accept: tensors in dicts, lists and tuples."""

from __future__ import annotations

import copy
import dataclasses as _dataclasses

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]


class _Container:
    """The kind of a dict subclass (``OrderedDict``, ``defaultdict``, a model's output
    class) or, when asked for, a dataclass instance: rebuilt as a shallow copy of the object
    met (its type and its other attributes) holding the new leaves. Kinds of one class are
    equal."""

    __slots__ = ("cls", "template", "fields")

    def __init__(self, template, fields: bool):
        self.cls, self.template, self.fields = type(template), template, fields

    def __eq__(self, other):
        return isinstance(other, _Container) and other.cls is self.cls and other.fields == self.fields

    def __hash__(self):
        return hash(self.cls)

    def build(self, keys, values):
        obj = copy.copy(self.template)
        for k, v in zip(keys, values):
            if self.fields:
                object.__setattr__(obj, k, v)  # a frozen dataclass too
            else:
                obj[k] = v
        return obj


def tree_flatten(tree, dataclasses: bool = False):
    """(leaves, spec): the leaves of nested dicts/lists/tuples in order, and how to rebuild
    them; a dict subclass keeps its type. ``dataclasses``: a dataclass instance is a node
    too (its fields), not a leaf."""
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [tree_flatten(tree[k], dataclasses) for k in keys]
        kind = "dict" if type(tree) is dict else _Container(tree, False)
        return [leaf for p in parts for leaf in p[0]], (kind, keys, [p[1] for p in parts])
    if isinstance(tree, (list, tuple)):
        parts = [tree_flatten(v, dataclasses) for v in tree]
        return [leaf for p in parts for leaf in p[0]], (type(tree), None, [p[1] for p in parts])
    if dataclasses and _dataclasses.is_dataclass(tree) and not isinstance(tree, type):
        keys = [f.name for f in _dataclasses.fields(tree)]
        parts = [tree_flatten(getattr(tree, k), dataclasses) for k in keys]
        return [leaf for p in parts for leaf in p[0]], (_Container(tree, True), keys, [p[1] for p in parts])
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
    if isinstance(kind, _Container):
        return kind.build(keys, values)
    if kind is tuple or kind is list:
        return kind(values)
    return kind(*values)  # a namedtuple


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)
