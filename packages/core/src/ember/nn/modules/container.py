"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
(torch.nn.modules.container)."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc as container_abcs

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _index(idx, n):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


def _delete_and_renumber(container, idx) -> None:
    """Remove the submodule(s) at ``idx`` and name the rest '0', '1', ... again, as torch does."""
    keys = list(container._modules.keys())
    for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]):
        delattr(container, key)
    items = list(container._modules.values())
    container._modules.clear()
    for i, m in enumerate(items):
        container._modules[str(i)] = m


class Sequential(Module):
    """Modules applied in order: ``Sequential(m1, m2, ...)`` or ``Sequential(OrderedDict)``;
    submodules are named '0', '1', ... (or by the dict's keys)."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_index(idx, len(self))]

    def __setitem__(self, idx, module) -> None:
        key = list(self._modules.keys())[_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx) -> None:
        _delete_and_renumber(self, idx)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        out = Sequential()
        for m in list(self) + list(other):
            out.append(m)
        return out

    def append(self, module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module) -> "Sequential":
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)
        return self

    def extend(self, sequential) -> "Sequential":
        for m in sequential:
            self.append(m)
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of submodules, registered as '0', '1', ...; indexable like a list (a slice gives
    a new ModuleList), with append, extend, insert and deletion that renumbers the rest
    (torch.nn.ModuleList).  ``modules``: an iterable of Modules to start with.  It has no
    forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module) -> None:
        setattr(self, str(_index(idx, len(self))), module)

    def __delitem__(self, idx) -> None:
        _delete_and_renumber(self, idx)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        out = ModuleList()
        for m in list(self) + list(other):
            out.append(m)
        return out

    def append(self, module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        if isinstance(modules, Module) and not isinstance(modules, (ModuleList, Sequential)) or \
                not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def __repr__(self) -> str:
        """Runs of identical-looking modules are shown once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        lines, start = [], 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                if i - start == 1:
                    lines.append(f"({start}): " + _addindent(reprs[start], 2))
                else:
                    lines.append(f"({start}-{i - 1}): {i - start} x " + _addindent(reprs[start], 2))
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of submodules keyed by name (torch.nn.ModuleDict), in insertion order.
    ``modules``: a mapping of names to Modules, or an iterable of ``(name, module)`` pairs
    (ValueError for an element that is not a pair).  It has no forward of its own."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        if hasattr(modules, "items"):
            for k, m in modules.items():
                self[k] = m
        else:
            for j, pair in enumerate(modules):
                if len(pair) != 2:
                    raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
                self[pair[0]] = pair[1]


def _describe(value, typename) -> str:
    """One line of a ParameterList/ParameterDict repr: kind, dtype or type name, size, device."""
    if not isinstance(value, Tensor):
        return "Object of type: " + type(value).__name__
    size = "x".join(str(int(n)) for n in value.shape)
    device = f" ({value.device})" if value.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"{kind} containing: [{typename(value)} of size {size}{device}]"


class ParameterList(Module):
    """A list of parameters, registered under the names '0', '1', ...; plain tensors put
    in it become Parameters, other objects are stored as they are (torch.nn.ParameterList).
    Like torch's, it has no ``insert``.  ``values``: an iterable of tensors (or other objects)
    to start with.  Calling it raises RuntimeError."""

    def __init__(self, values=None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _abs_index(self, idx) -> str:
        return str(_index(idx, len(self)))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._abs_index(idx))

    def __setitem__(self, idx, param) -> None:
        name = self._abs_index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, name, param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value) -> "ParameterList":
        """Add ``value`` at the end (a Tensor becomes a Parameter)."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values) -> "ParameterList":
        """Append every element of the iterable ``values``; TypeError for a Tensor or a non-iterable."""
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): " + _describe(p, lambda t: str(t.dtype)) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters keyed by strings; plain tensors put in it become
    Parameters, other objects are stored as they are (torch.nn.ParameterDict). ``update``
    from an unordered mapping inserts its keys sorted, as torch does.  ``parameters``: a
    mapping of string keys to tensors, or an iterable of ``(key, value)`` pairs, to start with
    (TypeError for a key that is not a str).  Calling it raises RuntimeError."""

    def __init__(self, parameters=None) -> None:
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string "
                            f"(type is '{type(key).__name__}'). Open an issue on github if you need non-string "
                            "keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value) -> None:
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key) -> bool:
        return key in self._keys

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Remove and return the last inserted ``(key, value)``; KeyError when empty."""
        k, _ = self._keys.popitem()
        self._keys[k] = None
        v = self[k]
        del self[k]
        return k, v

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None) -> "ParameterDict":
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Insert or overwrite from a mapping or an iterable of ``(key, value)`` pairs."""
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for k, v in parameters.items():
                self[k] = v
        elif isinstance(parameters, container_abcs.Mapping):
            for k, v in sorted(parameters.items()):
                self[k] = v
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, container_abcs.Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be Iterable; is"
                                    + type(p).__name__)
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length {len(p)}; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self) -> str:
        # printed with ember's prefix where torch prints torch's (Tensor.type() itself returns torch's string)
        return "\n".join(f"  ({k}): " + _describe(p, lambda t: t.type().replace("torch.", "ember.", 1))
                         for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other) -> "ParameterDict":
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other) -> "ParameterDict":
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other) -> "ParameterDict":
        self.update(other)
        return self
