"""torch's top-level recurrent functions with flat weight lists (torch.lstm, gru, rnn_tanh,
rnn_relu, the forms torch.nn.LSTM/GRU/RNN call) and single steps (torch.lstm_cell,
gru_cell, rnn_tanh_cell, rnn_relu_cell).

``params`` lists, for each layer and then each direction, ``w_ih [G*H, I]``, ``w_hh [G*H,
H_out]``, then ``b_ih, b_hh [G*H]`` when ``has_biases``, then the LSTM projection ``w_hr
[H_out, H]`` when ``hx``'s two states differ in size.  Each layer and direction is one
``rnn.rnn_layer`` node, as in the modules.
"""

from __future__ import annotations

from .._tensor import Tensor
from .rnn import gru_cell as _gru_step
from .rnn import lstm_cell as _lstm_step
from .rnn import rnn_cell as _elman_step
from .rnn import rnn_layer

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


def _stack_layers(mode, flat, batch_sizes, hx, cx, weights, num_layers, dirs, dropout, train):
    """``num_layers`` layers of ``dirs`` directions over packed ``flat`` ``[N, I]``:
    ``weights[layer * dirs + d]`` is ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` (None where absent),
    ``hx``/``cx`` ``[layers * dirs, B, H]`` (``cx`` None but for LSTM).  Dropout with
    probability ``dropout`` between layers when ``train``.  Returns ``(out [N, dirs*H_out],
    h_n, c_n)``."""
    from .activation import dropout as _dropout
    from .shape import cat, stack
    hns, cns = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[k]
            out, hn, cn = rnn_layer(mode, flat, batch_sizes, hx[k], None if cx is None else cx[k], w_ih, w_hh, b_ih,
                                    b_hh, w_hr, reverse=d == 1)
            outs.append(out)
            hns.append(hn)
            cns.append(cn)
        flat = outs[0] if dirs == 1 else cat(outs, 1)
        if dropout and train and layer < num_layers - 1:
            flat = _dropout(flat, dropout, True)
    h_n = hns[0].unsqueeze(0) if len(hns) == 1 else stack(hns, 0)
    c_n = None if cx is None else (cns[0].unsqueeze(0) if len(cns) == 1 else stack(cns, 0))
    return flat, h_n, c_n


def _weights(params, has_biases, proj, count):
    per = 2 + 2 * bool(has_biases) + bool(proj)
    params = list(params)
    if len(params) != per * count:
        raise RuntimeError(f"expected {per * count} weights ({count} layer-directions of {per}), got {len(params)}")
    out = []
    for k in range(count):
        group = params[k * per:(k + 1) * per]
        w_ih, w_hh = group[0], group[1]
        b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
        out.append((w_ih, w_hh, b_ih, b_hh, group[-1] if proj else None))
    return out


def _run(mode, args, with_cell):
    """Both of torch's overloads: ``(input, hx, params, has_biases, num_layers, dropout,
    train, bidirectional, batch_first)`` with ``input`` ``[T, B, I]`` (``[B, T, I]`` when
    ``batch_first``), or ``(data, batch_sizes, hx, params, has_biases, num_layers,
    dropout, train, bidirectional)`` with packed ``data`` ``[N, I]``."""
    # the packed overload has batch_sizes (a tensor) where the padded one has hx (LSTM: a
    # pair) or, for the others, where it has the params list
    packed = isinstance(args[1], Tensor) if with_cell else isinstance(args[2], Tensor)
    if packed:
        data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
        flat, batch_first = data, False
        sizes = [int(b) for b in batch_sizes.tolist()]
    else:
        input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
        if input.ndim != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.ndim}")
        x = input.transpose(0, 1) if batch_first else input
        sizes = [x.shape[1]] * x.shape[0]
        flat = x.reshape(x.shape[0] * x.shape[1], x.shape[2])
    h0, c0 = (hx[0], hx[1]) if with_cell else (hx, None)
    dirs = 2 if bidirectional else 1
    proj = with_cell and h0.shape[-1] != c0.shape[-1]
    weights = _weights(params, has_biases, proj, num_layers * dirs)
    out, hn, cn = _stack_layers(mode, flat, sizes, h0, c0, weights, num_layers, dirs, dropout, train)
    if not packed:
        out = out.reshape(len(sizes), sizes[0] if sizes else 0, out.shape[1])
        out = out.transpose(0, 1) if batch_first else out
    return (out, hn, cn) if with_cell else (out, hn)


def lstm(*args):
    """torch.lstm: ``(output, h_n, c_n)`` of a stacked LSTM, ``hx = (h_0, c_0)`` each
    ``[layers * dirs, B, H_out]`` / ``[.., H]`` (the two overloads: see ``_run``)."""
    return _run("LSTM", args, True)


def gru(*args):
    """torch.gru: ``(output, h_n)`` of a stacked GRU, ``hx`` ``[layers * dirs, B, H]``."""
    return _run("GRU", args, False)


def rnn_tanh(*args):
    """torch.rnn_tanh: ``(output, h_n)`` of a stacked Elman RNN with tanh."""
    return _run("RNN_TANH", args, False)


def rnn_relu(*args):
    """torch.rnn_relu: ``(output, h_n)`` of a stacked Elman RNN with relu."""
    return _run("RNN_RELU", args, False)


def _check_cell(input, w_ih):
    if input.ndim != 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step (torch.lstm_cell): ``input`` ``[B, I]``, ``hx = (h, c)`` ``[B, H]``;
    returns ``(h', c')``.  RuntimeError unless ``hx`` holds two states or for an input
    size other than the weight's.

    ``w_ih`` [4H, I] and ``w_hh`` [4H, H] are the input and hidden weights (gates in the
    order input, forget, cell, output); ``b_ih`` and ``b_hh`` [4H] their biases, or None."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell(input, w_ih)
    return _lstm_step(input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (torch.gru_cell): ``input`` ``[B, I]``, ``hx`` ``[B, H]``; returns h'.

    ``w_ih`` [3H, I] and ``w_hh`` [3H, H] are the input and hidden weights (gates in the
    order reset, update, new); ``b_ih`` and ``b_hh`` [3H] their biases, or None.
    RuntimeError for an input size other than the weight's."""
    _check_cell(input, w_ih)
    return _gru_step(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with tanh (torch.rnn_tanh_cell): ``h' = tanh(input @ w_ih^T + b_ih +
    hx @ w_hh^T + b_hh)``.

    ``input`` is [B, I], ``hx`` [B, H], ``w_ih`` [H, I], ``w_hh`` [H, H], ``b_ih`` and
    ``b_hh`` [H] or None; returns h' [B, H]. RuntimeError for an input size other than the
    weight's."""
    _check_cell(input, w_ih)
    return _elman_step(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with relu (torch.rnn_relu_cell): ``h' = relu(input @ w_ih^T + b_ih +
    hx @ w_hh^T + b_hh)``.

    ``input`` is [B, I], ``hx`` [B, H], ``w_ih`` [H, I], ``w_hh`` [H, H], ``b_ih`` and
    ``b_hh`` [H] or None; returns h' [B, H]. RuntimeError for an input size other than the
    weight's."""
    _check_cell(input, w_ih)
    return _elman_step(input, hx, w_ih, w_hh, b_ih, b_hh, relu=True)
