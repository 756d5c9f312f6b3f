"""torch's questions about arbitrary objects and tensors (torch docs, "torch.typename",
"torch.is_storage", "torch.is_distributed", "torch.get_device", "torch._assert")."""

from __future__ import annotations

__all__ = ["typename", "is_storage", "is_distributed", "get_device", "_assert"]


def typename(obj, /) -> str:
    """The qualified name of the type of ``obj`` (torch.typename): ``Tensor.type()`` for a
    tensor ('torch.FloatTensor'), ``module.qualname`` for a class or function, the class's
    for any other object; builtins go without their module ('int', 'list')."""
    from ._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj, /) -> bool:
    """Whether ``obj`` is a storage object. ember's tensors hold arrays, not storage
    objects (``untyped_storage()`` is not offered), so no object is one: always False."""
    return False


def is_distributed(input) -> bool:
    """False: no ember tensor is distributed (torch.is_distributed, a legacy query).

    Raises:
        TypeError: ``input`` is not a Tensor.
    """
    from ._tensor import Tensor
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def get_device(input) -> int:
    """``input.get_device()``: the CUDA device index, -1 on the CPU."""
    return input.get_device()


def _assert(condition, message):
    """``assert condition, message`` as a function, so that a traced program keeps its
    checks as graph nodes (torch._assert); AssertionError with ``message`` when false."""
    assert condition, message


_assert.__module__ = "ember"  # published as ember._assert, the name graphs print (torch._assert)
