"""ember_text.SentenceTransformer on the real all-MiniLM-L6-v2 folder, against embeddings that
sentence-transformers made on PyTorch 2.13.0 CPU (fixtures/make_minilm_fixtures.py, run by hand)."""

import json
import os
import shutil

import numpy as np
import pytest

import ember
import ember_text

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "minilm_embeddings.npz")


@pytest.fixture(scope="module")
def reference():
    data = np.load(FIXTURE)
    return [str(s) for s in data["sentences"]], data["embeddings"]


@pytest.fixture(scope="module")
def model(minilm):
    return ember_text.SentenceTransformer(minilm)


def _cosine_distance(a, b):
    return 1.0 - (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_embeddings_match_sentence_transformers(model, reference):
    sentences, expect = reference
    got = model.encode(sentences)
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (len(sentences), 384)
    assert _cosine_distance(got, expect).max() < 1e-5
    np.testing.assert_allclose(got, expect, atol=1e-5)
    # the long sentence was cut at max_seq_length=256: its embedding differs from the first 100 words'
    assert len(model.tokenizer(sentences[4])["input_ids"]) > 256 and model.max_seq_length == 256


def test_encode_options(model, reference):
    sentences, expect = reference
    t = model.encode(sentences[:3], convert_to_tensor=True)
    assert isinstance(t, ember.Tensor) and t.shape == (3, 384)
    one = model.encode(sentences[1])
    assert one.shape == (384,) and _cosine_distance(one, expect[1]) < 1e-5
    small_batches = model.encode(sentences, batch_size=2, normalize_embeddings=True)
    assert _cosine_distance(small_batches, expect).max() < 1e-5
    assert np.allclose(np.linalg.norm(small_batches, axis=1), 1.0, atol=1e-6)
    tokens = model.encode(sentences[:2], output_value="token_embeddings")
    assert [tuple(x.shape) for x in tokens] == [(len(model.tokenizer(s)["input_ids"]), 384) for s in sentences[:2]]
    assert model.get_sentence_embedding_dimension() == 384
    with pytest.raises(ValueError, match="output_value"):
        model.encode("x", output_value="logits")


def test_modules_and_pooling_modes(tmp_path, minilm, reference):
    """Normalize needs no folder; other pooling modes, computed by hand from the token embeddings."""
    assert not os.path.isdir(os.path.join(minilm, "2_Normalize"))
    folder = tmp_path / "m"
    shutil.copytree(minilm, folder)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384,
                                                                  "pooling_mode": ["cls", "max"]}))
    (folder / "modules.json").write_text(json.dumps([m for m in json.loads((folder / "modules.json").read_text())
                                                     if m["idx"] < 2]))
    model = ember_text.SentenceTransformer(str(folder))
    sentences, _ = reference
    got = model.encode(sentences[:4], batch_size=4)
    tokens = model.encode(sentences[:4], output_value="token_embeddings")
    expect = np.stack([np.concatenate([t.numpy()[0], t.numpy().max(0)]) for t in tokens])
    np.testing.assert_allclose(got, expect, rtol=1e-5, atol=1e-6)
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "",
                                                      "type": "sentence_transformers.models.CNN"}]))
    with pytest.raises(ValueError, match="supported: Transformer, Pooling, Normalize"):
        ember_text.SentenceTransformer(str(folder))
