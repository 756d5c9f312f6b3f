"""Parameter: a tensor that a Module registers as a learnable parameter (torch.nn.Parameter)."""

from __future__ import annotations

from .._tensor import Tensor, _make

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


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



class UninitializedTensorMixin:
    """A placeholder whose shape is unknown until ``materialize`` gives it one; lazy
    modules hold these until their first forward (torch.nn.parameter.UninitializedTensorMixin)."""

    __slots__ = ()
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate uninitialized memory of ``shape`` (on ``device``, of ``dtype``, by
        default this placeholder's) and turn into a ``cls_to_become``."""
        from ..ops.creation import empty
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self.data = empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, protocol):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param) -> bool:
    """Whether ``param`` is an uninitialized placeholder of a lazy module."""
    return isinstance(param, UninitializedTensorMixin)


def _placeholder(cls, requires_grad, device, dtype):
    from .. import _dtype as D
    from ..ops.creation import empty
    data = empty(0, device=device, dtype=None if dtype is None else D.to_dtype(dtype))
    return Parameter.__new__(cls, data, requires_grad) if issubclass(cls, Parameter) else \
        _as_subclass(cls, data, requires_grad)


def _as_subclass(cls, data, requires_grad):
    t = object.__new__(cls)
    for slot in ("_data", "dtype", "_vc"):
        setattr(t, slot, getattr(data, slot))
    t.grad = t.grad_fn = t._base = t._view_fn = t._acc = None
    t._output_nr = 0
    t._retains_grad = False
    t._requires_grad = False
    if requires_grad:
        t.requires_grad = True
    return t


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet; becomes a Parameter on ``materialize``
    (torch.nn.parameter.UninitializedParameter).  ``requires_grad``: as for Parameter;
    ``device``, ``dtype``: those ``materialize`` uses by default.  Its shape cannot be read
    (RuntimeError) until then."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet; becomes a Tensor on ``materialize``
    (torch.nn.parameter.UninitializedBuffer).  ``requires_grad``: False by default;
    ``device``, ``dtype``: those ``materialize`` uses by default.  Its shape cannot be read
    (RuntimeError) until then."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass
