"""Tensor layouts (torch.layout): how a tensor's elements are stored.

``strided`` is every ordinary tensor's (an array with strides); ``sparse_coo`` is
``ember.sparse``'s coordinate format (indices of the nonzeros plus their values).
"""

from __future__ import annotations

__all__ = ["layout", "strided", "sparse_coo"]


class layout:  # noqa: N801  (torch.layout)
    """A layout object (torch.layout): ``ember.strided`` (dense) and ``ember.sparse_coo``;
    compared by identity, printed as ``ember.<name>``, ``name`` being the layout's."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name: str) -> layout:
    return {"strided": strided, "sparse_coo": sparse_coo}[name]


strided = layout("strided")
sparse_coo = layout("sparse_coo")
