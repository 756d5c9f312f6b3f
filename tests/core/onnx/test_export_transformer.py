"""ember.onnx.export of the text-model pieces: Embedding, LayerNorm, scaled dot-product
attention (as MatMul/Softmax) and a TransformerEncoder layer, run in onnxruntime beside
eager ember."""

import pytest
from _onnx_check import check_against_eager

import ember
import ember.nn as nn
import ember.nn.functional as F


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.norm, self.head = nn.Embedding(20, 16, padding_idx=0), nn.LayerNorm(16), nn.Linear(16, 3)

    def forward(self, tokens):
        return self.head(self.norm(self.embed(tokens)))


def test_embedding_layer_norm_and_a_3d_linear():
    proto = check_against_eager(Tagger().eval(), (ember.tensor([[1, 4, 0, 19], [7, 7, 2, 3]]),))
    ops = {n.op_type for n in proto.graph.node}
    assert {"Gather", "LayerNormalization", "MatMul"} <= ops


@pytest.mark.parametrize("variant", ["plain", "causal", "bool_mask", "float_mask", "scale"])
def test_scaled_dot_product_attention(variant):
    masks = {"bool_mask": ember.rand(5, 6) > 0.3, "float_mask": ember.randn(2, 1, 5, 6)}
    masks["bool_mask"][:, 0] = True  # every query keeps a key: no all -inf row

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", masks.get(variant))

        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask,
                                                  is_causal=variant == "causal",
                                                  scale=0.3 if variant == "scale" else None)

    shape_k = (2, 3, 5, 4) if variant == "causal" else (2, 3, 6, 4)
    proto = check_against_eager(Attention(), (ember.randn(2, 3, 5, 4), ember.randn(*shape_k), ember.randn(*shape_k)))
    assert {"MatMul", "Softmax"} <= {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("opset", [17, 20])
def test_transformer_encoder_layer(norm_first, opset):
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, activation="gelu", batch_first=True,
                                       norm_first=norm_first).eval()
    check_against_eager(layer, (ember.randn(2, 5, 16),), opset_version=opset, rtol=1e-5, atol=1e-5)


def test_transformer_encoder_with_a_causal_mask():
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                                 enable_nested_tensor=False)
            self.mask = nn.Transformer.generate_square_subsequent_mask(6)

        def forward(self, x):
            return self.encoder(x, mask=self.mask)

    check_against_eager(Encoder().eval(), (ember.randn(3, 6, 8),), rtol=1e-5, atol=1e-5)
