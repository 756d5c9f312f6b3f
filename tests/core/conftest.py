"""Helpers for the core tests: ember <-> torch conversion and comparison with the oracle."""

import numpy as np
import pytest
import torch

import ember

ember_dtypes = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def edtype(name):
    return getattr(ember, name)


def tdtype(name):
    return getattr(torch, name)


def dname(dtype) -> str:
    """'float32' for ember.float32 and torch.float32 alike."""
    return str(dtype).rsplit(".", 1)[-1]


def to_torch(t, requires_grad=None):
    """A torch tensor with ``t``'s values and dtype (a copy)."""
    name = dname(t.dtype)
    arr = np.array(t.detach().float().numpy() if name == "bfloat16" else t.detach().numpy())
    out = torch.from_numpy(arr).to(tdtype(name))
    if requires_grad if requires_grad is not None else t.requires_grad:
        out.requires_grad_()
    return out


def to_ember(t, requires_grad=None):
    name = dname(t.dtype)
    arr = np.array(t.detach().float().numpy() if name == "bfloat16" else t.detach().numpy())
    out = ember.tensor(arr).to(edtype(name))
    if requires_grad if requires_grad is not None else t.requires_grad:
        out.requires_grad_()
    return out


def as_numpy(t):
    t = t.detach()
    if t.device.type == "cuda":
        t = t.cpu()
    if dname(t.dtype) == "bfloat16":
        t = t.float()
    return np.asarray(t.numpy())


def assert_same(e, t, rtol=None, atol=None, check_dtype=True):
    """ember result ``e`` equals torch result ``t``: type of container, shape, dtype, values."""
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)), f"expected a sequence, got {type(e).__name__}"
        assert len(e) == len(t)
        for a, b in zip(e, t):
            assert_same(a, b, rtol, atol, check_dtype)
        return
    if not isinstance(t, torch.Tensor):
        assert not isinstance(e, ember.Tensor), f"expected {type(t).__name__}, got a Tensor"
        if isinstance(t, float):
            assert e == pytest.approx(t, rel=rtol or 1e-6, abs=atol or 1e-6, nan_ok=True)
        else:
            assert e == t
        return
    assert isinstance(e, ember.Tensor), f"expected a Tensor, got {type(e).__name__}"
    # a 0-d result must still hold an array (numpy hands back scalars from 0-d ufuncs)
    assert not isinstance(e._data, np.generic), "the tensor holds a numpy scalar, not an array"
    assert tuple(e.shape) == tuple(t.shape), f"shape {tuple(e.shape)} != {tuple(t.shape)}"
    if check_dtype:
        assert dname(e.dtype) == dname(t.dtype), f"dtype {e.dtype} != {t.dtype}"
    ea, ta = as_numpy(e), as_numpy(t)
    if ta.dtype.kind in "fc":
        if rtol is None:
            rtol, atol = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2), "float64": (1e-9, 1e-9),
                          "complex128": (1e-9, 1e-9)}.get(
                dname(t.dtype), (1e-5, 1e-5))
        wide = np.complex128 if ta.dtype.kind == "c" else np.float64  # complex values compare whole
        np.testing.assert_allclose(ea.astype(wide), ta.astype(wide), rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(ea, ta)


def count_calls(monkeypatch, module, names):
    """``{name: 0}``, counting from now on the calls of ``module.<name>`` for each of
    ``names`` (the functions still run): which path an op took."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        def counted(*args, _fn=getattr(module, name), _name=name, **kwargs):
            calls[_name] += 1
            return _fn(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    return calls


def pytest_terminal_summary(terminalreporter):
    """Report how much of torch's namespace the conformance table checked in this run."""
    from torch_namespace import COVERED, coverage_line
    if COVERED:
        terminalreporter.write_line(coverage_line())
