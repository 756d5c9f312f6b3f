"""vmap's batched tensors and levels.

Inside ``vmap(f)``, ``f`` sees each mapped input as a ``BatchedTensor``: a tensor whose
metadata (shape, dim, size, strides) are one example's, wrapping the whole batch
(``_full``, the batch at dimension ``_bdim``) for one vmap *level*. Nested vmaps nest
wrappers: a level's ``_full`` may itself be batched at an outer level. Ops reach the
batch only through the batching rules on the dispatch seam; code that reads a batched
tensor's array directly (an op the seam does not see) is stopped with an error rather
than quietly computing on part of the batch.
"""

from __future__ import annotations

import threading

from .._tensor import Size, Tensor

__all__ = ["BatchedTensor", "Level", "active_levels", "from_base", "is_batched_at", "to_base", "unwrap", "wrap"]


class Level:
    """One running ``vmap`` call: its batch size and randomness mode."""

    __slots__ = ("id", "size", "randomness")

    def __init__(self, id: int, size: int, randomness: str):
        self.id, self.size, self.randomness = id, size, randomness


class _Levels(threading.local):
    def __init__(self):
        self.stack: list[Level] = []
        self.counter = 0


_LEVELS = _Levels()


def active_levels() -> list[Level]:
    """The vmap levels running on this thread, outermost first."""
    return _LEVELS.stack


def push_level(size: int, randomness: str) -> Level:
    _LEVELS.counter += 1
    level = Level(_LEVELS.counter, size, randomness)
    _LEVELS.stack.append(level)
    return level


def pop_level(level: Level) -> None:
    _LEVELS.stack.remove(level)


def _no_data(self):
    raise RuntimeError("vmap: a function without batching support read a batched tensor's values directly. Call "
                       "ember's ops on the tensor (they are batched), or compute outside vmap.")


def _vmap_item_error(*_):
    raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
                       ".item() on a Tensor, please try to rewrite what you're doing with other operations.")


def _vmap_control_flow_error(*_):
    raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. "
                       "We don't support that: compute both branches and select with ember.where.")


class BatchedTensor(Tensor):
    """One example's view of a batch (see the module docstring)."""

    __slots__ = ("_full", "_bdim", "_level")
    _data = property(_no_data)
    _vmap_commit = None  # set below: in-place results are written through the batch

    @property
    def _requires_grad(self):
        return self._full._requires_grad

    @_requires_grad.setter
    def _requires_grad(self, value):
        if value != self._full._requires_grad:
            self._full._requires_grad = value

    @property
    def grad_fn(self):
        return self._full.grad_fn

    @grad_fn.setter
    def grad_fn(self, value):
        if value is not None:
            raise RuntimeError("vmap: a batched tensor's history is its batch's")

    # ---- one example's metadata --------------------------------------------------------
    @property
    def shape(self) -> Size:
        full = self._full.shape
        return Size(full[:self._bdim] + full[self._bdim + 1:])

    def size(self, dim: int | None = None):
        shape = self.shape
        if dim is None:
            return shape
        n = max(len(shape), 1)
        if not -n <= dim < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
        return shape[dim % n]

    @property
    def ndim(self) -> int:
        return self._full.ndim - 1

    def dim(self) -> int:
        return self._full.ndim - 1

    def numel(self) -> int:
        return self.shape.numel()

    nelement = numel

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    @property
    def device(self):
        return self._full.device

    @property
    def is_cuda(self) -> bool:
        return self._full.is_cuda

    @property
    def is_cpu(self) -> bool:
        return self._full.is_cpu

    def get_device(self) -> int:
        return self._full.get_device()

    def stride(self, dim: int | None = None):
        full = self._full.stride()
        strides = full[:self._bdim] + full[self._bdim + 1:]
        return strides if dim is None else strides[dim]

    def is_contiguous(self, memory_format=None) -> bool:
        from .._tensor import _contiguous_strides
        shape = self.shape
        return all(n == 1 or s == c for n, s, c in zip(shape, self.stride(), _contiguous_strides(shape)))

    @property
    def is_leaf(self) -> bool:
        return self._full.is_leaf

    @property
    def _version(self) -> int:
        return self._full._version

    @property
    def data(self):
        return wrap(self._full.data, self._bdim, self._level)

    def detach(self):
        return wrap(self._full.detach(), self._bdim, self._level)

    def requires_grad_(self, requires_grad: bool = True):
        self._full.requires_grad_(requires_grad)
        return self

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level.id}, bdim={self._bdim}, value=\n{self._full!r}\n)"

    def backward(self, *args, **kwargs):
        raise RuntimeError("vmap: backward() inside vmap is not supported: use ember.func.grad or "
                           "ember.autograd.grad inside the vmapped function")

    item = tolist = numpy = __array__ = __float__ = __int__ = __complex__ = __index__ = _vmap_item_error
    __bool__ = _vmap_control_flow_error

    def __reduce_ex__(self, protocol):
        raise RuntimeError("vmap: a batched tensor cannot be pickled or copied out of vmap")

    __deepcopy__ = __reduce_ex__


def _commit(self, result):
    """``self`` takes ``result``'s values in place (an in-place form computed out of place)."""
    self.copy_(result)
    return self


BatchedTensor._vmap_commit = _commit


def wrap(full: Tensor, bdim: int, level: Level) -> BatchedTensor:
    t = object.__new__(BatchedTensor)
    t._full, t._bdim, t._level = full, bdim, level
    t.dtype = full.dtype
    t.grad = t._base = t._view_fn = t._acc = None
    t._output_nr = 0
    t._retains_grad = False
    t._vc = full._vc
    return t


def is_batched_at(x, level: Level) -> bool:
    return type(x) is BatchedTensor and x._level is level


def unwrap(x, level: Level):
    """``x``'s batch with the batch dimension first, if ``x`` is batched at ``level``; else ``x``."""
    if type(x) is BatchedTensor and x._level is level:
        return x._full if x._bdim == 0 else x._full.movedim(x._bdim, 0)
    return x


def to_base(x: Tensor, levels: list[Level]) -> Tensor:
    """``x`` as a plain tensor holding every level's batch, outermost level's first
    (``[B_outer, ..., B_inner, *example]``); a level ``x`` is not batched at is expanded."""
    for level in reversed(levels):
        if is_batched_at(x, level):
            x = unwrap(x, level)
        else:
            x = x.unsqueeze(0).expand(level.size, *x.shape)
    return x


def from_base(base: Tensor, levels: list[Level]) -> Tensor:
    """The inverse of ``to_base``: ``base`` batched at every level, batch dimensions first."""
    for level in levels:
        base = wrap(base, 0, level)
    return base
