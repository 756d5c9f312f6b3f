"""ember.device: where a tensor lives ("cpu" or "cuda:N")."""

from __future__ import annotations

import threading

__all__ = ["device", "set_default_device", "get_default_device", "get_device_module"]

_TYPES = ("cpu", "cuda", "meta")


class device:
    """A device, as torch.device: ``device("cpu")``, ``device("cuda:0")``, ``device("cuda", 1)``.

    Usable as a context manager that sets the default device of factory functions.
    Raises RuntimeError for an unknown device string, as torch does.

    ``type_or_str`` is a type ('cpu', 'cuda', 'meta'), a string with an index ('cuda:1'), an
    int (a CUDA index) or a device (returned as it is); ``index`` the device index when the
    string has none."""

    __slots__ = ("type", "index", "_prev")

    def __new__(cls, type_or_str="cpu", index: int | None = None):
        if isinstance(type_or_str, device):
            return type_or_str
        if isinstance(type_or_str, int):
            type_or_str, index = "cuda", type_or_str
        text = str(type_or_str)
        kind, _, idx = text.partition(":")
        if kind not in _TYPES or (idx and not idx.isdigit()):
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {text}")
        if idx:
            if index is not None:
                raise RuntimeError("type (string) must not include an index because index was passed explicitly: "
                                   f"{text}")
            index = int(idx)
        key = (kind, index)
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        self = object.__new__(cls)
        self.type, self.index = kind, index
        _CACHE[key] = self
        return self

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except RuntimeError:
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self):
        stack = _default.__dict__.setdefault("stack", [])
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _default.stack.pop()


_CACHE: dict = {}
_default = threading.local()
CPU = device("cpu")


def default_device() -> device:
    """The device factory functions use: the innermost ``with ember.device(...)``, else what
    ``set_default_device`` chose on this thread, else the CPU."""
    stack = getattr(_default, "stack", None)
    return stack[-1] if stack else getattr(_default, "base", CPU)


def set_default_device(dev) -> None:
    """Make ``dev`` (a device, str or int; None for the CPU) the default device of factory
    functions on this thread, as torch.set_default_device does."""
    _default.base = CPU if dev is None else device(dev)


def get_default_device() -> device:
    """The device factory functions place tensors on when given none: the CPU unless
    ``set_default_device`` or a ``with device(...)`` block on this thread says otherwise
    (torch.get_default_device)."""
    return default_device()


def to_device(obj) -> device:
    """device of an argument that may be None (the default device), a str, an int or a device."""
    if obj is None:
        return default_device()
    return device(obj)


def get_device_module(device=None):
    """The module of a device type (torch.get_device_module): ``ember.cpu`` for "cpu",
    ``ember.cuda`` for "cuda" (whether or not a GPU answers); without ``device``, that of
    the current accelerator, else ``ember.cpu``.

    Raises:
        RuntimeError: ``device`` is neither a device, a str nor None, or names an unknown type.
    """
    import importlib

    from . import accelerator
    if isinstance(device, _device_cls):
        kind = device.type
    elif isinstance(device, str):
        kind = _device_cls(device).type
    elif device is None:
        current = accelerator.current_accelerator()
        kind = "cpu" if current is None else current.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    return importlib.import_module(f"{__package__}.{kind}")


_device_cls = device
