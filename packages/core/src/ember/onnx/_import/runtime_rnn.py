"""The ONNX recurrent operators LSTM, GRU and RNN over ember's recurrent layers.

ONNX stacks the gates of W ``[dirs, G*H, I]``, R ``[dirs, G*H, H]`` and B ``[dirs,
2*G*H]`` (input biases, then recurrent ones) in its own order: LSTM ``i, o, f, c``, GRU
``z, r, h``; torch's are ``i, f, g, o`` and ``r, z, n``. The weights are reordered with
ember ops when the module runs, so they stay the module's parameters and train.
Outputs: Y ``[seq, dirs, batch, H]`` (``[batch, seq, dirs, H]`` with ``layout=1``) and
the last states ``[dirs, batch, H]`` (``[batch, dirs, H]``).

Source: the ONNX operator specification (onnx.ai/onnx/operators), LSTM-14, GRU-14, RNN-14;
torch.nn.LSTM/GRU/RNN docs for torch's gate layout."""

from __future__ import annotations

import ember

_LSTM_ORDER = (0, 2, 3, 1)  # torch's i, f, g, o taken from ONNX's i, o, f, c
_GRU_ORDER = (1, 0, 2)  # torch's r, z, n taken from ONNX's z, r, h


def _reorder(m, order):
    parts = m.chunk(len(order), 0)
    return ember.cat([parts[i] for i in order], 0)


def _params(w, r, b, order, hidden_size):
    gates = len(order) * hidden_size
    params = []
    for d in range(w.shape[0]):
        params += [_reorder(w[d], order), _reorder(r[d], order)]
        if b is not None:
            params += [_reorder(b[d, :gates], order), _reorder(b[d, gates:], order)]
    return params


def _check_lengths(sequence_lens, seq: int):
    if sequence_lens is not None and bool((sequence_lens != seq).any()):
        raise NotImplementedError(f"sequences of different lengths ({sequence_lens.tolist()}, the input has {seq} "
                                  f"steps) are not supported")


def _run(fn, x, state, params, has_biases, direction, layout, hidden_size):
    """``fn`` (ember.lstm/gru/rnn_tanh/rnn_relu) over ``x`` ``[seq, batch, I]``; returns
    ``(Y, states...)`` in ONNX's layouts."""
    if direction == "reverse":
        x = x.flip(0)
    out, *last = fn(x, state, params, has_biases, 1, 0.0, False, direction == "bidirectional", False)
    if direction == "reverse":
        out = out.flip(0)
    seq, batch = x.shape[0], x.shape[1]
    dirs = 2 if direction == "bidirectional" else 1
    y = out.reshape(seq, batch, dirs, hidden_size).permute(0, 2, 1, 3)
    if layout:
        return (y.permute(2, 0, 1, 3), *(s.transpose(0, 1) for s in last))
    return (y, *last)


def _inputs(x, states, layout):
    if layout:
        x = x.transpose(0, 1)
        states = [None if s is None else s.transpose(0, 1) for s in states]
    return x, states


def _zeros(x, dirs, hidden_size):
    return ember.zeros(dirs, x.shape[1], hidden_size, dtype=x.dtype, device=x.device)


def lstm(x, w, r, b=None, sequence_lens=None, initial_h=None, initial_c=None, *, hidden_size: int,
         direction: str = "forward", layout: int = 0):
    """LSTM with the default activations (sigmoid, tanh, tanh), no peepholes, no clip."""
    x, (h0, c0) = _inputs(x, [initial_h, initial_c], layout)
    _check_lengths(sequence_lens, x.shape[0])
    dirs = w.shape[0]
    h0 = _zeros(x, dirs, hidden_size) if h0 is None else h0
    c0 = _zeros(x, dirs, hidden_size) if c0 is None else c0
    params = _params(w, r, b, _LSTM_ORDER, hidden_size)
    return _run(ember.lstm, x, (h0, c0), params, b is not None, direction, layout, hidden_size)


def gru(x, w, r, b=None, sequence_lens=None, initial_h=None, *, hidden_size: int, direction: str = "forward",
        layout: int = 0):
    """GRU with the default activations (sigmoid, tanh) and ``linear_before_reset=1``
    (torch's form: the reset gate multiplies ``W_hn h + b_hn``)."""
    x, (h0,) = _inputs(x, [initial_h], layout)
    _check_lengths(sequence_lens, x.shape[0])
    h0 = _zeros(x, w.shape[0], hidden_size) if h0 is None else h0
    params = _params(w, r, b, _GRU_ORDER, hidden_size)
    return _run(ember.gru, x, h0, params, b is not None, direction, layout, hidden_size)


def rnn(x, w, r, b=None, sequence_lens=None, initial_h=None, *, hidden_size: int, direction: str = "forward",
        layout: int = 0, relu: bool = False):
    """RNN with tanh (or relu) as its activation."""
    x, (h0,) = _inputs(x, [initial_h], layout)
    _check_lengths(sequence_lens, x.shape[0])
    h0 = _zeros(x, w.shape[0], hidden_size) if h0 is None else h0
    params = _params(w, r, b, (0,), hidden_size)
    return _run(ember.rnn_relu if relu else ember.rnn_tanh, x, h0, params, b is not None, direction, layout,
                hidden_size)
