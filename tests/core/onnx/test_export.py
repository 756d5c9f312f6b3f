"""ember.onnx.export: files that pass onnx's full check and compute what eager ember does
in onnxruntime; names, destinations, opsets and the error for an op with no mapping."""

import io
import os

import numpy as np
import onnx
import pytest
import torch
from _onnx_check import check_against_eager, session

import ember
import ember.nn as nn
import ember.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(12, 32), nn.Linear(32, 16), nn.Linear(16, 5)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        x = F.silu(self.fc2(x)) - F.gelu(self.fc2(x)) * 0.5 + F.sigmoid(self.fc2(x)) / 2
        return F.softmax(self.fc3(F.tanh(x)), dim=-1)


class FashionCNN(nn.Module):
    """examples/fashion_mnist.py's network, with batch norm and dropout as the variants use."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
                                        nn.Linear(128, 10))

    def forward(self, x):
        return F.log_softmax(self.classifier(self.features(x)), dim=1)


def _trained_bn(model):
    # running statistics that are not the initial 0/1, so the exported BatchNormalization is tested
    model.train()
    with ember.no_grad():
        model(ember.randn(8, 1, 28, 28) * 2 + 0.5)
    return model.eval()


@pytest.mark.parametrize("opset", [17, 18, 19, 20, 21])
def test_mlp_every_opset(opset):
    proto = check_against_eager(MLP().eval(), (ember.randn(4, 12),), opset_version=opset)
    assert proto.opset_import[0].version == opset
    ops = {n.op_type for n in proto.graph.node}
    assert ("Gelu" in ops) == (opset >= 20) and "Gemm" in ops


@pytest.mark.parametrize("opset", [17, 20])
def test_fashion_cnn(opset):
    proto = check_against_eager(_trained_bn(FashionCNN()), (ember.randn(3, 1, 28, 28),), opset_version=opset)
    ops = [n.op_type for n in proto.graph.node]
    for op in ("Conv", "BatchNormalization", "MaxPool", "AveragePool", "LogSoftmax", "Gemm"):
        assert op in ops
    used = {k for k in FashionCNN().state_dict() if not k.endswith("num_batches_tracked")}
    assert {t.name for t in proto.graph.initializer} == used  # named by their state_dict keys


def test_signature_is_torchs():
    import inspect
    ours, theirs = inspect.signature(ember.onnx.export), inspect.signature(torch.onnx.export)
    kinds = [(p.name, p.kind) for p in theirs.parameters.values()]
    assert [(p.name, p.kind) for p in ours.parameters.values()] == kinds
    for name, p in theirs.parameters.items():
        mine = ours.parameters[name].default
        assert mine == p.default or (hasattr(p.default, "name") and mine.name == p.default.name), name
    assert [m for m in ember.onnx.TrainingMode.__members__] == list(torch.onnx.TrainingMode.__members__)


def test_legacy_path_exports_in_eval_mode_and_restores_the_mode():
    model = MLP().train()
    with pytest.raises(ember.onnx.OnnxExporterError, match="eval mode"):
        ember.onnx.export(model, (ember.randn(2, 12),))  # dynamo=True: the module's own mode
    program = ember.onnx.export(model, (ember.randn(2, 12),), dynamo=False)
    assert model.training and "Identity" in {n.op_type for n in program.model_proto.graph.node}
    with pytest.raises(ember.onnx.OnnxExporterError, match="inference graphs only"):
        ember.onnx.export(model, (ember.randn(2, 12),), training=ember.onnx.TrainingMode.TRAINING)


def test_default_opset_is_torchs():
    proto = ember.onnx.export(MLP().eval(), (ember.randn(2, 12),)).model_proto
    assert proto.opset_import[0].version == torch.onnx._constants.ONNX_DEFAULT_OPSET == 20


class Shapes(nn.Module):
    """view/reshape/permute/transpose/cat/getitem/mean/sum/adaptive pooling in one graph."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1, groups=1, bias=False)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x, y):
        c = self.conv(x)
        flat = c.view(c.shape[0], -1)
        r = flat.reshape(2, -1, 4).transpose(0, 1).permute(2, 0, 1)
        picked = r[1:3, ..., ::2] + r[-1, None, :, 1:]
        both = ember.cat([flat[:, :5], y], dim=1)
        return (picked.mean(dim=(0, 2), keepdim=True), both.sum(1), self.pool(c).squeeze(-1).squeeze(-1),
                x[0, :, 1] * 3.0, ember.sum(both), ember.mean(flat, -1), both.t().unsqueeze(0))


@pytest.mark.parametrize("opset", [17, 18, 21])
def test_shape_ops_slices_and_reductions(opset):
    proto = check_against_eager(Shapes().eval(), (ember.randn(2, 3, 8, 8), ember.randn(2, 3)), opset_version=opset)
    reduce_mean = [n for n in proto.graph.node if n.op_type == "ReduceMean"]
    assert all((len(n.input) == 2) == (opset >= 18) for n in reduce_mean)  # axes became an input in 18


def test_elementwise_and_activations():
    class Acts(nn.Module):
        def forward(self, x):
            return (F.leaky_relu(x, 0.2), F.elu(x), F.hardswish(x), F.hardsigmoid(x), F.relu6(x * 4),
                    F.hardtanh(x, -0.5, 0.5), F.softplus(x, beta=2.0), ember.exp(x) / (ember.abs(x) + 1),
                    ember.sqrt(ember.abs(x)), ember.rsqrt(x * x + 1), x - 2 * x.pow(2), ember.clamp(x, min=-0.2),
                    F.gelu(x, approximate="tanh"), ember.add(x, x, alpha=3), 1 - x, x.div(3, rounding_mode="floor"),
                    F.mish(x), x > 0.5, ember.where(x < 0, x * 0.1, x), x.masked_fill(x.abs() > 2, 0.0))

    for opset in (17, 18, 20):
        check_against_eager(Acts(), (ember.randn(5, 7) * 3,), opset_version=opset)


def test_input_and_output_names():
    proto = ember.onnx.export(Shapes().eval(), (ember.randn(2, 3, 8, 8), ember.randn(2, 3)),
                              input_names=["image", "extra"], output_names=["a", "b"]).model_proto
    onnx.checker.check_model(proto, full_check=True)
    assert [i.name for i in proto.graph.input] == ["image", "extra"]
    outputs = [o.name for o in proto.graph.output]
    assert outputs[:2] == ["a", "b"] and len(outputs) == 7 and len(set(outputs)) == 7
    default = ember.onnx.export(Shapes().eval(), (ember.randn(2, 3, 8, 8), ember.randn(2, 3))).model_proto
    assert [i.name for i in default.graph.input] == ["x", "y"]  # the forward's parameter names
    with pytest.raises(ValueError, match="3 names but the model has 2 inputs"):
        ember.onnx.export(Shapes().eval(), (ember.randn(2, 3, 8, 8), ember.randn(2, 3)), input_names=["a", "b", "c"])


def test_destinations_path_file_object_and_none(tmp_path):
    model, x = MLP().eval(), ember.randn(3, 12)
    with ember.no_grad():
        want = model(x).numpy()
    path = str(tmp_path / "mlp.onnx")
    program = ember.onnx.export(model, (x,), path)
    assert isinstance(program, ember.onnx.ONNXProgram)
    assert os.path.exists(path + ".data")  # external_data=True (the default): weights beside the file
    onnx.checker.check_model(path, full_check=True)
    np.testing.assert_allclose(session(path).run(None, {"x": x.numpy()})[0], want, rtol=1e-5, atol=1e-6)
    inline = str(tmp_path / "inline.onnx")
    ember.onnx.export(model, (x,), inline, external_data=False)
    assert not os.path.exists(inline + ".data")
    assert os.path.getsize(inline) > 4 * (12 * 32 + 32 * 16)
    buffer = io.BytesIO()
    ember.onnx.export(model, x, buffer)  # one tensor in place of a tuple, a file object
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    np.testing.assert_allclose(session(proto).run(None, {"x": x.numpy()})[0], want, rtol=1e-5, atol=1e-6)
    program = ember.onnx.export(model, (x,), dynamo=False)
    saved = str(tmp_path / "saved.onnx")
    program.save(saved)
    np.testing.assert_allclose(session(saved).run(None, {"x": x.numpy()})[0], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="file path"):
        program.save(io.BytesIO(), external_data=True)


def test_initializers_as_inputs_and_no_params():
    model, x = MLP().eval(), ember.randn(3, 12)
    keep = ember.onnx.export(model, (x,), keep_initializers_as_inputs=True).model_proto
    onnx.checker.check_model(keep, full_check=True)
    assert [i.name for i in keep.graph.input][1:] == [t.name for t in keep.graph.initializer]
    bare = ember.onnx.export(model, (x,), export_params=False).model_proto
    onnx.checker.check_model(bare, full_check=True)
    assert not bare.graph.initializer and "fc1.weight" in [i.name for i in bare.graph.input]
    feeds = {"x": x.numpy(), **{k: v.detach().numpy() for k, v in model.state_dict().items()}}
    with ember.no_grad():
        np.testing.assert_allclose(session(bare).run(None, feeds)[0], model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_opset_out_of_range():
    for opset in (16, 22):
        with pytest.raises(ValueError, match="opset_version must be an int from 17 to 21"):
            ember.onnx.export(MLP().eval(), (ember.randn(2, 12),), opset_version=opset)


def test_unmapped_op_names_the_op_and_the_module_path():
    class Inner(nn.Module):
        def forward(self, x):
            return ember.linalg.inv(x)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Identity(), Inner())

        def forward(self, x):
            return self.block(x) + 1

    with pytest.raises(ember.onnx.UnsupportedOperatorError) as info:
        ember.onnx.export(Outer(), (ember.randn(3, 3) + 3 * ember.eye(3),))
    assert "the op 'inv' (node 'inv') has no ONNX mapping" in str(info.value)
    assert "module 'block.1' (Inner)" in str(info.value)
    assert isinstance(info.value, ember.onnx.OnnxExporterError) and isinstance(info.value, RuntimeError)


def test_dropout_and_batch_norm_in_training_mode_are_errors():
    with pytest.raises(ember.onnx.OnnxExporterError, match="eval mode"):
        ember.onnx.export(MLP().train(), (ember.randn(2, 12),))
    with pytest.raises(ember.onnx.OnnxExporterError, match="eval mode"):
        ember.onnx.export(nn.BatchNorm1d(4).train(), (ember.randn(3, 4),))


def test_is_in_onnx_export():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * 2

    ember.onnx.export(Probe(), (ember.randn(2),))
    assert seen and all(seen) and not ember.onnx.is_in_onnx_export()


def test_an_onnx_program_runs_in_onnxruntime_when_called():
    model, x = MLP().eval(), ember.randn(3, 12)
    program = ember.onnx.export(model, (x,))
    (got,) = program(x)
    with ember.no_grad():
        ember.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-6)
    assert isinstance(got, ember.Tensor)


def test_in_place_ops_index_assignment_keyword_inputs_and_a_function():
    class InPlace(nn.Module):
        def forward(self, x, *, scale):
            y = x * 2
            y.add_(1)
            z = y.relu_()
            w = x.clone()
            w[:, 1:3] = 5.0
            w[0] = y[1]
            return y + z, w * scale

    x, s = ember.randn(3, 4), ember.tensor(3.0)
    got = ember.onnx.export(InPlace(), (x,), kwargs={"scale": s})(x, s)
    for g, w in zip(got, InPlace()(x, scale=s)):
        ember.testing.assert_close(g, w)

    def attend(a, b):
        return ember.matmul(a, b).softmax(-1)

    check_against_eager(attend, (ember.randn(2, 3), ember.randn(3, 4)))


def test_writing_into_a_view_or_a_weight_is_an_error():
    class IntoView(nn.Module):
        def forward(self, x):
            y = x * 1
            y[0].mul_(2)
            return y

    with pytest.raises(ember.onnx.OnnxExporterError, match="writes into a view"):
        ember.onnx.export(IntoView(), (ember.randn(2, 3),))


@pytest.mark.parametrize("opset", [17, 18, 21])
def test_interpolate_and_group_norm(opset):
    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm, self.conv = nn.GroupNorm(2, 4), nn.Conv2d(4, 4, 3, padding="same")

        def forward(self, x):
            y = self.norm(self.conv(x))
            return (F.interpolate(y, scale_factor=2, mode="nearest"), F.interpolate(y, size=(7, 5), mode="nearest"),
                    F.interpolate(y, scale_factor=1.5, mode="bilinear"),
                    F.interpolate(y, size=(9, 4), mode="bilinear", align_corners=True),
                    F.interpolate(y, scale_factor=2, mode="bicubic"), nn.GroupNorm(4, 4, affine=False)(x))

    check_against_eager(Decoder().eval(), (ember.randn(2, 4, 6, 6),), opset_version=opset, rtol=1e-5, atol=1e-5)
