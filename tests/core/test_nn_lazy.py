"""Lazy modules (LazyLinear, LazyConvNd, LazyBatchNormNd) against torch.nn."""

import numpy as np
import pytest
import torch
from conftest import assert_same, to_ember

import ember

CASES = [("LazyLinear", (4,), (2, 3)), ("LazyLinear", (5, False), (2, 6, 3)), ("LazyConv1d", (4, 3), (2, 3, 8)),
         ("LazyConv2d", (4, 3), (1, 2, 5, 5)),
         ("LazyConv2d", (4, 2), (2, 5, 5)), ("LazyConv3d", (2, 2), (1, 2, 3, 3, 3)),
         ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 2, 2))]


@pytest.mark.parametrize("name,args,shape", CASES)
def test_lazy_materializes_on_forward(name, args, shape):
    em, tm = getattr(ember.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(em) == repr(tm)
    assert em.has_uninitialized_params() and list(em.state_dict()) == list(tm.state_dict())
    assert isinstance(em.weight, ember.nn.parameter.UninitializedParameter)
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        _ = em.weight.shape
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ey, ty = em(ember.tensor(x)), tm(torch.tensor(x))
    assert type(em).__name__ == type(tm).__name__ and repr(em) == repr(tm)
    assert not em.has_uninitialized_params() if hasattr(em, "has_uninitialized_params") else True
    assert [(k, tuple(v.shape)) for k, v in em.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert tuple(ey.shape) == tuple(ty.shape)
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    assert_same(em(ember.tensor(x)), tm(torch.tensor(x)), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,args,shape", CASES)
def test_lazy_load_state_dict_materializes(name, args, shape):
    tm = getattr(torch.nn, name)(*args)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    ty = tm(torch.tensor(x))
    em = getattr(ember.nn, name)(*args)
    em.load_state_dict({k: to_ember(v) for k, v in tm.state_dict().items()})
    assert not em.has_uninitialized_params()
    assert type(em).__name__ == name  # the class changes only on the first forward, as torch
    tm2 = getattr(torch.nn, name)(*args)
    tm2.load_state_dict(tm.state_dict())
    assert_same(em(ember.tensor(x)), tm2(torch.tensor(x)), rtol=1e-4, atol=1e-5)
    assert type(em).__name__ == type(tm2).__name__
    torch.testing.assert_close(ty, tm2(torch.tensor(x)))


def test_lazy_errors():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="Expected 3D"):
            lib.nn.LazyConv2d(4, 3)(lib.zeros(2, 3))
        with pytest.raises(ValueError, match="divisible by groups"):
            lib.nn.LazyConv1d(4, 1, groups=2)(lib.zeros(1, 3, 5))
