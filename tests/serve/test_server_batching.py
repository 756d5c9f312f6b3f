"""Dynamic batching, the bounded queue, timeouts, worker threads and graceful shutdown."""

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import ServerProcess, http, http_json, make_echo_archive, make_linear_archive, torch_linear


def infer_body(x):
    return {"inputs": [{"name": "x", "datatype": "INT64", "shape": list(x.shape), "data": x.reshape(-1).tolist()}]}


def metric(server, name, model):
    text = http("GET", server.metrics + "/metrics")[2].decode()
    m = re.search(rf'^{name}{{model="{model}",version="1"}} (\S+)$', text, re.M)
    return float(m.group(1))


@pytest.fixture(scope="module")
def batch_server(tmp_path_factory):
    store = tmp_path_factory.mktemp("batch")
    batched = make_echo_archive(store, name="batched", config={"max_batch_size": 8, "max_batch_delay_ms": 300})
    capped = make_echo_archive(store, name="capped", config={"max_batch_size": 4, "max_batch_delay_ms": 300})
    slow = make_echo_archive(store, name="slow", config={"queue_size": 2, "handler_config": {"sleep_s": 1.0}})
    late = make_echo_archive(store, name="late", config={"response_timeout_s": 0.3,
                                                         "handler_config": {"sleep_s": 1.5}})
    pair = make_echo_archive(store, name="pair", config={"workers": 2, "handler_config": {"sleep_s": 0.5}})
    lin, state = make_linear_archive(store, config={"max_batch_size": 16, "max_batch_delay_ms": 50, "workers": 2})
    server = ServerProcess(["--models", f"batched={batched}", f"capped={capped}", f"slow={slow}", f"late={late}",
                            f"pair={pair}", f"lin={lin}"])
    server.state = state
    yield server
    server.stop()


def concurrently(fn, n):
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(fn, range(n)))


def test_concurrent_requests_share_batches(batch_server):
    def one(i):
        x = np.full((1, 2), i, dtype=np.int64)
        return http_json("POST", batch_server.inference + "/v2/models/batched/infer", infer_body(x))
    results = concurrently(one, 6)
    assert all(s == 200 for s, _ in results)
    for i, (_, resp) in enumerate(results):
        outs = {o["name"]: o for o in resp["outputs"]}
        assert outs["out_x"]["data"] == [i, i]  # each answer is its own request's rows
    rows = [{o["name"]: o for o in r["outputs"]}["batch_rows"]["data"][0] for _, r in results]
    assert max(rows) > 1, f"no two requests shared a batch: {rows}"
    assert metric(batch_server, "nv_inference_exec_count", "batched") < 6
    assert metric(batch_server, "nv_inference_count", "batched") == 6


def test_batches_never_exceed_max_batch_size(batch_server):
    def one(i):
        x = np.full((1 + i % 3, 2), i, dtype=np.int64)
        return http_json("POST", batch_server.inference + "/v2/models/capped/infer", infer_body(x))
    results = concurrently(one, 10)
    assert all(s == 200 for s, _ in results)
    rows = [{o["name"]: o for o in r["outputs"]}["batch_rows"]["data"][0] for _, r in results]
    assert max(rows) <= 4 and metric(batch_server, "nv_inference_count", "capped") == sum(1 + i % 3 for i in range(10))


def test_batched_tensor_model_answers_each_request(batch_server):
    f = torch_linear(batch_server.state)
    xs = [np.random.default_rng(i).random((1 + i % 4, 4), dtype=np.float32) for i in range(12)]

    def one(i):
        body = {"inputs": [{"name": "input__0", "datatype": "FP32", "shape": list(xs[i].shape),
                            "data": xs[i].reshape(-1).tolist()}]}
        return http_json("POST", batch_server.inference + "/v2/models/lin/infer", body)
    for x, (status, resp) in zip(xs, concurrently(one, 12)):
        assert status == 200
        got = np.array(resp["outputs"][0]["data"], np.float32).reshape(resp["outputs"][0]["shape"])
        np.testing.assert_allclose(got, f(x), rtol=1e-5, atol=1e-6)


def test_full_queue_answers_503_with_retry_after(batch_server):
    def one(i):
        time.sleep(0.05 * (i > 0))  # the first one reaches the worker, the others queue behind it
        return http("POST", batch_server.inference + "/predictions/slow", f"r{i}".encode())
    results = concurrently(one, 6)
    codes = sorted(s for s, _, _ in results)
    assert codes.count(503) >= 1 and set(codes) <= {200, 503}, codes
    assert codes.count(200) <= 3  # one running, two queued (queue_size 2)
    for status, headers, raw in results:
        if status == 503:
            assert headers["Retry-After"] == "1"
            assert "queue of model slow:1 is full (2 requests waiting)" in json.loads(raw)["error"]
    assert http("GET", batch_server.inference + "/v2/health/ready")[0] == 200


def test_request_timeout_is_504_and_the_server_lives_on(batch_server):
    status, resp = http_json("POST", batch_server.inference + "/predictions/late", b"x")
    assert status == 504 and "gave no answer within 0.3 s (response_timeout_s)" in resp["error"]
    assert http("GET", batch_server.inference + "/v2/health/ready")[0] == 200


def test_two_workers_run_two_batches_at_once(batch_server):
    results = concurrently(lambda i: http_json("POST", batch_server.inference + "/predictions/pair", b"p"), 2)
    workers = {r["worker"] for _, r in results}
    assert all(s == 200 for s, _ in results) and len(workers) == 2, workers


def test_graceful_shutdown_finishes_requests_in_flight(tmp_path):
    slow = make_echo_archive(tmp_path, name="slow", config={"handler_config": {"sleep_s": 1.5}})
    server = ServerProcess(["--models", f"slow={slow}"])
    result = {}

    def call():
        result["answer"] = http_json("POST", server.inference + "/predictions/slow", b"in-flight")
    t = threading.Thread(target=call)
    t.start()
    time.sleep(0.5)  # the request is running in the worker
    rc = server.stop()
    t.join(10)
    assert result["answer"] == (200, {"echo": "in-flight", "batch_rows": 1, "worker": "slow:1-worker-1"})
    assert rc == 0
    with pytest.raises(OSError):
        http("GET", server.inference + "/ping", timeout=2)
