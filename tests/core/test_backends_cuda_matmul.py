"""ember.backends.cuda.matmul's TF32 switch and set_float32_matmul_precision reach cupy's
compute type for float32 products (checked here against a recording stand-in for cupy's
``_core``; on a GPU, ``tests/core/cuda/test_cuda_api.py`` reads cupy's own setting)."""

import functools
import sys
import types

import numpy as np
import pytest

import ember
from ember import _settings
from ember.backends import cupy_backend


@pytest.fixture
def compute_types(monkeypatch):
    """The ``(dtype, compute type)`` calls a stand-in cupy receives once a cuda backend exists."""
    calls = []
    linalg = types.ModuleType("cupy._core._routines_linalg")
    linalg.COMPUTE_TYPE_FP32, linalg.COMPUTE_TYPE_TF32 = 4, 7  # cupy's values
    core = types.ModuleType("cupy._core")
    core._routines_linalg = linalg
    core.set_compute_type = lambda dtype, kind: calls.append((np.dtype(dtype), kind))
    cupy = types.ModuleType("cupy")
    cupy._core = core
    for name, module in (("cupy", cupy), ("cupy._core", core), ("cupy._core._routines_linalg", linalg)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(_settings, "_MATMUL_PRECISION_HOOKS",
                        [functools.partial(cupy_backend.apply_matmul_precision, cupy)])
    yield calls
    ember.set_float32_matmul_precision("highest")


def test_tf32_switch_sets_cupys_float32_compute_type(compute_types):
    ember.backends.cuda.matmul.allow_tf32 = True
    assert ember.get_float32_matmul_precision() == "high"
    ember.backends.cuda.matmul.allow_tf32 = False
    ember.set_float32_matmul_precision("medium")
    ember.set_float32_matmul_precision("highest")
    assert compute_types == [(np.dtype(np.float32), 7), (np.dtype(np.float32), 4), (np.dtype(np.float32), 7),
                             (np.dtype(np.float32), 4)]


def test_an_unknown_precision_changes_nothing(compute_types):
    with pytest.warns(UserWarning, match="has no effect"):
        ember.set_float32_matmul_precision("fastest")
    assert compute_types == [] and ember.get_float32_matmul_precision() == "highest"
