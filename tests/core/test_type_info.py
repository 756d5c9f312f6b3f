"""ember.finfo / ember.iinfo against torch.finfo / torch.iinfo: every attribute, the repr,
equality, and the errors."""

import pytest
import torch

import ember

FLOATING = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTEGER = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATING)
def test_finfo_equals_torch(name):
    got, want = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(got, attr) == getattr(want, attr), attr
        assert type(getattr(got, attr)) is type(getattr(want, attr)), attr
    assert repr(got) == repr(want)


@pytest.mark.parametrize("name", INTEGER)
def test_iinfo_equals_torch(name):
    got, want = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
    for attr in ("bits", "max", "min", "dtype"):
        assert getattr(got, attr) == getattr(want, attr), attr
        assert type(getattr(got, attr)) is type(getattr(want, attr)), attr
    assert repr(got) == repr(want)


def test_finfo_without_argument_follows_the_default_dtype():
    assert ember.finfo().dtype == "float32"
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.finfo() == ember.finfo(ember.float64) and ember.finfo().bits == torch.finfo(torch.float64).bits
    finally:
        ember.set_default_dtype(ember.float32)
    assert ember.finfo(ember.float32) != ember.finfo(ember.float16)
    with pytest.raises(TypeError):
        hash(ember.finfo())


@pytest.mark.parametrize("fn,arg,message", [
    ("finfo", "int32", "requires a floating point input type"),
    ("finfo", "bool", "requires a floating point input type"),
    ("iinfo", "float32", "requires an integer input type"),
    ("iinfo", "bool", "bool is not supported"),
    ("finfo", None, "must be ember.dtype, not str"),
])
def test_errors_as_torch(fn, arg, message):
    ember_arg = "float32" if arg is None else getattr(ember, arg)
    torch_arg = "float32" if arg is None else getattr(torch, arg)
    with pytest.raises(TypeError):
        getattr(torch, fn)(torch_arg)
    with pytest.raises(TypeError, match=message):
        getattr(ember, fn)(ember_arg)

