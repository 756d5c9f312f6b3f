"""torchtext's vocab, data.utils, transforms and functional: expected values derived by hand from its rules."""

import pytest

import ember
from ember_text import functional as F
from ember_text import transforms as T
from ember_text.data.utils import get_tokenizer, ngrams_iterator
from ember_text.vocab import Vocab, build_vocab_from_iterator, vocab

DOCS = [["b", "a", "c", "a"], ["c", "a", "d"], ["e"]]  # counts: a 3, c 2, b 1, d 1, e 1


def test_build_vocab_order_specials_and_min_freq():
    v = build_vocab_from_iterator(DOCS, specials=["<unk>", "<pad>"])
    # most frequent first, ties broken alphabetically, specials first
    assert v.get_itos() == ["<unk>", "<pad>", "a", "c", "b", "d", "e"]
    assert v.get_stoi() == {"<unk>": 0, "<pad>": 1, "a": 2, "c": 3, "b": 4, "d": 5, "e": 6}
    assert build_vocab_from_iterator(DOCS, min_freq=2, specials=["<unk>"], special_first=False).get_itos() == \
        ["a", "c", "<unk>"]
    # max_tokens counts the specials: 4 - 1 = 3 most frequent tokens
    assert build_vocab_from_iterator(DOCS, specials=["<unk>"], max_tokens=4).get_itos() == ["<unk>", "a", "c", "b"]
    # a special that is also a frequent token is taken out of the kept tokens (torchtext's order of operations)
    assert build_vocab_from_iterator(DOCS, specials=["a"], max_tokens=3).get_itos() == ["a", "c"]
    with pytest.raises(AssertionError, match="entirely special"):
        build_vocab_from_iterator(DOCS, specials=["x", "y"], max_tokens=2)


def test_vocab_lookups_and_default_index():
    v = build_vocab_from_iterator(DOCS, specials=["<unk>"])
    assert len(v) == 6 and "a" in v and "z" not in v
    assert v["c"] == 2 and v(["a", "e"]) == [1, 5] and v.lookup_indices(["d", "b"]) == [4, 3]
    assert v.lookup_token(1) == "a" and v.lookup_tokens([5, 0]) == ["e", "<unk>"]
    with pytest.raises(RuntimeError, match="Token z not found and default index is not set"):
        v["z"]
    assert v.get_default_index() is None
    v.set_default_index(v["<unk>"])
    assert v["z"] == 0 and v(["z", "a"]) == [0, 1] and v.get_default_index() == 0
    with pytest.raises(RuntimeError, match="out of bounds"):
        v.lookup_token(6)
    v.insert_token("new", 1)
    assert v.get_itos()[:3] == ["<unk>", "new", "a"] and v["a"] == 2
    v.append_token("last")
    assert v["last"] == 7
    with pytest.raises(RuntimeError, match="already exists"):
        v.append_token("a")
    with pytest.raises(RuntimeError, match="Duplicate token"):
        Vocab(["x", "x"])
    assert isinstance(v, ember.nn.Module)


def test_vocab_factory_from_counts():
    from collections import OrderedDict

    counts = OrderedDict([("z", 5), ("y", 1), ("x", 3)])
    assert vocab(counts).get_itos() == ["z", "y", "x"]  # the dict's order is kept
    assert vocab(counts, min_freq=2, specials=["<s>"]).get_itos() == ["<s>", "z", "x"]


def test_basic_english():
    tok = get_tokenizer("basic_english")
    assert tok('You can\'t "quote" me, (OK)? Fine! A.B; c:d<br />end') == \
        ["you", "can", "'", "t", "quote", "me", ",", "(", "ok", ")", "?", "fine", "!", "a", ".", "b", "c", "d", "end"]
    assert get_tokenizer(None)("a  b\tc") == ["a", "b", "c"]
    fn = str.split
    assert get_tokenizer(fn) is fn
    with pytest.raises(ValueError, match="Enlish"):
        get_tokenizer("basic_english", language="fr")
    with pytest.raises(ValueError, match="spacy"):
        get_tokenizer("spacy")


def test_ngrams_iterator():
    assert list(ngrams_iterator(["a", "b", "c"], 3)) == ["a", "b", "c", "a b", "b c", "a b c"]
    assert list(ngrams_iterator(["a", "b"], 1)) == ["a", "b"]


def test_functional():
    assert F.truncate([1, 2, 3], 2) == [1, 2] and F.truncate([[1, 2, 3], [4]], 2) == [[1, 2], [4]]
    assert F.add_token([1, 2], 0) == [0, 1, 2] and F.add_token([[1], [2, 3]], 9, begin=False) == [[1, 9], [2, 3, 9]]
    assert F.str_to_int(["1", "22"]) == [1, 22]
    t = F.to_tensor([[1, 2, 3], [4]], padding_value=0)
    assert t.dtype == ember.int64 and t.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert F.to_tensor([5, 6]).tolist() == [5, 6]
    assert F.to_tensor([[1], [2]], dtype=ember.int32).dtype == ember.int32
    with pytest.raises(ValueError, match="padding_value"):
        F.to_tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="not supported"):
        F.to_tensor("abc")


def test_transforms_pipeline():
    v = build_vocab_from_iterator(DOCS, specials=["<pad>", "<bos>", "<eos>"])
    pipeline = T.Sequential(T.VocabTransform(v), T.Truncate(2), T.AddToken(v["<bos>"], begin=True),
                            T.AddToken(v["<eos>"], begin=False), T.ToTensor(padding_value=v["<pad>"]))
    # a -> 3, c -> 4, b -> 5, d -> 6, e -> 7
    out = pipeline([["b", "a", "c"], ["e"]])
    assert out.tolist() == [[1, 5, 3, 2], [1, 7, 2, 0]]
    assert pipeline(["a"]).tolist() == [1, 3, 2]
    padded = T.PadTransform(max_length=6, pad_value=-1)(out)
    assert padded.tolist() == [[1, 5, 3, 2, -1, -1], [1, 7, 2, 0, -1, -1]]
    assert T.PadTransform(max_length=2, pad_value=0)(out).shape == (2, 4)  # never truncates
    labels = T.LabelToIndex(["neg", "pos"])
    assert labels(["pos", "neg"]) == [1, 0] and labels("pos") == 1
    assert T.LabelToIndex(["b", "a"], sort_names=True).label_names == ["a", "b"]
    assert T.StrToIntTransform()([["1", "2"]]) == [[1, 2]]
    with pytest.raises(ValueError, match="Vocab"):
        T.VocabTransform({"a": 1})


def test_label_to_index_from_file(tmp_path):
    path = tmp_path / "labels.txt"
    path.write_text("sports\nbusiness\n\nworld\n", encoding="utf-8")
    labels = T.LabelToIndex(label_path=str(path))
    assert labels.label_names == ["sports", "business", "world"] and labels(["world"]) == [2]
    with pytest.raises(AssertionError, match="mutually exclusive"):
        T.LabelToIndex(["a"], label_path=str(path))
