"""Every entry of the op table on the cuda backend (cupy) against torch on the CPU: the
sample tensors and everything the entry creates are made on ``cuda`` (the default device
inside ``ember.device("cuda")``), forward values and gradients are compared as in
``test_ops_table.py``, and every tensor an op returns must hold a cupy array."""

import pytest
import torch
from conftest import assert_same
from test_ops_table import CASES, GRAD_CASES, OPS_BY_NAME, build, check_backward, tensors_of

import ember

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(autouse=True)
def on_cuda():
    with ember.device("cuda"):
        yield


def _check_on_device(out):
    import cupy
    for t in tensors_of(out):
        assert t.device.type == "cuda", f"an op returned a tensor on {t.device}"
        assert isinstance(t._data, cupy.ndarray), f"an op returned a {type(t._data).__name__}"


@pytest.mark.parametrize("name,i", CASES)
def test_forward_on_cuda(name, i):
    op = OPS_BY_NAME[name]
    s = op.samples[i]
    t_args, _ = build(torch, s, False)
    t_out = op.fn(torch, *t_args, **s.kwargs)
    e_args, _ = build(ember, s, False)
    e_out = op.fn(ember, *e_args, **s.kwargs)
    _check_on_device(e_out)
    assert_same(e_out, t_out, op.rtol, op.atol)


@pytest.mark.parametrize("name,i", GRAD_CASES)
def test_backward_on_cuda(name, i):
    check_backward(name, i, _check_on_device)
