"""Recurrent layers: RNN, LSTM, GRU and their cells (torch.nn.modules.rnn).

Each layer and direction is one ``ops.rnn.rnn_layer`` node; layers are stacked and the
two directions of a bidirectional layer concatenated with ember ops.  Inputs are
``[T, B, I]`` (``[B, T, I]`` with ``batch_first``), unbatched ``[T, I]``, or a
PackedSequence; parameters, their names, order and initialisation (uniform on
±1/sqrt(hidden_size)) are torch's, so state dicts move between the two.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ... import _dtype as D
from ...ops.creation import empty, zeros
from ...ops.rnn import gru_cell, lstm_cell, rnn_cell
from ...ops.rnn_flat import _stack_layers, gru, lstm, rnn_relu, rnn_tanh
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}
_TOP_LEVEL = {"LSTM": lstm, "GRU": gru, "RNN_TANH": rnn_tanh, "RNN_RELU": rnn_relu}


def _factory_kwargs(device, dtype):
    return {"device": device, "dtype": D.to_dtype(dtype) if dtype is not None else None}


class RNNBase(Module):
    """The stack of recurrent layers shared by RNN, LSTM and GRU (torch.nn.RNNBase).

    Raises ValueError for a bad ``dropout``, size, ``proj_size`` or mode and TypeError for
    non-bool ``bias``/``batch_first`` or non-int sizes, as torch does.

    ``mode``: 'LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU'.  ``input_size``: the input's feature
    size I.  ``hidden_size``: H.  ``num_layers``: stacked layers, each fed the previous one's
    output.  ``bias``: learn ``bias_ih_l*`` and ``bias_hh_l*``.  ``batch_first``: ``[B, T, *]``
    layout of input and output (not of the states).  ``dropout``: drop probability on each
    layer's output but the last, in training.  ``bidirectional``: a reverse direction per
    layer, outputs concatenated to ``2*H``.  ``proj_size``: LSTM only, project h to that size
    (``weight_hr_l*``; 0 for none).  ``device``, ``dtype``: of the parameters.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        dirs = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(dirs):
                layer_input = input_size if layer == 0 else real_hidden * dirs
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for base, shape in shapes:
                    name = f"{base}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, **fk)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters of each layer and direction, in torch's order."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: torch packs the weights for cuDNN here; ember's layers need no packing."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- input checks (torch's messages) ----

    def check_input(self, input, batch_sizes) -> None:
        w = self._flat_weights[0]
        if input.dtype != w.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w.dtype}). Convert "
                             f"input: input.to({w.dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        dirs = 2 if self.bidirectional else 1
        return (self.num_layers * dirs, mini_batch, self.proj_size if self.proj_size > 0 else self.hidden_size)

    def check_hidden_size(self, hx, expected, msg="Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    # ---- the run ----

    def _prepare(self, input, hx):
        """(time-major input [T, B, I] or packed data [N, I], batch_sizes, hx, packed
        indices, unbatched): torch's argument handling before the layers run."""
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(self.mode, self.mode)
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_idx, unsorted_idx = input
            bs = [int(b) for b in batch_sizes.tolist()]
            if hx is not None and sorted_idx is not None:
                hx = _permute(hx, sorted_idx)
            return data, bs, hx, sorted_idx, unsorted_idx, False
        if input.dim() not in (2, 3):
            suffix = "tensor instead" if name == "RNN" else "instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {suffix}")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if hx is not None:
            hx = self._check_hx_dims(hx, batched)
        return input, None, hx, None, None, not batched

    def _check_hx_dims(self, hx, batched):
        want = 3 if batched else 2
        kind = "batched 3-D" if batched else "unbatched 2-D"
        if hx.dim() != want:
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor")
        return hx if batched else hx.unsqueeze(1)

    def _run(self, input, hx, cx, batch_sizes):
        """Run the stack. ``input`` as given ([B, T, I] with batch_first) or packed data [N, I]."""
        if batch_sizes is None:  # torch's top-level op, which torch's modules call too: a graph capture
            # (jit.trace, ONNX export) records the whole stack as one node
            hidden = (hx, cx) if self.mode == "LSTM" else hx
            result = _TOP_LEVEL[self.mode](input, hidden, self._flat_weights, self.bias, self.num_layers,
                                           self.dropout, self.training, self.bidirectional, self.batch_first)
            return result if self.mode == "LSTM" else (result[0], result[1], None)
        dirs = 2 if self.bidirectional else 1
        weights = []
        for k, group in enumerate(self.all_weights):
            w = dict(zip((n.rsplit("_l", 1)[0] for n in self._all_weights[k]), group))
            weights.append((w["weight_ih"], w["weight_hh"], w.get("bias_ih"), w.get("bias_hh"), w.get("weight_hr")))
        return _stack_layers(self.mode, input, batch_sizes, hx, cx, weights, self.num_layers, dirs, self.dropout,
                             self.training)

    def _zeros(self, input, batch_sizes, size):
        batch = batch_sizes[0] if batch_sizes is not None else (input.size(0) if self.batch_first else input.size(1))
        dirs = 2 if self.bidirectional else 1
        return zeros(self.num_layers * dirs, batch, size, dtype=input.dtype, device=input.device)

    def _finish(self, orig, out, states, unsorted_idx, unbatched):
        if isinstance(orig, PackedSequence):
            out = PackedSequence(out, orig.batch_sizes, orig.sorted_indices, orig.unsorted_indices)
            if unsorted_idx is not None:
                states = tuple(_permute(s, unsorted_idx) for s in states)
        elif unbatched:
            out = out.squeeze(0 if self.batch_first else 1)
            states = tuple(s.squeeze(1) for s in states)
        return out, states


def _permute(hx, idx):
    return hx.index_select(1, idx)


class RNN(RNNBase):
    """Elman RNN, ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with ``act`` tanh
    or relu, stacked ``num_layers`` deep (torch.nn.RNN).

    ``forward(input, hx=None)``: input ``[T, B, I]`` (``[B, T, I]`` with batch_first),
    ``[T, I]`` or a PackedSequence; hx ``[L*D, B, H]`` (``[L*D, H]`` unbatched), zeros by
    default.  Returns ``(output [T, B, D*H], h_n [L*D, B, H])``.  ValueError for a
    nonlinearity other than 'tanh'/'relu' or a ``proj_size`` argument."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.__dict__["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        else:
            self.__dict__["nonlinearity"] = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        orig = input
        input, batch_sizes, hx, _, unsorted_idx, unbatched = self._prepare(input, hx)
        if hx is None:
            hx = self._zeros(input, batch_sizes, self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        out, h_n, _ = self._run(input, hx, None, batch_sizes)
        out, (h_n,) = self._finish(orig, out, (h_n,), unsorted_idx, unbatched)
        return out, h_n


class GRU(RNNBase):
    """Gated recurrent unit layers (torch.nn.GRU): gates ``r, z, n`` as in torch's docs,
    ``h_t = (1 - z) * n + z * h_{t-1}``.  Inputs and outputs as RNN's."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    forward = RNN.forward


class LSTM(RNNBase):
    """Long short-term memory layers (torch.nn.LSTM), with an optional projection of the
    hidden state to ``proj_size`` (``h_t = W_hr (o_t * tanh(c_t))``).

    ``forward(input, (h_0, c_0)=None)``: input as RNN's; h_0 ``[L*D, B, H_out]`` (H_out is
    proj_size if set, else hidden_size), c_0 ``[L*D, B, H]``.  Returns
    ``(output [T, B, D*H_out], (h_n, c_n))``."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        exp = self.get_expected_hidden_size(input, batch_sizes)
        return exp[:2] + (self.hidden_size,)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def _check_hx_dims(self, hx, batched):
        want = 3 if batched else 2
        if hx[0].dim() != want or hx[1].dim() != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx and cx should also be {want}-D but got "
                               f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        return hx if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))

    def forward(self, input, hx=None):
        orig = input
        input, batch_sizes, _, _, unsorted_idx, unbatched = self._prepare(input, None)
        if hx is None:
            real = self.proj_size if self.proj_size > 0 else self.hidden_size
            hx = (self._zeros(input, batch_sizes, real), self._zeros(input, batch_sizes, self.hidden_size))
        elif batch_sizes is None:
            hx = self._check_hx_dims(hx, not unbatched)
        elif orig.sorted_indices is not None:
            hx = (_permute(hx[0], orig.sorted_indices), _permute(hx[1], orig.sorted_indices))
        self.check_forward_args(input, hx, batch_sizes)
        out, h_n, c_n = self._run(input, hx[0], hx[1], batch_sizes)
        out, (h_n, c_n) = self._finish(orig, out, (h_n, c_n), unsorted_idx, unbatched)
        return out, (h_n, c_n)


# ---- cells -------------------------------------------------------------------------

class RNNCellBase(Module):
    """Parameters of one recurrent step: ``weight_ih [G*H, I]``, ``weight_hh [G*H, H]``,
    ``bias_ih``, ``bias_hh [G*H]``, uniform on ±1/sqrt(hidden_size) (torch.nn.RNNCellBase).

    ``num_chunks``: G, the number of gates (1 for RNNCell, 3 GRUCell, 4 LSTMCell).
    ``input_size``: I, the input's feature size.  ``hidden_size``: H.  ``bias``: learn
    ``bias_ih`` and ``bias_hh``.  ``device``, ``dtype``: of the parameters.  RuntimeError in
    forward for sizes that do not match, ValueError for inputs of other than 1 or 2 dims.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        fk = _factory_kwargs(device, dtype)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), **fk))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), **fk))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, **fk))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, **fk))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, input, states):
        """torch's size checks of a batched step."""
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        for i, s in enumerate(states):
            if s.size(0) != input.size(0):
                raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{i} batch size "
                                   f"{s.size(0)}")
            if s.size(1) != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {s.size(1)}, expected "
                                   f"{self.hidden_size}")

    def _single_state(self, name, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        self._check(input, (hx,))
        return input, hx, batched


class RNNCell(RNNCellBase):
    """One Elman step ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (torch.nn.RNNCell):
    input ``[B, I]`` or ``[I]``, hx ``[B, H]`` or ``[H]`` (zeros by default); returns h'.

    ``nonlinearity``: 'tanh' or 'relu' (RuntimeError in forward for another).
    ``input_size``: I, the input's feature size.  ``hidden_size``: H.  ``bias``: learn
    ``bias_ih`` and ``bias_hh``.  ``device``, ``dtype``: of the parameters.  RuntimeError in
    forward for sizes that do not match, ValueError for inputs of other than 1 or 2 dims.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, hx, batched = self._single_state("RNNCell", input, hx)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = rnn_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                     relu=self.nonlinearity == "relu")
        return h if batched else h.squeeze(0)


class GRUCell(RNNCellBase):
    """One GRU step (torch.nn.GRUCell; Cho et al., 2014, arXiv:1406.1078): input ``[B, I]`` or
    ``[I]``, hx ``[B, H]`` or ``[H]`` (zeros by default); returns h'.  Gates in the order reset,
    update, new, as torch's weights.

    ``input_size``: I, the input's feature size.  ``hidden_size``: H.  ``bias``: learn
    ``bias_ih`` and ``bias_hh``.  ``device``, ``dtype``: of the parameters.  RuntimeError in
    forward for sizes that do not match, ValueError for inputs of other than 1 or 2 dims.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, hx, batched = self._single_state("GRUCell", input, hx)
        h = gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step (torch.nn.LSTMCell): input ``[B, I]`` or ``[I]``, hx a pair
    ``(h [B, H], c [B, H])`` (or 1-D, zeros by default); returns ``(h', c')``.  Gates in the
    order input, forget, cell, output, as torch's weights (Hochreiter & Schmidhuber, 1997).

    ``input_size``: I, the input's feature size.  ``hidden_size``: H.  ``bias``: learn
    ``bias_ih`` and ``bias_hh``.  ``device``, ``dtype``: of the parameters.  RuntimeError in
    forward for sizes that do not match, ValueError for inputs of other than 1 or 2 dims.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for i, v in enumerate(hx):
                if v.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{i}] to be 1D or 2D, got {v.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            z = zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (z, z)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check(input, hx)
        h, c = lstm_cell(input, hx[0], hx[1], self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))
