"""The DataLoader's batch pinning walks a batch's containers as torch's does. No tensor can be
pinned without a GPU here, so the leaves are custom batches with their own ``pin_memory``
method, which both libraries ask to pin themselves; torch's function is the oracle."""

import collections

import pytest
import torch.utils.data._utils.pin_memory as torch_pin

from ember.utils.data._pin_memory import pin_memory

Point = collections.namedtuple("Point", "x y")


class Batch:
    """A custom batch: pinning returns a marked copy."""

    def __init__(self, name, pinned=False):
        self.name, self.pinned = name, pinned

    def pin_memory(self):
        return Batch(self.name, pinned=True)

    def __eq__(self, other):
        return isinstance(other, Batch) and (self.name, self.pinned) == (other.name, other.pinned)

    def __repr__(self):
        return f"Batch({self.name!r}, pinned={self.pinned})"


class Frozen(collections.abc.Mapping):
    """A read-only mapping that cannot be rebuilt from a dict (its constructor takes keywords)."""

    def __init__(self, **items):
        self._d = items

    def __getitem__(self, k):
        return self._d[k]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


CASES = {
    "leaf": lambda: Batch("a"),
    "string": lambda: "text",
    "number": lambda: 3,
    "dict": lambda: {"x": Batch("a"), "label": 1, "name": "s"},
    "ordered dict": lambda: collections.OrderedDict(x=Batch("a"), y=[Batch("b")]),
    "defaultdict": lambda: collections.defaultdict(list, x=Batch("a")),
    "namedtuple": lambda: Point(Batch("a"), (Batch("b"), 2)),
    "tuple": lambda: (Batch("a"), Batch("b")),
    "list": lambda: [Batch("a"), {"k": Batch("b")}],
    "deque": lambda: collections.deque([Batch("a"), 1]),
    "read-only mapping": lambda: Frozen(x=Batch("a")),
    "range": lambda: range(3),
}


def _shape(value):
    """The value with its container types spelled out, to compare types as well as contents."""
    if isinstance(value, collections.abc.Mapping):
        return (type(value).__name__, {k: _shape(v) for k, v in value.items()})
    if isinstance(value, (list, tuple, collections.deque)):
        return (type(value).__name__, [_shape(v) for v in value])
    return value


@pytest.mark.parametrize("name", list(CASES))
def test_pins_through_containers_as_torch(name):
    expected = torch_pin.pin_memory(CASES[name]())
    got = pin_memory(CASES[name]())
    assert _shape(got) == _shape(expected)


def test_a_defaultdict_keeps_its_factory():
    got = pin_memory(collections.defaultdict(list, x=Batch("a")))
    assert got["x"] == Batch("a", pinned=True) and got["missing"] == []
