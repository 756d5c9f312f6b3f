"""Parameter: a tensor that a Module registers as a learnable parameter (torch.nn.Parameter)."""

from __future__ import annotations

from .._tensor import Tensor, _make

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A Tensor that, assigned as a Module attribute, joins the module's ``parameters()``.

    ``Parameter(data)`` shares ``data``'s memory and requires grad unless
    ``requires_grad=False``; ``Parameter()`` holds an empty float tensor."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        p = object.__new__(cls)
        p._data = data._data
        p.dtype = data.dtype
        p.grad = p.grad_fn = p._base = p._view_fn = p._acc = None
        p._output_nr = 0
        p._retains_grad = False
        p._vc = data._vc
        p._requires_grad = False
        if requires_grad:
            p.requires_grad = True
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    @classmethod
    def _from_tensor(cls, t):
        return cls(t, t._requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (_make(self._data.copy(), self.dtype), self._requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)

