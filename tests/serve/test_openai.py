"""The OpenAI-compatible routes through OpenAI's own client (and urllib for the raw bytes):
completions, chat completions, streaming, embeddings, models, errors; answers checked against
the same ember-text models run here."""

import base64
import json

import numpy as np
import openai
import pytest
from conftest import http, http_json
from text_archives import CHATML, local_continuation

import ember
import ember_text
from ember_serve.handlers.text_generation import DEFAULT_CHAT_TEMPLATE

PROMPT = "The quick brown fox"
CHAT = [{"role": "system", "content": "You answer briefly."}, {"role": "user", "content": "Name a fox."}]


@pytest.fixture(scope="module")
def client(text_server):
    return openai.OpenAI(base_url=text_server.inference + "/v1", api_key="unused", max_retries=0, timeout=60)


def prompt_ids(folder, text):
    return list(ember_text.AutoTokenizer.from_pretrained(folder)(text)["input_ids"])


def chat_ids(folder, messages, template=None):
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    text = tok.apply_chat_template(messages, chat_template=template, add_generation_prompt=True, tokenize=False)
    return list(tok(text, add_special_tokens=False)["input_ids"])


def test_models_list_and_retrieve(client):
    assert sorted(m.id for m in client.models.list()) == ["emb", "gen", "plain"]
    card = client.models.retrieve("gen")
    assert card.id == "gen" and card.object == "model" and card.owned_by == "ember-serve"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("cls")  # served, but not through these routes


def test_completion_greedy_matches_generate(client, text_server):
    folder = text_server.folders["plain"]
    ids = prompt_ids(folder, PROMPT)
    want, _ = local_continuation(folder, ids, 12)
    r = client.completions.create(model="plain", prompt=PROMPT, max_tokens=12, temperature=0)
    assert r.object == "text_completion" and r.model == "plain" and r.id.startswith("cmpl-")
    assert [c.text for c in r.choices] == [want] and r.choices[0].finish_reason == "length"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (len(ids), 12, len(ids) + 12)
    # several prompts, token-id prompts and echo
    second = "Serving models"
    want2, _ = local_continuation(folder, prompt_ids(folder, second), 5)
    r = client.completions.create(model="plain", prompt=[PROMPT, second], max_tokens=5, temperature=0)
    assert [c.index for c in r.choices] == [0, 1]
    assert [c.text for c in r.choices] == [local_continuation(folder, ids, 5)[0], want2]
    r = client.completions.create(model="plain", prompt=ids, max_tokens=5, temperature=0, echo=True)
    assert r.choices[0].text == PROMPT + local_continuation(folder, ids, 5)[0]


def test_completion_stop_and_default_max_tokens(client, text_server):
    folder = text_server.folders["plain"]
    ids = prompt_ids(folder, PROMPT)
    want, _ = local_continuation(folder, ids, 16)
    r = client.completions.create(model="plain", prompt=PROMPT, temperature=0)  # OpenAI's default: 16 tokens
    assert r.choices[0].text == want and r.usage.completion_tokens == 16
    stop = want[4:7]
    r = client.completions.create(model="plain", prompt=PROMPT, temperature=0, stop=[stop, "never there"])
    assert r.choices[0].text == want[:want.index(stop)] and r.choices[0].finish_reason == "stop"
    assert r.usage.completion_tokens < 16


def test_seeded_sampling_is_reproducible_and_matches_generate(client, text_server):
    folder = text_server.folders["plain"]
    ids = prompt_ids(folder, PROMPT)
    g = ember.Generator()
    g.manual_seed(1234)
    want, _ = local_continuation(folder, ids, 10, do_sample=True, temperature=0.8, top_k=None, top_p=0.9,
                                 generator=g)
    texts = [client.completions.create(model="plain", prompt=PROMPT, max_tokens=10, temperature=0.8, top_p=0.9,
                                       seed=1234).choices[0].text for _ in range(2)]
    assert texts == [want, want]
    r = client.completions.create(model="plain", prompt=PROMPT, max_tokens=10, temperature=0.8, top_p=0.9,
                                  seed=1234, n=2)
    assert r.choices[0].text == want and len(r.choices) == 2


def test_completion_streaming(client, text_server):
    full = client.completions.create(model="plain", prompt=PROMPT, max_tokens=20, temperature=0).choices[0].text
    pieces, reasons, usage = [], [], None
    for chunk in client.completions.create(model="plain", prompt=PROMPT, max_tokens=20, temperature=0, stream=True,
                                           stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            pieces.append(c.text)
            reasons.append(c.finish_reason)
    assert "".join(pieces) == full and len(pieces) > 2
    assert reasons[-1] == "length" and set(reasons[:-1]) == {None}
    assert usage.completion_tokens == 20


def test_stream_is_server_sent_events_ending_with_done(text_server):
    body = {"model": "plain", "prompt": PROMPT, "max_tokens": 6, "temperature": 0, "stream": True}
    status, headers, raw = http("POST", text_server.inference + "/v1/completions", body,
                                {"Content-Type": "application/json"})
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    events = [e for e in raw.decode().split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    assert {c["object"] for c in chunks} == {"text_completion"} and chunks[-1]["choices"][0]["finish_reason"]


def test_chat_uses_the_tokenizer_template(client, text_server):
    folder = text_server.folders["gen"]
    ids = chat_ids(folder, CHAT)
    assert ids == chat_ids(folder, CHAT, CHATML)
    want, _ = local_continuation(folder, ids, 10)
    r = client.chat.completions.create(model="gen", messages=CHAT, max_tokens=10, temperature=0)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.content == want
    assert r.usage.prompt_tokens == len(ids) and r.usage.completion_tokens == 10
    pieces, roles = [], []
    for chunk in client.chat.completions.create(model="gen", messages=CHAT, max_tokens=10, temperature=0,
                                                stream=True):
        assert chunk.object == "chat.completion.chunk"
        for c in chunk.choices:
            roles.append(c.delta.role)
            pieces.append(c.delta.content or "")
    assert roles[0] == "assistant" and "".join(pieces) == want
    # content given as text parts
    parts = [CHAT[0], {"role": "user", "content": [{"type": "text", "text": "Name a "}, {"type": "text",
                                                                                         "text": "fox."}]}]
    r = client.chat.completions.create(model="gen", messages=parts, max_tokens=10, temperature=0)
    assert r.choices[0].message.content == want


def test_chat_without_a_template_uses_the_default(client, text_server):
    folder = text_server.folders["plain"]
    ids = chat_ids(folder, CHAT, DEFAULT_CHAT_TEMPLATE)
    want, _ = local_continuation(folder, ids, 12)
    want = want.split("<|im_end|>")[0]  # the default template's end of turn stops the answer
    r = client.chat.completions.create(model="plain", messages=CHAT, max_tokens=12, temperature=0)
    assert r.choices[0].message.content == want and r.usage.prompt_tokens == len(ids)


def test_embeddings_float_and_base64(client, text_server):
    texts = ["The quick brown fox jumps.", "a single step!"]
    st = ember_text.SentenceTransformer(text_server.folders["emb"])
    want = st.encode(texts)
    r = client.embeddings.create(model="emb", input=texts)  # the client asks for base64 and decodes it
    np.testing.assert_allclose(np.array([d.embedding for d in r.data]), want, rtol=1e-5, atol=1e-6)
    assert [d.index for d in r.data] == [0, 1] and r.model == "emb"
    tokens = sum(len(st.tokenizer(t)["input_ids"]) for t in texts)
    assert r.usage.prompt_tokens == r.usage.total_tokens == tokens
    r = client.embeddings.create(model="emb", input=texts[1], encoding_format="float")
    np.testing.assert_allclose(r.data[0].embedding, want[1], rtol=1e-5, atol=1e-6)
    status, body = http_json("POST", text_server.inference + "/v1/embeddings",
                             {"model": "emb", "input": texts[0], "encoding_format": "base64"})
    got = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(got, want[0], rtol=1e-5, atol=1e-6)


def test_errors_have_openai_shape_and_leave_the_server_healthy(client, text_server):
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="nope", prompt="x")
    assert e.value.body["code"] == "model_not_found"
    cases = [dict(model="plain", prompt=PROMPT, max_tokens=500),
             dict(model="plain", prompt=PROMPT, temperature=3),
             dict(model="plain", prompt=PROMPT, logprobs=2),
             dict(model="plain", prompt=PROMPT, extra_body={"beams": 2}),
             dict(model="plain", prompt=PROMPT, stop=["a", "b", "c", "d", "e"]),
             dict(model="emb", prompt=PROMPT)]
    for kwargs in cases:
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(**kwargs)
        assert e.value.status_code == 400 and e.value.body["type"] == "invalid_request_error", kwargs
    with pytest.raises(openai.BadRequestError, match="maximum context length is 96 tokens"):
        client.chat.completions.create(model="gen", messages=CHAT, max_tokens=200)
    with pytest.raises(openai.BadRequestError, match="needs a sentence_embedder model"):
        client.embeddings.create(model="gen", input="x")
    status, body = http_json("POST", text_server.inference + "/v1/chat/completions", b"{not json",
                             {"Content-Type": "application/json"})
    assert status == 400 and set(body["error"]) == {"message", "type", "param", "code"}
    status, body = http_json("POST", text_server.inference + "/v1/chat/completions",
                             {"model": "gen", "messages": [{"role": "user", "content": 3}]})
    assert status == 400 and body["error"]["param"] == "messages.[0].content"
    assert http("GET", text_server.inference + "/v2/health/ready")[0] == 200
    assert client.completions.create(model="plain", prompt=PROMPT, max_tokens=3).usage.completion_tokens == 3


def test_a_client_leaving_a_stream_early_leaves_the_server_healthy(client, text_server):
    stream = client.completions.create(model="plain", prompt=PROMPT, max_tokens=60, temperature=0, stream=True)
    next(iter(stream))
    stream.close()
    r = client.completions.create(model="plain", prompt=PROMPT, max_tokens=4, temperature=0)
    assert r.usage.completion_tokens == 4
    assert http("GET", text_server.inference + "/v2/health/ready")[0] == 200
