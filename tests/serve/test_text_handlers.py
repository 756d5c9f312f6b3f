"""The text handlers over the socket (text_classifier, sentence_embedder, text_generation), and
archives packing a Hugging Face folder; every answer is checked against the same ember-text model
run here."""

import json
import os
import zipfile

import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import http, http_json
from text_archives import bert_classifier_folder, gpt2_folder

import ember
import ember_text
from ember_serve import ArchiveError, create_archive, load_archive
from ember_serve.cli import archive_main

TEXTS = ["The quick brown fox jumps.", "To be, or not to be", "a single step!"]


@pytest.fixture(scope="module")
def client(text_server):
    c = httpclient.InferenceServerClient(text_server.hostport)
    yield c
    c.close()


def local_classifier(folder, texts):
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    model = ember_text.models.AutoModelForSequenceClassification.from_pretrained(folder)
    rows = []
    with ember.no_grad():
        for t in texts:  # each alone: the server's padded batch must give the same numbers
            enc = tok(t, truncation=True, max_length=48, return_tensors="ember")
            rows.append(model(**enc).logits.softmax(dim=1)[0].numpy())
    return np.stack(rows), [model.config.id2label[i] for i in range(model.config.num_labels)]


def local_generate(folder, prompt, max_new_tokens):
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    model = ember_text.models.AutoModelForCausalLM.from_pretrained(folder)
    ids = tok(prompt, return_tensors="ember")["input_ids"]
    out = model.generate(ids, max_new_tokens=max_new_tokens)[0, ids.shape[1]:].tolist()
    return tok.decode(out, skip_special_tokens=True, clean_up_tokenization_spaces=False), out


def test_hf_folder_archive_members_and_refusals(tmp_path):
    folder = bert_classifier_folder(tmp_path / "hf")
    (tmp_path / "hf" / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    out = tmp_path / "out"
    out.mkdir()
    assert archive_main(["create", "--name", "cls", "--version", "2", "--handler", "text_classifier",
                         "--hf-folder", folder, "--export-path", str(out)]) == 0
    path = out / "cls.emar"
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("MANIFEST.json"))
    files = {f for f in os.listdir(folder) if not f.startswith(".")}
    assert names == {"MANIFEST.json", "config.json"} | {f"hf/{f}" for f in files}
    assert {"hf/config.json", "hf/model.safetensors", "hf/tokenizer.json"} <= names
    assert manifest["hf_folder"] == "hf" and manifest["model"] is None and manifest["handler"] == "text_classifier"
    with load_archive(path) as arch:
        assert os.path.isfile(os.path.join(arch.hf_folder, "model.safetensors"))
    with pytest.raises(ArchiveError, match="hf_folder replaces model_file"):
        create_archive(tmp_path / "x.emar", name="x", handler="text_classifier", hf_folder=folder,
                       weights=os.path.join(folder, "model.safetensors"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArchiveError, match="holds no config.json"):
        create_archive(tmp_path / "x.emar", name="x", handler="text_classifier", hf_folder=tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        create_archive(tmp_path / "x.emar", name="x", handler="text_classifier", hf_folder=tmp_path / "none")


def test_text_archive_without_folder_refused_at_load(tmp_path):
    from ember_serve.handlers import HandlerContext, resolve_handler
    path = create_archive(tmp_path / "t.emar", name="t", handler="text_generation")
    with load_archive(path) as arch:
        h = resolve_handler(arch.handler, arch)()
        with pytest.raises(ValueError, match="needs an archive made with --hf-folder"):
            h.initialize(HandlerContext(arch, arch.config, "cpu", "t", "1"))


def test_check_runs_the_text_handlers_on_their_example(tmp_path, capsys):
    example = tmp_path / "ex.npz"
    np.savez(example, text=np.array(TEXTS[:2]))
    cls = create_archive(tmp_path / "c.emar", name="c", handler="text_classifier", example_input=str(example),
                         hf_folder=bert_classifier_folder(tmp_path / "c"), config={"max_batch_size": 4})
    gen = create_archive(tmp_path / "g.emar", name="g", handler="text_generation", example_input=str(example),
                         hf_folder=gpt2_folder(tmp_path / "g"), config={"handler_config": {"max_new_tokens": 3}})
    for path in (cls, gen):
        assert archive_main(["check", path]) == 0
    out = capsys.readouterr().out
    assert "c 1.0: ok: handler 'text_classifier' answered 2 request(s)" in out
    assert "g 1.0: ok: handler 'text_generation' answered 1 request(s)" in out


def test_text_classifier_over_predictions_and_the_protocol(text_server, client):
    probs, labels = local_classifier(text_server.folders["cls"], TEXTS)
    status, headers, raw = http("POST", text_server.inference + "/predictions/cls", TEXTS[0].encode(),
                                {"Content-Type": "text/plain"})
    assert status == 200
    got = json.loads(raw)
    order = np.argsort(-probs[0])[:2]
    assert list(got) == [labels[i] for i in order]
    np.testing.assert_allclose(list(got.values()), probs[0][order], rtol=1e-5, atol=1e-6)
    status, got = http_json("POST", text_server.inference + "/predictions/cls", {"text": TEXTS},
                            {"Content-Type": "application/json"})
    assert status == 200 and len(got) == 3
    for row, p in zip(got, probs):
        np.testing.assert_allclose([row[k] for k in row], np.sort(p)[::-1][:2], rtol=1e-5, atol=1e-6)
    inp = httpclient.InferInput("text", [3], "BYTES")
    inp.set_data_from_numpy(np.array([t.encode() for t in TEXTS], dtype=object))
    r = client.infer("cls", [inp])
    np.testing.assert_allclose(r.as_numpy("probabilities"), probs, rtol=1e-5, atol=1e-6)
    top = [[s.decode().split(":", 2)[2] for s in row] for row in r.as_numpy("topk")]
    assert top == [[labels[i] for i in np.argsort(-p)[:2]] for p in probs]
    meta = client.get_model_metadata("cls")
    assert meta["inputs"] == [{"name": "text", "datatype": "BYTES", "shape": [-1]}]


def test_sentence_embedder_over_predictions_and_the_protocol(text_server, client):
    st = ember_text.SentenceTransformer(text_server.folders["emb"])
    want = st.encode(TEXTS)
    status, got = http_json("POST", text_server.inference + "/predictions/emb", TEXTS, {"Content-Type":
                                                                                        "application/json"})
    assert status == 200
    np.testing.assert_allclose(np.array(got), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(np.array(got), axis=1), 1.0, rtol=1e-6)  # the Normalize module
    inp = httpclient.InferInput("text", [1], "BYTES")
    inp.set_data_from_numpy(np.array([TEXTS[1].encode()], dtype=object))
    np.testing.assert_allclose(client.infer("emb", [inp]).as_numpy("embedding"), want[1:2], rtol=1e-5, atol=1e-6)


def test_text_generation_over_predictions_and_the_protocol(text_server, client):
    folder = text_server.folders["plain"]
    want, ids = local_generate(folder, TEXTS[0], 12)
    status, got = http_json("POST", text_server.inference + "/predictions/plain",
                            {"inputs": TEXTS[0], "parameters": {"max_new_tokens": 12}},
                            {"Content-Type": "application/json"})
    assert status == 200 and got == {"generated_text": want}
    status, got = http_json("POST", text_server.inference + "/predictions/plain?max_new_tokens=12",
                            TEXTS[0].encode(), {"Content-Type": "text/plain"})
    assert status == 200 and got == {"generated_text": want}
    inp = httpclient.InferInput("text_input", [1], "BYTES")
    inp.set_data_from_numpy(np.array([TEXTS[0].encode()], dtype=object))
    r = client.infer("plain", [inp], parameters={"max_new_tokens": 12})
    assert r.as_numpy("text_output").tolist() == [want.encode()]
    # a stop string ends the text just before it
    stop = want[3:6]
    cut = want.index(stop)
    status, got = http_json("POST", text_server.inference + "/predictions/plain",
                            {"text": TEXTS[0], "max_new_tokens": 12, "stop": [stop]},
                            {"Content-Type": "application/json"})
    assert status == 200 and got == {"generated_text": want[:cut]}


def test_text_generation_bad_settings_are_400(text_server):
    url = text_server.inference + "/predictions/plain"
    for body, message in [({"text": "hi", "temperature": -1}, "temperature must be in"),
                          ({"text": "hi", "max_new_tokens": "many"}, "max_new_tokens must be an integer"),
                          ({"text": "hi", "beams": 4}, "unknown generation setting"),
                          ({"text": "hi", "max_new_tokens": 500}, "maximum context length is 96 tokens"),
                          ({"prompt": 3}, "expected a string")]:
        status, got = http_json("POST", url, body, {"Content-Type": "application/json"})
        assert status == 400 and message in got["error"], (body, got)
    assert http_json("GET", text_server.inference + "/v2/health/ready")[0] == 200
