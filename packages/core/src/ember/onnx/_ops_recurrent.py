"""Emitters of torch's recurrent ops (``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``: what
nn.LSTM, nn.GRU and nn.RNN call) as ONNX's LSTM, GRU and RNN operators, one node per layer
(both directions of a bidirectional layer in one node).

ONNX orders the gate rows otherwise than torch: LSTM ``i, o, f, c`` (torch ``i, f, g, o``),
GRU ``z, r, h`` (torch ``r, z, n``); torch's GRU multiplies the reset gate after the
recurrent product, which is ONNX's ``linear_before_reset=1``. The rows are reordered by
Split/Concat nodes on the weights (a runtime folds them), so a file written with
``export_params=False`` takes torch's weights unchanged. Inputs ``[T, B, I]`` (``[B, T,
I]`` with batch_first) and states ``[layers * dirs, B, H]``; batch and time may be dynamic.

Sources: the ONNX operator specification (LSTM, GRU, RNN, opset 14 and later); the torch
docs of nn.LSTM, nn.GRU, nn.RNN and torch.onnx's legacy exporter's use of them."""

from __future__ import annotations

import numpy as np

from ._ops import EMITTERS
from .errors import OnnxExporterError

# torch's gate blocks in ONNX's order
_GATE_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}
_ONNX_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _emitter(mode: str):
    return lambda ctx, a, out: _stack(ctx, mode, a["args"])


for _name, _mode in {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN_TANH", "rnn_relu": "RNN_RELU"}.items():
    EMITTERS[_name] = _emitter(_mode)


def _stack(ctx, mode: str, args):
    """``args``: torch's padded overload ``(input, hx, params, has_biases, num_layers,
    dropout, train, bidirectional, batch_first)``; returns ``[output, h_n(, c_n)]``."""
    with_cell = mode == "LSTM"
    packed = len(args) != 9 or (isinstance(args[1], str) if with_cell else isinstance(args[2], str))
    if packed:
        raise OnnxExporterError(f"{ctx.op_name} over a PackedSequence is not exported: give the padded [T, B, I] "
                                f"tensor (ONNX's {_ONNX_OP[mode]} takes sequence lengths, torch's packing does not "
                                f"map onto them)")
    x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
    if train and dropout > 0 and num_layers > 1:
        raise OnnxExporterError(f"{ctx.op_name} with dropout between layers in training mode is random: export the "
                                f"model in eval mode (model.eval())")
    h0, c0 = (hx[0], hx[1]) if with_cell else (hx, None)
    if with_cell and ctx.shape(h0)[-1] != ctx.shape(c0)[-1]:
        raise OnnxExporterError(f"LSTM with proj_size={ctx.shape(h0)[-1]} is not exported: ONNX's LSTM operator "
                                f"has no projection of the hidden state")
    dirs = 2 if bidirectional else 1
    per = 2 + 2 * bool(has_biases)
    hidden = ctx.shape(params[1])[1]  # weight_hh [G*H, H]
    y = ctx.op("Transpose", [x], perm=[1, 0, 2]) if batch_first else x
    finals: list[list] = [[], []]
    for layer in range(num_layers):
        groups = [params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per] for d in range(dirs)]
        w = _directions(ctx, [_gates(ctx, mode, g[0], hidden) for g in groups])
        r = _directions(ctx, [_gates(ctx, mode, g[1], hidden) for g in groups])
        b = None
        if has_biases:
            b = _directions(ctx, [ctx.op("Concat", [_gates(ctx, mode, g[2], hidden), _gates(ctx, mode, g[3], hidden)],
                                         axis=0) for g in groups])
        inputs = [y, w, r, b, None, _initial(ctx, h0, layer, dirs, num_layers)]
        if with_cell:
            inputs.append(_initial(ctx, c0, layer, dirs, num_layers))
        while inputs[-1] is None:
            inputs.pop()
        attrs = {"hidden_size": hidden, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "GRU":
            attrs["linear_before_reset"] = 1
        elif mode != "LSTM":
            attrs["activations"] = ["Relu" if mode == "RNN_RELU" else "Tanh"] * dirs
        outs = ctx.op(_ONNX_OP[mode], inputs, outputs=3 if with_cell else 2, **attrs)
        # Y [T, dirs, B, H] -> [T, B, dirs * H], the directions side by side as torch's output has them
        y = ctx.op("Reshape", [ctx.op("Transpose", [outs[0]], perm=[0, 2, 1, 3]), ctx.ints([0, 0, -1])])
        finals[0].append(outs[1])
        if with_cell:
            finals[1].append(outs[2])
    out = ctx.op("Transpose", [y], perm=[1, 0, 2]) if batch_first else y
    states = [f[0] if len(f) == 1 else ctx.op("Concat", f, axis=0) for f in finals if f]
    return [out, *states]


def _gates(ctx, mode: str, weight: str, hidden: int) -> str:
    """``weight`` (``[G*H, ...]`` or ``[G*H]``) with its gate blocks in ONNX's order."""
    order = _GATE_ORDER[mode]
    if len(order) == 1:
        return weight
    blocks = ctx.op("Split", [weight, ctx.ints([hidden] * len(order))], outputs=len(order), axis=0)
    return ctx.op("Concat", [blocks[i] for i in order], axis=0)


def _directions(ctx, per_direction: list) -> str:
    """The directions' weights stacked on a new leading axis (ONNX's ``num_directions``)."""
    stacked = [ctx.op("Unsqueeze", [w, ctx.ints([0])]) for w in per_direction]
    return stacked[0] if len(stacked) == 1 else ctx.op("Concat", stacked, axis=0)


def _initial(ctx, state: str, layer: int, dirs: int, num_layers: int):
    """Layer ``layer``'s rows of ``state`` ``[layers * dirs, B, H]``; None (ONNX's zeros)
    when the state is a constant zero, so the batch size stays free."""
    if _is_zero(ctx, state):
        return None
    if num_layers == 1:
        return state
    return ctx.op("Slice", [state, ctx.ints([layer * dirs]), ctx.ints([(layer + 1) * dirs]), ctx.ints([0])])


def _is_zero(ctx, name: str) -> bool:
    """A constant zero: folded, or a ConstantOfShape of 0 (a zero state of a dynamic batch)."""
    from onnx import numpy_helper
    folded = ctx.folded.get(name)
    if folded is not None:
        return not folded.any()
    maker = next((n for n in reversed(ctx.nodes) if name in n.output), None)
    if maker is None or maker.op_type != "ConstantOfShape":
        return False
    value = next((numpy_helper.to_array(att.t) for att in maker.attribute if att.name == "value"), np.zeros(1))
    return not value.any()
