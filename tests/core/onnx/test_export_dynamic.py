"""dynamic_axes / dynamic_shapes: a declared dynamic axis stays dynamic in the file (the
model runs in onnxruntime at other sizes and matches eager ember there), or the export
fails naming the axis and the op that fixed it."""

import numpy as np
import onnx
import pytest
from _onnx_check import session

import ember
import ember.nn as nn
import ember.nn.functional as F


def _run_at(model, proto, batches):
    """Run the file at each list of inputs and compare with eager ember."""
    onnx.checker.check_model(proto, full_check=True)
    sess = session(proto)
    for inputs in batches:
        got = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), inputs)})
        with ember.no_grad():
            want = model(*inputs)
        want = want if isinstance(want, (tuple, list)) else (want,)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Linear(4 * 14 * 14, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        flat = x.view(x.shape[0], -1)  # the recorded batch size changes with the axis: a Shape/Gather in the file
        return F.log_softmax(self.fc(flat), dim=1), x.reshape(-1, 14).amax(0), ember.flatten(x, 0, 1)[:, 0, :3]


@pytest.mark.parametrize("opset", [17, 20])
def test_dynamic_batch_with_dynamic_axes(opset):
    model = CNN().eval()
    proto = ember.onnx.export(model, (ember.randn(2, 1, 28, 28),), input_names=["image"],
                              output_names=["log_probs", "peak", "rows"], opset_version=opset,
                              dynamic_axes={"image": {0: "batch"}, "log_probs": {0: "batch"}}).model_proto
    assert _dims(proto.graph.input[0]) == ["batch", 1, 28, 28]
    assert _dims(proto.graph.output[0]) == ["batch", 10] and _dims(proto.graph.output[1]) == [14]
    assert _dims(proto.graph.output[2]) == ["4*batch", 3]
    assert "Shape" in {n.op_type for n in proto.graph.node}
    _run_at(model, proto, [(ember.randn(b, 1, 28, 28),) for b in (2, 1, 5)])


def test_dynamic_batch_and_sequence_of_a_transformer_layer_with_dynamic_shapes():
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True).eval()
    proto = ember.onnx.export(layer, (ember.randn(2, 5, 16),), dynamic_shapes={"src": {0: "batch", 1: "seq"}},
                              dynamo=True).model_proto
    assert _dims(proto.graph.input[0]) == ["batch", "seq", 16]
    _run_at(layer, proto, [(ember.randn(b, t, 16),) for b, t in ((2, 5), (3, 7), (1, 1))])


def test_token_ids_with_a_tuple_of_dynamic_shapes_and_a_list_of_axes():
    class Pooled(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.norm = nn.Embedding(10, 8), nn.LayerNorm(8)

        def forward(self, ids):
            return self.norm(self.embed(ids)).mean(1)

    model = Pooled().eval()
    proto = ember.onnx.export(model, (ember.tensor([[1, 2, 3], [4, 5, 9]]),), dynamic_shapes=({0: "b", 1: "t"},)
                              ).model_proto
    _run_at(model, proto, [(ember.randint(0, 10, (b, t)),) for b, t in ((2, 3), (4, 6), (1, 1))])
    listed = ember.onnx.export(model, (ember.tensor([[1, 2, 3], [4, 5, 9]]),), dynamic_axes={"ids": [0]}).model_proto
    assert _dims(listed.graph.input[0]) == ["ids_dim0", 3]
    _run_at(model, listed, [(ember.randint(0, 10, (5, 3)),)])


def test_a_slice_bound_that_follows_the_axis_is_computed_in_the_file():
    class Crop(nn.Module):
        def forward(self, x):
            return x[:, : x.shape[0]] * 2

    model = Crop()
    proto = ember.onnx.export(model, (ember.randn(2, 8),), dynamic_shapes={"x": {0: "batch"}}).model_proto
    assert {"Shape", "Gather", "Slice"} <= {n.op_type for n in proto.graph.node}
    _run_at(model, proto, [(ember.randn(b, 8),) for b in (2, 3, 6)])


def test_size_arithmetic_becomes_integer_ops_in_the_file():
    class Pairs(nn.Module):
        def forward(self, x):
            n = x.size(0)
            return x.reshape(n * 2, -1).sum(1).view(n, 2) + (n - 1)

    model = Pairs()
    proto = ember.onnx.export(model, (ember.randn(3, 4, 2),), dynamic_shapes={"x": {0: "batch"}}).model_proto
    assert _dims(proto.graph.output[0]) == ["batch", 2]
    assert {"Shape", "Gather", "Mul", "Sub"} <= {n.op_type for n in proto.graph.node}
    _run_at(model, proto, [(ember.randn(b, 4, 2),) for b in (3, 2, 7)])


def test_a_view_to_static_sizes_is_an_error_naming_the_axis_and_the_op():
    class Fixed(nn.Module):
        def forward(self, x):
            return x.view(3, 5) * 2

    with pytest.raises(ember.onnx.OnnxExporterError, match=r"dynamic axis 'batch' is fixed by the op 'view'"):
        ember.onnx.export(Fixed(), (ember.randn(3, 5),), dynamic_shapes={"x": {0: "batch"}})


def test_a_decision_on_the_axis_size_is_an_error_naming_the_axis_and_the_line():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.size(0) > 4:
                return x * 2
            return x + 1

    with pytest.raises(ember.onnx.OnnxExporterError,
                       match=r"dynamic axis 'batch' is fixed by a decision on the size at .*test_export_dynamic.py:\d+ "
                             r"in forward: the model requires x.size\(\)\[0\] <= 4"):
        ember.onnx.export(Branchy(), (ember.randn(3, 5),), dynamic_shapes={"x": {0: "batch"}})


def test_a_split_along_the_dynamic_axis_is_an_error():
    class Halves(nn.Module):
        def forward(self, x):
            return x.chunk(2, dim=1)[0] * 2

    with pytest.raises(ember.onnx.OnnxExporterError, match="dynamic axis 'seq' is fixed by the op 'chunk'"):
        ember.onnx.export(Halves(), (ember.randn(3, 4),), dynamic_shapes={"x": {1: "seq"}})
    # along another dim the chunks do not depend on the axis
    model = Halves()
    proto = ember.onnx.export(model, (ember.randn(3, 4),), dynamic_shapes={"x": {0: "batch"}}).model_proto
    _run_at(model, proto, [(ember.randn(6, 4),)])


def test_a_constant_made_from_the_axis_is_an_error():
    class Positions(nn.Module):
        def forward(self, x):
            return x + ember.arange(x.shape[1])  # arange's bound is not its result's shape

    with pytest.raises(ember.onnx.OnnxExporterError, match="dynamic axis 'seq' is fixed by the op 'arange'"):
        ember.onnx.export(Positions(), (ember.randn(2, 4),), dynamic_shapes={"x": {1: "seq"}})


def test_zeros_and_ones_of_the_axis_size_follow_it():
    class Causal(nn.Module):
        def forward(self, x):
            t = x.shape[1]
            return x + ember.ones(t, t).triu(1).sum(0) + ember.zeros(x.shape[0], 1)

    model = Causal()
    proto = ember.onnx.export(model, (ember.randn(2, 4),), dynamic_shapes={"x": {0: "batch", 1: "seq"}}).model_proto
    assert "ConstantOfShape" in {n.op_type for n in proto.graph.node}
    _run_at(model, proto, [(ember.randn(b, t),) for b, t in ((2, 4), (3, 6), (1, 1))])


def test_declared_output_axis_that_stays_fixed_and_unknown_names():
    class Total(nn.Module):
        def forward(self, x):
            return x.sum(0)

    with pytest.raises(ember.onnx.OnnxExporterError, match="output 'sum_1' axis 0 .* does not change"):
        ember.onnx.export(Total(), (ember.randn(2, 3),), dynamic_axes={"x": {0: "b"}, "sum_1": {0: "b"}})
    with pytest.raises(ember.onnx.OnnxExporterError, match="neither inputs nor outputs"):
        ember.onnx.export(Total(), (ember.randn(2, 3),), dynamic_axes={"nope": {0: "b"}})
    with pytest.raises(ember.onnx.OnnxExporterError, match="out of range"):
        ember.onnx.export(Total(), (ember.randn(2, 3),), dynamic_axes={"x": {2: "b"}})
