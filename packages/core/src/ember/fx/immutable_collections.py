"""The list and dict that hold a Node's ``args`` and ``kwargs``: mutating them in place
would bypass the users bookkeeping, so they refuse it with torch.fx's TypeError
(torch.fx.immutable_collections)."""

from __future__ import annotations

__all__ = ["immutable_list", "immutable_dict"]

_HOW = ("If you are attempting to modify the kwargs or args of a torch.fx.Node object,\n"
        "instead create a new copy of it and assign the copy to the node:\n\n"
        "    new_args = ...  # copy and mutate args\n"
        "    node.args = new_args")


def _no_mutation(self, *args, **kwargs):
    raise TypeError(f"{type(self).__name__!r} object does not support mutation. {_HOW}")


class immutable_list(list):
    """A list whose mutating methods raise ``TypeError``; hashable by its items."""

    __delitem__ = __iadd__ = __imul__ = __setitem__ = _no_mutation
    append = clear = extend = insert = pop = remove = reverse = sort = _no_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (type(self), (tuple(self),))


class immutable_dict(dict):
    """A dict whose mutating methods raise ``TypeError``; hashable by its items."""

    __delitem__ = __ior__ = __setitem__ = _no_mutation
    clear = pop = popitem = setdefault = update = _no_mutation

    def __hash__(self):
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return (type(self), (tuple(self.items()),))
