"""AutoTokenizer against transformers' AutoTokenizer on the same folders: ids, masks, offsets, decoding."""

import os

import numpy as np
import pytest
import transformers
from conftest import CORPUS

import ember
import ember_text

TEXTS = ["Hello world!", "The quick brown fox jumps over the lazy dog, twice over and once more.",
         "héllo ünïcode 你好 — ok", "  leading and  double   spaces ", "def f(x):\n    return x**2  # code", ""]

CALLS = [
    {},
    {"padding": True},
    {"padding": "longest", "return_attention_mask": False},
    {"padding": "max_length", "max_length": 24, "truncation": True},
    {"truncation": True, "max_length": 7},
    {"padding": True, "return_offsets_mapping": True, "return_special_tokens_mask": True, "return_length": True},
    {"return_token_type_ids": True, "add_special_tokens": False},
    {"padding": True, "pad_to_multiple_of": 8},
    {"padding": True, "padding_side": "left"},
]


def _lists(v):
    return [_lists(x) for x in v] if isinstance(v, (list, tuple)) else v


def _plain(enc):
    """A tokenizer output as a dict of nested lists (tuples and lists compare alike), keys in order."""
    return [(k, _lists(v)) for k, v in dict(enc).items()]


def _both(folder):
    return ember_text.AutoTokenizer.from_pretrained(folder), transformers.AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module", params=["bpe", "minilm"])
def pair(request, bpe_folder, minilm):
    return _both(bpe_folder if request.param == "bpe" else minilm)


@pytest.mark.parametrize("kwargs", CALLS, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "default")
def test_batch_and_pairs_match_transformers(pair, kwargs):
    ours, ref = pair
    assert _plain(ours(TEXTS, **kwargs)) == _plain(ref(TEXTS, **kwargs))
    assert _plain(ours(TEXTS[0], **kwargs)) == _plain(ref(TEXTS[0], **kwargs))
    a, b = TEXTS[1:4], TEXTS[2:5]
    assert _plain(ours(a, b, **kwargs)) == _plain(ref(a, b, **kwargs))
    assert _plain(ours(TEXTS[1], TEXTS[2], **kwargs)) == _plain(ref(TEXTS[1], TEXTS[2], **kwargs))


@pytest.mark.parametrize("strategy", ["only_first", "only_second", "longest_first"])
def test_pair_truncation_strategies(pair, strategy):
    ours, ref = pair
    long, short = TEXTS[1] * 3, "short one"
    a, b = (long, short) if strategy != "only_second" else (short, long)
    kwargs = {"truncation": strategy, "max_length": 20, "return_overflowing_tokens": False}
    assert ours(a, b, **kwargs).data == ref(a, b, **kwargs).data
    assert len(ours(a, b, **kwargs)["input_ids"]) == 20


def test_split_into_words_matches_transformers(pair):
    ours, ref = pair
    words = [["Hello", "world"], ["one", "two", "three", "four"]]
    assert _plain(ours(words, is_split_into_words=True, padding=True)) == \
        _plain(ref(words, is_split_into_words=True, padding=True))
    enc = ours(words, is_split_into_words=True)
    assert enc.word_ids(1) == ref(words, is_split_into_words=True).word_ids(1)


def test_return_tensors_kinds(pair):
    ours, ref = pair
    enc = ours(TEXTS, padding=True, return_tensors="pt")
    expect = ref(TEXTS, padding=True, return_tensors="np")
    for key in expect:
        assert isinstance(enc[key], ember.Tensor) and enc[key].dtype == ember.int64
        np.testing.assert_array_equal(enc[key].numpy(), expect[key])
    enc = ours(TEXTS[0], return_tensors="ember")
    assert enc.input_ids.shape == (1, len(ref(TEXTS[0])["input_ids"]))
    enc = ours(TEXTS, padding=True, return_offsets_mapping=True, return_tensors="np")
    assert enc["offset_mapping"].shape == (len(TEXTS), enc["input_ids"].shape[1], 2)
    np.testing.assert_array_equal(enc["offset_mapping"],
                                  ref(TEXTS, padding=True, return_offsets_mapping=True,
                                      return_tensors="np")["offset_mapping"])
    with pytest.raises(ValueError, match="padding=True"):
        ours(TEXTS, return_tensors="np")
    with pytest.raises(ValueError, match="return_tensors"):
        ours(TEXTS, return_tensors="tf")


def test_decode_matches_transformers(pair):
    ours, ref = pair
    batch = ref(TEXTS, padding=True)["input_ids"]
    for skip in (False, True):
        assert ours.batch_decode(batch, skip_special_tokens=skip) == ref.batch_decode(batch, skip_special_tokens=skip)
        for row in batch:
            assert ours.decode(row, skip_special_tokens=skip) == ref.decode(row, skip_special_tokens=skip)
            assert ours.decode(row, skip_special_tokens=skip, clean_up_tokenization_spaces=True) == \
                ref.decode(row, skip_special_tokens=skip, clean_up_tokenization_spaces=True)
    tensor = ember.tensor(batch)
    assert ours.batch_decode(tensor) == ref.batch_decode(batch)
    assert ours.decode(tensor[0]) == ref.decode(batch[0])
    assert ours.decode(batch[0][1]) == ref.decode(batch[0][1])


def test_special_tokens_and_vocab_match_transformers(pair):
    ours, ref = pair
    for attr in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
        assert getattr(ours, attr) == getattr(ref, attr), attr
        assert getattr(ours, attr + "_id") == getattr(ref, attr + "_id"), attr
    assert sorted(ours.all_special_tokens) == sorted(ref.all_special_tokens)
    assert sorted(ours.all_special_ids) == sorted(ref.all_special_ids)
    assert len(ours) == len(ref) and ours.vocab_size == ref.vocab_size
    assert ours.get_vocab() == ref.get_vocab()
    assert ours.model_max_length == ref.model_max_length
    assert ours.padding_side == ref.padding_side
    assert ours.tokenize(TEXTS[2]) == ref.tokenize(TEXTS[2])
    toks = ref.tokenize(TEXTS[1])
    assert ours.convert_tokens_to_ids(toks) == ref.convert_tokens_to_ids(toks)
    ids = ref.convert_tokens_to_ids(toks)
    assert ours.convert_ids_to_tokens(ids) == ref.convert_ids_to_tokens(ids)
    assert ours.encode(TEXTS[1], TEXTS[2]) == ref.encode(TEXTS[1], TEXTS[2])


def test_minilm_truncates_at_model_max_length(minilm):
    ours, ref = _both(minilm)
    long = " ".join(CORPUS)
    a = ours(long, truncation=True)
    assert a == ref(long, truncation=True).data and len(a["input_ids"]) == 512
    assert a["input_ids"][0] == ours.cls_token_id and a["input_ids"][-1] == ours.sep_token_id


def test_bert_vocab_txt_alone(tmp_path, minilm):
    """A folder holding only vocab.txt (and a config naming the class) loads as BERT's WordPiece."""
    with open(os.path.join(minilm, "vocab.txt"), encoding="utf-8") as f:
        (tmp_path / "vocab.txt").write_text(f.read(), encoding="utf-8")
    texts = ["Hello, World! Ünïcode café 你好", "unbelievably tokenized words", "[MASK] is special"]
    bare = ember_text.AutoTokenizer.from_pretrained(tmp_path)  # ember needs no config: vocab.txt means BERT
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer", "do_lower_case": true}')
    ours, ref = _both(tmp_path)
    assert _plain(bare(texts, padding=True)) == _plain(ours(texts, padding=True))
    assert _plain(ours(texts, padding=True)) == _plain(ref(texts, padding=True))
    assert ours.decode(ours("Hello world")["input_ids"]) == ref.decode(ref("Hello world")["input_ids"])
    assert ours.mask_token_id == ref.mask_token_id == 103


def test_kwargs_override_config(bpe_folder):
    ours = ember_text.AutoTokenizer.from_pretrained(bpe_folder, padding_side="left", model_max_length=10)
    ref = transformers.AutoTokenizer.from_pretrained(bpe_folder, padding_side="left", model_max_length=10)
    assert _plain(ours(TEXTS, padding=True, truncation=True)) == _plain(ref(TEXTS, padding=True, truncation=True))
    assert ours.model_max_length == 10 and ours.padding_side == "left"


def test_errors(tmp_path, bpe_folder):
    with pytest.raises(OSError, match="no such folder"):
        ember_text.AutoTokenizer.from_pretrained(tmp_path / "missing")
    with pytest.raises(OSError, match="tokenizer.json"):
        ember_text.AutoTokenizer.from_pretrained(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(ValueError, match="tokenizer_config.json"):
        ember_text.AutoTokenizer.from_pretrained(tmp_path)
    tok = ember_text.AutoTokenizer.from_pretrained(bpe_folder)
    tok.pad_token = None
    with pytest.raises(ValueError, match="padding token"):
        tok(TEXTS, padding=True)
    with pytest.raises(TypeError, match="str"):
        tok(42)
    with pytest.raises(ValueError, match="padding must be"):
        tok(TEXTS, padding="sideways")
    with pytest.raises(ValueError, match="not a special token"):
        tok.add_special_tokens({"sparkle_token": "*"})


def test_added_special_token_is_kept_whole_and_skipped(bpe_folder):
    ours, ref = _both(bpe_folder)
    for tok in (ours, ref):
        assert tok.add_special_tokens({"additional_special_tokens": ["<sep2>"]}) == 1
    text = "one <sep2> two"
    assert ours(text)["input_ids"] == ref(text)["input_ids"]
    assert ours.convert_tokens_to_ids("<sep2>") == len(ours) - 1
    ids = ours(text)["input_ids"]
    assert ours.decode(ids, skip_special_tokens=True) == ref.decode(ids, skip_special_tokens=True)
    assert "<sep2>" not in ours.decode(ids, skip_special_tokens=True)


def test_gpt2_vocab_and_merges_files(tmp_path):
    """GPT-2's older layout, vocab.json + merges.txt, loads as byte-level BPE, as transformers' GPT2Tokenizer."""
    trained = ember_text.train_byte_level_bpe(iterator=CORPUS, vocab_size=350)
    trained.backend_tokenizer.model.save(str(tmp_path))  # writes vocab.json and merges.txt
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "GPT2Tokenizer", "eos_token": '
                                                    '"<|endoftext|>", "bos_token": "<|endoftext|>", '
                                                    '"unk_token": "<|endoftext|>"}')
    assert sorted(os.listdir(tmp_path)) == ["merges.txt", "tokenizer_config.json", "vocab.json"]
    ours, ref = _both(tmp_path)
    assert _plain(ours(TEXTS)) == _plain(ref(TEXTS)) == _plain(trained(TEXTS))
    ids = ours(TEXTS[2])["input_ids"]
    assert ours.decode(ids) == ref.decode(ids) == TEXTS[2]


def test_pad_matches_transformers(pair):
    ours, ref = pair
    rows = [ref(t) for t in TEXTS[:4]]
    for kwargs in ({}, {"padding": "max_length", "max_length": 40}, {"pad_to_multiple_of": 8},
                   {"padding_side": "left"}):
        a = ours.pad([dict(r) for r in rows], **kwargs)
        b = ref.pad([dict(r) for r in rows], **kwargs)
        assert _plain(a) == _plain(b), kwargs
    a = ours.pad([dict(r) for r in rows], return_tensors="np")
    assert a["input_ids"].shape == (4, max(len(r["input_ids"]) for r in rows))


def test_overflowing_tokens_match_transformers(pair):
    ours, ref = pair
    kwargs = {"truncation": True, "max_length": 8, "stride": 2, "return_overflowing_tokens": True, "padding": True}
    a, b = ours(TEXTS[:3], **kwargs), ref(TEXTS[:3], **kwargs)
    assert _plain(a) == _plain(b)
    assert len(a["input_ids"]) > 3 and a["overflow_to_sample_mapping"][0] == 0
