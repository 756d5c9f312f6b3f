"""nn layers and tensor ops beyond the first models: transposed convolutions, PReLU, max
pooling with indices, instance norm, multi-head attention, more activations, indexing by
a boolean mask, reductions with indices; each file runs in onnxruntime beside eager ember,
at the traced batch size and at others where the batch is declared dynamic."""

import pytest
from _onnx_check import check_against_eager, check_at_sizes

import ember
import ember.nn as nn
import ember.nn.functional as F


@pytest.mark.parametrize("dims,kwargs", [
    (1, dict(stride=2, padding=1, output_padding=1)),
    (2, dict(stride=(2, 1), padding=(1, 0), dilation=2, groups=2)),
    (2, dict(stride=3, output_padding=2, bias=False)),
    (3, dict(stride=2, padding=1)),
])
def test_conv_transpose(dims, kwargs):
    ember.manual_seed(0)
    conv = getattr(nn, f"ConvTranspose{dims}d")(4, 6, 3, **kwargs).eval()
    spatial = (5,) * dims
    proto = ember.onnx.export(conv, (ember.randn(2, 4, *spatial),), dynamic_axes={"input": {0: "batch"}}).model_proto
    assert "ConvTranspose" in {n.op_type for n in proto.graph.node}
    check_at_sizes(conv, proto, [(ember.randn(b, 4, *spatial),) for b in (2, 1, 3)])


def test_prelu_instance_norm_and_eval_norms():
    ember.manual_seed(1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.prelu, self.prelu1 = nn.PReLU(4, init=0.1), nn.PReLU()
            self.inorm, self.tracked = nn.InstanceNorm2d(4, affine=True), nn.InstanceNorm2d(4, track_running_stats=True)
            self.bn3 = nn.BatchNorm3d(4)

        def forward(self, x):
            y = self.prelu(self.conv(x))
            return self.inorm(y), self.tracked(self.prelu1(y) * 2), self.bn3(y.unsqueeze(2))

    model = Net()
    with ember.no_grad():
        model.train()(ember.randn(4, 3, 6, 6) * 3 + 1)  # running statistics away from 0 and 1
    model.eval()
    proto = ember.onnx.export(model, (ember.randn(2, 3, 6, 6),), dynamic_axes={"x": {0: "batch"}}).model_proto
    assert "InstanceNormalization" in {n.op_type for n in proto.graph.node}
    check_at_sizes(model, proto, [(ember.randn(b, 3, 6, 6),) for b in (2, 1, 5)])


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_pool_with_indices_counts_within_each_plane(dims):
    pool = getattr(nn, f"MaxPool{dims}d")(3, stride=2, padding=1, return_indices=True)
    spatial = (7,) * dims
    proto = ember.onnx.export(pool, (ember.randn(2, 3, *spatial),), dynamic_axes={"input": {0: "batch"}}).model_proto
    check_at_sizes(pool, proto, [(ember.randn(b, 3, *spatial),) for b in (2, 1, 4)], rtol=0, atol=0)


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention(batch_first):
    ember.manual_seed(2)

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(16, 4, batch_first=batch_first)

        def forward(self, x, pad):
            out, weights = self.mha(x, x, x, key_padding_mask=pad)
            return out, weights

    model = SelfAttention().eval()
    x = ember.randn(2, 5, 16) if batch_first else ember.randn(5, 2, 16)
    pad = ember.tensor([[False] * 5, [False, False, False, True, True]])
    check_against_eager(model, (x, pad), rtol=1e-5, atol=1e-5)


def test_transformer_encoder_stack():
    ember.manual_seed(3)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=True), 3,
                                    norm=nn.LayerNorm(16), enable_nested_tensor=False).eval()
    proto = ember.onnx.export(encoder, (ember.randn(2, 6, 16),), dynamic_axes={"src": {0: "batch"}}).model_proto
    check_at_sizes(encoder, proto, [(ember.randn(b, 6, 16),) for b in (2, 1, 3)], rtol=1e-4, atol=1e-5)


def test_more_activations():
    class Acts(nn.Module):
        def forward(self, x):
            return (F.selu(x), F.celu(x, 0.7), F.glu(x, -1), F.logsigmoid(x), F.softmin(x, 1), F.hardshrink(x, 0.3),
                    F.softshrink(x, 0.4), F.tanhshrink(x), F.threshold(x, 0.2, -1.0), ember.sign(x), x.round(),
                    ember.atan(x), nn.Hardswish()(x), nn.SiLU()(x), nn.Mish()(x), nn.GELU("tanh")(x))

    for opset in (17, 20):
        check_against_eager(Acts(), (ember.randn(3, 6) * 2,), opset_version=opset)


def test_tensor_ops():
    class Ops(nn.Module):
        def forward(self, x, idx):
            values, where = x.max(1)
            top = x.topk(2, dim=1)
            return (x.cumsum(1), x.argmax(1), x.argmin(), values, where, top.values, top.indices, x.gather(1, idx),
                    x.index_select(1, idx[0]), ember.stack([x, x * 2], 1), x.repeat(2, 1, 1), x.flip(1),
                    x.narrow(1, 1, 3), x.select(1, -1), ember.einsum("ij,kj->ik", x, x), ember.zeros_like(x) + 1,
                    ember.ones_like(idx), x.logsumexp(1), x.unflatten(1, (2, 3)).movedim(2, 0),
                    F.normalize(x, dim=1), ember.max(x), ember.full_like(x, 2.5))

    x = ember.randn(4, 6)
    idx = ember.tensor([[0, 5, 2], [1, 1, 3], [4, 0, 0], [2, 3, 5]])
    check_against_eager(Ops(), (x, idx))
    check_against_eager(Ops(), (x, idx), opset_version=17)


def test_boolean_mask_indexing_selects_a_data_dependent_count():
    class Positive(nn.Module):
        def forward(self, x):
            return x[x > 0].sum() + x[(x[:, 0] > 0)].sum(0)

    model = Positive()
    proto = ember.onnx.export(model, (ember.randn(5, 3),)).model_proto
    assert "NonZero" in {n.op_type for n in proto.graph.node}
    check_at_sizes(model, proto, [(ember.randn(5, 3),), (ember.randn(5, 3),)])


def test_pixel_shuffle_rms_norm_and_upsampling():
    ember.manual_seed(4)

    class Up(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.norm = nn.Conv2d(2, 8, 3, padding=1), nn.RMSNorm(6)

        def forward(self, x):
            return F.pixel_shuffle(self.conv(x), 2), self.norm(x[:, 0])

    check_against_eager(Up().eval(), (ember.randn(2, 2, 5, 6),))


def test_dropout_layers_are_identities_in_eval_mode():
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5), nn.AlphaDropout(0.2), nn.Dropout1d(0.3)).eval()
    proto = check_against_eager(model, (ember.randn(3, 6, 6),))
    assert "Dropout" not in {n.op_type for n in proto.graph.node}
