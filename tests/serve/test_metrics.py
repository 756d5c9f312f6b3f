"""/metrics on its own port: Triton's metric names with the right counts, ember's own beside them."""

import numpy as np
import pytest
import tritonclient.http as httpclient
from conftest import ServerProcess, http, make_linear_archive
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path, _ = make_linear_archive(tmp_path_factory.mktemp("m"), config={"max_batch_size": 8})
    s = ServerProcess(["--models", f"lin={path}"])
    yield s
    s.stop()


def samples(server):
    text = http("GET", server.metrics + "/metrics")[2].decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return text, out


def test_triton_counters_count_requests_rows_and_batches(server):
    c = httpclient.InferenceServerClient(server.hostport)
    rows = [1, 3, 2]
    for n in rows:
        inp = httpclient.InferInput("input__0", [n, 4], "FP32")
        inp.set_data_from_numpy(np.zeros((n, 4), np.float32))
        c.infer("lin", [inp])  # one at a time: one batch each
    bad = httpclient.InferInput("input__0", [1, 5], "FP32")
    bad.set_data_from_numpy(np.zeros((1, 5), np.float32))
    with pytest.raises(InferenceServerException, match="does not match"):
        c.infer("lin", [bad])
    text, s = samples(server)
    lv = (("model", "lin"), ("version", "1"))
    for line in ("# TYPE nv_inference_request_success counter", "# TYPE nv_inference_count counter"):
        assert line in text
    # Triton's lines, exactly as its dashboards query them (no _total suffix)
    for name, value in [("nv_inference_request_success", 3), ("nv_inference_request_failure", 1),
                        ("nv_inference_count", sum(rows)), ("nv_inference_exec_count", 3)]:
        assert f'\n{name}{{model="lin",version="1"}} {value}\n' in text
        assert s[(name + "_total", lv)] == value  # prometheus-client's parser reads counters as name_total
    total = s[("nv_inference_request_duration_us_total", lv)]
    queue = s[("nv_inference_queue_duration_us_total", lv)]
    compute = s[("nv_inference_compute_infer_duration_us_total", lv)]
    assert total > 0 and compute > 0 and queue >= 0 and queue + compute < total
    assert s[("ember_batch_size_count", lv)] == 3 and s[("ember_batch_size_sum", lv)] == sum(rows)
    assert s[("ember_queue_depth", lv)] == 0 and s[("ember_workers", lv)] == 1
    assert s[("ember_requests_total", (("code", "200"), ("model", "lin"), ("protocol", "v2")))] == 3
    assert s[("ember_requests_total", (("code", "400"), ("model", "lin"), ("protocol", "v2")))] == 1
