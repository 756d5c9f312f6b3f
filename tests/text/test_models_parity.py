"""BERT and GPT-2 against transformers: small random models built here with transformers, saved as Hugging Face
folders, loaded by ember_text; logits, greedy continuations, caches and outputs compared live (small configs keep
this to seconds)."""

import os
import threading

import numpy as np
import pytest
import torch
import transformers

import ember
import ember_text
from ember_text import models as M

VOCAB = 120


def _e(t):
    return ember.tensor(t.numpy())


def _np(t):
    return t.detach().float().numpy()


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=32, n_positions=80, vocab_size=VOCAB,
                                  bos_token_id=None, eos_token_id=None, initializer_range=0.3)
    # large weights keep the logits of a random model apart, so greedy choices are not near-ties
    ref = transformers.GPT2LMHeadModel(cfg).eval()
    folder = tmp_path_factory.mktemp("gpt2")
    ref.save_pretrained(folder)
    return os.fspath(folder), ref


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    torch.manual_seed(1)
    cfg = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=64, max_position_embeddings=64, num_labels=3)
    ref = transformers.BertForSequenceClassification(cfg).eval()
    folder = tmp_path_factory.mktemp("bert")
    ref.save_pretrained(folder)
    return os.fspath(folder), ref


def test_gpt2_logits_hidden_states_and_loss(gpt2_folder):
    folder, ref = gpt2_folder
    model = M.AutoModelForCausalLM.from_pretrained(folder)
    assert isinstance(model, M.GPT2LMHeadModel)
    assert list(model.state_dict()) == list(ref.state_dict())  # transformers' keys, in its order
    ids = torch.randint(0, VOCAB, (3, 11), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        r = ref(ids, labels=ids, output_hidden_states=True)
    out = model(_e(ids), labels=_e(ids), output_hidden_states=True)
    assert _rel(_np(out.logits), r.logits.numpy()) < 1e-4
    assert _rel(_np(out["logits"]), r.logits.numpy()) < 1e-4 and out[1] is out.logits
    assert abs(float(out.loss) - float(r.loss)) < 1e-4 * abs(float(r.loss))
    assert len(out.hidden_states) == len(r.hidden_states) == 3
    for a, b in zip(out.hidden_states, r.hidden_states):
        assert _rel(_np(a), b.numpy()) < 1e-4
    assert model.lm_head.weight is model.transformer.wte.weight


def test_gpt2_greedy_continuation_with_and_without_cache(gpt2_folder):
    folder, ref = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    prompt = torch.randint(0, VOCAB, (1, 6), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        expect = ref.generate(prompt, max_new_tokens=20, do_sample=False, pad_token_id=0).tolist()
    # (the prompt holds the pad id 0: both infer a mask that hides it)
    assert model.generate(_e(prompt), max_new_tokens=20, pad_token_id=0).tolist() == expect
    assert model.generate(_e(prompt), max_new_tokens=20, pad_token_id=0, use_cache=False).tolist() == expect
    assert len(expect[0]) == 26


def test_gpt2_batched_left_padding_matches_transformers(gpt2_folder):
    folder, ref = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(1, VOCAB, (3, 8), generator=g)
    mask = torch.ones_like(ids)
    mask[1, :3] = 0
    mask[2, :5] = 0
    ids = ids.masked_fill(mask == 0, 0)
    with torch.no_grad():
        expect = ref.generate(ids, attention_mask=mask, max_new_tokens=20, do_sample=False, pad_token_id=0)
    got = model.generate(_e(ids), attention_mask=_e(mask), max_new_tokens=20, pad_token_id=0)
    assert got.tolist() == expect.tolist()
    # each padded row continues exactly as its unpadded prompt does alone
    alone = model.generate(_e(ids[2:, 5:]), max_new_tokens=20)
    assert got[2, 8:].tolist() == alone[0, 3:].tolist()


def test_gpt2_eos_stops_and_pads(gpt2_folder):
    folder, ref = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    prompt = torch.randint(0, VOCAB, (2, 5), generator=torch.Generator().manual_seed(5))
    free = model.generate(_e(prompt), max_new_tokens=12).tolist()
    eos = free[0][5 + 3]  # make the 4th new token of row 0 the end of sequence
    with torch.no_grad():
        expect = ref.generate(prompt, max_new_tokens=12, do_sample=False, eos_token_id=eos, pad_token_id=7)
    got = model.generate(_e(prompt), max_new_tokens=12, eos_token_id=eos, pad_token_id=7)
    assert got.tolist() == expect.tolist()
    assert got[0, 9:].tolist() == [7] * (got.shape[1] - 9)


def test_gpt2_repetition_penalty_matches_transformers(gpt2_folder):
    folder, ref = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    prompt = torch.randint(0, VOCAB, (1, 5), generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        expect = ref.generate(prompt, max_new_tokens=15, do_sample=False, repetition_penalty=1.8, pad_token_id=0)
    assert model.generate(_e(prompt), max_new_tokens=15, repetition_penalty=1.8).tolist() == expect.tolist()


def test_sampling_filters():
    """top-k/top-p/temperature against transformers' own logits processors on the same scores."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    from ember_text.models.generation import _top_k, _top_p

    scores = torch.randn(4, 50, generator=torch.Generator().manual_seed(7))
    ids = torch.zeros(4, 1, dtype=torch.long)
    for k in (1, 5, 50):
        expect = TopKLogitsWarper(k)(ids, scores.clone())
        assert (np.isinf(_np(_top_k(_e(scores), k))) == np.isinf(expect.numpy())).all()
    for p in (0.1, 0.5, 0.9):
        expect = TopPLogitsWarper(p)(ids, scores.clone())
        assert (np.isinf(_np(_top_p(_e(scores), p))) == np.isinf(expect.numpy())).all()
    expect = TemperatureLogitsWarper(0.7)(ids, scores.clone())
    np.testing.assert_allclose(_np(_e(scores) / 0.7), expect.numpy(), rtol=1e-6)


def test_sampled_generation_respects_top_k(gpt2_folder):
    folder, _ = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    prompt = ember.tensor([[1, 2, 3]])
    ember.manual_seed(0)
    out = model.generate(prompt, max_new_tokens=1, do_sample=True, top_k=1)
    greedy = model.generate(prompt, max_new_tokens=1)
    assert out.tolist() == greedy.tolist()  # top_k=1 leaves one candidate
    gen = ember.Generator().manual_seed(3)
    a = model.generate(prompt, max_new_tokens=10, do_sample=True, temperature=1.5, generator=gen).tolist()
    gen = ember.Generator().manual_seed(3)
    assert model.generate(prompt, max_new_tokens=10, do_sample=True, temperature=1.5, generator=gen).tolist() == a


def test_decoding_steps_with_cache_match_full_forward(gpt2_folder):
    """The decoding-step API: forward with a DynamicCache, one token at a time, equals one full forward."""
    folder, ref = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    ids = ember.tensor(np.random.default_rng(8).integers(0, VOCAB, (2, 9)))
    full = _np(model(ids).logits)
    cache = M.DynamicCache()
    out = model(ids[:, :5], past_key_values=cache, use_cache=True)
    assert out.past_key_values is cache and cache.get_seq_length() == 5
    assert tuple(cache[0][0].shape) == (2, 4, 5, 8)  # [batch, kv_heads, seq, head_dim]
    steps = [_np(out.logits)]
    for t in range(5, 9):
        steps.append(_np(model(ids[:, t:t + 1], past_key_values=cache, use_cache=True).logits))
    assert _rel(np.concatenate(steps, axis=1), full) < 1e-5
    with torch.no_grad():
        tref = ref(torch.from_numpy(ids.numpy()[:, :5]), use_cache=True)
    assert _rel(_np(cache[1][0])[:, :, :5], tref.past_key_values.layers[1].keys.numpy()) < 1e-5


def test_cache_select_drop_and_concatenate(gpt2_folder):
    """Rows of different lengths side by side: concatenated caches, each row with its own positions and mask."""
    folder, _ = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    rng = np.random.default_rng(9)
    a_ids, b_ids = ember.tensor(rng.integers(0, VOCAB, (1, 7))), ember.tensor(rng.integers(0, VOCAB, (1, 4)))
    nxt = ember.tensor([[5], [9]])
    ca, cb = M.DynamicCache(), M.DynamicCache()
    model(a_ids, past_key_values=ca)
    model(b_ids, past_key_values=cb)
    cache, pads = M.DynamicCache.concatenate([ca, cb])
    assert pads == [0, 3] and cache.get_seq_length() == 7 and cache.batch_size == 2
    mask = ember.tensor([[1] * 8, [0, 0, 0] + [1] * 5])
    positions = ember.tensor([[7], [4]])
    step = _np(model(nxt, attention_mask=mask, position_ids=positions, past_key_values=cache).logits)
    alone_a = _np(model(ember.cat([a_ids, nxt[:1]], 1)).logits)[:, -1]
    alone_b = _np(model(ember.cat([b_ids, nxt[1:]], 1)).logits)[:, -1]
    assert _rel(step[0, -1], alone_a[0]) < 1e-5 and _rel(step[1, -1], alone_b[0]) < 1e-5
    cache.drop_rows([0])
    assert cache.batch_size == 1 and cache.get_seq_length() == 8
    cache.batch_select_indices([0, 0])
    assert cache.batch_size == 2
    legacy = cache.to_legacy_cache()
    assert len(legacy) == 2 and M.DynamicCache.from_legacy_cache(legacy).get_seq_length() == 8
    cache.crop(5)
    assert cache.get_seq_length() == 5
    cache.crop(-2)
    assert cache.get_seq_length() == 3
    with pytest.raises(ValueError, match="at least one"):
        M.DynamicCache.concatenate([])


def test_streamers(gpt2_folder, bpe_folder):
    folder, _ = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    tok = ember_text.AutoTokenizer.from_pretrained(bpe_folder)
    prompt = ember.tensor([[10, 11, 12]])
    expect = model.generate(prompt, max_new_tokens=12)
    streamer = M.TextIteratorStreamer(tok, skip_prompt=True, timeout=60)
    box = {}
    thread = threading.Thread(target=lambda: box.update(out=model.generate(prompt, max_new_tokens=12,
                                                                           streamer=streamer)))
    thread.start()
    pieces = list(streamer)
    thread.join()
    assert box["out"].tolist() == expect.tolist()
    assert "".join(pieces) == tok.decode(expect[0, 3:].tolist())
    printed = []

    class Capture(M.TextStreamer):
        def on_finalized_text(self, text, stream_end=False):
            printed.append(text)

    model.generate(prompt, max_new_tokens=12, streamer=Capture(tok))
    assert "".join(printed) == tok.decode(expect[0].tolist())
    with pytest.raises(ValueError, match="batch size 1"):
        model.generate(ember.tensor([[1], [2]]), streamer=Capture(tok))


def test_bert_classifier_and_base_model(bert_folder):
    folder, ref = bert_folder
    model = M.AutoModelForSequenceClassification.from_pretrained(folder)
    assert isinstance(model, M.BertForSequenceClassification) and model.config.num_labels == 3
    assert list(model.state_dict()) == [k for k in ref.state_dict() if "position_ids" not in k]
    g = torch.Generator().manual_seed(10)
    ids = torch.randint(0, VOCAB, (3, 9), generator=g)
    types = torch.randint(0, 2, (3, 9), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    mask[2, 2:] = 0
    labels = torch.tensor([0, 2, 1])
    with torch.no_grad():
        r = ref(ids, attention_mask=mask, token_type_ids=types, labels=labels)
        rb = ref.bert(ids, attention_mask=mask, token_type_ids=types, output_hidden_states=True)
    out = model(_e(ids), attention_mask=_e(mask), token_type_ids=_e(types), labels=_e(labels))
    assert _rel(_np(out.logits), r.logits.numpy()) < 1e-4
    assert abs(float(out.loss) - float(r.loss)) < 1e-5
    base = M.AutoModel.from_pretrained(folder)  # the classifier checkpoint's "bert." prefix is stripped
    b = base(_e(ids), attention_mask=_e(mask), token_type_ids=_e(types), output_hidden_states=True)
    assert _rel(_np(b.last_hidden_state), rb.last_hidden_state.numpy()) < 1e-4
    assert _rel(_np(b.pooler_output), rb.pooler_output.numpy()) < 1e-4
    assert len(b.hidden_states) == 3 and _rel(_np(b.hidden_states[1]), rb.hidden_states[1].numpy()) < 1e-4
    assert b[0] is b.last_hidden_state and b["pooler_output"] is b.pooler_output


def test_save_pretrained_round_trip_and_pytorch_bin(tmp_path, gpt2_folder, bert_folder):
    folder, ref = gpt2_folder
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    model.save_pretrained(tmp_path / "ours")
    assert "lm_head.weight" not in __import__("safetensors.numpy").numpy.load_file(
        str(tmp_path / "ours" / "model.safetensors"))
    back = transformers.GPT2LMHeadModel.from_pretrained(tmp_path / "ours").eval()  # transformers reads our folder
    ids = torch.randint(0, VOCAB, (1, 6), generator=torch.Generator().manual_seed(11))
    with torch.no_grad():
        assert _rel(back(ids).logits.numpy(), ref(ids).logits.numpy()) < 1e-6
    bfolder, bref = bert_folder
    bref.config.save_pretrained(tmp_path / "bin")
    torch.save(bref.state_dict(), tmp_path / "bin" / "pytorch_model.bin")  # the older weights file
    model = M.AutoModelForSequenceClassification.from_pretrained(tmp_path / "bin")
    with torch.no_grad():
        assert _rel(_np(model(_e(ids)).logits), bref(ids).logits.numpy()) < 1e-4


def test_dtype_and_errors(tmp_path, gpt2_folder, bert_folder):
    folder, _ = gpt2_folder
    assert M.GPT2LMHeadModel.from_pretrained(folder, dtype=ember.float64).dtype == ember.float64
    assert M.GPT2LMHeadModel.from_pretrained(folder, torch_dtype="float64").dtype == ember.float64
    with pytest.raises(ValueError, match="supported: bert, gpt2"):
        cfg = tmp_path / "odd"
        cfg.mkdir()
        (cfg / "config.json").write_text('{"model_type": "mamba"}')
        M.AutoModel.from_pretrained(cfg)
    bad = tmp_path / "bad"
    model = M.GPT2LMHeadModel.from_pretrained(folder)
    model.save_pretrained(bad)
    cfg = M.GPT2Config.from_pretrained(bad, n_embd=64)
    with pytest.raises(ValueError, match=r"transformer.wte.weight.*\[120, 32\].*\[120, 64\]"):
        M.GPT2LMHeadModel.from_pretrained(bad, config=cfg)
    with pytest.raises(KeyError, match="transformer.h.2"):
        M.GPT2LMHeadModel.from_pretrained(bad, n_layer=3)
    with pytest.raises(OSError, match="no weights"):
        (bad / "model.safetensors").unlink()
        M.GPT2LMHeadModel.from_pretrained(bad)
    with pytest.raises(OSError, match="not a folder"):
        M.GPT2LMHeadModel.from_pretrained(tmp_path / "nowhere")
    # a base BERT checkpoint loads into the classifier with a fresh head (fine-tuning), with a warning
    bfolder, bref = bert_folder
    bref.bert.save_pretrained(tmp_path / "base")
    with pytest.warns(UserWarning, match="newly initialized"):
        clf = M.BertForSequenceClassification.from_pretrained(tmp_path / "base", num_labels=4)
    assert clf.classifier.weight.shape == (4, 32)


def test_sharded_folders_load(tmp_path, gpt2_folder):
    """A folder sharded by transformers (safetensors), and one sharded in torch's format by
    ember's core writer, give transformers' logits."""
    _, ref = gpt2_folder
    ref.save_pretrained(tmp_path / "safe", max_shard_size="20KB")
    ref.config.save_pretrained(tmp_path / "bin")
    state = {k: ember.tensor(v.numpy()) for k, v in ref.state_dict().items() if k != "lm_head.weight"}
    ember.sharded.save_torch_state_dict(state, tmp_path / "bin", max_shard_size="20KB", safe_serialization=False)
    ids = torch.randint(0, VOCAB, (2, 7), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        expected = ref(ids).logits.numpy()
    for folder, index in (("safe", "model.safetensors.index.json"), ("bin", "pytorch_model.bin.index.json")):
        assert os.path.isfile(tmp_path / folder / index) and len(os.listdir(tmp_path / folder)) > 3  # really sharded
        model = M.AutoModelForCausalLM.from_pretrained(tmp_path / folder)
        assert _rel(_np(model(_e(ids)).logits), expected) < 1e-4
