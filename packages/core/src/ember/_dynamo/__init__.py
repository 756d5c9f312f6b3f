"""torch._dynamo's public names on ember's compiler: ``config``, ``explain``, ``reset``,
``disable``, ``mark_dynamic``, ``list_backends``, ``exc``."""

from __future__ import annotations

from ..compiler import allow_in_graph, disable, is_compiling, list_backends, reset
from . import config, exc
from ._explain import ExplainOutput, explain

__all__ = ["config", "exc", "explain", "ExplainOutput", "reset", "disable", "mark_dynamic", "mark_static",
           "maybe_mark_dynamic", "list_backends", "allow_in_graph", "is_compiling"]


def mark_dynamic(t, index, *, hint_override=None, min=None, max=None, specialize_on=None) -> None:  # noqa: A002
    """Mark dimension(s) ``index`` of tensor ``t`` dynamic (torch._dynamo.mark_dynamic): a
    compiled function called with ``t`` records that dim's size as symbolic (when it is 2 or
    more), and its recording then serves every size of that dim (unless
    ``compile(dynamic=False)``). ``min``/``max``/``hint_override``/``specialize_on`` are
    accepted and not used. IndexError for a dimension ``t`` does not have."""
    dims = {index} if isinstance(index, int) else set(index)
    ndim = t.dim()
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {d})")
    _set_marks(t, dynamic_indices(t) | {d % ndim for d in dims})


maybe_mark_dynamic = mark_dynamic


def mark_static(t, index=None) -> None:
    """Undo ``mark_dynamic`` on tensor ``t`` for ``index`` (an int or a list of dims; every
    dimension when None), so those dims are specialized again (torch._dynamo.mark_static)."""
    _set_marks(t, set() if index is None else dynamic_indices(t) - ({index} if isinstance(index, int) else set(index)))


_MARKS: dict = {}  # id(tensor) -> marked dims (Tensor has __slots__; entries leave with the tensor)


def _set_marks(t, dims: set) -> None:
    import weakref
    if id(t) not in _MARKS:
        weakref.finalize(t, _MARKS.pop, id(t), None)
    _MARKS[id(t)] = dims


def dynamic_indices(t) -> set:
    """The dimensions of ``t`` marked dynamic."""
    return set(_MARKS.get(id(t), ()))
