"""The Tensor: an array plus autograd state. No math here: methods forward to ``ops``."""

from __future__ import annotations

import numpy

from . import _dtype as D
from . import _layout
from ._device import CPU

__all__ = ["Tensor", "Size"]


class Size(tuple):
    """torch.Size: a tuple of ints with ``numel()``, made from an ``iterable`` of ints (a
    tensor's ``shape``); slicing gives a Size."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"ember.Size([{', '.join(map(str, self))}])"

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r


class Tensor:
    """A multi-dimensional array on a device, with define-by-run autograd.

    Holds the backend array (a numpy or cupy array, possibly a view of a base tensor's
    array), its ember dtype, and the autograd state: ``requires_grad``, ``grad``,
    ``grad_fn`` and a version counter shared by every view of the same memory.
    """

    __slots__ = ("_data", "dtype", "_requires_grad", "grad", "grad_fn", "_output_nr", "_vc",
                 "_base", "_view_fn", "_acc", "_retains_grad", "__weakref__")

    _vmap_commit = None  # vmap's batched tensors write in-place results through their batch

    # ndarray + Tensor hands the op to ember instead of numpy broadcasting over objects.
    __array_ufunc__ = None
    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        raise TypeError("use ember.tensor(data) or a factory such as ember.zeros(...) to make a tensor")

    # ---- metadata -------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.dtype.itemsize * int(self._data.size)

    @property
    def device(self):
        if type(self._data) is numpy.ndarray:
            return CPU
        from .backends import backend_of_array
        return backend_of_array(self._data).device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        """Whether this tensor is on the meta device (a shape and dtype, no data)."""
        return self.device.type == "meta"

    is_sparse = False  # ember.sparse's tensors say True

    @property
    def layout(self):
        return _layout.strided

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        from .sparse import to_sparse
        return to_sparse(self, sparse_dim, layout=layout, blocksize=blocksize, dense_dim=dense_dim)

    def to_sparse_coo(self):
        from .sparse import to_sparse
        return to_sparse(self)

    def sparse_mask(self, mask):
        from .sparse import sparse_mask
        return sparse_mask(self, mask)

    def to_dense(self, dtype=None, *, masked_grad=None):
        return self if dtype is None else self.to(dtype)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_distributed(self) -> bool:
        return False  # no ember tensor is (torch's legacy query)

    def get_device(self) -> int:
        d = self.device
        return -1 if d.type == "cpu" else d.index

    def ndimension(self) -> int:
        return self._data.ndim

    def dim_order(self, *, ambiguity_check=False) -> tuple:
        """The dims from outermost to innermost in memory (torch.Tensor.dim_order): sorted by
        stride, a size-1 or zero-stride dim keeping its place.  ``ambiguity_check=True``:
        RuntimeError when another order would describe the memory as well (a size-1 dim,
        two equal strides).  TypeError for an ``ambiguity_check`` that is not a bool (ember
        has no memory formats to list)."""
        if not isinstance(ambiguity_check, bool):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
        return _dim_order(tuple(self._data.shape), self.stride(), self.is_contiguous(), ambiguity_check)

    def stride(self, dim: int | None = None):
        """Strides in elements, as torch counts them (numpy counts bytes)."""
        arr = self._data
        item = self.dtype.itemsize
        strides = tuple(s // item for s in (arr.strides if type(arr) is numpy.ndarray
                                            else _backend(arr).byte_strides(arr)))
        if any(n == 1 for n in self._data.shape):
            # numpy may give size-1 dims any stride; torch gives the contiguous one
            strides = tuple(_contiguous_strides(self._data.shape)[i] if n == 1 else s
                            for i, (s, n) in enumerate(zip(strides, self._data.shape)))
        return strides if dim is None else strides[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        """Offset of the first element from the start of the base tensor's memory, in elements."""
        if self._base is None:
            return 0
        return (_address(self._data) - _address(self._base._data)) // self.dtype.itemsize

    def data_ptr(self) -> int:
        return _address(self._data)

    def const_data_ptr(self) -> int:
        return _address(self._data)

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie densely in row-major order, or in ``memory_format``'s order
        (``ember.channels_last``: [N, C, H, W] indexed, NHWC in memory)."""
        if memory_format is not None and memory_format.name in ("channels_last", "channels_last_3d"):
            from ._memory_format import channels_last_strides
            if self.ndim != (4 if memory_format.name == "channels_last" else 5):
                return False
            shape = tuple(self.shape)
            return all(n == 1 or s == e for n, s, e in zip(shape, self.stride(), channels_last_strides(shape)))
        arr = self._data
        c = arr.flags.c_contiguous if type(arr) is numpy.ndarray else _backend(arr).is_c_contiguous(arr)
        return c or arr.size <= 1 or self.stride() == _contiguous_strides(arr.shape)

    # ---- autograd state -------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            if not value:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use a "
                    "computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach().")
            return
        if value and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if value and type(self._vc) is not list and not _STATE.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        if type(self._vc) is not list:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    def is_inference(self) -> bool:
        """Whether this tensor was made under ``inference_mode()`` (or is a view of one):
        outside inference mode it cannot be changed in place, require grad or be saved for
        backward (torch's inference tensors)."""
        return type(self._vc) is not list

    @property
    def data(self) -> "Tensor":
        """This tensor's values without autograd history; shares memory, not the version counter."""
        return _make(self._data, self.dtype)

    @data.setter
    def data(self, other: "Tensor") -> None:
        self._data, self.dtype = other._data, other.dtype

    def detach(self) -> "Tensor":
        """A tensor sharing memory and version counter, outside the graph."""
        t = _make(self._data, self.dtype)
        t._vc = self._vc
        return t

    def share_memory_(self) -> "Tensor":
        """Move this tensor's memory into shared memory (in place) so that other processes
        receiving it through ``ember.multiprocessing`` use the same memory; a no-op when it
        already is shared or lives on a GPU. See ``multiprocessing.reductions.share_memory_``."""
        from .multiprocessing.reductions import share_memory_
        return share_memory_(self)

    def is_shared(self) -> bool:
        """Whether this tensor's memory is shared between processes (GPU tensors: True)."""
        from .multiprocessing.reductions import is_shared
        return is_shared(self)

    def detach_(self) -> "Tensor":
        self.grad_fn, self._requires_grad = None, False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        if self._retains_grad:
            return
        self._retains_grad = True
        import weakref
        ref = weakref.ref(self)

        def keep(grad):
            t = ref()
            if t is not None:
                if t.grad is None:
                    t.grad = grad.detach() if not _STATE.enabled else grad
                else:
                    t.grad = t.grad + grad
        self.grad_fn._add_tensor_hook(self._output_nr, keep, last=True)

    @property
    def retains_grad(self) -> bool:
        return bool(self._retains_grad)

    def register_hook(self, hook):
        """``hook(grad)`` runs when this tensor's gradient is computed; it may return a new one."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        from .autograd.graph import edge
        node, nr = edge(self)
        return node._add_tensor_hook(nr, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(self)`` runs after a backward pass has accumulated into this leaf's
        ``.grad`` (the optimizer-in-backward pattern); it must return None.  RuntimeError
        for a tensor that does not require grad or is not a leaf."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        from .autograd.graph import grad_accumulator
        return grad_accumulator(self)._add_post_accumulate_hook(hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (see ember.autograd.backward)."""
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    @property
    def _base_tensor(self):
        return self._base

    # ---- conversion -----------------------------------------------------------------
    def numpy(self, *, force: bool = False):
        """The values as a numpy array sharing memory (CPU tensors only)."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if type(self._data) is not numpy.ndarray:
            bk = _backend(self._data)
            if bk.device.type != "cpu" and not force:
                raise TypeError(f"can't convert {bk.device.type}{':0' if bk.device.type == 'cuda' else ''} device "
                                f"type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
            return bk.to_host(self._data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        arr = self._data if type(self._data) is numpy.ndarray else _backend(self._data).to_host(self._data)
        return arr if dtype is None else arr.astype(dtype)

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def item(self):
        """The single value as a Python number; RuntimeError unless numel() == 1."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        arr = self._data
        v = arr.reshape(()).item() if type(arr) is numpy.ndarray else _backend(arr).item(arr)
        return float(v) if self.dtype.name == "bfloat16" else v

    def tolist(self):
        if self.dtype.name == "bfloat16":
            return numpy.asarray(self.__array__(), dtype=numpy.float32).tolist()
        return self.__array__().tolist()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __contains__(self, element) -> bool:
        """``element in tensor``: some entry equals it (a number or a tensor)."""
        if not isinstance(element, (Tensor, int, float, bool)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool((self == element).any().item())

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.dtype.is_complex or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and spec:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        new = _make(self._data.copy() if type(self._data) is numpy.ndarray else _backend(self._data).copy(self._data),
                    self.dtype)
        new._requires_grad = self._requires_grad
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        if type(self) is not Tensor:
            new = type(self)._from_tensor(new)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self.__array__().copy(), self.dtype.name, self._requires_grad))

    def pin_memory(self, device=None) -> "Tensor":
        """A copy in page-locked host memory, for fast copies to the GPU (cupy's pinned
        memory). Without a GPU, torch's RuntimeError."""
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self.is_pinned():
            return self
        import cupyx
        pinned = cupyx.empty_pinned(self._data.shape, self._data.dtype)
        pinned[...] = self._data
        return _make(pinned, self.dtype)

    def is_pinned(self, device=None) -> bool:
        """Whether the data lives in page-locked host memory (``pin_memory``)."""
        from . import cuda
        base = getattr(self._data, "base", None)
        return cuda._cupy_module() is not None and type(base).__name__ == "PinnedMemoryPointer"

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """torch's type string ('torch.FloatTensor') without ``dtype``; else this tensor
        converted to ``dtype``: a dtype, a type string or a legacy type such as FloatTensor."""
        from . import _legacy
        if dtype is None:
            return _legacy.type_name(self)
        if isinstance(dtype, str):
            dtype, device = _legacy.dtype_of_type_name(dtype)
            return self.to(device=device, dtype=dtype, non_blocking=non_blocking)
        if isinstance(dtype, _legacy._TensorTypeMeta):
            return self.to(device=dtype.device_type, dtype=dtype.dtype, non_blocking=non_blocking)
        return self.to(dtype, non_blocking=non_blocking)

    # ---- operators ------------------------------------------------------------------
    def __add__(self, other): return _ops.add(self, other)
    def __radd__(self, other): return _ops.add(_nd(other), self)
    def __iadd__(self, other): return _ops.add_(self, other)
    def __sub__(self, other): return _ops.sub(self, other)
    def __rsub__(self, other): return _ops.rsub(self, _nd(other))
    def __isub__(self, other): return _ops.sub_(self, other)
    def __mul__(self, other): return _ops.mul(self, other)
    def __rmul__(self, other): return _ops.mul(_nd(other), self)
    def __imul__(self, other): return _ops.mul_(self, other)
    def __truediv__(self, other): return _ops.div(self, other)
    def __rtruediv__(self, other): return _ops.div(_nd(other), self)
    def __itruediv__(self, other): return _ops.div_(self, other)
    def __floordiv__(self, other): return _ops.floor_divide(self, other)
    def __rfloordiv__(self, other): return _ops.floor_divide(_nd(other), self)
    def __mod__(self, other): return _ops.remainder(self, other)
    def __rmod__(self, other): return _ops.remainder(_nd(other), self)
    def __pow__(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(_nd(other), self)
    def __ipow__(self, other): return _ops.pow_(self, other)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(_nd(other), self)
    def __neg__(self): return _ops.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _ops.abs(self)
    def __invert__(self): return _ops.bitwise_not(self)
    def __and__(self, other): return _ops.bitwise_and(self, other)
    def __rand__(self, other): return _ops.bitwise_and(self, other)
    def __or__(self, other): return _ops.bitwise_or(self, other)
    def __ror__(self, other): return _ops.bitwise_or(self, other)
    def __xor__(self, other): return _ops.bitwise_xor(self, other)
    def __rxor__(self, other): return _ops.bitwise_xor(self, other)
    def __lshift__(self, other): return _ops.bitwise_left_shift(self, other)
    def __rshift__(self, other): return _ops.bitwise_right_shift(self, other)
    def __eq__(self, other): return _ops.eq(self, other)
    def __ne__(self, other): return _ops.ne(self, other)
    def __lt__(self, other): return _ops.lt(self, other)
    def __le__(self, other): return _ops.le(self, other)
    def __gt__(self, other): return _ops.gt(self, other)
    def __ge__(self, other): return _ops.ge(self, other)
    def __getitem__(self, index): return _ops.getitem(self, index)
    def __setitem__(self, index, value): _ops.setitem(self, index, value)

    @property
    def real(self):
        """The real part (a view for complex tensors)."""
        return _ops.real(self)

    @property
    def imag(self):
        """The imaginary part of a complex tensor (a view)."""
        return _ops.imag(self)

    @property
    def T(self):
        return _ops.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        return _ops.transpose(self, -2, -1)

    @property
    def mH(self):
        """The conjugate transpose of the last two dims (torch.Tensor.mH)."""
        return _ops.adjoint(self)

    @property
    def H(self):
        """The conjugate transpose of a matrix (torch.Tensor.H; 2-d tensors only)."""
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
        return _ops.adjoint(self)

    def polygamma(self, n):
        """The ``n``-th derivative of digamma at each element (torch.Tensor.polygamma)."""
        return _ops.polygamma(n, self)

    def as_subclass(self, cls):
        """An alias of ``self`` (same memory and version counter, in the graph through an
        AliasBackward0 node) whose class is ``cls``, a subclass of Tensor; TypeError
        otherwise."""
        if not isinstance(cls, type):
            raise TypeError(f"cls must be a type (got {type(cls).__name__})")
        if not issubclass(cls, Tensor):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                            "possible. Make sure your class inherits from Tensor.")
        alias = _ops.getitem(self, Ellipsis)
        out = object.__new__(cls)
        for slot in Tensor.__slots__[:-1]:
            setattr(out, slot, getattr(alias, slot))
        return out

    def new(self, *args, **kwargs):
        """The legacy constructor, with ``self``'s dtype and device (see ``_legacy.new``)."""
        from ._legacy import new
        return new(self, *args, **kwargs)

    @classmethod
    def _from_tensor(cls, t):
        return t


def _nd(x):
    """A numpy array met by a reflected operator (``ndarray + tensor``) as a tensor."""
    return _make(x, D.from_numpy_dtype(x.dtype)) if type(x) is numpy.ndarray else x


def _contiguous_strides(shape) -> tuple:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _dim_order(shape, strides, contiguous, check) -> tuple:
    """Tensor.dim_order's answer: an insertion sort of the dims from innermost outwards,
    where a dim moves inwards past another only when it has the smaller stride (or the
    same stride and the smaller size); zero strides and ties compare as unordered."""
    ndim = len(shape)
    if check and (any(n == 1 for n in shape) or any(a == b for a, b in zip(strides, strides[1:]))):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    if ndim <= 1:
        return tuple(range(ndim))
    if contiguous:
        return tuple(range(ndim))

    def at_least(a, b):
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def compare(a, b):  # > 0: dim a belongs outside dim b
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if at_least(shape[b], shape[a]) else 1
        if at_least(sb, sa):
            return -1
        return 1 if at_least(sa, sb) else 0

    perm = list(range(ndim - 1, -1, -1))  # innermost first
    for i in range(1, ndim):
        j = i
        for k in range(i - 1, -1, -1):
            c = compare(perm[k], perm[j])
            if c > 0:
                perm[k], perm[j] = perm[j], perm[k]
                j = k
            elif c < 0:
                break
    if check and any(compare(perm[k], perm[k + 1]) != -1 for k in range(ndim - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


def _address(arr) -> int:
    if type(arr) is numpy.ndarray:
        return arr.__array_interface__["data"][0]
    return _backend(arr).address(arr)


def _backend(arr):
    from .backends import backend_of_array
    return backend_of_array(arr)


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _make(arr, dtype) -> Tensor:
    """A fresh tensor around ``arr`` (no checks: the hot path of every op)."""
    t = object.__new__(Tensor)
    t._data = arr
    t.dtype = dtype
    t._requires_grad = False
    t.grad = t.grad_fn = t._base = t._view_fn = t._acc = None
    t._output_nr = 0
    t._retains_grad = False
    t._vc = [0]
    return t


class InferenceVersion(list):
    """The version counter of an inference tensor (made under ``inference_mode()``): a mark
    that the in-place, requires-grad and saved-for-backward checks look for."""


def _make_under_inference(arr, dtype) -> Tensor:
    """``_make`` while some thread is in inference mode (see ``inference_tensors``). Its body
    repeats ``_make``'s on purpose: the swap exchanges whole code objects, and a shared helper
    would put a call on the path of every op."""
    t = object.__new__(Tensor)
    t._data = arr
    t.dtype = dtype
    t._requires_grad = False
    t.grad = t.grad_fn = t._base = t._view_fn = t._acc = None
    t._output_nr = 0
    t._retains_grad = False
    t._vc = InferenceVersion((0,)) if _STATE.inference else [0]
    return t


_PLAIN_MAKE = _make.__code__
_INFERENCE_THREADS = [0]


def inference_tensors(entering: bool) -> None:
    """Count a thread into (or out of) inference mode. While any thread is in it, ``_make``
    runs the version that marks the tensors made under it; otherwise the plain one, so
    the hot path pays nothing (the code object is swapped, reaching every caller)."""
    _INFERENCE_THREADS[0] += 1 if entering else -1
    _make.__code__ = _make_under_inference.__code__ if _INFERENCE_THREADS[0] else _PLAIN_MAKE


def _rebuild(arr, dtype_name, requires_grad):
    t = _make(arr, D._dtype_by_name(dtype_name))
    t._requires_grad = requires_grad
    return t


# Tensor methods that are the functions of the same name with the tensor first.
METHODS = """
abs abs_ neg neg_ negative exp exp_ log log_ log1p log2 log10 expm1 sqrt sqrt_ rsqrt sin cos tan tanh tanh_
sigmoid sigmoid_ relu relu_ pow pow_ clamp clamp_ clip clip_ clamp_min clamp_max where maximum minimum
add add_ sub sub_ mul mul_ div div_ true_divide floor_divide remainder fmod sign square reciprocal floor ceil
round trunc eq ne lt le gt ge eq_ logical_not logical_and logical_or bitwise_not bitwise_and bitwise_or
bitwise_xor isnan isinf isfinite nan_to_num lerp addcmul addcdiv equal isclose allclose
sum mean prod max min amax amin argmax argmin var std logsumexp norm all any cumsum
view view_as reshape reshape_as flatten unflatten squeeze unsqueeze permute transpose t expand expand_as repeat
split chunk unbind contiguous narrow select movedim flip
gather scatter scatter_ scatter_add scatter_add_ index_select masked_fill masked_fill_ index_put_ index_put
sort argsort topk matmul mm bmm mv dot
to float double half bfloat16 long int short bool byte char cfloat cdouble type_as cpu cuda clone copy_ fill_ zero_
new_tensor new_zeros new_ones new_full new_empty uniform_ normal_ bernoulli_ softmax log_softmax
asin acos atan sinh cosh asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh erf erfc erfinv lgamma
digamma i0 sinc logit frac sgn deg2rad rad2deg positive atan2 arctan2 hypot copysign xlogy logaddexp logaddexp2
float_power exp2 roll rot90 fliplr flipud tile repeat_interleave tril triu diagonal diag_embed diag trace ravel
unfold as_strided tensor_split hsplit vsplit dsplit broadcast_to
aminmax median nanmedian kthvalue mode quantile nanquantile nanmean cumprod cummax cummin logcumsumexp diff unique
unique_consecutive bincount histc nansum count_nonzero amax amin masked_select argwhere
take take_along_dim index_add index_copy index_fill scatter_reduce masked_scatter nonzero outer inner ger vdot
kron cross addmm addmv addr addbmm baddbmm mvlgamma isposinf isneginf isreal bitwise_left_shift bitwise_right_shift
multiply divide subtract det inverse logdet matrix_power pinverse slogdet
exponential_ geometric_ log_normal_ cauchy_ random_ conj conj_physical resolve_conj angle is_complex stft istft
fmax fmin frexp ldexp gcd lcm heaviside nextafter signbit
cov corrcoef histogram dist msort
narrow_copy split_with_sizes unsafe_chunk unsafe_split unsafe_split_with_sizes as_strided_scatter diagonal_scatter
select_scatter slice_scatter
lu lu_solve cholesky_solve cholesky_inverse triangular_solve geqrf ormqr orgqr adjoint matrix_exp symeig eig
resolve_neg
fill_diagonal_ put put_ index_reduce index_reduce_ renorm renorm_ resize_ resize_as_ sum_to_size new_empty_strided
is_nonzero is_same_size is_signed is_conj is_neg apply_ map_ map2_
""".split()


def _install_methods() -> None:
    # A plain function stored on the class is a method: no wrapper on the hot path.
    for name in METHODS:
        if name not in Tensor.__dict__:
            fn = getattr(_ops, name)
            setattr(Tensor, name, getattr(fn, "__wrapped__", fn))  # the op itself, not its out= wrapper
    from .ops.inplace_forms import forms
    for name, method in forms().items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, method)


# Imported last: these modules import Tensor from here.
from . import ops as _ops  # noqa: E402
from .autograd.grad_mode import STATE as _STATE  # noqa: E402

_install_methods()
