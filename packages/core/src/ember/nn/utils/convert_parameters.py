"""Parameters to one flat vector and back (torch.nn.utils.convert_parameters)."""

from __future__ import annotations

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """The ``parameters`` (an iterable of tensors) flattened and concatenated into one 1-d
    tensor of their total numel (differentiable); TypeError when they sit on different
    devices (torch.nn.utils.parameters_to_vector)."""
    from ...ops.shape import cat
    device, flat = None, []
    for p in parameters:
        device = _check_same_device(p, device)
        flat.append(p.view(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Make each parameter's ``.data`` the next ``numel()`` entries of the 1-d ``vec``
    (views of ``vec``, as torch); TypeError when ``vec`` is not a Tensor, or when the
    ``parameters`` (an iterable of tensors) sit on different devices
    (torch.nn.utils.vector_to_parameters)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device, pointer = None, 0
    for p in parameters:
        device = _check_same_device(p, device)
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n


def _typename(obj) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
