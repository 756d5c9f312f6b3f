"""Iteration-level batching over the socket: concurrent streaming requests share decoding steps
(the server's ember_batch_size histogram says so) and each gets the text it gets alone, which is
the text ember-text's generate gives the same model here (greedy)."""

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from conftest import http
from text_archives import local_continuation

import ember_text

PROMPTS = ["The quick brown fox", "To be, or not", "A journey of a thousand miles begins", "Numbers like 3.14159",
           "Serving models"]


@pytest.fixture(scope="module")
def client(text_server):
    return openai.OpenAI(base_url=text_server.inference + "/v1", api_key="unused", max_retries=0, timeout=120)


def batch_histogram(server, model):
    """(steps, sequences summed over steps, steps with one sequence) from /metrics."""
    text = http("GET", server.metrics + "/metrics")[2].decode()

    def value(series, extra=""):
        pattern = rf'^ember_batch_size_{series}{{(?=[^}}]*model="{model}")(?=[^}}]*version="1"){extra}[^}}]*}} (\S+)$'
        m = re.search(pattern, text, re.M)
        return float(m.group(1)) if m else 0.0

    return value("count"), value("sum"), value("bucket", r'(?=[^}]*le="1\.0")')


def stream_text(client, model, prompt, max_tokens, first_chunk=None):
    """(text, completion tokens) of a streamed greedy completion."""
    pieces, tokens = [], None
    for chunk in client.completions.create(model=model, prompt=prompt, max_tokens=max_tokens, temperature=0,
                                           stream=True, stream_options={"include_usage": True}):
        pieces.extend(c.text for c in chunk.choices)
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if first_chunk is not None and not first_chunk.is_set():
            first_chunk.set()
    return "".join(pieces), tokens


def test_concurrent_streams_share_steps_and_match_sequential(client, text_server):
    folder = text_server.folders["gen"]
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    lengths = [30, 22, 26, 18, 34]
    alone = [client.completions.create(model="gen", prompt=p, max_tokens=n, temperature=0)
             for p, n in zip(PROMPTS, lengths)]
    sequential = [(r.choices[0].text, r.usage.completion_tokens) for r in alone]
    for p, n, (text, count) in zip(PROMPTS, lengths, sequential):
        want, ids = local_continuation(folder, list(tok(p)["input_ids"]), n)
        assert text == want and count == len(ids)
    steps0, rows0, ones0 = batch_histogram(text_server, "gen")
    with ThreadPoolExecutor(len(PROMPTS)) as pool:  # "gen" waits 200 ms for company before it starts
        concurrent = list(pool.map(lambda a: stream_text(client, "gen", *a), zip(PROMPTS, lengths)))
    steps1, rows1, ones1 = batch_histogram(text_server, "gen")
    assert concurrent == sequential
    steps, rows = steps1 - steps0, rows1 - rows0
    # every token after each sequence's first (made by its prefill) comes from a decoding step
    assert rows == sum(count - 1 for _, count in concurrent)
    assert steps < rows and ones1 - ones0 < steps, (steps, rows, ones1 - ones0)
    assert steps < max(count for _, count in concurrent)  # all five started together and ran side by side


def test_a_request_joins_a_running_batch(client, text_server):
    folder = text_server.folders["plain"]
    tok = ember_text.AutoTokenizer.from_pretrained(folder)
    lengths = (80, 8, 8)  # the long one as long as the model's 96 positions allow
    want = [local_continuation(folder, list(tok(p)["input_ids"]), n) for p, n in zip(PROMPTS, lengths)]
    want = [(text, len(ids)) for text, ids in want]
    # the late requests go out when the long one's first token arrives; on a fast machine the
    # long one can still finish first (a step of this tiny model takes well under a
    # millisecond), so the experiment runs up to three times and must see them join once
    joined = []
    for _ in range(3):
        steps0, rows0, _ = batch_histogram(text_server, "plain")
        started = threading.Event()
        with ThreadPoolExecutor(3) as pool:
            long_run = pool.submit(stream_text, client, "plain", PROMPTS[0], lengths[0], started)
            assert started.wait(60)
            late = [pool.submit(stream_text, client, "plain", p, n) for p, n in zip(PROMPTS[1:3], lengths[1:])]
            got = [long_run.result()] + [f.result() for f in late]
        steps1, rows1, _ = batch_histogram(text_server, "plain")
        assert got == want  # joining or not, each gets the text it gets alone
        assert rows1 - rows0 == sum(count - 1 for _, count in got)
        joined.append(steps1 - steps0 < rows1 - rows0)  # the late ones rode along with the long one
        if joined[-1]:
            break
    assert any(joined), joined
