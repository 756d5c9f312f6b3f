"""LSTM, GRU and RNN nodes: one call of ``runtime_rnn`` each, its outputs taken apart.

Source: the ONNX operator specification (onnx.ai/onnx/operators), LSTM-14, GRU-14, RNN-14."""

from __future__ import annotations

from . import runtime_rnn
from ._table import converts

_DEFAULT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}


@converts("LSTM", "GRU", "RNN")
def _recurrent(b, n):
    op = n.op_type
    direction = n.attrs["direction"]
    activations = list(n.attrs.get("activations") or _DEFAULT_ACTIVATIONS[op])
    default = _DEFAULT_ACTIVATIONS[op]
    relu = op == "RNN" and all(a == "Relu" for a in activations)
    if not relu and any(a != default[i % len(default)] for i, a in enumerate(activations)):
        raise n.unsupported(f"with activations {activations} is not supported (only the defaults "
                            f"{default}{' or Relu' if op == 'RNN' else ''})")
    if n.attrs.get("clip") is not None:
        raise n.unsupported("with clip is not supported")
    if op == "LSTM" and (n.attrs.get("input_forget") or n.input(7)):
        raise n.unsupported("with input_forget or peepholes (input P) is not supported")
    if op == "GRU" and not n.attrs.get("linear_before_reset"):
        raise n.unsupported("with linear_before_reset=0 is not supported (torch's GRU applies the reset gate "
                            "after the recurrent product, linear_before_reset=1)")
    states = 7 if op == "LSTM" else 6
    inputs = [b.tensor(n.input(i)) if n.input(i) else None for i in range(states)]
    while inputs[-1] is None:
        inputs.pop()
    hidden = n.attrs.get("hidden_size") or (b.shape(n.input(2)) or [None])[-1]
    if hidden is None:
        raise n.unsupported("without hidden_size and with a computed R is not supported")
    kwargs = {"hidden_size": hidden}
    if direction != "forward":
        kwargs["direction"] = direction
    if n.attrs["layout"]:
        kwargs["layout"] = 1
    if relu:
        kwargs["relu"] = True
    fn = {"LSTM": runtime_rnn.lstm, "GRU": runtime_rnn.gru, "RNN": runtime_rnn.rnn}[op]
    result = b.call(fn, *inputs, **kwargs)
    return [b.item(result, i) for i in range(3 if op == "LSTM" else 2)]
