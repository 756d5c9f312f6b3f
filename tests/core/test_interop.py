"""Exchanging tensors with torch and numpy: DLPack both ways (memory shared), the
array protocol, and the Python number protocols."""

import numpy as np
import pytest
import torch

import ember


def test_from_dlpack_shares_memory_both_ways():
    t = torch.arange(4.0)
    e = ember.from_dlpack(t)
    e[0] = 10.0
    assert t[0].item() == 10.0 and e.dtype is ember.float32
    back = torch.from_dlpack(ember.tensor([1, 2, 3]))
    assert back.dtype is torch.int64 and back.tolist() == [1, 2, 3]
    a = np.arange(3.0)
    e2 = ember.from_dlpack(a)
    a[1] = -1.0
    assert e2.tolist() == [0.0, -1.0, 2.0]


def test_array_protocol_and_numpy_view():
    e = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(e)
    assert a.dtype == np.float32 and a.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    e.numpy()[0, 0] = 7.0
    assert e[0, 0].item() == 7.0


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_number_protocols(L):
    assert int(L.tensor([3])) == 3 and float(L.tensor(2.5)) == 2.5 and complex(L.tensor(1.5)) == 1.5
    assert [10, 20, 30][L.tensor(2)] == 30
    assert 2.0 in L.tensor([1.0, 2.0]) and 5 not in L.tensor([1, 2])
    with pytest.raises(TypeError):
        [1, 2][L.tensor(1.0)]
    with pytest.raises(RuntimeError):
        bool(L.tensor([1, 2]))
    with pytest.raises((RuntimeError, ValueError)):
        int(L.tensor([1, 2]))


SCRIPT = """
import warnings, numpy as np, ember
with warnings.catch_warnings(record=True) as caught:
    x = ember.tensor([1.0, 0.0, -1.0])
    y = (x / 0, ember.log(x), ember.sqrt(x), ember.exp(x * 1000))
    np.log(np.array([-1.0]))  # the user's own numpy code still warns
print([str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)], y[0].tolist())
"""


def test_inf_and_nan_come_without_numpy_warnings():
    # a fresh interpreter: the test runner installs warning filters of its own
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['invalid value encountered in log'] [inf, nan, -inf]"


def test_num_threads_round_trip_and_errors():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1
        a = ember.randn(64, 64)
        np.testing.assert_allclose((a @ a).numpy(), a.numpy() @ a.numpy(), rtol=1e-5, atol=1e-5)
    finally:
        ember.set_num_threads(before)
    assert ember.get_num_threads() == before
    for bad in (0, -2, 2.5):
        messages = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as err:
                lib.set_num_threads(bad)
            messages.append(str(err.value))
        assert messages[0] == messages[1]
