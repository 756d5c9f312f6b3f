"""nn.RNN, nn.LSTM and nn.GRU exported as ONNX's RNN/LSTM/GRU operators (one node per
layer, not an unrolled loop): stacked, bidirectional, batch_first, with and without initial
states, with dynamic batch and sequence axes; an LSTM language model; onnxruntime beside
eager ember at the traced sizes and at others."""

import pytest
from _onnx_check import check_at_sizes, session

import ember
import ember.nn as nn

_ONNX_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN": "RNN", "RNN_relu": "RNN"}


def _layer(kind, **kwargs):
    if kind == "RNN_relu":
        return nn.RNN(6, 8, nonlinearity="relu", **kwargs)
    return getattr(nn, kind)(6, 8, **kwargs)


class WithStates(nn.Module):
    """The layer with its initial states as graph inputs."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, *states):
        return self.rnn(x, states if isinstance(self.rnn, nn.LSTM) else states[0])


class NoStates(WithStates):
    def forward(self, x):
        return self.rnn(x)


@pytest.mark.parametrize("kind", list(_ONNX_OP))
@pytest.mark.parametrize("layers,bidirectional,batch_first,states", [
    (1, False, False, False), (2, True, True, True), (2, False, True, False), (3, True, False, True)])
def test_recurrent_layers_with_dynamic_batch_and_sequence(kind, layers, bidirectional, batch_first, states):
    ember.manual_seed(0)
    rnn = _layer(kind, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first).eval()
    dirs = 2 if bidirectional else 1
    batch_axis, seq_axis = (0, 1) if batch_first else (1, 0)

    def inputs(t, b):
        x = ember.randn(b, t, 6) if batch_first else ember.randn(t, b, 6)
        if not states:
            return (x,)
        h = (ember.randn(layers * dirs, b, 8),)
        return (x, *h, ember.randn(layers * dirs, b, 8)) if kind == "LSTM" else (x, *h)

    model = (WithStates if states else NoStates)(rnn)
    names = ["x", "h0", "c0"][:len(inputs(1, 1))]
    dynamic = {"x": {batch_axis: "batch", seq_axis: "seq"}, **{n: {1: "batch"} for n in names[1:]}}
    proto = ember.onnx.export(model, inputs(5, 3), input_names=names, dynamic_axes=dynamic).model_proto
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count(_ONNX_OP[kind]) == layers  # one node per layer: nothing unrolled
    check_at_sizes(model, proto, [inputs(5, 3), inputs(9, 1), inputs(1, 4)])


def test_gru_uses_linear_before_reset_and_lstm_weights_stay_named():
    ember.manual_seed(1)
    gru = NoStates(nn.GRU(6, 8)).eval()
    proto = ember.onnx.export(gru, (ember.randn(4, 2, 6),)).model_proto
    (node,) = [n for n in proto.graph.node if n.op_type == "GRU"]
    assert {a.name: a.i for a in node.attribute}["linear_before_reset"] == 1
    lstm = NoStates(nn.LSTM(6, 8, bias=False)).eval()
    proto = ember.onnx.export(lstm, (ember.randn(4, 2, 6),)).model_proto
    assert {t.name for t in proto.graph.initializer} == {"rnn.weight_ih_l0", "rnn.weight_hh_l0"}
    check_at_sizes(lstm, proto, [(ember.randn(4, 2, 6),)])


def test_weights_as_inputs_take_torchs_gate_order():
    # export_params=False: the file reorders the gates itself, so torch-layout weights feed it
    ember.manual_seed(2)
    model = NoStates(nn.LSTM(6, 8, num_layers=2, bidirectional=True)).eval()
    x = ember.randn(5, 3, 6)
    proto = ember.onnx.export(model, (x,), export_params=False).model_proto
    feeds = {"x": x.numpy(), **{k: v.detach().numpy() for k, v in model.state_dict().items()}}
    got = session(proto).run(None, feeds)
    with ember.no_grad():
        out, (h, c) = model(x)
    for g, w in zip(got, (out, h, c)):
        ember.testing.assert_close(ember.from_numpy(g), w, rtol=1e-5, atol=1e-5)


def test_lstm_projection_and_training_dropout_are_errors():
    with pytest.raises(ember.onnx.OnnxExporterError, match="proj_size=3 is not exported"):
        ember.onnx.export(NoStates(nn.LSTM(6, 8, proj_size=3)).eval(), (ember.randn(4, 2, 6),))
    with pytest.raises(ember.onnx.OnnxExporterError, match="eval mode"):
        ember.onnx.export(NoStates(nn.GRU(6, 8, num_layers=2, dropout=0.5)).train(), (ember.randn(4, 2, 6),))


class LSTMLanguageModel(nn.Module):
    """Token ids [B, T] -> next-token logits [B, T, V]: embedding, a 2-layer LSTM, a linear head."""

    def __init__(self, vocab=50, embed=16, hidden=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True, dropout=0.2)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(self.drop(out))


def test_lstm_language_model_with_dynamic_batch_and_sequence():
    ember.manual_seed(3)
    model = LSTMLanguageModel().eval()
    proto = ember.onnx.export(model, (ember.randint(0, 50, (2, 7)),), input_names=["tokens"],
                              output_names=["logits"], dynamic_axes={"tokens": {0: "batch", 1: "seq"},
                                                                     "logits": {0: "batch", 1: "seq"}}).model_proto
    dims = [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "seq", 50]
    check_at_sizes(model, proto, [(ember.randint(0, 50, (b, t)),) for b, t in ((2, 7), (1, 12), (5, 1))])


def test_cells_export_as_their_ops():
    ember.manual_seed(4)

    class Cells(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.gru, self.rnn = nn.LSTMCell(6, 8), nn.GRUCell(6, 8), nn.RNNCell(6, 8)

        def forward(self, x, h):
            h1, c1 = self.lstm(x, (h, h))
            return h1, c1, self.gru(x, h), self.rnn(x)

    model = Cells().eval()
    proto = ember.onnx.export(model, (ember.randn(3, 6), ember.randn(3, 8)),
                              dynamic_axes={"x": {0: "batch"}, "h": {0: "batch"}}).model_proto
    check_at_sizes(model, proto, [(ember.randn(b, 6), ember.randn(b, 8)) for b in (3, 1, 6)])
