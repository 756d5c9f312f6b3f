"""Result dtypes of binary ops over every dtype pair and scalar kind, against torch."""

import itertools

import numpy as np
import pytest
import torch
from conftest import dname, edtype, ember_dtypes, tdtype, to_ember

import ember

OPS = {
    "add": lambda L, a, b: L.add(a, b),
    "sub": lambda L, a, b: a - b,
    "mul": lambda L, a, b: a * b,
    "div": lambda L, a, b: a / b,
    "eq": lambda L, a, b: a == b,
    "where": lambda L, a, b: L.where(L.ones((), dtype=L.bool), a, b) if isinstance(a, L.Tensor) else L.add(b, a),
    "maximum": lambda L, a, b: L.maximum(a, b),
}


def _sample(name, shape, L):
    arr = (np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1)
    t = torch.tensor(arr).to(tdtype(name))
    return t if L is torch else to_ember(t)


def _run(op, L, make_a, make_b):
    try:
        r = OPS[op](L, make_a(L), make_b(L))
    except Exception as e:  # noqa: BLE001 - the exception type is what we compare
        return type(e)
    return r


def _check(op, make_a, make_b):
    t = _run(op, torch, make_a, make_b)
    e = _run(op, ember, make_a, make_b)
    if isinstance(t, type):
        assert isinstance(e, type) and issubclass(e, t), f"torch raised {t.__name__}, ember gave {e}"
        return
    assert not isinstance(e, type), f"ember raised {e.__name__}, torch gave {t.dtype}"
    assert dname(e.dtype) == dname(t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(np.asarray(e.float().numpy(), np.float64),
                               np.asarray(t.float().numpy(), np.float64), rtol=1e-2)


PAIRS = list(itertools.product(ember_dtypes, ember_dtypes))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("a,b", PAIRS)
def test_tensor_tensor(op, a, b):
    _check(op, lambda L: _sample(a, (2, 3), L), lambda L: _sample(b, (2, 3), L))


@pytest.mark.parametrize("op", ["add", "mul", "div"])
@pytest.mark.parametrize("a,b", PAIRS)
def test_zero_dim_ranks_below_dimensioned(op, a, b):
    _check(op, lambda L: _sample(a, (3,), L), lambda L: _sample(b, (), L))
    _check(op, lambda L: _sample(a, (), L), lambda L: _sample(b, (), L))


SCALARS = [True, 3, -2, 2.5, 1e-3]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "eq", "where"])
@pytest.mark.parametrize("a", ember_dtypes)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_python_scalars_do_not_widen(op, a, s):
    _check(op, lambda L: _sample(a, (2, 2), L), lambda L: s)
    if op in ("add", "mul", "sub", "div"):
        _check(op, lambda L: s, lambda L: _sample(a, (2, 2), L))  # reflected forms
        _check(op, lambda L: _sample(a, (), L), lambda L: s)


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_and_result_type(a, b):
    assert dname(ember.promote_types(edtype(a), edtype(b))) == dname(torch.promote_types(tdtype(a), tdtype(b)))
    ta, tb = _sample(a, (2,), torch), _sample(b, (), torch)
    assert dname(ember.result_type(to_ember(ta), to_ember(tb))) == dname(torch.result_type(ta, tb))
    assert ember.can_cast(edtype(a), edtype(b)) == torch.can_cast(tdtype(a), tdtype(b))


@pytest.mark.parametrize("a", ember_dtypes)
def test_reduction_and_unary_result_dtypes(a):
    t = _sample(a, (4, 3), torch)
    e = to_ember(t)
    assert dname(e.sum().dtype) == dname(t.sum().dtype)
    assert dname(e.sum(0).dtype) == dname(t.sum(0).dtype)
    assert dname(e.prod().dtype) == dname(t.prod().dtype)
    assert dname(e.cumsum(0).dtype) == dname(t.cumsum(0).dtype)
    if a != "bool":
        assert dname(e.abs().dtype) == dname(t.abs().dtype)
    assert dname(ember.exp(e).dtype) == dname(torch.exp(t).dtype)
    assert dname(ember.sqrt(e).dtype) == dname(torch.sqrt(t).dtype)
    assert dname(ember.sigmoid(e).dtype) == dname(torch.sigmoid(t).dtype)
    if a != "bool":
        assert dname(e.argmax().dtype) == dname(t.argmax().dtype)
    else:
        with pytest.raises(RuntimeError):
            e.argmax()


@pytest.mark.parametrize("a", ["float16", "bfloat16"])
def test_low_precision_sums_accumulate_in_float32(a):
    # 4096 ones: float16 accumulation would stall at 2048, bfloat16 at 256
    t = torch.ones(4096, dtype=tdtype(a))
    e = ember.ones(4096, dtype=edtype(a))
    assert e.sum().item() == t.sum().item() == 4096
    assert e.mean().item() == t.mean().item() == 1
    assert dname(e.sum().dtype) == a


def test_uint8_sum_is_int64_without_overflow():
    e = ember.full((300,), 255, dtype=ember.uint8)
    t = torch.full((300,), 255, dtype=torch.uint8)
    assert e.sum().dtype is ember.int64 and e.sum().item() == t.sum().item() == 76500


def test_integer_true_division_gives_default_float():
    assert (ember.tensor([1, 2]) / ember.tensor([2, 4])).dtype is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
        assert ember.tensor([1.5]).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int32)


def test_dtype_objects():
    for n in ember_dtypes:
        d = edtype(n)
        t = tdtype(n)
        assert repr(d) == repr(t).replace("torch.", "ember.")
        assert d.is_floating_point == t.is_floating_point
        assert d.itemsize == t.itemsize
        assert d.is_signed == t.is_signed
    assert ember.float is ember.float32 and ember.double is ember.float64 and ember.long is ember.int64
    assert ember.half is ember.float16 and ember.int is ember.int32 and ember.short is ember.int16
    import pickle
    assert pickle.loads(pickle.dumps(ember.bfloat16)) is ember.bfloat16
