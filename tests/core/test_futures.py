"""ember.futures.Future beside torch.futures.Future: results, chained callbacks, errors."""

import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember])
def test_set_result_then_and_done_callbacks(lib):
    fut = lib.futures.Future()
    seen = []
    fut.add_done_callback(lambda f: seen.append(f.value()))
    chained = fut.then(lambda f: f.value() * 2).then(lambda f: f.value() + 1)
    assert not fut.done() and not chained.done()
    fut.set_result(20)
    assert fut.done() and fut.wait() == 20 and chained.wait() == 41 and seen == [20]
    with pytest.raises(RuntimeError):
        fut.set_result(1)
    both = lib.futures.collect_all([fut, chained]).wait()
    assert [f.wait() for f in both] == [20, 41]
    assert lib.futures.wait_all([fut, chained]) == [20, 41]


@pytest.mark.parametrize("lib", [torch, ember])
def test_exceptions_reach_the_waiter(lib):
    fut = lib.futures.Future()
    fut.set_exception(ValueError("no value"))
    with pytest.raises(ValueError, match="no value"):
        fut.wait()
    ok = lib.futures.Future()
    bad = ok.then(lambda f: 1 / 0)
    ok.set_result(1)
    with pytest.raises((ZeroDivisionError, RuntimeError)):
        bad.wait()

