"""ember.profiler: op calls recorded at the dispatch seam, nested as they nest; averages,
tables and schedules as torch.profiler gives them; Chrome traces that parse."""

import gzip
import json
import os
import threading

import pytest
import torch
import torch.profiler

import ember
import ember.linalg
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _model_step(lib, model, x):
    with (torch.profiler.record_function if lib is torch else record_function)("model_inference"):
        return model(x).relu().sum()


def test_counts_nesting_and_times():
    model, x = ember.nn.Linear(4, 3), ember.randn(2, 4)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            _model_step(ember, model, x)
    averages = {e.key: e for e in prof.key_averages()}
    assert {k: e.count for k, e in averages.items()} == {"model_inference": 3, "ember::linear": 3,
                                                         "ember::relu": 3, "ember::sum": 3}
    for event in prof.events():
        assert 0 <= event.self_cpu_time_total <= event.cpu_time_total
        for child in event.cpu_children:
            assert child.cpu_parent is event
            assert event.time_range_start <= child.time_range_start <= child.time_range_end <= event.time_range_end
    ranges = [e for e in prof.events() if e.name == "model_inference"]
    assert all(sorted(c.name for c in r.cpu_children) == ["ember::linear", "ember::relu", "ember::sum"]
               for r in ranges)
    # the profile's CPU time is every event's self time, and the top-level ranges' totals
    assert prof.events().self_cpu_time_total == pytest.approx(sum(r.cpu_time_total for r in ranges))


def test_an_op_made_of_ops_shows_them_as_children():
    x = ember.randn(3, 4)
    with profile() as prof:
        ember.linalg.matrix_norm(x)
    top = [e for e in prof.events() if e.cpu_parent is None]
    assert [e.name for e in top] == ["ember::matrix_norm"]
    assert [c.name for c in top[0].cpu_children] == ["ember::vector_norm"]


def test_shapes_and_memory():
    model, x = ember.nn.Linear(4, 3), ember.randn(2, 4)
    with profile(record_shapes=True, profile_memory=True) as prof:
        _model_step(ember, model, x)
    by_key = {e.key: e for e in prof.key_averages(group_by_input_shape=True)}
    assert by_key["ember::linear"].input_shapes == [[2, 4], [3, 4], [3]]
    assert by_key["ember::relu"].input_shapes == [[2, 3]]
    assert by_key["ember::linear"].cpu_memory_usage == 2 * 3 * 4  # the float32 [2, 3] result
    assert by_key["ember::sum"].cpu_memory_usage == 4
    assert by_key["model_inference"].cpu_memory_usage == 24 + 24 + 4
    assert by_key["model_inference"].self_cpu_memory_usage == 0


def _header(table: str) -> list:
    return [c for c in table.splitlines()[1].split("  ") if c.strip()]


@pytest.mark.parametrize("options", [{}, {"profile_memory": True}, {"record_shapes": True}])
def test_table_columns_and_sorting_as_torchs(options):
    group = options.get("record_shapes", False)
    tables = {}
    for lib, prof_cls, model, x in ((torch, torch.profiler.profile, torch.nn.Linear(4, 3), torch.randn(2, 4)),
                                    (ember, profile, ember.nn.Linear(4, 3), ember.randn(2, 4))):
        with prof_cls(**options) as prof:
            _model_step(lib, model, x)
        tables[lib] = prof.key_averages(group_by_input_shape=group).table(sort_by="cpu_time_total", row_limit=10)
        with pytest.raises(AttributeError, match="'FunctionEventAvg' object has no attribute 'nope'"):
            prof.key_averages().table(sort_by="nope")
    assert [h.strip() for h in _header(tables[ember])] == [h.strip() for h in _header(tables[torch])]
    assert tables[ember].splitlines()[-1].startswith("Self CPU time total: ")
    ours = prof.key_averages()
    ordered = sorted(ours, key=lambda e: e.self_cpu_time_total, reverse=True)
    rows = ours.table(sort_by="self_cpu_time_total").splitlines()[3:3 + len(ordered)]
    assert [r.split()[0] for r in rows] == [e.key for e in ordered]


@pytest.mark.parametrize("kwargs", [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
                                    dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
                                    dict(wait=1, warmup=1, active=1, skip_first_wait=1)])
def test_schedule_actions_as_torchs(kwargs):
    ours, theirs = schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [ours(i).name for i in range(20)] == [theirs(i).name for i in range(20)]


def test_schedule_records_active_steps_and_hands_them_over():
    traces = []

    def ready(p):
        traces.append([e.name for e in p.events()])

    one = ember.ones(1)
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for step in range(10):
            with record_function(f"step{step}"):
                ember.neg(one)
            prof.step()
    assert traces == [["step2", "ember::neg", "step3", "ember::neg"], ["step6", "ember::neg", "step7", "ember::neg"]]
    assert schedule(wait=1, warmup=1, active=2)(3) is ProfilerAction.RECORD_AND_SAVE


def test_chrome_trace_and_tensorboard_handler(tmp_path):
    model, x = ember.nn.Linear(4, 3), ember.randn(2, 4)
    with profile(record_shapes=True, on_trace_ready=ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"),
                                                                                             "worker0")) as prof:
        _model_step(ember, model, x)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert {e["ph"] for e in events} == {"X"} and {e["pid"] for e in events} == {os.getpid()}
    assert [e["name"] for e in events] == ["model_inference", "ember::linear", "ember::relu", "ember::sum"]
    outer = events[0]
    assert outer["cat"] == "user_annotation" and all(e["cat"] == "cpu_op" for e in events[1:])
    for e in events[1:]:
        assert outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-6
    assert events[1]["args"]["Input Dims"] == [[2, 4], [3, 4], [3]]
    (written,) = os.listdir(tmp_path / "tb")
    assert written.startswith("worker0.") and written.endswith(".pt.trace.json")
    assert json.loads((tmp_path / "tb" / written).read_text())["traceEvents"] == events
    prof.export_chrome_trace(str(tmp_path / "trace.json.gz"))
    assert json.loads(gzip.decompress((tmp_path / "trace.json.gz").read_bytes())) == trace


def test_other_threads_and_outside_the_block_are_not_recorded():
    one = ember.ones(1)
    with profile() as prof:
        worker = threading.Thread(target=lambda: ember.exp(one))
        worker.start()
        worker.join()
        ember.neg(one)
    with record_function("outside"):  # no profile: a no-op
        ember.neg(one)
    assert [e.name for e in prof.events()] == ["ember::neg"]


def test_record_function_as_decorator_and_legacy_profiler():
    @record_function("my_fn")
    def f(x):
        return x * 2

    two = ember.ones(2)
    with ember.autograd.profiler.profile() as prof:
        f(two)
    assert [e.name for e in prof.events()] == ["my_fn", "ember::mul"]
    assert "my_fn" in prof.table()
    with ember.autograd.profiler.profile(enabled=False) as off:
        f(two)
    assert list(off.events()) == []
