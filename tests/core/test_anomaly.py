"""Anomaly mode: the node whose gradient is NaN is named, with its forward call."""

import pytest
import torch

import ember


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_detect_anomaly_names_the_node_and_the_forward_call(L):
    x = L.tensor([1.0, -1.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        with L.autograd.detect_anomaly():
            y = L.sqrt(x).sum()  # the NaN comes from here: sqrt(-1)
            with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values in its 0th output."):
                y.backward()
    messages = "\n".join(str(w.message) for w in record)
    assert "Error detected in SqrtBackward0" in messages
    assert "the NaN comes from here" in messages  # the forward line, from the saved traceback


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_without_anomaly_mode_nan_flows_silently(L):
    x = L.tensor([1.0, -1.0], requires_grad=True)
    L.sqrt(x).sum().backward()
    assert bool(L.isnan(x.grad[1]))
    assert not L.is_anomaly_enabled()


def test_set_detect_anomaly_as_call_and_context():
    for L in (torch, ember):
        L.autograd.set_detect_anomaly(True)
        assert L.is_anomaly_enabled()
        L.autograd.set_detect_anomaly(False)
        assert not L.is_anomaly_enabled()
        with L.autograd.set_detect_anomaly(True, check_nan=False):
            assert L.is_anomaly_enabled() and not L.is_anomaly_check_nan_enabled()
            x = L.tensor([-1.0], requires_grad=True)
            L.sqrt(x).sum().backward()  # no NaN check
        assert not L.is_anomaly_enabled() and L.is_anomaly_check_nan_enabled()
