"""What every op shares: making result tensors, dtype promotion of operands, gradient
fitting (the one place broadcast gradients are summed back), views and in-place commits."""

from __future__ import annotations

import sys

import numpy

from .. import _dtype as D
from .._tensor import Tensor, _make
from ..autograd import grad_mode
from ..autograd.graph import record
from ..backends import NUMPY, _array_types, backend_of_array

_ndarray = numpy.ndarray
_STATE = grad_mode.STATE


def be(t: Tensor):
    """The backend holding ``t``."""
    return NUMPY if type(t._data) is _ndarray else backend_of_array(t._data)


def wrap(arr, dtype=None) -> Tensor:
    """A new tensor around ``arr``; 0-d numpy results (numpy scalars) become arrays and
    ``arr`` is cast to ``dtype`` when given."""
    if type(arr) is not _ndarray:
        if type(arr) in _array_types or hasattr(arr, "__cuda_array_interface__"):
            b = backend_of_array(arr)
            return _make(arr, b.dtype_of(arr)) if dtype is None else _make(b.astype(arr, dtype), dtype)
        arr = numpy.asarray(arr)  # a numpy (or ml_dtypes) scalar
    if dtype is None:
        return _make(arr, D.from_numpy_dtype(arr.dtype))
    if arr.dtype != dtype.np:
        arr = arr.astype(dtype.np)
    return _make(arr, dtype)


def needs_grad(*tensors) -> bool:
    """True when grad mode is on and some argument is a tensor that requires grad."""
    if not _STATE.enabled:
        return False
    for t in tensors:
        if type(t) is not int and type(t) is not float and getattr(t, "_requires_grad", False):
            return True
    return False


def to_tensor_like(x, like: Tensor, dtype=None) -> Tensor:
    """``x`` (tensor or Python number) as a tensor on ``like``'s device."""
    if isinstance(x, Tensor):
        return x
    dtype = dtype or D.result_type(x)
    b = be(like)
    return _make(b.xp.asarray(x, dtype=b.storage_dtype(dtype)), dtype)


def operand(x, dtype: D.dtype, backend=NUMPY):
    """The array (or Python number) of ``x`` in ``dtype``, for ``backend``'s array module."""
    if isinstance(x, Tensor):
        arr = x._data
        return arr if arr.dtype is dtype.np else be(x).astype(arr, dtype)
    if backend.mixed_kinds:
        if dtype.name == "bfloat16" or (isinstance(x, float) and not dtype.is_floating_point
                                        and not dtype.is_complex):
            return backend.xp.asarray(x, dtype=dtype.np)
        if type(x) is int and dtype._category == 1 and dtype is not D.int64:
            return backend.xp.asarray(x).astype(dtype.np)  # wraps around like torch (numpy would raise)
        return x
    # the standard mixes a Python number only with an array of the same kind
    return backend.astype(backend.xp.asarray(x), dtype)


def check_same_device(a, b, op: str) -> None:
    if isinstance(a, Tensor) and isinstance(b, Tensor) and type(a._data) is not type(b._data):
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{a.device} and {b.device}! (when checking arguments for {op})")


def sum_to(g: Tensor, shape) -> Tensor:
    """Sum ``g`` over the dimensions broadcasting added or stretched to reach ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(
        i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    from .reduction import sum as _sum
    out = _sum(g, dims, keepdim=True) if dims else g
    if lead:
        out = out.reshape(shape)
    return out


def fit_grad(g: Tensor, shape, dtype) -> Tensor:
    """Bring gradient ``g`` to its input's shape and dtype: sum broadcast dims, cast."""
    if g._data.shape != shape:
        try:
            g = sum_to(g, shape)
        except Exception:
            raise RuntimeError(f"Function returned an invalid gradient - got shape {list(g.shape)} "
                               f"but expected shape compatible with {list(shape)}") from None
    if g.dtype is not dtype and dtype._category >= 2:
        if g.dtype.is_complex and not dtype.is_complex:  # a real input takes the real part
            from .complex_ops import real
            g = real(g)
        g = g.to(dtype)
    return g


_PLAIN_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def fit_grad_array(g, shape, dtype):
    """``fit_grad`` for a raw gradient array: numpy float32/float64 are summed and cast
    here, anything else goes through the tensor form (low-precision accumulation, other
    array modules)."""
    if not isinstance(g, (_ndarray, numpy.generic)) or g.dtype not in _PLAIN_FLOATS \
            or dtype.np not in _PLAIN_FLOATS:
        return fit_grad(wrap(g), shape, dtype)._data
    if g.shape != shape:
        lead = g.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(
            i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
        if lead < 0 or any(s != 1 and g.shape[i + lead] != s for i, s in enumerate(shape)):
            raise RuntimeError(f"Function returned an invalid gradient - got shape {list(g.shape)} "
                               f"but expected shape compatible with {list(shape)}")
        g = numpy.asarray(g.sum(axis=dims, keepdims=True) if dims else g).reshape(shape)
    if g.dtype is not dtype.np:
        g = g.astype(dtype.np)
    return g


def accumulate_grad_array(var: Tensor, g) -> None:
    """AccumulateGrad for a raw gradient array (no graph of the gradient is built).

    The first gradient becomes ``.grad`` without a copy when nothing else can see it, as
    torch steals a gradient it holds the only reference to: a contiguous, writeable
    numpy array that owns its memory, referenced only by the engine's buffer (the
    engine drops its own references before calling here).  Otherwise it is copied, since
    a rule may hand one array to several inputs."""
    if var.grad is None:
        if type(g) is _ndarray and g.base is None and sys.getrefcount(g) <= _SOLE_OWNER_REFS \
                and g.flags.c_contiguous and g.flags.writeable:
            var.grad = _make(g, var.dtype)
        else:
            var.grad = _make(numpy.array(g) if isinstance(g, (_ndarray, numpy.generic)) else be(wrap(g)).copy(g),
                             var.dtype)
    else:
        var.grad._data += g
        var.grad._vc[0] += 1


def _refcount_probe(var, g) -> int:
    return sys.getrefcount(g)


def _sole_owner_refs() -> int:
    """What ``sys.getrefcount`` reads inside ``accumulate_grad_array`` for an array held
    by one list slot only (the count each call adds depends on the interpreter)."""
    held = [numpy.empty(1)]
    return _refcount_probe(None, held[0])


_SOLE_OWNER_REFS = _sole_owner_refs()


def add_grads(a: Tensor, b: Tensor) -> Tensor:
    from .elementwise import add
    return add(a, b)


def accumulate_grad(var: Tensor, g: Tensor) -> None:
    """AccumulateGrad: the first gradient is copied (rules may hand the same gradient to
    several inputs), later ones are added in place unless a graph is being built."""
    if var.grad is None:
        var.grad = g if _STATE.enabled else _make(be(g).copy(g._data), g.dtype)
    elif _STATE.enabled:
        var.grad = var.grad + g
    else:
        var.grad._data += g._data
        var.grad._vc[0] += 1


# ---- views -------------------------------------------------------------------------

def make_view(t: Tensor, arr, redo, name: str, rule, saved=()) -> Tensor:
    """A tensor viewing ``t``'s memory through ``arr``; ``redo(x)`` applies the same view to
    another tensor (used when an in-place op on the view rewrites the base's history)."""
    out = _make(arr, t.dtype)
    out._vc = t._vc
    if t._base is None:
        out._base, out._view_fn = t, redo
    else:
        prev = t._view_fn
        out._base, out._view_fn = t._base, (lambda b: redo(prev(b)))
    if _STATE.enabled and t._requires_grad:
        record(name, rule, (t,), out, saved)
    return out


# ---- in-place ----------------------------------------------------------------------

def check_inplace(t: Tensor) -> None:
    """torch's errors for in-place ops on leaves (and their views) that require grad."""
    if not _STATE.enabled:
        return
    if t._requires_grad and t.grad_fn is None and t._base is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    b = t._base
    if b is not None and b._requires_grad and b.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def inplace(t: Tensor, fn, *args, **kwargs) -> Tensor:
    """Run out-of-place ``fn(t, *args)`` and write the result into ``t``.

    When a graph is recorded the op runs on a copy of ``t`` (its rule may need ``t``'s old
    value), and ``t`` then takes the result's history; on a view, the base's history is
    rewritten as torch's CopySlices does, so ``x[i] = y`` on a non-leaf is differentiable.
    """
    check_inplace(t)
    src = t
    if _STATE.enabled and (t._requires_grad or needs_grad(*args, *kwargs.values())):
        from .elementwise import clone
        src = clone(t)
    return commit(t, fn(src, *args, **kwargs))


def commit(t: Tensor, result: Tensor) -> Tensor:
    """Write ``result`` into ``t`` (broadcasting to ``t``'s shape), bump its version and
    hand it ``result``'s autograd history."""
    if type(t)._vmap_commit is not None:
        return t._vmap_commit(result)
    if type(t._vc) is not list and not _STATE.inference:
        raise RuntimeError(_INFERENCE_INPLACE)
    if result.dtype is not t.dtype and not D.can_cast(result.dtype, t.dtype):
        raise RuntimeError(f"result type {_type_name(result.dtype)} can't be cast to the desired "
                           f"output type {_type_name(t.dtype)}")
    if result._data.shape != t._data.shape:
        try:
            shape = numpy.broadcast_shapes(result._data.shape, t._data.shape)
        except ValueError:
            shape = None
        if shape != t._data.shape:
            raise RuntimeError(f"output with shape {list(t.shape)} doesn't match the broadcast "
                               f"shape {list(shape or result.shape)}")
    t._data[...] = result._data
    t._vc[0] += 1
    if _STATE.enabled and (result._requires_grad or t._requires_grad):
        if not result._requires_grad:
            record("CopyBackwards", _no_grad_rule, (), result)
        if t._base is None:
            t.grad_fn, t._output_nr, t._requires_grad = result.grad_fn, result._output_nr, True
        else:
            _copy_slices(t, result)
    return t


_INFERENCE_INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone "
                      "to get a normal tensor before doing inplace update.")


def _no_grad_rule(g):
    return ()


def _type_name(d: D.dtype) -> str:
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}[d.name]


def _copy_slices(view: Tensor, result: Tensor) -> None:
    base, view_fn = view._base, view._view_fn
    if result.shape != view.shape:
        result = result.expand(view.shape)
    record("CopySlices", _copy_slices_rule, (base, result), base, (view_fn,))
    fresh = view_fn(base)
    view.grad_fn, view._output_nr, view._requires_grad = fresh.grad_fn, fresh._output_nr, True


def _copy_slices_rule(g, view_fn):
    from .elementwise import clone
    grad_base = clone(g)
    view_fn(grad_base).zero_()
    return grad_base, view_fn(g)


def write_out(result, out, name: str = "op"):
    """The ``out=`` argument: ``result`` (a tensor, or a tuple for a tuple ``out``) written
    into ``out``, resized when its shape differs, and ``out`` returned.  RuntimeError, as
    torch, when a gradient would be needed (out= does not record history) or when the
    result's dtype cannot be cast to ``out``'s."""
    if isinstance(out, (tuple, list)):
        results = tuple(result)
        if len(results) != len(out):
            raise RuntimeError(f"{name}(): expected {len(results)} tensors in out=, got {len(out)}")
        written = tuple(write_out(r, o, name) for r, o in zip(results, out))
        return type(result)(*written) if hasattr(result, "_fields") else written
    if _STATE.enabled and (result._requires_grad or out._requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if result.dtype is not out.dtype and not D.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"result type {_type_name(result.dtype)} can't be cast to the desired output type "
                           f"{_type_name(out.dtype)}")
    if out._data.shape != result._data.shape:
        out._data = be(result).astype(result._data, out.dtype)
    else:
        out._data[...] = result._data
    out._vc[0] += 1
    return out
