"""ember.onnx.load_model on files ember.onnx.export writes: the imported module computes
what the exported model computes, its parameters are the initializers and train as the
original's do; opsets, external data, and the errors for unsupported operators and bad
files."""

import io

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from test_export import MLP, FashionCNN, Shapes, _trained_bn

import ember
import ember.nn as nn
import ember.nn.functional as F


def _round_trip(model, args, **export_kwargs):
    buffer = io.BytesIO()
    ember.onnx.export(model, args, buffer, **export_kwargs)
    return ember.onnx.load_model(buffer.getvalue())


def _assert_same(got, want, rtol=1e-5, atol=1e-6):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("opset", [17, 18, 20, 21])
def test_mlp_round_trip_at_every_export_opset(opset):
    model, x = MLP().eval(), ember.randn(4, 12)
    gm = _round_trip(model, (x,), opset_version=opset)
    assert isinstance(gm, ember.fx.GraphModule)
    with ember.no_grad():
        _assert_same(gm(x), model(x))
    assert "ember.nn.functional.linear" in gm.code  # Gemm of a Linear layer reads as one
    assert "def forward(self, x)" in gm.code


def test_cnn_round_trip_keeps_state_dict_names_and_buffers():
    model = _trained_bn(FashionCNN())
    x = ember.randn(3, 1, 28, 28)
    gm = _round_trip(model, (x,))
    with ember.no_grad():
        _assert_same(gm(x), model(x), atol=1e-5)
    want = {k for k in model.state_dict() if not k.endswith("num_batches_tracked")}
    assert set(gm.state_dict()) == want
    params = {name for name, _ in gm.named_parameters()}
    assert params == {name for name, _ in model.named_parameters()}  # running stats are buffers
    assert gm.initializer_names["features.1.running_mean"] == "features.1.running_mean"
    for name, p in model.named_parameters():
        np.testing.assert_array_equal(gm.get_parameter(name).detach().numpy(), p.detach().numpy())


def test_shape_ops_round_trip():
    model, args = Shapes().eval(), (ember.randn(2, 3, 8, 8), ember.randn(2, 3))
    gm = _round_trip(model, args, opset_version=18)
    with ember.no_grad():
        _assert_same(gm(*args), model(*args), atol=1e-5)


def test_activations_round_trip():
    class Acts(nn.Module):
        def forward(self, x):
            return (F.leaky_relu(x, 0.2), F.elu(x), F.hardswish(x), F.hardsigmoid(x), F.relu6(x * 4),
                    F.hardtanh(x, -0.5, 0.5), F.softplus(x, beta=2.0), ember.exp(x) / (ember.abs(x) + 1),
                    ember.rsqrt(x * x + 1), x - 2 * x.pow(2), ember.clamp(x, min=-0.2), F.gelu(x, approximate="tanh"),
                    1 - x, x.div(3, rounding_mode="floor"), F.mish(x), x > 0.5, ember.where(x < 0, x * 0.1, x),
                    x.masked_fill(x.abs() > 2, 0.0))

    x = ember.randn(5, 7) * 3
    for opset in (17, 20):
        gm = _round_trip(Acts(), (x,), opset_version=opset)
        _assert_same(gm(x), Acts()(x), atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_round_trip(norm_first):
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, activation="gelu", batch_first=True,
                                       norm_first=norm_first).eval()
    x = ember.randn(2, 5, 16)
    gm = _round_trip(layer, (x,))
    with ember.no_grad():
        _assert_same(gm(x), layer(x), rtol=1e-4, atol=1e-5)


def test_a_dynamic_batch_follows_the_input():
    model = _trained_bn(FashionCNN())
    gm = _round_trip(model, (ember.randn(2, 1, 28, 28),), dynamic_axes={"x": {0: "batch"}})
    assert "reshape(averagepool, [0, -1])" in gm.code  # the batch dim is copied from the input when it runs
    for batch in (1, 5):
        x = ember.randn(batch, 1, 28, 28)
        with ember.no_grad():
            _assert_same(gm(x), model(x), atol=1e-5)


def test_external_data_loads(tmp_path):
    model, x = MLP().eval(), ember.randn(3, 12)
    path = tmp_path / "mlp.onnx"
    ember.onnx.export(model, (x,), str(path))  # the weights go to mlp.onnx.data
    assert (tmp_path / "mlp.onnx.data").exists()
    stored = onnx.load(str(path), load_external_data=False).graph.initializer
    assert all(t.data_location == TensorProto.EXTERNAL for t in stored)
    gm = ember.onnx.load_model(path)
    with ember.no_grad():
        _assert_same(gm(x), model(x))


def _sgd_losses(model, x, target, steps=4):
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)
        loss = F.nll_loss(out, target) if out.shape[-1] == 10 else F.mse_loss(out, target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_fine_tuning_an_imported_model_matches_training_the_original(kind):
    ember.manual_seed(0)
    if kind == "mlp":
        original, x = MLP().eval(), ember.randn(8, 12)
        target = ember.rand(8, 5)
    else:
        original, x = _trained_bn(FashionCNN()), ember.randn(6, 1, 28, 28)
        target = ember.randint(0, 10, (6,))
    gm = _round_trip(original, (x,))
    gm_params = dict(gm.named_parameters())
    assert gm_params and all(p.requires_grad for p in gm_params.values())
    out = gm(x)
    out.sum().backward()
    assert all(p.grad is not None for p in gm_params.values())
    gm.zero_grad()
    # the original in eval mode: dropout off and batch norm on running statistics, as in the file
    want = _sgd_losses(original, x, target)
    got = _sgd_losses(gm, x, target)
    assert got[-1] < got[0]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for name, p in original.named_parameters():
        np.testing.assert_allclose(gm.get_parameter(name).detach().numpy(), p.detach().numpy(), rtol=1e-5, atol=1e-6)


def _model(nodes, inputs, outputs, initializers=(), opset=21, domains=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=imports)


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_an_unsupported_operator_names_its_type_its_node_and_its_domain():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first"),
             helper.make_node("Hardmax", ["r"], ["y"], name="the_hardmax")]
    model = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [2, 3])])
    with pytest.raises(ember.onnx.UnsupportedOnnxOperatorError) as info:
        ember.onnx.load_model(model.SerializeToString())
    message = str(info.value)
    assert "'Hardmax'" in message and "'the_hardmax'" in message and "'ai.onnx'" in message
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, ember.onnx.OnnxExporterError)
    custom = _model([helper.make_node("Frobnicate", ["x"], ["y"], name="f1", domain="com.example")],
                    [_vi("x", [2])], [_vi("y", [2])], domains=["com.example"])
    with pytest.raises(ember.onnx.UnsupportedOnnxOperatorError, match=r"'Frobnicate' \(domain 'com.example'\)"):
        ember.onnx.load_model(custom.SerializeToString())


def test_an_attribute_value_without_a_conversion_is_named():
    w = helper.make_tensor("W", TensorProto.FLOAT, [1, 12, 2], np.zeros(24, np.float32))
    r = helper.make_tensor("R", TensorProto.FLOAT, [1, 12, 4], np.zeros(48, np.float32))
    node = helper.make_node("GRU", ["x", "W", "R"], ["y"], name="gru0", hidden_size=4, linear_before_reset=0)
    model = _model([node], [_vi("x", [3, 1, 2])], [_vi("y", [3, 1, 1, 4])], [w, r])
    with pytest.raises(ember.onnx.UnsupportedOnnxOperatorError, match="'gru0'.*linear_before_reset=0"):
        ember.onnx.load_model(model)


def test_bad_files_are_validation_errors_naming_the_file(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x00\x01 this is not protobuf \xff\xfe")
    with pytest.raises(onnx.checker.ValidationError, match="garbage.onnx"):
        ember.onnx.load_model(garbage)
    broken = _model([helper.make_node("Relu", ["missing"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    path = tmp_path / "broken.onnx"
    path.write_bytes(broken.SerializeToString())
    with pytest.raises(onnx.checker.ValidationError, match="broken.onnx"):
        ember.onnx.load_model(str(path))
    with pytest.raises(FileNotFoundError, match="nowhere.onnx"):
        ember.onnx.load_model(tmp_path / "nowhere.onnx")
    with pytest.raises(TypeError, match="got int"):
        ember.onnx.load_model(3)


def test_opsets_are_converted_and_old_ones_refused():
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=0),
             helper.make_node("Unsqueeze", ["m"], ["y"], axes=[0])]
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    for opset in (11, 12):
        model = _model(nodes, [_vi("x", [2, 3])], [_vi("y", [1, 2])], opset=opset)
        with pytest.raises(ember.onnx.OnnxImportError, match=f"opset {opset} of ai.onnx.*13 to 23"):
            ember.onnx.load_model(model)
    # opset 13: Unsqueeze takes its axes as an input, ReduceMean still as an attribute (an input from 18)
    unsqueeze = helper.make_node("Unsqueeze", ["m", "axes"], ["y"])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    model = _model([nodes[0], unsqueeze], [_vi("x", [2, 3])], [_vi("y", [1, 2])], [axes], opset=13)
    got = ember.onnx.load_model(model)(ember.from_numpy(x))
    np.testing.assert_allclose(got.numpy(), x.mean(1, keepdims=False)[None], rtol=1e-6)


def test_constants_fold_and_inputs_are_named_as_identifiers():
    shape = helper.make_node("Constant", [], ["two"], value=helper.make_tensor("t", TensorProto.INT64, [], [2]))
    nodes = [shape, helper.make_node("Mul", ["two", "two"], ["four"]),
             helper.make_node("Cast", ["four"], ["four_f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["input.1", "four_f"], ["out.0"])]
    model = _model(nodes, [_vi("input.1", [3])], [_vi("out.0", [3])])
    gm = ember.onnx.load_model(model)
    assert "def forward(self, input_1)" in gm.code and "input_1 * 4.0" in gm.code
    np.testing.assert_array_equal(gm(ember.tensor([1.0, 2.0, 3.0])).numpy(), [4.0, 8.0, 12.0])
