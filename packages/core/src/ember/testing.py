"""Test helpers shared by every package's tests (torch.testing's assert_close)."""

from __future__ import annotations

import collections.abc
import numbers

import numpy

__all__ = ["assert_close", "make_tensor"]

# (rtol, atol) by dtype name, as torch.testing uses them
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _dtype_name(x) -> str | None:
    d = getattr(x, "dtype", None)
    if d is None:
        return None
    return str(d).rsplit(".", 1)[-1]


def _is_tensor_like(x) -> bool:
    return hasattr(x, "dtype") and hasattr(x, "shape") and not isinstance(x, (numbers.Number, numpy.generic))


def _host(x):
    """A float64/complex/int/bool numpy array of ``x``'s values (any tensor type or array)."""
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "cpu"):
        x = x.cpu()
    name = _dtype_name(x)
    if name == "bfloat16":
        x = x.float() if hasattr(x, "float") else numpy.asarray(x, dtype=numpy.float32)
    arr = numpy.asarray(x.numpy() if hasattr(x, "numpy") and not isinstance(x, numpy.ndarray) else x)
    if arr.dtype.kind == "f":
        arr = arr.astype(numpy.float64)
    return arr


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError unless ``actual`` and ``expected`` are close.

    Tensors (ember or torch), numpy arrays, Python numbers and (nested) sequences or
    mappings of them are compared elementwise: ``|actual - expected| <= atol + rtol *
    |expected|``. Without ``rtol``/``atol`` the tolerances of the dtype are used (zero for
    integers and bool). Shapes must match; dtypes too when ``check_dtype``.

    ``check_device`` asks for tensors on one device; ``equal_nan`` makes NaN close to NaN;
    ``msg`` (a string) replaces the failure message. ``allow_subclasses``, ``check_layout``
    and ``check_stride`` are accepted for torch's signature and unused
    (torch.testing.assert_close)."""
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, "
                         f"but got no {'rtol' if rtol is None else 'atol'}.")
    _compare(actual, expected, rtol, atol, equal_nan, check_dtype, check_device, msg, path="")


def _fail(msg, default, path):
    where = f" at {path}" if path else ""
    text = default + where
    if callable(msg):
        text = msg(text)
    elif msg is not None:
        text = msg
    raise AssertionError(text)


def _compare(a, e, rtol, atol, equal_nan, check_dtype, check_device, msg, path):
    if isinstance(e, collections.abc.Mapping):
        if not isinstance(a, collections.abc.Mapping) or set(a) != set(e):
            _fail(msg, f"The keys of the mappings do not match: {sorted(map(str, a))} != {sorted(map(str, e))}", path)
        for k in e:
            _compare(a[k], e[k], rtol, atol, equal_nan, check_dtype, check_device, msg, f"{path}[{k!r}]")
        return
    if isinstance(e, collections.abc.Sequence) and not isinstance(e, str):
        if not isinstance(a, collections.abc.Sequence) or isinstance(a, str) or len(a) != len(e):
            _fail(msg, f"The length of the sequences mismatch: {len(a) if hasattr(a, '__len__') else a} != {len(e)}",
                  path)
        for i, (x, y) in enumerate(zip(a, e)):
            _compare(x, y, rtol, atol, equal_nan, check_dtype, check_device, msg, f"{path}[{i}]")
        return
    a_t, e_t = _is_tensor_like(a), _is_tensor_like(e)
    if a_t != e_t and check_dtype:
        _fail(msg, f"Comparing a tensor with a non-tensor: {type(a).__name__} and {type(e).__name__}", path)
    if not a_t and not e_t and not (isinstance(a, numbers.Number) and isinstance(e, numbers.Number)):
        if a != e:
            _fail(msg, f"Values are not equal: {a!r} != {e!r}", path)
        return
    if a_t and e_t and check_dtype and _dtype_name(a) != _dtype_name(e):
        _fail(msg, f"The values for attribute 'dtype' do not match: {a.dtype} != {e.dtype}.", path)
    if a_t and e_t and check_device and hasattr(a, "device") and hasattr(e, "device") and \
            getattr(a.device, "type", None) != getattr(e.device, "type", None):
        _fail(msg, f"The values for attribute 'device' do not match: {a.device} != {e.device}.", path)
    aa, ee = _host(a), _host(e)
    if a_t and e_t and tuple(aa.shape) != tuple(ee.shape):
        _fail(msg, f"The values for attribute 'shape' do not match: {tuple(aa.shape)} != {tuple(ee.shape)}.", path)
    if rtol is None:
        names = [n for n in (_dtype_name(a), _dtype_name(e)) if n in _TOLERANCES]
        if names:
            rtol = max(_TOLERANCES[n][0] for n in names)
            atol = max(_TOLERANCES[n][1] for n in names)
        elif isinstance(a, float) or isinstance(e, float):
            rtol, atol = _TOLERANCES["float64"]
        else:
            rtol = atol = 0.0
    aa, ee = numpy.broadcast_arrays(aa, ee)
    if aa.dtype == bool or ee.dtype == bool:
        bad = aa != ee
    else:
        with numpy.errstate(invalid="ignore", over="ignore"):
            a64 = aa.astype(numpy.complex128 if aa.dtype.kind == "c" or ee.dtype.kind == "c" else numpy.float64)
            e64 = ee.astype(a64.dtype)
            diff = numpy.abs(a64 - e64)
            bad = ~(diff <= atol + rtol * numpy.abs(e64))
            same_inf = (a64 == e64)
            bad &= ~same_inf
            if equal_nan:
                bad &= ~(numpy.isnan(a64) & numpy.isnan(e64))
    if bad.any():
        n_bad = int(bad.sum())
        detail = ""
        if aa.dtype != bool and ee.dtype != bool:
            with numpy.errstate(invalid="ignore"):
                d = numpy.where(bad & ~numpy.isnan(diff), diff, 0)
                detail = f"\nGreatest absolute difference: {float(d.max())} (up to {atol} allowed)"
        _fail(msg, f"Tensor-likes are not close!\n\nMismatched elements: {n_bad} / {bad.size} "
                   f"({100.0 * n_bad / max(bad.size, 1):.1f}%){detail}", path)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False, generator=None):
    """A tensor of ``shape`` (ints, or one tuple or list) of ``dtype`` filled with random
    values (torch.testing.make_tensor): uniform on [``low``, ``high``) (defaults -9 and 9;
    integers drawn by ``randint``, uint8 from max(low, 0); bool half True).

    ``device`` places it, ``requires_grad`` makes it a leaf that records gradients, and
    ``generator`` draws the values (the default one when None)."""
    import ember
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    d = ember._dtype.to_dtype(dtype)
    lo = -9 if low is None else low
    hi = 9 if high is None else high
    if d.name == "bool":
        t = ember.rand(shape, generator=generator) < 0.5
    elif d.name == "uint8":
        t = ember.randint(max(int(lo), 0), max(int(hi), 1), shape, generator=generator, dtype=d)
    elif not d.is_floating_point:
        t = ember.randint(int(lo), int(hi), shape, generator=generator, dtype=d)
    else:
        t = (ember.rand(shape, generator=generator, dtype=ember.float64) * (hi - lo) + lo).to(d)
    t = t.to(device) if device is not None else t
    if requires_grad:
        t.requires_grad_()
    return t
