"""The local-file text datasets, on small files the tests write: records, shuffling, sharding, errors."""

import json

import numpy as np
import pytest

import ember
import ember_text.datasets as D
from ember.utils.data import DataLoader


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_csv_tsv_and_label_mapping(tmp_path):
    csv_path = _write(tmp_path / "a.csv", 'id,body,y\n1,"hello, world",pos\n2,"multi\nline",neg\n\n3,plain,pos\n')
    ds = D.CSVTextClassification(csv_path, text_column="body", label_column="y")
    assert list(ds) == [("pos", "hello, world"), ("neg", "multi\nline"), ("pos", "plain")]
    mapped = D.CSVTextClassification(csv_path, text_column="body", label_column="y",
                                     label_to_index={"neg": 0, "pos": 1})
    assert [label for label, _ in mapped] == [1, 0, 1]
    tsv = _write(tmp_path / "b.tsv", "label\ttext\n0\tfirst\n1\tsecond\n")
    assert list(D.CSVTextClassification(tsv)) == [("0", "first"), ("1", "second")]
    assert len(mapped.to_map_style()) == 3 and mapped.to_map_style()[1] == (0, "multi\nline")


def test_csv_errors_name_file_and_line(tmp_path):
    bad = _write(tmp_path / "bad.csv", "text,label\nok,1\nmissing a field\nfine,0\n")
    with pytest.raises(D.MalformedRowError, match=r"bad.csv, line 3: expected 2 fields, got 1"):
        list(D.CSVTextClassification(bad))
    with pytest.raises(ValueError, match=r"bad.csv, line 1: no column 'body'"):
        list(D.CSVTextClassification(bad, text_column="body"))
    with pytest.raises(ValueError, match=r"line 2: label '1' is not in label_to_index"):
        list(D.CSVTextClassification(bad, label_to_index={"x": 0}))


def test_jsonl(tmp_path):
    rows = [{"t": "a", "c": "x"}, {"t": "b", "c": "y"}]
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    assert list(D.JSONLTextClassification(path, text_field="t", label_field="c")) == [("x", "a"), ("y", "b")]
    bad = _write(tmp_path / "e.jsonl", '{"t": "a", "c": 1}\n{"t": "b"\n')
    with pytest.raises(D.MalformedRowError, match=r"e.jsonl, line 2: invalid JSON"):
        list(D.JSONLTextClassification(bad, text_field="t", label_field="c"))
    bad = _write(tmp_path / "f.jsonl", '{"t": "a"}\n')
    with pytest.raises(D.MalformedRowError, match=r"f.jsonl, line 1: no field 'c'"):
        list(D.JSONLTextClassification(bad, text_field="t", label_field="c"))


def test_folder_per_class(tmp_path):
    for cls, texts in {"sports": ["goal", "match"], "arts": ["paint"]}.items():
        (tmp_path / cls).mkdir()
        for i, t in enumerate(texts):
            _write(tmp_path / cls / f"{i}.txt", t)
    (tmp_path / "arts" / "notes.md").write_text("skipped")
    ds = D.FolderTextClassification(tmp_path)
    assert ds.classes == ["arts", "sports"] and ds.class_to_idx == {"arts": 0, "sports": 1}
    assert list(ds) == [(0, "paint"), (1, "goal"), (1, "match")]
    with pytest.raises(FileNotFoundError, match="class folder"):
        D.FolderTextClassification(tmp_path / "arts")


def test_fasttext(tmp_path):
    path = _write(tmp_path / "ft.txt", "__label__a __label__b two labels here\n\n__label__c one\n")
    assert list(D.FastTextDataset(path)) == [(["a", "b"], "two labels here"), (["c"], "one")]
    bad = _write(tmp_path / "ft2.txt", "__label__a ok\nno label here\n")
    with pytest.raises(D.MalformedRowError, match=r"ft2.txt, line 2: the line does not start with '__label__'"):
        list(D.FastTextDataset(bad))


def test_translation(tmp_path):
    src = _write(tmp_path / "src.de", "Hallo Welt\nGuten Morgen\n")
    tgt = _write(tmp_path / "tgt.en", "Hello world\nGood morning\n")
    assert list(D.TranslationDataset(src, tgt)) == [("Hallo Welt", "Hello world"), ("Guten Morgen", "Good morning")]
    tsv = _write(tmp_path / "pairs.tsv", "a\tb\nc\td\n")
    assert list(D.TranslationDataset(tsv_path=tsv)) == [("a", "b"), ("c", "d")]
    short = _write(tmp_path / "short.en", "Hello world\n")
    with pytest.raises(D.MalformedRowError, match=r"short.en, line 2: the file ends here"):
        list(D.TranslationDataset(src, short))
    bad = _write(tmp_path / "bad.tsv", "a\tb\nc d\n")
    with pytest.raises(D.MalformedRowError, match=r"bad.tsv, line 2"):
        list(D.TranslationDataset(tsv_path=bad))


def _numbers_file(tmp_path, n=50):
    return _write(tmp_path / "n.csv", "text,label\n" + "".join(f"t{i},{i}\n" for i in range(n)))


def test_shuffle_buffer_is_a_permutation_and_varies_by_epoch(tmp_path):
    ds = D.CSVTextClassification(_numbers_file(tmp_path), shuffle_buffer=8, seed=1)
    first, second = [r for _, r in ds], [r for _, r in ds]
    expect = [f"t{i}" for i in range(50)]
    assert sorted(first) == sorted(expect) and sorted(second) == sorted(expect)
    assert first != expect and first != second
    again = D.CSVTextClassification(_numbers_file(tmp_path), shuffle_buffer=8, seed=1)
    assert [r for _, r in again] == first  # same seed, same order


def test_sharded_across_two_workers(tmp_path):
    ds = D.CSVTextClassification(_numbers_file(tmp_path), label_to_index={str(i): i for i in range(50)})
    loader = DataLoader(ds, batch_size=5, num_workers=2, collate_fn=list)
    labels = [label for batch in loader for label, _ in batch]
    assert sorted(labels) == list(range(50))  # each record exactly once


def test_corpus_batchify_and_bptt(tmp_path):
    path = _write(tmp_path / "c.txt", "a b c\nd e\n")
    vocab = {w: i for i, w in enumerate("abcde")}
    ids = D.encode_corpus(path, lambda line: [vocab[w] for w in line.split()], append_eos=9)
    assert ids.tolist() == [0, 1, 2, 9, 3, 4, 9] and ids.dtype == ember.int64
    data = ember.arange(26)
    source = D.batchify(data, 4)  # 6 steps x 4 columns, the last 2 tokens dropped
    assert source.shape == (6, 4) and source[:, 1].tolist() == [6, 7, 8, 9, 10, 11]
    x, y = D.get_batch(source, 0, 4)
    assert x.tolist() == source[:4].tolist() and y.tolist() == source[1:5].reshape(-1).tolist()
    windows = list(D.bptt_windows(source, 4))
    assert [w[0].shape[0] for w in windows] == [4, 1]  # 5 usable steps: 4 + 1
    with pytest.raises(ValueError, match="cannot batchify"):
        D.batchify(ember.arange(3), 4)


def test_random_windows(tmp_path):
    data = ember.arange(100)
    ds = D.RandomWindowDataset(data, block_size=8, samples=30, seed=0)
    pairs = list(ds)
    assert len(pairs) == 30 and len(ds) == 30
    for x, y in pairs:
        assert x.shape == (8,) and (y.numpy() == x.numpy() + 1).all()  # y is x shifted by one
    starts = {int(x[0]) for x, _ in pairs}
    assert len(starts) > 10 and max(starts) <= 100 - 9
    loader = DataLoader(ds, batch_size=4, num_workers=2)
    batches = list(loader)
    assert sum(b[0].shape[0] for b in batches) == 30
    assert all(np.array_equal(b[1].numpy(), b[0].numpy() + 1) for b in batches)
    with pytest.raises(ValueError, match="longer than block_size"):
        D.RandomWindowDataset(ember.arange(8), block_size=8, samples=1)
