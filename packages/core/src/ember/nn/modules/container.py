"""Containers: Sequential, ModuleList, ModuleDict (torch.nn.modules.container)."""

from __future__ import annotations

import operator
from collections import OrderedDict

from .module import Module, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict"]


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
    """A list of submodules, registered as '0', '1', ...; indexable like a list."""

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
    """An ordered dict of submodules keyed by name."""

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
